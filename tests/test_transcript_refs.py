"""A conversation's turns are stored once per ref: a retried add_messages (a timeout after its
commit) stored every turn twice. A conversation of the same name in another scope is another
one. Each test fails on the code before."""

from __future__ import annotations

import pytest

import recuerdo

from .conftest import settled_dump
from .meanwhile import WritesMeanwhile

TURNS = [
    {"speaker": "ana", "text": "Shall we ship on Friday?", "ref": "t1"},
    {"speaker": "bo", "text": "Friday works for me.", "ref": "t2"},
]


def _turns(memory: recuerdo.Memory, conversation: str, scope: str) -> list[str]:
    with memory._store.read() as tx:
        rows = tx.all(
            "SELECT content FROM items WHERE session = ? AND scope = ? AND item_type = 'message'"
            " ORDER BY id",
            (conversation, scope),
        )
    return [row["content"] for row in rows]


def test_a_retried_call_stores_nothing_twice(memory: recuerdo.Memory) -> None:
    first = memory.add_messages("standup", TURNS)
    again = memory.add_messages("standup", TURNS)
    assert (first["count"], first["already"]) == (2, 0)
    assert (again["ids"], again["count"], again["already"]) == (first["ids"], 0, 2)
    assert _turns(memory, "standup", "conversation:standup") == [t["text"] for t in TURNS]


def test_a_call_adds_only_the_turns_it_does_not_hold(memory: recuerdo.Memory) -> None:
    first = memory.add_messages("standup", TURNS[:1])
    later = memory.add_messages(
        "standup", [*TURNS, {"speaker": "ana", "text": "Great.", "ref": "t3"}]
    )
    assert later["ids"][0] == first["ids"][0] and (later["count"], later["already"]) == (2, 1)
    unreffed = memory.add_messages("standup", [{"speaker": "bo", "text": "Friday works for me."}])
    assert unreffed["count"] == 1  # without a ref, a turn is a new turn
    assert len(_turns(memory, "standup", "conversation:standup")) == 4


def test_a_ref_twice_in_one_call_is_one_turn(memory: recuerdo.Memory) -> None:
    added = memory.add_messages("standup", [TURNS[0], TURNS[0]])
    assert added["ids"][0] == added["ids"][1] and (added["count"], added["already"]) == (1, 1)


def test_the_same_ref_in_another_scopes_conversation_is_another_turn(
    memory: recuerdo.Memory,
) -> None:
    memory.add_messages("standup", TURNS, scope="project:a")
    other = memory.add_messages("standup", TURNS, scope="project:b")
    assert other["count"] == 2
    assert len(_turns(memory, "standup", "project:b")) == 2


def test_turns_are_checked_before_the_memory_is_locked_for_writing(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Checking a call's turns holds no other writer back: they were checked inside the write,
    and 5,000 turns kept every writer of the memory waiting (decision 0140). A write from
    another thread while the turns are checked is done before the check ends."""
    from recuerdo.comms import transcripts

    meanwhile = WritesMeanwhile(memory, transcripts._turn)
    monkeypatch.setattr(transcripts, "_turn", meanwhile)
    reply = memory.add_messages("standup", TURNS)
    meanwhile.finish()
    assert meanwhile.during == [True]
    assert reply["count"] == 2 and meanwhile.written


def test_a_refused_turn_stores_no_turn(memory: recuerdo.Memory) -> None:
    bad = [*TURNS, {"speaker": "ana", "text": "", "ref": "t3"}]
    with pytest.raises(recuerdo.InvalidBatch) as refused:
        memory.add_messages("standup", bad)
    assert refused.value.extra["index"] == 2
    assert _turns(memory, "standup", "conversation:standup") == []


def test_a_refused_call_leaves_the_store_as_it_was(file_memory: recuerdo.Memory) -> None:
    """Refused after its checks moved before the write: nothing of it is written (no turn, no
    journal row, no conversation's state), beside turns already held."""
    file_memory.add_messages("standup", TURNS)
    before = settled_dump(file_memory)
    bad = [{"speaker": "cy", "text": "new", "ref": "t9"}, {"speaker": "ana", "text": ""}]
    with pytest.raises(recuerdo.InvalidBatch):
        file_memory.add_messages("standup", bad)
    assert settled_dump(file_memory) == before


def test_a_ref_given_twice_in_one_call_is_one_turn(memory: recuerdo.Memory) -> None:
    turns = [TURNS[0], TURNS[1], {**TURNS[0], "text": "repeated"}, {"speaker": "bo", "text": "x"}]
    reply = memory.add_messages("standup", turns)
    assert reply["ids"][2] == reply["ids"][0] and reply["ids"][3] > reply["ids"][1]
    assert (reply["count"], reply["already"]) == (3, 1)
    assert _turns(memory, "standup", "conversation:standup") == [
        TURNS[0]["text"],
        TURNS[1]["text"],
        "x",
    ]


def test_each_id_answered_is_its_turns_across_statements_and_held_refs(
    memory: recuerdo.Memory,
) -> None:
    """The turns go in statements of 100, 10 and 1 rows (store/row_groups.py), each id taken
    from the ids it returns, sorted: the id answered for each turn is the row holding its text,
    the new ones ascending in the call's order, with turns already held between them."""
    turns = [{"speaker": "ana", "text": f"turn {n}", "ref": f"r{n}"} for n in range(237)]
    held = memory.add_messages("long", turns[1::3])["ids"]
    reply = memory.add_messages("long", turns)
    assert reply["ids"][1::3] == held and (reply["count"], reply["already"]) == (158, 79)
    fresh = [i for n, i in enumerate(reply["ids"]) if n % 3 != 1]
    assert fresh == sorted(fresh)
    with memory._store.read() as tx:
        text = {r["id"]: r["content"] for r in tx.all("SELECT id, content FROM items")}
    assert [text[i] for i in reply["ids"]] == [turn["text"] for turn in turns]
