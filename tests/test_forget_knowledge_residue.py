"""What a forget of knowledge left behind (a hunt over the knowledge graph): a fact forgotten
while its mirror (B married_to A, A child_of B) was stored was served again as derived, and a
derived fact could not be forgotten; an imported name's key stayed in ``import_keys`` (a plain
hash of the name) and a later import of the same page skipped it. Each test fails on the code
before."""

from __future__ import annotations

from typing import Any

import pytest

import recuerdo
from recuerdo.graph.import_residue import entity_key
from recuerdo.graph.store import fold


def _facts(memory: recuerdo.Memory, name: str) -> list[str]:
    items = memory.about(name, compact=True)["items"]
    return sorted(item["fact"] for item in items if item["kind"] == "fact")


@pytest.mark.parametrize(
    ("stated", "mirror"),
    [
        (("Ann", "Bo", "married_to"), ("Bo", "Ann", "married_to")),
        (("Cy", "Di", "parent_of"), ("Di", "Cy", "child_of")),
    ],
)
def test_a_forgotten_fact_is_not_served_again_from_its_mirror(
    memory: recuerdo.Memory, stated: tuple[str, str, str], mirror: tuple[str, str, str]
) -> None:
    memory.relate(*stated)
    memory.relate(*mirror)
    memory.relate(stated[0], "Acme", "works_at")
    subject, obj, relation = stated
    forgot = memory.forget_knowledge(fact={"from": subject, "to": obj, "type": relation})
    assert forgot["facts_removed"] == 2 and not forgot["already_forgotten"]
    assert _facts(memory, subject) == [f"{subject} works_at Acme"]
    again = memory.forget_knowledge(fact={"from": subject, "to": obj, "type": relation})
    assert again["already_forgotten"]


def test_a_fact_shown_as_derived_is_forgotten_by_what_it_says(memory: recuerdo.Memory) -> None:
    memory.relate("Di", "Cy", "child_of")
    assert _facts(memory, "Cy") == ["Cy parent_of Di", "Di child_of Cy"]
    forgot = memory.forget_knowledge(fact={"from": "Cy", "to": "Di", "type": "parent_of"})
    assert forgot["facts_removed"] == 1
    assert _facts(memory, "Cy") == []


def test_a_reversed_fact_of_a_one_way_relation_stays(memory: recuerdo.Memory) -> None:
    memory.relate("Eve", "Fay", "follows")
    memory.relate("Fay", "Eve", "follows")
    assert (
        memory.forget_knowledge(fact={"from": "Eve", "to": "Fay", "type": "follows"})[
            "facts_removed"
        ]
        == 1
    )
    assert _facts(memory, "Fay") == ["Fay follows Eve"]


def _page(memory: recuerdo.Memory, scope: str) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = memory.export(scope=scope, cursor=cursor, limit=1024)
        records += page["records"]
        cursor = page["next"]
        if cursor is None:
            return records


def _keys(memory: recuerdo.Memory, scope: str) -> set[str]:
    with memory._store.read() as tx:
        rows = tx.all(
            "SELECT key FROM import_keys WHERE tenant = ? AND scope = ?", (memory.tenant, scope)
        )
    return {row["key"] for row in rows}


NAME = "Zebulon Quarrington"


def test_a_forgotten_subject_leaves_no_key_and_imports_again(memory: recuerdo.Memory) -> None:
    memory.relate(NAME, "Initrode", "works_at", scope="src")
    memory.remember_knowledge(f"{NAME} joined the night shift.", scope="src")  # names him
    records = _page(memory, "src")
    assert memory.import_records(records, scope="dst")["imported"] == len(records) - 1
    held = _keys(memory, "dst")
    assert entity_key(fold(NAME)) in held

    memory.forget_knowledge(subject=NAME, scope="dst")
    left = _keys(memory, "dst")
    assert entity_key(fold(NAME)) not in left
    fact = next(r["key"] for r in records if r["record"] == "fact")
    document = next(r["key"] for r in records if r["record"] == "document")
    assert fact not in left and document not in left  # the only passage named it: emptied
    initrode = next(r["key"] for r in records if r.get("name") == "Initrode")
    assert initrode in left  # not forgotten: a second import still skips it

    again = memory.import_records(records, scope="dst")
    assert [s["why"] for s in again["skipped"]] == ["already imported"]
    assert memory.about(NAME, scope="dst")["state"] == "answered"


def test_a_forgotten_fact_or_document_imports_again(memory: recuerdo.Memory) -> None:
    memory.remember_knowledge("The vault code changes every Friday.", scope="src")
    memory.relate("Alice", "Acme", "works_at", scope="src")
    records = _page(memory, "src")
    memory.import_records(records, scope="dst")
    document = next(r for r in records if r["record"] == "document")
    doc_id = next(
        item["id"]
        for item in memory.search("vault code", scope="dst")["results"]
        if item.get("item_type", "document") == "document"
    )
    memory.forget_knowledge(passage=doc_id, scope="dst")
    memory.forget_knowledge(fact={"from": "Alice", "to": "Acme", "type": "works_at"}, scope="dst")
    left = _keys(memory, "dst")
    assert document["key"] not in left
    assert next(r["key"] for r in records if r["record"] == "fact") not in left
    assert memory.import_records(records, scope="dst")["imported"] == 2
    assert memory.search("vault code", scope="dst")["results"]
