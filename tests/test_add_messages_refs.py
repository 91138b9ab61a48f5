"""``add_messages`` asks the database only for the refs it was given: the answers are those it
gave when it read every turn's ref (a ref is held by its conversation, in its scope and tenant
only; the newest of a ref held twice answers), and a call past the limit is refused whole."""

from __future__ import annotations

from typing import Any

import pytest

import recuerdo
from recuerdo.errors import InvalidBatch


def turn(ref: str) -> dict[str, Any]:
    return {"speaker": "ana", "text": f"text {ref}", "ref": ref}


def test_a_ref_is_held_by_its_conversation_scope_and_tenant_only(memory: recuerdo.Memory) -> None:
    first = memory.add_messages("c1", [turn("x"), turn("y"), turn("x"), turn("z")])
    assert first["ids"][0] == first["ids"][2] and (first["count"], first["already"]) == (3, 1)
    elsewhere = [
        memory.add_messages("c2", [turn("x"), turn("y")]),
        memory.add_messages("c1", [turn("x"), turn("y")], scope="project:p"),
        memory.for_tenant("t2").add_messages("c1", [turn("x"), turn("y")]),
    ]
    assert [(r["count"], r["already"]) for r in elsewhere] == [(2, 0)] * 3
    assert not {i for r in elsewhere for i in r["ids"]} & set(first["ids"])
    again = memory.add_messages("c1", [turn("z"), turn("x"), turn("new"), turn("y"), turn("new")])
    assert again["ids"][:2] == [first["ids"][3], first["ids"][0]]
    assert again["ids"][3] == first["ids"][1] and again["ids"][2] == again["ids"][4]
    assert (again["count"], again["already"]) == (1, 4)


def test_the_newest_of_a_ref_held_twice_answers(memory: recuerdo.Memory) -> None:
    """Refs stored before 0099 could be held twice (one is copied here, in SQL): the newest
    turn answered, and does."""
    first = memory.add_messages("c1", [turn("x"), turn("y")])
    with memory._store.write() as tx:
        twice = tx.scalar(
            "INSERT INTO items (tenant, scope, item_type, category, content, source, session,"
            " meta, created_at, updated_at) SELECT tenant, scope, item_type, category, content,"
            " source, session, meta, created_at, updated_at FROM items WHERE id = ? RETURNING id",
            (first["ids"][0],),
        )
    again = memory.add_messages("c1", [turn("x"), turn("y")])
    assert again["ids"] == [twice, first["ids"][1]] and again["count"] == 0


def test_a_call_of_more_turns_than_allowed_is_refused_whole(memory: recuerdo.Memory) -> None:
    """70,000 turns (past PostgreSQL's 65,535 parameters had each ref been one) are refused
    before any is asked or stored."""
    turns = [turn(f"r{n}") for n in range(70_000)]
    with pytest.raises(InvalidBatch, match="at most 10000 messages per call"):
        memory.add_messages("long", turns)
    assert memory.add_messages("long", [turns[0]])["count"] == 1
