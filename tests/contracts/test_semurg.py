"""Semurg's promises (../shared/spec/semurg.md, semurg-tools.json): remembering, recall and
context, time, citations and derived facts, kept by ``--profile semurg``.

Driven as Semurg's clients drive it: the memory_* MCP tools (official client, /mcp of
``recuerdo serve --profile semurg``) and the ``POST /v1/memory/<verb>`` routes. Promises that
concern both doors run through each (the ``door`` fixture); the others through HTTP. Forgetting,
export and import, status, documents, refusals and the doors are in test_semurg_lifecycle.py.
"""

from __future__ import annotations

import base64
import itertools
import json

import pytest

from recuerdo.retrieval.embed import configured_embedder

from ..conftest import ROOT, Server
from .conftest import (
    Http,
    Json,
    Mcp,
    Seen,
    Servers,
    Tools,
    check_output_schemas,
    check_route_schemas,
)
from .semurg_doors import (
    PRIYA_TEXT,
    SCOPE,
    Door,
    Via,
    employers,
    entities,
    facts,
    found_by,
    passages,
    priya,
)

STATES = {"answered", "nothing_stored", "could_not_judge"}
GROUNDING = {"grounded", "grounded_by_meaning", "related", "uncited", "nothing_stored"}
GROUNDING |= {"could_not_judge"}


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
    return {name: tool for name, tool in tools.items() if name.startswith("memory_")}


def test_S1_every_memory_tool_keeps_its_published_parameters(mcp: Mcp) -> None:
    """S1 every memory_* tool of Semurg's published client is listed with every one of its
    parameters, the same required ones and the same read-only / destructive annotations."""
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
        assert not problems, problems

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
        assert not wrong, wrong

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


def test_S13_the_same_call_with_the_same_date_stores_nothing(door: Door) -> None:
    """S13 storing the same thing with the same date again answers `already`, stores nothing
    and says so (entities_created 0, facts_created 0)."""

    async def scenario(via: Via) -> None:
        first = await priya(via, moved=False)
        again = await priya(via, moved=False)
        assert (first["outcome"], again["outcome"]) == ("stored", "already")
        assert (again["entities_created"], again["facts_created"]) == (0, 0)
        assert len(facts(await via.ok("recall", {"subject": "Priya"}))) == 1

    door(scenario)


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


# -- recall ------------------------------------------------------------------------------------


def test_S18_entity_names_match_by_spelling_case_word_and_prefix(api: Door) -> None:
    """S18 recall finds an entity by exact name, letter case, a close spelling (Dan -> Dana), one
    whole word of a longer name (Priya -> Priya Raman) or a word prefix (Pri); small English
    words never seed alone; type words seed the type's members."""

    async def scenario(via: Via) -> None:
        people = [{"name": n, "type": "person"} for n in ("Priya Raman", "Dana")]
        firms = [{"name": n, "type": "company"} for n in ("Acme", "Globex")]
        await via.ok("remember", {"facts": {"entities": people + firms}})
        for query, expected in [
            ("Priya Raman", ["Priya Raman"]),
            ("priya raman", ["Priya Raman"]),
            ("Priya", ["Priya Raman"]),
            ("Pri", ["Priya Raman"]),
            ("Dan", ["Dana"]),
            ("Dnaa", ["Dana"]),
            ("which companies", ["Acme", "Globex"]),
        ]:
            found = await via.ok("recall", {"subject": query})
            assert sorted(entities(found)) == expected, query
        for small in ("the", "of", "is", "who", "tell me about"):
            assert (await via.ok("recall", {"subject": small}))["state"] == "nothing_stored"

    api(scenario)


def test_S19_facts_come_back_in_both_directions_with_their_seed(api: Door) -> None:
    """S19 facts come back in both directions (outbound / inbound) with the seed that found
    them."""

    async def scenario(via: Via) -> None:
        await via.ok("relate", {"from": "Ann", "to": "Acme", "type": "works_at"})
        await via.ok("relate", {"from": "Bo", "to": "Ann", "type": "mentors"})
        found = facts(await via.ok("recall", {"subject": "Ann"}))
        stored = {(f["subject"], f["relation"], f["direction"], f["seed"]) for f in found}
        assert ("Ann", "works_at", "outbound", "Ann") in stored
        assert ("Bo", "mentors", "inbound", "Ann") in stored

    api(scenario)


