"""Semurg's promises (../shared/spec/semurg.md), second part: recall about one entity, derived
facts, citations, time travel and context for a question, through the memory_* tools and the
/v1/memory/<verb> routes of ``--profile semurg``. See test_semurg.py for the first part."""

from __future__ import annotations

import itertools
import json

import pytest

from recuerdo.index.embed import load_embedder

from ..conftest import Server
from .conftest import (
    Http,
    Mcp,
    Seen,
    Servers,
    Tools,
    check_output_schemas,
    check_route_schemas,
)
from .semurg_doors import (
    PRIYA_TEXT,
    Door,
    Via,
    employers,
    entities,
    facts,
    found_by,
    passages,
    priya,
)

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


def test_S23_derived_facts_say_why(api: Door) -> None:
    """S23 a derived fact has direction `derived` and citation.found_by.reasoning naming the rule
    and the stored facts it rests on."""

    async def scenario(via: Via) -> None:
        await via.ok("relate", {"from": "Acme", "to": "Initech", "type": "owns"})
        found = facts(await via.ok("recall", {"subject": "Initech"}))
        derived = [f for f in found if f["derived"]]
        assert derived and all(f["direction"] == "derived" for f in derived), derived
        reasoning = found_by(derived[0]).get("reasoning")
        assert reasoning and "owns" in json.dumps(reasoning), derived[0]

    api(scenario)


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


def test_S25_a_span_quotes_the_supporting_sentence(api: Door) -> None:
    """S25 citation.span.text is the sentence that supports the fact, not the whole passage."""

    async def scenario(via: Via) -> None:
        await priya(via, moved=False)
        span = facts(await via.ok("recall", {"subject": "Priya"}))[0]["citation"]["span"]
        assert span["text"] == "Priya Raman joined Acme Corp in March 2021."
        assert PRIYA_TEXT[span["start"] : span["end"]] == span["text"]

    api(scenario)


# -- time --------------------------------------------------------------------------------------


def test_S26_as_of_hides_what_was_stored_later(api: Door) -> None:
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

    api(scenario)


def test_S27_valid_at_shows_what_was_true_then(api: Door) -> None:
    """S27 valid_at = what was TRUE at an instant: with relate's date, 2022 shows one employer
    (Acme) and 2024 the other (Globex)."""

    async def scenario(via: Via) -> None:
        await priya(via)
        in_2022 = await via.ok("recall", {"subject": "Priya", "valid_at": "2022-01-01"})
        in_2024 = await via.ok("recall", {"subject": "Priya", "valid_at": "2024-01-01"})
        assert employers(in_2022) == ["Acme Corp"]
        assert employers(in_2024) == ["Globex"]

    api(scenario)


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


@pytest.mark.skipif(load_embedder() is None, reason="no embedding model installed")
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


def test_S35_relate_creates_new_entities(api: Door) -> None:
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

    api(scenario)


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


def test_S62_context_walks_hops_steps(api: Door) -> None:
    """S62 memory_context walks the graph `hops` steps out from the seeds (0..3, default 2)."""

    async def scenario(via: Via) -> None:
        for a, b in (("Ann", "Bo"), ("Bo", "Cy"), ("Cy", "Di")):
            await via.ok("relate", {"from": a, "to": b, "type": "mentors"})

        async def reached(**extra: int) -> set[str]:
            answer = await via.ok("context", {"query": "Ann", **extra})
            return {f"{f['subject']}>{f['object']}" for f in facts(answer) if not f["derived"]}

        assert await reached(hops=1) == {"Ann>Bo"}
        assert await reached() == {"Ann>Bo", "Bo>Cy"}
        assert await reached(hops=3) == {"Ann>Bo", "Bo>Cy", "Cy>Di"}

    api(scenario)


def test_X5_semurg_replies_are_typed(mcp: Mcp, server: Server, seen: Seen) -> None:
    """X5 typed results: every memory_* tool publishes an outputSchema and every /v1/memory/<verb>
    route a 200 response schema; every reply this module saw validates against them."""

    async def scenario(tools: Tools) -> None:
        await check_output_schemas(tools, seen)

    mcp(scenario)
    check_route_schemas(server, seen, "/v1/memory/")
