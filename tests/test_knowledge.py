"""Knowledge: facts without a model, seeding, derived facts, time travel, citations."""

from __future__ import annotations

import itertools
import re
import sys
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import recuerdo
from recuerdo.graph.remember import named_in
from recuerdo.store.sqlite import sqlite3

from .conftest import settled_dump

TEXT = (
    "Priya Raman joined Acme Corp in March 2021. She works with Dana on the billing team. "
    "Acme Corp is located in Lisbon."
)


def people(memory: recuerdo.Memory, scope: str = "user") -> dict:  # type: ignore[type-arg]
    return memory.remember_knowledge(
        TEXT,
        scope=scope,
        date="2021-03-01",
        source="hr-notes",
        facts={
            "entities": [
                {
                    "name": "Priya Raman",
                    "type": "person",
                    "attributes": {
                        "salary": Decimal("120000.50"),
                        "start": "2021-03-01",
                        "skills": ["sql", "go", "sql"],
                    },
                },
                {"name": "Dana", "type": "person"},
                {"name": "Acme Corp", "type": "company"},
                {"name": "Globex", "type": "company"},
            ],
            "relations": [
                {"source": "Priya Raman", "target": "Acme Corp", "type": "works_at"},
                {"source": "Dana", "target": "Priya Raman", "type": "manages"},
            ],
        },
    )


def test_remember_reports_what_it_stored(memory: recuerdo.Memory) -> None:
    reply = people(memory)
    assert reply["outcome"] == "stored" and reply["extraction"] == "agent_facts"
    assert (reply["entities_created"], reply["facts_created"]) == (4, 2)
    assert reply["model_extraction"] == "not_installed" and reply["unlinked_passages"] == 0
    again = people(memory)
    assert again["outcome"] == "already" and again["doc_id"] == reply["doc_id"]
    created = ("entities_created", "facts_created", "facts_replaced", "attributes_changed")
    assert [again[name] for name in created] == [0, 0, 0, 0]
    assert memory.status("user")["ontology"]["facts"] == 2


def test_relation_ends_resolve_once_per_name_in_a_batch(memory: recuerdo.Memory) -> None:
    """Names are matched folded (case, spacing): a batch that names one new entity several
    ways creates it once, and a name stored earlier is reused, not duplicated."""
    memory.remember_knowledge(facts={"entities": [{"name": "Acme Corp"}]}, scope="s")
    reply = memory.remember_knowledge(
        facts={
            "relations": [
                {"source": "Nadia Okafor", "target": "acme corp", "type": "works_at"},
                {"source": "NADIA  okafor", "target": "Lisbon", "type": "located_in"},
                {"source": "Lisbon", "target": "Acme  Corp", "type": "knows"},
            ]
        },
        scope="s",
    )
    assert (reply["entities_created"], reply["facts_created"]) == (2, 3)
    status = memory.status("s")["ontology"]
    assert (status["entities"], status["facts"]) == (3, 3)
    items = memory.about("Nadia Okafor", scope="s", hops=1)["items"]
    assert {i["object"] for i in items if i["kind"] == "fact"} == {"Acme Corp", "Lisbon"}


