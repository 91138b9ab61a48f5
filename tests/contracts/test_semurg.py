"""Semurg's promises (../shared/spec/semurg.md, semurg-tools.json), first part: what every
call shares (published tools, scopes, end users, ids, state, meaning) and remembering, kept by
``--profile semurg``.

Driven as Semurg's clients drive it: the memory_* MCP tools (official client, /mcp of
``recuerdo serve --profile semurg``) and the ``POST /v1/memory/<verb>`` routes. Promises that
concern both doors run through each (the ``door`` fixture); the others through HTTP. Recall,
citations, time and context are in test_semurg_recall.py; forgetting, export and import, status,
documents, refusals and the doors in test_semurg_lifecycle.py.
"""

from __future__ import annotations

import base64
import json

import pytest

from ..conftest import ROOT, Server
from .conftest import (
    Http,
    Json,
    Mcp,
    Seen,
    Servers,
    Tools,
    report,
)
from .semurg_doors import (
    SCOPE,
    Door,
    Via,
    facts,
    passages,
    priya,
)

STATES = {"answered", "nothing_stored", "could_not_judge"}


@pytest.fixture(scope="module")
def server(servers: Servers) -> Server:
    return servers.get("semurg")


@pytest.fixture(params=["http", "mcp"])
def door(request: pytest.FixtureRequest, http: Http, mcp: Mcp) -> Door:
    return Door(request.param, http, mcp)


@pytest.fixture
def api(http: Http, mcp: Mcp) -> Door:
    return Door("http", http, mcp)


# -- common ------------------------------------------------------------------------------------


def _published_tools() -> dict[str, Json]:
    path = ROOT.parent / "shared" / "spec" / "semurg-tools.json"
    if not path.is_file():
        pytest.skip(f"{path} is not here")
    tools = json.loads(path.read_text())
    return {name: tool for name, tool in tools.items() if name.startswith(("memory_", "comms_"))}


def test_S1_every_memory_tool_keeps_its_published_parameters(mcp: Mcp) -> None:
    """S1 every memory_* and comms_* tool of Semurg's published client is listed with every one
    of its parameters, the same required ones and the same read-only / destructive
    annotations."""
    published = _published_tools()

    async def scenario(tools: Tools) -> None:
        listed = await tools.listed()
        assert set(published) <= set(listed)
        problems = []
        for name, spec in published.items():
            ours, theirs, hints = listed[name], spec["input_schema"], spec["annotations"]
            missing = set(theirs["properties"]) - set(ours.input_schema["properties"])
            required = set(ours.input_schema.get("required", []))
            if missing or required != set(theirs.get("required", [])):
                problems.append(f"{name}: missing {sorted(missing)}, required {sorted(required)}")
            if (ours.annotations.read_only_hint, ours.annotations.destructive_hint) != (
                hints["readOnlyHint"],
                hints["destructiveHint"],
            ):
                problems.append(f"{name}: annotations {ours.annotations}")
        assert not problems, report(problems)

    mcp(scenario)


def test_S2_a_scope_is_shared_by_its_agents_and_private_to_others(
    server: Server, name: str, api: Door
) -> None:
    """S2 agents using the same scope share it; another scope never sees it."""

    async def scenario(via: Via) -> None:
        await priya(via, moved=False)
        other_agent = Via(http=Http(server, name, Seen()))
        shared = await other_agent.ok("recall", {"subject": "Priya"})
        assert shared["state"] == "answered"
        apart = await via.ok("recall", {"subject": "Priya", "scope": "elsewhere"})
        assert apart["state"] == "nothing_stored" and apart["items"] == []

    api(scenario)


def test_S3_two_end_users_never_meet(door: Door) -> None:
    """S3 user_id names an end user inside one key: two end users never meet; a user_id with
    ':' or over 256 bytes is refused."""

    async def scenario(via: Via) -> None:
        await via.ok("relate", {"from": "Ann", "to": "Acme", "type": "works_at", "user_id": "u1"})
        mine = await via.ok("recall", {"subject": "Ann", "user_id": "u1"})
        theirs = await via.ok("recall", {"subject": "Ann", "user_id": "u2"})
        assert mine["state"] == "answered" and theirs["state"] == "nothing_stored"
        for bad in ("a:b", "x" * 257):
            await via.refused("recall", {"subject": "Ann", "user_id": bad}, "invalid_input")

    door(scenario)


def test_S4_ids_are_decimal_strings_sent_back_unchanged(door: Door) -> None:
    """S4 ids are decimal strings; a client sends them back unchanged."""

    async def scenario(via: Via) -> None:
        stored = await priya(via, moved=False)
        about = await via.ok("recall", {"subject": "Priya"})
        ids = [stored["doc_id"]] + [item["id"] for item in about["items"]]
        ids += [
            item["citation"]["source"]["doc_id"] for item in about["items"] if "citation" in item
        ]
        for value in ids:
            assert isinstance(value, str) and value.isdecimal(), (value, about)
        gone = await via.ok("forget", {"passage": stored["doc_id"]})
        assert gone["already_forgotten"] is False

    door(scenario)


