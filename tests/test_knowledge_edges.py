"""What the review of decisions 0088-0091 found. Each test fails on the code before:

* a forget left the key of a document or an entity imported from an earlier export (keyed by
  the formulas before 0088 and 0091), so importing that page again brought nothing back;
* an imported fact kept NaN and Infinity attributes that ``relate`` refuses;
* a NUL in a name, a type, a relation or an attribute key was stored on SQLite and failed the
  whole call (and an import's whole page) on PostgreSQL;
* a later text naming no passage with both ends of a fact hid the span an earlier one quoted.
"""

from __future__ import annotations

import math
import unicodedata
from typing import Any

import pytest

import recuerdo
from recuerdo.notes.transfer import record_key

WHEN = "2024-01-01T00:00:00.000000Z"
TEXT = "Mallory works at Initech."


def test_a_document_from_an_earlier_export_imports_again_after_its_forget(
    memory: recuerdo.Memory,
) -> None:
    document = {
        "record": "document",
        "key": record_key("document", TEXT, "notes"),  # an export before 0088 keyed it so
        "name": "notes",
        "text": TEXT,
        "passages": [{"start": 0, "end": len(TEXT), "mentions": ["Mallory"]}],
        "date": WHEN,
        "source": "crm",
    }
    assert memory.import_records([document])["imported"] == 1
    memory.forget_knowledge(source="crm")
    assert memory.import_records([document])["imported"] == 1
    assert memory.search("Initech")["results"]


def test_an_entity_from_an_earlier_export_imports_again_after_its_forget(
    memory: recuerdo.Memory,
) -> None:
    name = unicodedata.normalize("NFD", "José Müller")
    entity = {  # an export before 0091 keyed it by its name folded by case alone
        "record": "entity",
        "key": record_key("entity", " ".join(name.casefold().split())),
        "name": name,
        "attributes": [{"key": "city", "value": "Lima", "recorded_at": WHEN}],
    }
    assert memory.import_records([entity], scope="e")["imported"] == 1
    memory.forget_knowledge(subject="José Müller", scope="e")
    assert memory.import_records([entity], scope="e")["imported"] == 1


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
def test_an_imported_fact_with_a_number_that_is_no_json_is_skipped(
    memory: recuerdo.Memory, number: float
) -> None:
    fact = {
        "record": "fact",
        "key": "f",
        "subject": "Ann",
        "relation": "works_at",
        "object": "Acme",
        "attributes": {"score": number},
        "recorded_at": WHEN,
    }
    reply = memory.import_records([fact])
    assert reply["imported"] == 0 and "finite" in reply["skipped"][0]["why"]
    assert memory.about("Ann")["state"] == "nothing_stored"


GOOD = {
    "record": "fact",
    "key": "ok",
    "subject": "Ann",
    "relation": "works_at",
    "object": "Acme",
    "recorded_at": WHEN,
}
WITH_NUL: dict[str, dict[str, Any]] = {
    "entity name": {"record": "entity", "key": "e", "name": "Tr\x00udy"},
    "entity type": {"record": "entity", "key": "e", "name": "Trudy", "types": ["per\x00son"]},
    "relation": {**GOOD, "key": "f", "relation": "wo\x00rks"},
    "attribute key": {
        "record": "entity",
        "key": "e",
        "name": "Trudy",
        "attributes": [{"key": "ci\x00ty", "value": "Oslo", "recorded_at": WHEN}],
    },
}


@pytest.mark.parametrize("field", sorted(WITH_NUL))
def test_a_record_with_a_nul_is_skipped_alone(memory: recuerdo.Memory, field: str) -> None:
    reply = memory.import_records([GOOD, WITH_NUL[field]])
    assert reply["imported"] == 1 and [s["index"] for s in reply["skipped"]] == [1]
    assert reply["skipped"][0]["why"].startswith("malformed")


@pytest.mark.parametrize(
    "call",
    [
        {"from_": "Ma\x00llory", "to": "Acme", "type": "works_at"},
        {"from_": "Mallory", "to": "Acme", "type": "works\x00at"},
    ],
)
def test_a_write_with_a_nul_is_refused_by_name(
    memory: recuerdo.Memory, call: dict[str, str]
) -> None:
    with pytest.raises((recuerdo.InvalidInput, recuerdo.FactsShape)):
        memory.relate(**call)
    facts = {"entities": [{"name": "Trudy", "attributes": {"ci\x00ty": "Oslo"}}]}
    with pytest.raises(recuerdo.InvalidInput):
        memory.remember_knowledge(facts=facts)
    assert memory.status()["scopes"] == []


def test_a_later_text_that_does_not_state_a_fact_keeps_its_quote(
    memory: recuerdo.Memory,
) -> None:
    relation = {"relations": [{"source": "Alice", "target": "Acme", "type": "works_at"}]}
    memory.remember_knowledge("Alice works at Acme since May.", facts=relation)
    memory.remember_knowledge("Alice said lunch was fish.", facts=relation)
    cited = next(i for i in memory.about("Alice")["items"] if i["kind"] == "fact")["citation"]
    assert cited["span_state"] == "verified"
    assert cited["span"]["text"] == "Alice works at Acme since May."


def test_a_source_finds_its_document_through_the_import_key_index(
    memory: recuerdo.Memory,
) -> None:
    """Each source of an imported fact read every document of the scope (the review of 0088;
    step m039): the lookup the import makes is planned on the index, on either store."""
    with memory._store.read() as tx:
        key = tx.json_text("meta", "import_key")
        lookup = (  # as graph/imports._cited reads a fact's sources: their documents at once
            f"SELECT id, content, {key} AS key FROM items WHERE tenant = ? AND scope = ?"
            f" AND item_type = 'document' AND {key} IN (?, ?)"
        )
        given = ("t", "s", "k1", "k2")
        if tx.dialect == "sqlite":
            plan = [str(row[3]) for row in tx.all(f"EXPLAIN QUERY PLAN {lookup}", given)]
        else:
            tx.execute("SET LOCAL enable_seqscan = off")  # an empty table is read whole anyway
            plan = [str(row[0]) for row in tx.all(f"EXPLAIN {lookup}", given)]
    assert any("items_document_import_keys" in line for line in plan), plan


def _versions(memory: recuerdo.Memory, scope: str) -> list[tuple[Any, str]]:
    records = memory.export(scope=scope, limit=1024)["records"]
    return sorted(
        (r["attributes"].get("role"), r["state"]) for r in records if r["record"] == "fact"
    )


@pytest.mark.parametrize(
    ("recorded", "current"), [("2030-01-01T00:00:00Z", "manager"), (WHEN, "engineer")]
)
def test_an_imported_fact_with_other_attributes_is_another_version(
    memory: recuerdo.Memory, recorded: str, current: str
) -> None:
    """The held fact's attributes were kept and the record's dropped, reported as held (the
    review of 0088): the later of the two is current, the other history."""
    memory.relate("Ann", "Acme", "works_at", attributes={"role": "engineer"}, scope="b")
    record = {**GOOD, "attributes": {"role": "manager"}, "recorded_at": recorded}
    reply = memory.import_records([record], scope="b")
    assert (reply["imported"], reply["skipped"]) == (1, [])
    other = "engineer" if current == "manager" else "manager"
    assert _versions(memory, "b") == sorted([(current, "current"), (other, "ended")])
    assert memory.import_records([record], scope="b")["imported"] == 0  # a retry