def test_S20_k_caps_what_recall_returns(api: Door) -> None:
    """S20 `k` caps how many facts and passages come back."""

    async def scenario(via: Via) -> None:
        for i in range(6):
            await via.ok("relate", {"from": "Ann", "to": f"Project {i}", "type": "leads"})
        assert len(facts(await via.ok("recall", {"subject": "Ann"}))) == 6
        capped = await via.ok("recall", {"subject": "Ann", "k": 2})
        assert len(facts(capped)) + len(passages(capped)) <= 2

    api(scenario)


@pytest.mark.parametrize(
    ("stored", "subject", "derived"),
    [
        (("Ann", "married_to", "Bo"), "Bo", ("Bo", "married_to", "Ann")),
        (("Ann", "sibling_of", "Cy"), "Cy", ("Cy", "sibling_of", "Ann")),
        (("Acme", "owns", "Initech"), "Initech", ("Initech", "owned_by", "Acme")),
        (("Ann", "parent_of", "Dee"), "Dee", ("Dee", "child_of", "Ann")),
        (("Acme", "employs", "Ann"), "Ann", ("Ann", "employed_by", "Acme")),
    ],
)
def test_S21_symmetric_and_inverse_relations_are_derived(
    api: Door, stored: tuple[str, str, str], subject: str, derived: tuple[str, str, str]
) -> None:
    """S21 derived facts are not stored: symmetric relations and inverse pairs follow from a
    stored fact, marked derived with the rule and the facts they rest on."""

    async def scenario(via: Via) -> None:
        await via.ok("relate", {"from": stored[0], "to": stored[2], "type": stored[1]})
        found = facts(await via.ok("recall", {"subject": subject}))
        match = [f for f in found if (f["subject"], f["relation"], f["object"]) == derived]
        assert len(match) == 1 and match[0]["derived"] is True, found
        assert match[0]["rule"] and match[0]["rests_on"]
        assert len(await via.records("fact")) == 1

    api(scenario)


def test_S22_transitive_relations_derive_up_to_six_links(api: Door) -> None:
    """S22 transitive relations (part_of, located_in, contained_in) derive up to 6 links."""

    async def scenario(via: Via) -> None:
        chain = [f"N{i}" for i in range(8)]
        pairs = itertools.pairwise(chain)
        links = [{"source": a, "target": b, "type": "part_of"} for a, b in pairs]
        await via.ok("remember", {"facts": {"relations": links}})
        found = facts(await via.ok("recall", {"subject": "N0"}))
        reached = {f["object"] for f in found if f["subject"] == "N0" and f["derived"]}
        assert reached == {f"N{i}" for i in range(2, 7)}

    api(scenario)


def test_S23_derived_facts_say_why(door: Door) -> None:
    """S23 a derived fact has direction `derived` and citation.found_by.reasoning naming the rule
    and the stored facts it rests on."""

    async def scenario(via: Via) -> None:
        await via.ok("relate", {"from": "Acme", "to": "Initech", "type": "owns"})
        found = facts(await via.ok("recall", {"subject": "Initech"}))
        derived = [f for f in found if f["derived"]]
        assert derived and all(f["direction"] == "derived" for f in derived), derived
        reasoning = found_by(derived[0]).get("reasoning")
        assert reasoning and "owns" in json.dumps(reasoning), derived[0]

    door(scenario)


# -- citations ---------------------------------------------------------------------------------


def test_S24_a_citation_names_its_document_and_span(api: Door) -> None:
    """S24 citation.source {kind, doc_id, name, ingested_at}; citation.span {text, start, end}
    in code points of the document's full text, verified; citation.found_by."""

    async def scenario(via: Via) -> None:
        text = "Ünïcödé first. " + PRIYA_TEXT
        body = {"content": text, "source": "hr-notes"}
        relation = {"source": "Priya Raman", "target": "Acme Corp", "type": "works_at"}
        stored = await via.ok("remember", {**body, "facts": {"relations": [relation]}})
        fact = facts(await via.ok("recall", {"subject": "Priya"}))[0]
        citation = fact["citation"]
        assert citation["source"]["kind"] == "document"
        assert citation["source"]["doc_id"] == stored["doc_id"]
        assert citation["source"]["name"] == "hr-notes" and citation["source"]["ingested_at"]
        span = citation["span"]
        assert text[span["start"] : span["end"]] == span["text"]
        assert citation["span_state"] == "verified" and citation["found_by"]

    api(scenario)