async def _one_of_each(via: Via) -> dict[str, Json]:
    """One successful call of each verb (relate and import included), in an order that works."""
    replies = {"remember": await priya(via, moved=False)}
    replies["relate"] = await via.ok("relate", {"from": "Priya Raman", "to": "Bo", "type": "knows"})
    replies["recall"] = await via.ok("recall", {"subject": "Priya"})
    replies["context"] = await via.ok("context", {"query": "billing team"})
    replies["status"] = await via.ok("status", {})
    replies["export"] = await via.ok("export", {})
    replies["import"] = await via.ok(
        "import", {"records": replies["export"]["records"], "scope": "copy"}
    )
    text = b"Plain text document."
    replies["document"] = await via.ok(
        "document", {"content_base64": base64.b64encode(text).decode(), "name": "a.txt"}
    )
    replies["forget"] = await via.ok("forget", {"subject": "Bo"})
    return replies


def test_S5_every_reply_has_a_state(door: Door) -> None:
    """S5 every reply, writes included, has `state`: answered, nothing_stored or
    could_not_judge."""

    async def scenario(via: Via) -> None:
        replies = await _one_of_each(via)
        missing = {verb: reply.get("state") for verb, reply in replies.items()}
        assert {v for v in missing.values()} <= STATES, missing

    door(scenario)


def test_S6_every_reply_says_whether_meaning_is_armed(api: Door) -> None:
    """S6 every reply has `meaning`: armed or not_armed (a write may say queued: its vectors are
    written right behind the reply)."""

    async def scenario(via: Via) -> None:
        replies = await _one_of_each(via)
        allowed = {"armed", "not_armed"}
        seen = {verb: reply.get("meaning") for verb, reply in replies.items()}
        wrong = {
            verb: value
            for verb, value in seen.items()
            if value not in (allowed | {"queued"} if verb in ("remember", "document") else allowed)
        }
        assert not wrong, report(wrong)

    api(scenario)


# -- remember ----------------------------------------------------------------------------------


def test_S7_content_is_cut_into_passages_at_sentence_ends(api: Door) -> None:
    """S7 content is cut into passages of about 100-200 words at sentence ends."""
    sentences = [
        f"Sentence number {i} talks about the quarterly billing review." for i in range(90)
    ]

    async def scenario(via: Via) -> None:
        stored = await via.ok("remember", {"content": " ".join(sentences)})
        assert 3 <= stored["passages"] <= 8
        document = (await via.records("document"))[0]
        sizes = []
        for passage in document["passages"]:
            text = document["text"][passage["start"] : passage["end"]].strip()
            assert text.endswith("."), text[-40:]
            sizes.append(len(text.split()))
        assert all(50 <= size <= 250 for size in sizes[:-1]) and sizes[-1] <= 250, sizes

    api(scenario)


def test_S8_messages_keep_one_line_per_turn(api: Door) -> None:
    """S8 messages are stored one line per turn, never a passage across two turns."""
    turns = [
        {"role": "user", "content": "Dana moved to Lisbon last spring."},
        {"role": "assistant", "content": "Noted: Dana lives in Lisbon."},
        {"role": "user", "content": "She works remotely for Acme."},
    ]

    async def scenario(via: Via) -> None:
        stored = await via.ok("remember", {"messages": turns})
        assert stored["passages"] == 3
        document = (await via.records("document"))[0]
        assert len(document["text"].splitlines()) == 3
        for passage in document["passages"]:
            assert "\n" not in document["text"][passage["start"] : passage["end"]].strip()

    api(scenario)


def test_S9_a_passage_mention_must_appear_in_its_text(door: Door) -> None:
    """S9 passages [{text, mentions}]: each mention must appear in its text, case aside, or the
    passage is refused by name and nothing is stored."""

    async def scenario(via: Via) -> None:
        bad = [{"text": "Omar likes chess.", "mentions": ["Omar"]}]
        bad.append({"text": "Lena plays go.", "mentions": ["Zed"]})
        reply = await via.refused("remember", {"passages": bad}, "mention_not_in_passage")
        assert "Zed" in reply["detail"]
        assert (await via.ok("recall", {"subject": "Omar"}))["state"] == "nothing_stored"
        good = [{"text": "omar likes chess.", "mentions": ["Omar"]}]
        await via.ok("remember", {"passages": good})
        assert (await via.ok("recall", {"subject": "Omar"}))["state"] == "answered"

    door(scenario)


def test_S10_content_and_passages_cannot_come_together(api: Door) -> None:
    """S10 `content` and `passages` cannot come together (refused; nothing stored)."""

    async def scenario(via: Via) -> None:
        passages_ = [{"text": "Omar likes chess.", "mentions": ["Omar"]}]
        body = {"content": "Omar likes chess.", "passages": passages_}
        await via.refused("remember", body, "invalid_input", "unprocessable")
        assert await via.records("document") == await via.records("entity") == []

    api(scenario)


