"""A stale write sent again keeps no second conflict revision: a mirror's sync of a diverged
push (and any client retrying a stale save) kept one more copy of the same text each time.
Each test fails on the code before."""

from __future__ import annotations

import pytest

import recuerdo


def _stale(memory: recuerdo.Memory, content: str, *, title: str = "Plan") -> None:
    with pytest.raises(recuerdo.Conflict):
        memory.save(title, content, key="plan", expected_version=1)


def test_the_same_stale_write_is_kept_once(memory: recuerdo.Memory) -> None:
    note = memory.save("Plan", "v1", key="plan")["id"]
    memory.save("Plan", "v2", key="plan")
    for _ in range(3):
        _stale(memory, "my stale text")
    assert [c["content"] for c in memory.conflicts(note)] == ["my stale text"]
    assert len([r for r in memory.journal() if r["operation"] == "conflict"]) == 1


def test_another_text_title_or_writer_is_another_conflict(memory: recuerdo.Memory) -> None:
    note = memory.save("Plan", "v1", key="plan")["id"]
    memory.save("Plan", "v2", key="plan")
    _stale(memory, "one text")
    _stale(memory, "another text")
    _stale(memory, "one text", title="Plan B")
    with pytest.raises(recuerdo.Conflict):
        memory.agent("bot").save("Plan", "one text", key="plan", expected_version=1)
    kept = [(c["content"], c["title"], c["principal"]) for c in memory.conflicts(note)]
    assert kept == [
        ("one text", "Plan", "main"),
        ("another text", "Plan", "main"),
        ("one text", "Plan B", "main"),
        ("one text", "Plan", "bot"),
    ]
