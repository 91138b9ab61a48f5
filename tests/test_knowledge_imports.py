"""Knowledge records read in by import: each checked whole before anything of it is written,
then written by the write path's rules (decision 0088)."""

from __future__ import annotations

from typing import Any

import pytest

import recuerdo

from .test_transfer import export_all

WHEN = "2024-01-01T00:00:00.000000Z"
FACT = {
    "record": "fact",
    "key": "k-fact",
    "subject": "Mallory",
    "relation": "works_at",
    "object": "Initech",
    "recorded_at": WHEN,
}
ENTITY = {
    "record": "entity",
    "key": "k-entity",
    "name": "Trudy",
    "types": ["person"],
    "attributes": [
        {"key": "city", "value": {"type": "string", "value": "Oslo"}, "recorded_at": WHEN}
    ],
}
CITY = ENTITY["attributes"][0]
DOCUMENT = {
    "record": "document",
    "key": "k-document",
    "name": "notes",
    "text": "Mallory works at Initech.",
    "passages": [{"start": 0, "end": 25, "mentions": ["Mallory"]}],
    "date": WHEN,
}


def held(memory: recuerdo.Memory, scope: str = "user") -> list[dict[str, Any]]:
    return [r for r in export_all(memory, scope, limit=100) if r["record"] != "export"]


def facts_of(memory: recuerdo.Memory, name: str, scope: str = "user", **view: Any) -> list[str]:
    items = memory.about(name, scope=scope, compact=True, **view)["items"]
    return [item["fact"] for item in items if item["kind"] == "fact"]


@pytest.mark.parametrize(
    ("record", "why"),
    [
        ({**FACT, "sources": 5}, "sources is a list"),
        ({**FACT, "recorded_at": None}, "recorded_at"),
        ({**FACT, "valid_from": {"x": 1}}, "valid_from"),
        ({**FACT, "relation": 5}, "relation"),
        ({**FACT, "subject_types": [5]}, "subject_types[0]"),
        ({**FACT, "attributes": [1]}, "attributes is an object"),
        ({**FACT, "sources": [{"document_key": "k", "start": 3, "end": 1}]}, "ends before"),
        ({**ENTITY, "attributes": [CITY, {"key": "age"}]}, "attributes[1] has no value"),
        ({**ENTITY, "types": [5]}, "types[0]"),
        ({**ENTITY, "types": "person"}, "types is a list"),
        ({**ENTITY, "attributes": [{**CITY, "value": {"type": "integer", "value": "x"}}]}, "x"),
        ({**ENTITY, "attributes": [{**CITY, "recorded_at": None}]}, "recorded_at"),
        ({**DOCUMENT, "passages": [{"start": "0", "end": 25}]}, "passages[0].start"),
        ({**DOCUMENT, "passages": [{"start": 0, "end": 25, "mentions": [7]}]}, "mentions"),
        ({**DOCUMENT, "date": 5}, "date"),
    ],
    ids=[
        "fact-sources-a-number",
        "fact-without-time",
        "fact-valid-from-an-object",
        "fact-relation-a-number",
        "fact-type-a-number",
        "fact-attributes-a-list",
        "fact-source-backwards",
        "entity-value-missing",
        "entity-type-a-number",
        "entity-types-a-text",
        "entity-integer-holding-text",
        "entity-value-without-time",
        "document-start-a-text",
        "document-mention-a-number",
        "document-date-a-number",
    ],
)
def test_a_malformed_knowledge_record_writes_nothing(
    memory: recuerdo.Memory, record: dict[str, Any], why: str
) -> None:
    """A record reported skipped left its fact or its first attribute behind, and the same page
    sent again failed on the database's unique key; fields the write verbs refuse failed the
    whole call (HTTP 500), differently on SQLite and PostgreSQL (the hunt over the graph)."""
    for _ in range(2):  # the page sent again: the same answer, no raw error
        reply = memory.import_records([record])
        assert reply["imported"] == 0
        [skipped] = reply["skipped"]
        assert skipped["why"].startswith(f"malformed {record['record']}: ")
        assert why in skipped["why"]
        assert held(memory) == []


