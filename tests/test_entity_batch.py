"""The entities one ``remember_knowledge`` call names are found and made together (decision
0169): a call of 1,000 new entities made each in three statements held the write lock 3.4 s on
PostgreSQL. What is made is what one by one made: each name once, in its first spelling, in
the order named, with its types and its words."""

from __future__ import annotations

import pytest

import recuerdo

from .conftest import statements_run, tx_class_of


def _facts(count: int, prefix: str) -> dict:  # type: ignore[type-arg]
    return {
        "entities": [{"name": f"{prefix} Person {n}", "type": "person"} for n in range(count)],
        "relations": [
            {"source": f"{prefix} Person {n}", "target": f"{prefix} Guild {n % 7}", "type": "in"}
            for n in range(count)
        ],
    }


def test_a_call_makes_its_entities_in_a_few_statements_whatever_their_number(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    def statements_for(count: int, prefix: str) -> int:
        with statements_run(monkeypatch, tx_class_of(memory), this_thread_only=True) as seen:
            reply = memory.remember_knowledge(facts=_facts(count, prefix), source="roster")
        assert reply["entities_created"] == count + min(count, 7)
        return len(seen)

    small, large = statements_for(10, "Small"), statements_for(300, "Large")
    assert large <= small * 3 // 2  # a statement per few hundred rows; it was three a name


def test_what_is_made_is_what_one_by_one_made(memory: recuerdo.Memory) -> None:
    reply = memory.remember_knowledge(
        facts={
            "entities": [
                {"name": "Ada Quorn", "type": "person"},
                {"name": "ADA QUORN", "type": "engineer"},  # the same entity, a second type
                {"name": "Brisk Mill", "type": "place"},
            ],
            "relations": [
                {"source": "ada quorn", "target": "Brisk Mill", "type": "works_at"},
                {"source": "Brisk Mill", "target": "Cobalt Ring", "type": "part_of"},
            ],
        },
        source="roster",
    )
    assert reply["entities_created"] == 3
    about = memory.about("Ada Quorn")
    [entity] = [i for i in about["items"] if i["kind"] == "entity"]
    assert entity["name"] == "Ada Quorn" and sorted(entity["types"]) == ["engineer", "person"]
    assert memory.about("cobalt")["state"] == "answered"  # made by a relation, found by a word
    again = memory.remember_knowledge(
        facts={"entities": [{"name": "Ada Quorn", "type": "person"}], "relations": []},
        source="roster",
    )
    assert again["entities_created"] == 0
    with memory._store.read() as tx:
        rows = tx.all("SELECT name FROM entities ORDER BY id")
    assert [r["name"] for r in rows] == ["Ada Quorn", "Brisk Mill", "Cobalt Ring"]


def test_the_names_passages_mention_are_made_together(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    def statements_for(count: int, prefix: str) -> int:
        passages = [
            {"text": f"{prefix} Sailor {n} rowed to the {prefix} Isle.", "mentions": [
                f"{prefix} Sailor {n}", f"{prefix} Isle"
            ]}
            for n in range(count)
        ]  # fmt: skip
        with statements_run(monkeypatch, tx_class_of(memory), this_thread_only=True) as seen:
            reply = memory.remember_knowledge(passages=passages, source="log")
        assert reply["entities_created"] == count + 1 and reply["unlinked_passages"] == 0
        return len(seen)

    small, large = statements_for(5, "Tiny"), statements_for(200, "Huge")
    assert large <= small * 3 // 2
    found = memory.about("Huge Sailor 17")
    assert [i["text"] for i in found["items"] if i["kind"] == "passage"] == [
        "Huge Sailor 17 rowed to the Huge Isle."
    ]