def test_S25_a_span_quotes_the_supporting_sentence(door: Door) -> None:
    """S25 citation.span.text is the sentence that supports the fact, not the whole passage."""

    async def scenario(via: Via) -> None:
        await priya(via, moved=False)
        span = facts(await via.ok("recall", {"subject": "Priya"}))[0]["citation"]["span"]
        assert span["text"] == "Priya Raman joined Acme Corp in March 2021."
        assert PRIYA_TEXT[span["start"] : span["end"]] == span["text"]

    door(scenario)


# -- time --------------------------------------------------------------------------------------


def test_S26_as_of_hides_what_was_stored_later(door: Door) -> None:
    """S26 as_of = what was KNOWN at an instant: facts, passages and entities stored later are
    invisible."""

    async def scenario(via: Via) -> None:
        await priya(via, moved=False)
        known = facts(await via.ok("recall", {"subject": "Priya"}))[0]["recorded_at"]
        await via.ok("remember", {"content": "Priya Raman moved to Globex in Berlin."})
        await via.ok("relate", {"from": "Priya Raman", "to": "Globex", "type": "works_at"})
        then = await via.ok("recall", {"subject": "Priya", "as_of": known})
        assert employers(then) == ["Acme Corp"]
        assert not any("Berlin" in p["text"] for p in passages(then))
        later = await via.ok("recall", {"subject": "Globex", "as_of": known})
        assert later["state"] == "nothing_stored", later
        before = await via.ok("context", {"query": "Priya Raman", "as_of": "2020-01-01"})
        assert before["state"] == "nothing_stored", before

    door(scenario)


def test_S27_valid_at_shows_what_was_true_then(door: Door) -> None:
    """S27 valid_at = what was TRUE at an instant: with relate's date, 2022 shows one employer
    (Acme) and 2024 the other (Globex)."""

    async def scenario(via: Via) -> None:
        await priya(via)
        in_2022 = await via.ok("recall", {"subject": "Priya", "valid_at": "2022-01-01"})
        in_2024 = await via.ok("recall", {"subject": "Priya", "valid_at": "2024-01-01"})
        assert employers(in_2022) == ["Acme Corp"]
        assert employers(in_2024) == ["Globex"]

    door(scenario)


def test_S28_replaces_ends_the_other_targets_kept_in_history(api: Door) -> None:
    """S28 a relation stored with `replaces` ends the subject's other targets of that type; they
    stay readable in history (state ended, ended_at, replaced_by)."""

    async def scenario(via: Via) -> None:
        await priya(via)
        now = facts(await via.ok("recall", {"subject": "Priya"}))
        current = [f for f in now if f["relation"] == "works_at" and f["state"] == "current"]
        assert [f["object"] for f in current] == ["Globex"]
        acme = next(r for r in await via.records("fact") if r["object"] == "Acme Corp")
        assert acme["state"] == "ended" and acme["ended_at"] and acme["replaced_by"]

    api(scenario)


# -- context -----------------------------------------------------------------------------------


def test_S29_context_answers_with_current_cited_facts_first(door: Door) -> None:
    """S29 memory_context answers {state, meaning, facts, seeds, passages, grounding}: "where
    does Priya work?" gets the current Globex fact first, with its citation; the ended Acme fact
    is left out."""

    async def scenario(via: Via) -> None:
        await priya(via)
        answer = await via.ok("context", {"query": "where does Priya work?"})
        for field in ("state", "meaning", "facts", "seeds", "passages", "grounding"):
            assert field in answer, field
        assert answer["state"] == "answered"
        first = answer["facts"][0]
        assert (first["subject"], first["relation"], first["object"]) == (
            "Priya Raman",
            "works_at",
            "Globex",
        )
        assert all("citation" in fact for fact in answer["facts"])
        assert "Acme Corp" not in employers(answer)
        assert "Priya Raman" in json.dumps(answer["seeds"])
        assert any("billing team" in p["text"] for p in answer["passages"])
        assert answer["grounding"]["state"] in GROUNDING

    door(scenario)


def test_S30_context_k_caps_facts_and_passages(api: Door) -> None:
    """S30 memory_context's k caps the facts and passages returned (default 8)."""

    async def scenario(via: Via) -> None:
        await priya(via)
        for i in range(10):
            await via.ok("relate", {"from": "Priya Raman", "to": f"Team {i}", "type": "leads"})
        default = await via.ok("context", {"query": "Priya"})
        assert len(default["facts"]) + len(default["passages"]) == 8
        one = await via.ok("context", {"query": "Priya", "k": 1})
        assert len(one["facts"]) + len(one["passages"]) == 1

    api(scenario)