def test_S11_facts_without_both_ends_store_nothing(door: Door) -> None:
    """S11 facts are stored at once; a relation without both ends is refused (facts_shape) and
    nothing of the call is stored."""

    async def scenario(via: Via) -> None:
        body = {
            "content": "Ann met Bo.",
            "facts": {
                "entities": [{"name": "Ann", "type": "person"}],
                "relations": [{"source": "Ann", "type": "met"}],
            },
        }
        await via.refused("remember", body, "facts_shape", status=422)
        assert (await via.ok("recall", {"subject": "Ann"}))["state"] == "nothing_stored"
        assert await via.records("document") == await via.records("entity") == []

    door(scenario)


def test_S12_text_without_facts_links_known_names(api: Door) -> None:
    """S12 without facts, passages are linked to entity names already known (extraction
    known_names_only) and the reply counts unlinked_passages."""

    async def scenario(via: Via) -> None:
        await via.ok("relate", {"from": "Ann", "to": "Acme", "type": "works_at"})
        linked = await via.ok("remember", {"content": "Ann shipped the billing release."})
        assert linked["extraction"] == "known_names_only" and linked["unlinked_passages"] == 0
        unlinked = await via.ok("remember", {"content": "Nobody known is named here."})
        assert unlinked["unlinked_passages"] == 1
        about = await via.ok("recall", {"subject": "Ann"})
        assert any("billing release" in p["text"] for p in passages(about))

    api(scenario)


def test_S13_the_same_call_with_the_same_date_stores_nothing(api: Door) -> None:
    """S13 storing the same thing with the same date again answers `already`, stores nothing
    and says so (entities_created 0, facts_created 0)."""

    async def scenario(via: Via) -> None:
        first = await priya(via, moved=False)
        again = await priya(via, moved=False)
        assert (first["outcome"], again["outcome"]) == ("stored", "already")
        assert (again["entities_created"], again["facts_created"]) == (0, 0)
        assert len(facts(await via.ok("recall", {"subject": "Priya"}))) == 1

    api(scenario)


def test_S14_the_source_label_comes_back_in_citations(api: Door) -> None:
    """S14 `source` is a provenance label returned in citations."""

    async def scenario(via: Via) -> None:
        await priya(via, moved=False)
        fact = facts(await via.ok("recall", {"subject": "Priya"}))[0]
        assert fact["citation"]["source"]["name"] == "hr-notes"

    api(scenario)


def test_S15_attributes_are_typed_and_decimals_keep_their_digits(http: Http) -> None:
    """S15 attributes are typed (string, integer, decimal kept as exact digits, boolean, date,
    lists as sets)."""
    raw = (
        b'{"scope": "team", "facts": {"entities": [{"name": "Acme", "attributes": {'
        b'"revenue": 12345678901234567.89, "staff": 120, "public": true, "founded": "1999-04-01",'
        b' "motto": "ship it", "tags": ["b2b", "saas", "b2b"]}}]}}'
    )
    assert http.post("/v1/memory/remember", raw=raw).status == 200
    about = http.ok("/v1/memory/recall", {"scope": SCOPE, "subject": "Acme"})
    values = next(item for item in about["items"] if item["kind"] == "entity")["attributes"]
    assert values["revenue"] == {"type": "decimal", "value": "12345678901234567.89"}
    assert values["staff"] == {"type": "integer", "value": 120}
    assert values["public"] == {"type": "boolean", "value": True}
    assert values["founded"] == {"type": "date", "value": "1999-04-01"}
    assert values["motto"] == {"type": "string", "value": "ship it"}
    assert values["tags"]["type"] == "list"
    assert sorted(v["value"] for v in values["tags"]["value"]) == ["b2b", "saas"]


def test_S16_a_later_attribute_value_replaces_the_current_one(api: Door) -> None:
    """S16 a later attribute value replaces the current one; the older stays readable with
    as_of."""

    async def scenario(via: Via) -> None:
        entity = {"name": "Acme", "attributes": {"ceo": "Ada"}}
        await via.ok("remember", {"facts": {"entities": [entity]}})
        before = (await via.ok("recall", {"subject": "Acme"}))["items"][0]
        entity = {"name": "Acme", "attributes": {"ceo": "Grace"}}
        await via.ok("remember", {"facts": {"entities": [entity]}})
        now = (await via.ok("recall", {"subject": "Acme"}))["items"][0]
        assert now["attributes"]["ceo"]["value"] == "Grace"
        stamp = (await via.records("entity"))[0]
        first = min(a["recorded_at"] for a in stamp["attributes"])
        then = (await via.ok("recall", {"subject": "Acme", "as_of": first}))["items"][0]
        assert then["attributes"]["ceo"]["value"] == before["attributes"]["ceo"]["value"] == "Ada"

    api(scenario)


def test_S17_per_call_limits_refuse_and_store_nothing(api: Door) -> None:
    """S17 limits per call (here 1000 entities) are refused by name and store nothing."""

    async def scenario(via: Via) -> None:
        many = [{"name": f"E{i}"} for i in range(1001)]
        await via.refused("remember", {"facts": {"entities": many}}, "limit_exceeded", status=413)
        assert await via.records("document") == await via.records("entity") == []

    api(scenario)