relation_batches = st.lists(
    st.tuples(
        st.sampled_from(["Ana", "ana", "Bo", "Cy Ng", "cy  ng", "Dee"]),
        st.sampled_from(["Ana", "Bo", "BO", "Cy Ng", "Dee"]),
        st.sampled_from(["knows", "works_at", "Knows"]),
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=40, deadline=None)
@given(first=relation_batches, second=relation_batches)
def test_batches_of_facts_match_a_naive_model(
    first: list[tuple[str, str, str]], second: list[tuple[str, str, str]]
) -> None:
    """Names fold (case, spacing), relation spellings normalise, a fact current already or
    repeated within the batch is stored once, and the counts say so."""

    def fold(name: str) -> str:
        return " ".join(name.casefold().split())

    names: set[str] = set()
    stored: set[tuple[str, str, str]] = set()
    with recuerdo.open("bulk", in_memory=True) as mem:
        for batch in (first, second):
            reply = mem.remember_knowledge(
                facts={"relations": [{"source": a, "target": b, "type": t} for a, b, t in batch]}
            )
            ends = {fold(n) for a, b, _ in batch for n in (a, b)}
            triples = [(fold(a), t.lower(), fold(b)) for a, b, t in batch]
            # The same call again (once relation spellings are normalised) is answered from the
            # first; names are kept as written, so only exact repeats count.
            repeat = batch is second and [(a, t.lower(), b) for a, b, t in first] == [
                (a, t.lower(), b) for a, b, t in second
            ]
            assert (reply["outcome"] == "already") == repeat
            if repeat:
                continue
            new = set(triples) - stored
            assert reply["entities_created"] == len(ends - names)
            assert (reply["facts_created"], reply["facts_existing"]) == (
                len(new),
                len(triples) - len(new),
            )
            names |= ends
            stored |= new
        with mem._store.read() as tx:
            rows = tx.all(
                "SELECT s.folded AS s, f.relation AS r, o.folded AS o FROM facts f"
                " JOIN entities s ON s.id = f.subject_id JOIN entities o ON o.id = f.object_id"
            )
        assert sorted((r["s"], r["r"], r["o"]) for r in rows) == sorted(stored)


@pytest.mark.parametrize(
    ("asked", "found", "how"),
    [
        ("Priya", "Priya Raman", "word"),
        ("priya raman", "Priya Raman", "case"),
        ("Priya Raman", "Priya Raman", "exact"),
        ("Pri", "Priya Raman", "prefix"),
        ("Dan", "Dana", "prefix"),
        ("Dsna", "Dana", "close"),
    ],
)
def test_seeding_by_name(memory: recuerdo.Memory, asked: str, found: str, how: str) -> None:
    people(memory)
    reply = memory.about(asked)
    assert reply["state"] == "answered"
    assert {(s["name"], s["how"]) for s in reply["seeding"]} >= {(found, how)}


def test_type_words_and_stop_words(memory: recuerdo.Memory) -> None:
    people(memory)
    seeded = {s["name"] for s in memory.about("which companies")["seeding"]}
    assert seeded == {"Acme Corp", "Globex"}
    assert memory.about("tell me about")["state"] == "nothing_stored"


def test_facts_both_directions_with_citations(memory: recuerdo.Memory) -> None:
    people(memory)
    items = memory.about("Priya Raman")["items"]
    facts = {(i["subject"], i["relation"], i["object"]): i for i in items if i["kind"] == "fact"}
    works = facts[("Priya Raman", "works_at", "Acme Corp")]
    assert works["direction"] == "outbound" and works["derived"] is False
    managed = facts[("Dana", "manages", "Priya Raman")]
    assert managed["direction"] == "inbound"
    citation = works["citation"]
    assert citation["source"]["kind"] == "document" and citation["source"]["name"] == "hr-notes"
    assert citation["span_state"] == "verified"
    span = citation["span"]
    assert TEXT[span["start"] : span["end"]] == span["text"] and "Acme Corp" in span["text"]
    assert citation["found_by"] == {"stage": "graph", "seed": "Priya Raman", "hop": 1}
    [entity] = [i for i in items if i["kind"] == "entity"]
    assert entity["types"] == ["person"]
    assert entity["attributes"]["salary"] == {"type": "decimal", "value": "120000.50"}
    assert entity["attributes"]["start"] == {"type": "date", "value": "2021-03-01"}
    assert entity["attributes"]["skills"] == {
        "type": "list",
        "value": [{"type": "string", "value": "go"}, {"type": "string", "value": "sql"}],
    }


def test_tampered_text_gives_no_quote(file_memory: recuerdo.Memory) -> None:
    reply = people(file_memory)
    conn = sqlite3.connect(file_memory.location)
    conn.execute(
        "UPDATE items SET content = replace(content, 'Acme', 'Acne') WHERE id = ?",
        (reply["doc_id"],),
    )
    conn.commit()
    conn.close()
    items = file_memory.about("Priya Raman")["items"]
    works = next(i for i in items if i.get("relation") == "works_at")
    assert works["citation"]["span"] is None and works["citation"]["span_state"] == "mismatch"
    passages = [i for i in items if i["kind"] == "passage"]
    assert passages and all(p["citation"]["span"] is None for p in passages)


@pytest.mark.parametrize(
    ("relation", "stored", "asked", "expected", "rule"),
    [
        ("married_to", ("Ann", "Bob"), "Bob", ("Bob", "married_to", "Ann"), "symmetric"),
        ("sibling_of", ("Ann", "Cid"), "Cid", ("Cid", "sibling_of", "Ann"), "symmetric"),
        ("spouse_of", ("Ann", "Bob"), "Bob", ("Bob", "spouse_of", "Ann"), "symmetric"),
        ("parent_of", ("Ann", "Cid"), "Cid", ("Cid", "child_of", "Ann"), "inverse of parent_of"),
        ("child_of", ("Cid", "Ann"), "Ann", ("Ann", "parent_of", "Cid"), "inverse of child_of"),
        ("owns", ("Ann", "Boat"), "Boat", ("Boat", "owned_by", "Ann"), "inverse of owns"),
        ("employs", ("Acme", "Ann"), "Ann", ("Ann", "employed_by", "Acme"), "inverse of employs"),
        ("manages", ("Ann", "Bob"), "Bob", ("Bob", "managed_by", "Ann"), "inverse of manages"),
    ],
)
def test_symmetric_and_inverse_rules(
    memory: recuerdo.Memory,
    relation: str,
    stored: tuple[str, str],
    asked: str,
    expected: tuple[str, str, str],
    rule: str,
) -> None:
    memory.relate(stored[0], stored[1], relation)
    items = memory.about(asked)["items"]
    [derived] = [i for i in items if i["kind"] == "fact" and i["derived"]]
    assert (derived["subject"], derived["relation"], derived["object"]) == expected
    assert derived["rule"] == rule and len(derived["rests_on"]) == 1
    stored_fact = next(i for i in items if i["kind"] == "fact" and not i["derived"])
    assert derived["rests_on"] == [stored_fact["id"]]


@pytest.mark.parametrize("relation", ["part_of", "located_in", "contained_in"])
def test_transitive_rules_up_to_six_links(memory: recuerdo.Memory, relation: str) -> None:
    chain = ["Room", "Floor", "Building", "Street", "District", "City", "Country", "Continent"]
    for a, b in itertools.pairwise(chain):
        memory.relate(a, b, relation)
    items = memory.about("Room", hops=1, k=100)["items"]
    derived = {i["object"]: i for i in items if i["kind"] == "fact" and i["derived"]}
    assert set(derived) == {"Building", "Street", "District", "City", "Country"}
    assert derived["Country"]["rule"] == "transitive (6 links)"
    assert len(derived["Country"]["rests_on"]) == 6
    assert "Continent" not in derived  # seven links is beyond the rule
    around_city = [
        i
        for i in memory.about("City", hops=1, k=100)["items"]
        if i["kind"] == "fact" and i["derived"]
    ]
    assert all(i["direction"] == "derived" for i in around_city)
    assert {i["subject"] for i in around_city if i["object"] == "City"} == {
        "Room",
        "Floor",
        "Building",
        "Street",
    }
    assert {i["object"] for i in around_city if i["subject"] == "City"} == {"Continent"}


def test_replaces_and_time_travel(memory: recuerdo.Memory) -> None:
    memory.relate("Priya", "Acme", "works_at", date="2020-01-01")
    before_move = memory.about("Priya")["items"][1]["recorded_at"]
    memory.relate("Priya", "Globex", "works_at", replaces=True, date="2023-06-01")
    now = [(i["object"], i["state"]) for i in memory.about("Priya")["items"] if i["kind"] == "fact"]
    assert now == [("Globex", "current")]
    then_true = [
        i["object"]
        for i in memory.about("Priya", valid_at="2022-01-01")["items"]
        if i["kind"] == "fact"
    ]
    assert then_true == ["Acme"]
    later_true = [
        i["object"]
        for i in memory.about("Priya", valid_at="2024-01-01")["items"]
        if i["kind"] == "fact"
    ]
    assert later_true == ["Globex"]
    known_then = [
        i["object"]
        for i in memory.about("Priya", as_of=before_move)["items"]
        if i["kind"] == "fact"
    ]
    assert known_then == ["Acme"]
    ended = next(
        i for i in memory.about("Priya", valid_at="2022-01-01")["items"] if i["kind"] == "fact"
    )
    assert ended["state"] == "ended" and ended["valid_to"].startswith("2023-06-01")
    assert ended["replaced_by"] is not None


def test_attribute_history_with_as_of(memory: recuerdo.Memory) -> None:
    memory.remember_knowledge(facts={"entities": [{"name": "Acme", "attributes": {"size": 10}}]})
    first = memory.about("Acme")["items"][0]["attributes"]["size"]
    stamp = memory.status()["scopes"]  # any read between the writes
    assert stamp
    memory.remember_knowledge(facts={"entities": [{"name": "Acme", "attributes": {"size": 12}}]})
    assert first == {"type": "integer", "value": 10}
    assert memory.about("Acme")["items"][0]["attributes"]["size"]["value"] == 12


def test_passages_link_known_names_without_facts(memory: recuerdo.Memory) -> None:
    people(memory)
    reply = memory.remember_knowledge(
        "Dana shipped the invoice service. Nothing else here.", date="2021-04-01"
    )
    assert reply["extraction"] == "known_names_only" and reply["unlinked_passages"] == 0
    passages = [i for i in memory.about("Dana")["items"] if i["kind"] == "passage"]
    assert any("invoice service" in p["text"] for p in passages)
    lonely = memory.remember_knowledge("The weather was nice.")
    assert lonely["unlinked_passages"] == 1


@pytest.mark.parametrize(
    ("kwargs", "error", "code"),
    [
        (
            {"facts": {"relations": [{"source": "A", "type": "knows"}]}},
            recuerdo.FactsShape,
            "facts_shape",
        ),
        ({"facts": {"entities": [{"type": "x"}]}}, recuerdo.FactsShape, "facts_shape"),
        ({"facts": {"people": []}}, recuerdo.FactsShape, "facts_shape"),
        (
            {"passages": [{"text": "Ann met Bob.", "mentions": ["Carl"]}]},
            recuerdo.MentionNotInPassage,
            "mention_not_in_passage",
        ),
        ({"content": "a", "passages": [{"text": "b"}]}, recuerdo.InvalidInput, "invalid_input"),
        (
            {"facts": {"entities": [{"name": f"e{i}"} for i in range(1001)]}},
            recuerdo.LimitExceeded,
            "limit_exceeded",
        ),
        ({}, recuerdo.InvalidInput, "invalid_input"),
    ],
)
def test_refusals_store_nothing(
    file_memory: recuerdo.Memory,
    kwargs: dict,  # type: ignore[type-arg]
    error: type[recuerdo.RecuerdoError],
    code: str,
) -> None:
    people(file_memory)
    before = settled_dump(file_memory)
    with pytest.raises(error) as caught:
        file_memory.remember_knowledge(**kwargs)
    assert caught.value.code == code
    assert settled_dump(file_memory) == before


def test_context_is_seeded_by_the_graph_and_grounded(memory: recuerdo.Memory) -> None:
    people(memory)
    memory._upkeep.drain()
    reply = memory.context("What does Priya do at Acme?")
    assert reply["state"] == "answered" and "Priya Raman joined Acme Corp" in reply["context"]
    assert reply["grounding"]["state"] in ("grounded", "related")
    hits = memory.search("Priya")["results"]
    assert "graph" in hits[0]["found_by"]


def test_scopes_never_meet(memory: recuerdo.Memory) -> None:
    people(memory, scope="team-a")
    memory._upkeep.drain()
    assert memory.about("Priya", scope="team-b")["state"] == "nothing_stored"
    assert memory.search("Priya", scope="team-b")["results"] == []
    assert memory.context("Priya Raman", scope="team-b")["sources"] == []
    assert memory.export(scope="team-b")["records"][1:] == []
    assert memory.status("team-b")["ontology"]["entities"] == 0
    with pytest.raises(recuerdo.UnknownName):
        memory.forget_knowledge("team-b", subject="Priya Raman")
    assert memory.about("Priya", scope="team-a")["state"] == "answered"


def test_a_citation_quotes_the_sentence_that_supports_the_fact(memory: recuerdo.Memory) -> None:
    people(memory)
    facts = {i["relation"]: i for i in memory.about("Priya Raman")["items"] if i["kind"] == "fact"}
    span = facts["works_at"]["citation"]["span"]
    assert span["text"] == "Priya Raman joined Acme Corp in March 2021."
    assert TEXT[span["start"] : span["end"]] == span["text"]


def test_derived_facts_say_why(memory: recuerdo.Memory) -> None:
    """A derived fact's direction is derived; found_by.reasoning names the rule and the stored
    facts it rests on, in a sentence."""
    memory.relate("Acme", "Initech", "owns")
    items = memory.about("Initech")["items"]
    stored = next(i for i in items if i["kind"] == "fact" and not i["derived"])
    [derived] = [i for i in items if i["kind"] == "fact" and i["derived"]]
    assert derived["direction"] == "derived" and stored["direction"] == "inbound"
    reasoning = derived["citation"]["found_by"]["reasoning"]
    assert reasoning["rule"] == "inverse of owns"
    assert reasoning["rests_on"] == [
        {"id": stored["id"], "subject": "Acme", "relation": "owns", "object": "Initech"}
    ]
    assert reasoning["says"].startswith("Acme owns Initech, so Initech owned_by Acme")


@pytest.mark.parametrize("asked", [1.8, Decimal("1.8"), Decimal("1.800"), "1.80"])
def test_a_decimal_attribute_is_found_by_its_value(memory: recuerdo.Memory, asked: Any) -> None:
    """A decimal keeps its digits ("1.80") and is found by its value: 1.8 asked missed it (the
    CLI reads 1.80 as an exact decimal since 0113; a review of the CLI)."""
    entity = {"name": "Priya Raman", "attributes": {"height": Decimal("1.80")}}
    memory.remember_knowledge(facts={"entities": [entity]})
    query = (
        {"key": "height", "value": asked, "type": "decimal"}
        if isinstance(asked, str)
        else {"key": "height", "value": asked}
    )
    found = memory.about(attribute=query)
    assert [i["name"] for i in found["items"] if i["kind"] == "entity"] == ["Priya Raman"]
    assert memory.about(attribute={"key": "height", "value": 1.81})["state"] == "nothing_stored"
    assert memory.about(attribute={"key": "height", "value": 2})["state"] == "nothing_stored"


def test_a_decimal_written_in_several_spellings_seeds_its_entity_once(
    memory: recuerdo.Memory,
) -> None:
    """Found by its value, a decimal written as 1.8, then 1.80, then 1.800 (a float from Python,
    the CLI's exact digits) matched a row for each spelling: the reply's seeding named the
    entity three times (review of the decimal lookup)."""
    for digits in ("1.8", "1.80", "1.800"):
        entity = {"name": "Priya Raman", "attributes": {"height": Decimal(digits)}}
        memory.remember_knowledge(facts={"entities": [entity]})
    found = memory.about(attribute={"key": "height", "value": 1.8})
    assert [seed["name"] for seed in found["seeding"]] == ["Priya Raman"]
    assert [i["name"] for i in found["items"] if i["kind"] == "entity"] == ["Priya Raman"]
    # Its value now is 2: no spelling of 1.8 it was once seeds it.
    memory.remember_knowledge(
        facts={"entities": [{"name": "Priya Raman", "attributes": {"height": Decimal("2")}}]}
    )
    assert memory.about(attribute={"key": "height", "value": 1.8})["seeding"] == []


def test_an_attribute_value_finds_its_entities(memory: recuerdo.Memory) -> None:
    """about(attribute={key, value}) seeds the entities whose current value it is, compared by
    type (the text "3" is not the integer 3)."""
    for level in ("senior", "principal"):
        entity = {"name": "Priya Raman", "attributes": {"level": level, "floor": 3}}
        memory.remember_knowledge(facts={"entities": [entity]})
    found = memory.about(attribute={"key": "level", "value": "principal"})
    assert found["seeding"] == [
        {"name": "Priya Raman", "how": "attribute", "matched": 'level="principal"'}
    ]
    [entity] = [i for i in found["items"] if i["kind"] == "entity"]
    assert entity["attributes"]["level"] == {"type": "string", "value": "principal"}
    assert memory.about(attribute={"key": "level", "value": "senior"})["state"] == "nothing_stored"
    assert memory.about(attribute={"key": "floor", "value": 3})["state"] == "answered"
    assert memory.about(attribute={"key": "floor", "value": "3"})["state"] == "nothing_stored"
    typed = {"key": "floor", "value": 3, "type": "integer"}
    assert memory.about(attribute=typed)["state"] == "answered"
    as_text = {"key": "floor", "value": "3", "type": "string"}
    assert memory.about(attribute=as_text)["state"] == "nothing_stored"
    for wrong in ({}, {"subject": "Priya", "attribute": {"key": "level", "value": "x"}}):
        with pytest.raises(recuerdo.InvalidInput):
            memory.about(**wrong)


def test_as_of_hides_passages_and_entities_stored_later(memory: recuerdo.Memory) -> None:
    people(memory)
    known = next(i for i in memory.about("Priya")["items"] if i["kind"] == "fact")["recorded_at"]
    memory.remember_knowledge("Priya Raman moved to Berlin.")
    memory.relate("Priya Raman", "Initech", "works_at")
    then = memory.about("Priya", as_of=known)["items"]
    assert not any("Berlin" in i["text"] for i in then if i["kind"] == "passage")
    assert {i["object"] for i in then if i.get("relation") == "works_at"} == {"Acme Corp"}
    assert memory.about("Initech", as_of=known)["state"] == "nothing_stored"
    now = memory.about("Priya")["items"]
    assert any("Berlin" in i["text"] for i in now if i["kind"] == "passage")


def test_valid_at_reads_the_attribute_value_true_then(memory: recuerdo.Memory) -> None:
    for date, level in (("2020-01-01", "junior"), ("2023-01-01", "senior")):
        entity = {"name": "Priya", "attributes": {"level": level}}
        memory.remember_knowledge(facts={"entities": [entity]}, date=date)

    def level(**when: str) -> str:
        return memory.about("Priya", **when)["items"][0]["attributes"]["level"]["value"]  # type: ignore[no-any-return]

    assert (level(valid_at="2021-06-01"), level(valid_at="2024-01-01"), level()) == (
        "junior",
        "senior",
        "senior",
    )


def test_export_names_both_ends_types_and_import_keeps_them(memory: recuerdo.Memory) -> None:
    people(memory)
    facts = [r for r in memory.export()["records"] if r["record"] == "fact"]
    works = next(f for f in facts if f["relation"] == "works_at")
    assert (works["subject_types"], works["object_types"]) == (["person"], ["company"])
    memory.import_records([works], scope="copy")
    assert memory.about("Acme Corp", scope="copy")["items"][0]["types"] == ["company"]


def test_status_counts_members_exactly(memory: recuerdo.Memory) -> None:
    people(memory)
    classes = memory.status("user")["ontology"]["biggest_classes"]
    assert classes == [
        {"type": "company", "members": 2, "members_bound": "exact"},
        {"type": "person", "members": 2, "members_bound": "exact"},
    ]
    memory.forget_knowledge("user", subject="Dana")
    classes = memory.status("user")["ontology"]["biggest_classes"]
    assert {c["type"]: c["members"] for c in classes} == {"company": 2, "person": 1}


def test_a_name_is_linked_however_many_names_share_its_words(memory: recuerdo.Memory) -> None:
    """Over 5,000 entities named "Acme xN" share a word: a passage naming two of them is linked
    to both and to no other (the candidates for a passage were cut at 5,000 rows, silently;
    the names' own words sort after the shared one, so the cut fell on them on every
    backend)."""
    count = 5200
    for first in range(0, count, 1000):
        names = [f"Acme x{n}" for n in range(first, min(first + 1000, count))]
        memory.remember_knowledge(facts={"entities": [{"name": name} for name in names]})
    text = "The order went to Acme x5199, not to Acme x51."
    reply = memory.remember_knowledge(text)
    assert reply["unlinked_passages"] == 0
    for name in ("Acme x5199", "Acme x51"):
        about = memory.about(name, hops=1)["items"]
        assert [i["text"] for i in about if i["kind"] == "passage"] == [text], name
    assert not [i for i in memory.about("Acme x519", hops=1)["items"] if i["kind"] == "passage"]


_ALPHABET = [
    "a",
    "b",
    "_",
    "1",
    "é",
    "ß",
    " ",
    ".",
    "-",
    "'",
    "\u00b2",
    "\u0663",
    "\u0301",
    "\u2160",
]


@given(
    st.text(st.sampled_from(_ALPHABET), min_size=1, max_size=4),
    st.lists(st.text(st.sampled_from(_ALPHABET), max_size=6), min_size=1, max_size=4),
)
@example("a.a", ["b", ".a"])  # overlapping occurrences: the second one is bounded
@example("a", ["_", ""])
@example("a", ["\u00b2", ""])
@example("a", ["", "\u0301"])
def test_a_name_is_found_where_the_word_bounded_pattern_finds_it(
    name: str, pieces: list[str]
) -> None:
    text = name.join(pieces)
    expected = re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text) is not None
    assert named_in(name, text) == expected


def test_a_word_character_is_what_the_pattern_calls_one() -> None:
    """Every code point: a name right after it is bounded exactly when ``\\w`` says it is
    not a word character."""
    word = re.compile(r"\w")
    wrong = [
        code
        for code in range(sys.maxunicode + 1)
        if named_in("a", chr(code) + "a") == (word.match(chr(code)) is not None)
    ]
    assert not wrong, [hex(code) for code in wrong[:10]]