def test_S31_context_shows_ended_facts_only_when_asked(api: Door) -> None:
    """S31 an ended fact appears in context only when as_of / valid_at ask for it."""

    async def scenario(via: Via) -> None:
        await priya(via)
        now = await via.ok("context", {"query": "Priya works"})
        then = await via.ok("context", {"query": "Priya works", "valid_at": "2022-01-01"})
        assert employers(now) == ["Globex"]
        assert employers(then) == ["Acme Corp"]

    api(scenario)


@pytest.mark.parametrize(
    ("query", "grounding", "uncovered"),
    [
        ("Priya billing team", "grounded", []),
        ("Priya billing budget", "related", ["budget"]),
        ("quantum chromodynamics", "nothing_stored", None),
    ],
)
def test_S32_context_says_how_grounded_it_is(
    api: Door, query: str, grounding: str, uncovered: list[str] | None
) -> None:
    """S32 context's grounding: grounded, related (sharing only some words: the `uncovered`
    words listed), nothing_stored."""

    async def scenario(via: Via) -> None:
        await priya(via, moved=False)
        answer = await via.ok("context", {"query": query})
        assert answer["grounding"]["state"] == grounding, answer["grounding"]
        if uncovered is not None and grounding == "related":
            assert answer["grounding"]["uncovered"] == uncovered

    api(scenario)


@pytest.mark.skipif(configured_embedder() is None, reason="no embedding model installed")
def test_S33_context_grounded_by_meaning(api: Door) -> None:
    """S33 a question that shares no word with memory but its meaning is grounded_by_meaning."""

    async def scenario(via: Via) -> None:
        text = "The automobile needs new brake pads before winter."
        await via.ok("remember", {"content": text})
        answer = await via.ok("context", {"query": "vehicle repair"})
        assert answer["grounding"]["state"] == "grounded_by_meaning", answer

    api(scenario)


@pytest.mark.parametrize("verb", ["recall", "context"])
def test_S34_compact_returns_each_item_once_in_fewer_bytes(api: Door, verb: str) -> None:
    """S34 compact: true returns each item once, without diagnostics, in fewer bytes."""

    async def scenario(via: Via) -> None:
        await priya(via)
        ask = {"subject": "Priya"} if verb == "recall" else {"query": "Priya Raman"}
        full = await via.ok(verb, ask)
        small = await via.ok(verb, {**ask, "compact": True})
        assert len(json.dumps(small)) < len(json.dumps(full))
        items = small.get("items") or small["facts"] + small["passages"]
        keys = [json.dumps(item, sort_keys=True) for item in items]
        assert len(keys) == len(set(keys))

    api(scenario)


def test_S35_relate_creates_new_entities(door: Door) -> None:
    """S35 memory_relate adds one typed edge; entities that are new are created."""

    async def scenario(via: Via) -> None:
        made = await via.ok("relate", {"from": "Ann", "to": "Bo", "type": "mentors"})
        assert made["facts_created"] == 1 and made["entities_created"] == 2
        again = await via.ok("relate", {"from": "Ann", "to": "Cy", "type": "mentors"})
        assert again["entities_created"] == 1
        assert sorted(f["object"] for f in facts(await via.ok("recall", {"subject": "Ann"}))) == [
            "Bo",
            "Cy",
        ]

    door(scenario)


def test_S36_an_attribute_lookup_finds_its_entity(door: Door) -> None:
    """S36 memory_recall follows semurg-tools.json: an `attribute` lookup {key, value} (no
    subject) finds the entity and returns the attribute's current value."""

    async def scenario(via: Via) -> None:
        for level in ("senior", "principal"):
            entity = {"name": "Priya Raman", "type": "person", "attributes": {"level": level}}
            await via.ok("remember", {"facts": {"entities": [entity]}})
        found = await via.ok("recall", {"attribute": {"key": "level", "value": "principal"}})
        assert entities(found) == ["Priya Raman"]
        item = next(i for i in found["items"] if i["kind"] == "entity")
        assert item["attributes"]["level"]["value"] == "principal"
        none = await via.ok("recall", {"attribute": {"key": "level", "value": "junior"}})
        assert none["state"] == "nothing_stored"

    door(scenario)


def test_X5_semurg_replies_are_typed(mcp: Mcp, server: Server, seen: Seen) -> None:
    """X5 typed results: every memory_* tool publishes an outputSchema and every /v1/memory/<verb>
    route a 200 response schema; every reply this module saw validates against them."""

    async def scenario(tools: Tools) -> None:
        await check_output_schemas(tools, seen)

    mcp(scenario)
    check_route_schemas(server, seen, "/v1/memory/")