def test_a_relation_and_types_are_stored_as_the_write_verbs_store_them(
    memory: recuerdo.Memory,
) -> None:
    """ "Works At" was kept as given, which forgetting the fact by its stored name could not
    reach; a relation of no word is refused by the write verbs too (it was stored empty)."""
    reply = memory.import_records(
        [{**FACT, "relation": "Works At", "subject_types": [" Person "]}, ENTITY]
    )
    assert reply["imported"] == 2
    assert facts_of(memory, "Mallory") == ["Mallory works_at Initech"]
    [mallory] = [r for r in held(memory) if r["record"] == "entity" and r["name"] == "Mallory"]
    assert mallory["types"] == ["person"]
    memory.forget_knowledge(fact={"from": "Mallory", "to": "Initech", "type": "works_at"})
    assert facts_of(memory, "Mallory") == []
    with pytest.raises(recuerdo.FactsShape):
        memory.relate("Ann", "Bob", "-")


@pytest.mark.parametrize("imported_later", [False, True])
def test_an_entity_held_here_keeps_one_current_value(
    memory: recuerdo.Memory, imported_later: bool
) -> None:
    """Read into a scope holding the entity, its value became a second current one beside the
    held one (Lima and Paris both current), and a shared fact was stored twice. The value
    recorded last stays current, as a write in that order would leave it."""
    first, second = ("b", "a") if imported_later else ("a", "b")
    for scope in (first, second):
        value = "Paris" if scope == "a" else "Lima"
        memory.remember_knowledge(
            facts={"entities": [{"name": "Bob", "attributes": {"city": value}}]}, scope=scope
        )
        memory.relate("Bob", "Acme", "works_at", scope=scope)
    memory.import_records(export_all(memory, "a"), scope="b")
    [bob] = [r for r in held(memory, "b") if r["record"] == "entity" and r["name"] == "Bob"]
    current = [a["value"]["value"] for a in bob["attributes"] if a["ended_at"] is None]
    assert current == ["Paris" if imported_later else "Lima"]
    assert len(bob["attributes"]) == 2
    assert facts_of(memory, "Bob", "b") == ["Bob works_at Acme"]
    # Read back where it came from, nothing is added twice.
    before = held(memory, "a")
    memory.import_records(export_all(memory, "b"), scope="a")
    [bob_a] = [r for r in held(memory, "a") if r["record"] == "entity" and r["name"] == "Bob"]
    assert sorted((a["value"]["value"], a["ended_at"] is None) for a in bob_a["attributes"]) == (
        sorted((a["value"]["value"], a["ended_at"] is None) for a in bob["attributes"])
    )
    assert facts_of(memory, "Bob", "a") == ["Bob works_at Acme"]
    assert len([r for r in held(memory, "a") if r["record"] == "fact"]) == len(
        [r for r in before if r["record"] == "fact"]
    )


def test_a_round_trip_keeps_when_an_entity_was_known(memory: recuerdo.Memory) -> None:
    """A document read in before the entity's record named it at the document's (later) time:
    as_of between the two answered nothing in the copy."""
    memory.relate("Alice", "Acme", "works_at", scope="src")
    memory.remember_knowledge("Alice gave a talk on Friday.", scope="src")
    records = export_all(memory, "src")
    [fact] = [r for r in records if r["record"] == "fact"]
    memory.import_records(records, scope="dst")
    for scope in ("src", "dst"):
        assert facts_of(memory, "Alice", scope, as_of=fact["recorded_at"]) == [
            "Alice works_at Acme"
        ]


def test_documents_of_the_same_text_on_two_dates_both_travel(memory: recuerdo.Memory) -> None:
    """They were exported under one key, and the import kept the first only."""
    for date in ("2024-01-01", "2025-06-01"):
        memory.remember_knowledge("Alice works at Acme.", date=date, scope="src")
    reply = memory.import_records(export_all(memory, "src"), scope="dst")
    assert reply["skipped"] == []
    dates = [r["date"][:10] for r in held(memory, "dst") if r["record"] == "document"]
    assert dates == ["2024-01-01", "2025-06-01"]


@pytest.mark.parametrize("records", ["abc", 5, None])
def test_records_that_are_not_a_list_are_refused(memory: recuerdo.Memory, records: Any) -> None:
    """A text raised a raw ValueError before the call reached the import."""
    with pytest.raises(recuerdo.InvalidInput, match="records is a list"):
        memory.import_records(records)
    assert held(memory) == []
