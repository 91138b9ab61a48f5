"""A session started or ended more than once, and the learnings captured in a session: they
stay in the session's scope, and its end is the first one."""

from __future__ import annotations

import pytest

import recuerdo

LEARNINGS = """Done.

## Key Learnings
1. The checkout API needs an idempotency key on every retry
2. Rounding happens once, on the order total, never per line
"""


def notes_by_scope(memory: recuerdo.Memory) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for note in memory.list_notes(limit=100)["notes"]:
        found.setdefault(note["scope"], []).append(note["title"])
    return {scope: sorted(titles) for scope, titles in found.items()}


def test_learnings_of_a_session_go_to_its_scope(memory: recuerdo.Memory) -> None:
    memory.session_start("s1", project="shop")
    captured = memory.capture_passive(LEARNINGS, session="s1")
    assert (captured["scope"], captured["saved"]) == ("project:shop", 2)
    assert {memory.get(i)["scope"] for i in captured["ids"]} == {"project:shop"}
    assert "idempotency key" in memory.recent(scope="project:shop")["text"]
    # De-duplicated in that scope: the same answer captured again stores nothing.
    again = memory.capture_passive(LEARNINGS, session="s1")
    assert (again["scope"], again["saved"], again["duplicates"]) == ("project:shop", 0, 2)
    assert list(notes_by_scope(memory)) == ["project:shop"]


@pytest.mark.parametrize(
    ("scope", "session", "expected"),
    [
        ("project:web", "s1", "project:web"),  # a scope named is the scope
        (None, "never-started", "user"),  # a session not known: the default, as before
        (None, None, "user"),
    ],
)
def test_a_named_scope_or_an_unknown_session(
    memory: recuerdo.Memory, scope: str | None, session: str | None, expected: str
) -> None:
    memory.session_start("s1", project="shop")
    captured = memory.capture_passive(LEARNINGS, scope=scope, session=session)
    assert (captured["scope"], captured["saved"]) == (expected, 2)
    assert notes_by_scope(memory).get(expected, []) != []


def test_a_bad_session_label_is_refused_even_without_learnings(memory: recuerdo.Memory) -> None:
    with pytest.raises(recuerdo.InvalidInput) as refused:
        memory.capture_passive("no learnings here", session="   ")
    assert refused.value.code == "invalid_input"
    assert memory.list_notes()["notes"] == []


def test_a_session_ended_twice_keeps_its_first_end(memory: recuerdo.Memory) -> None:
    memory.session_start("s2", project="shop")
    first = memory.session_end("s2", summary="Fixed the cart.")
    again = memory.session_end("s2")
    assert again["ended_at"] == first["ended_at"]
    assert again["summary"] == "Fixed the cart."
    assert again["summary_note_id"] == first["summary_note_id"] is not None
    later = memory.session_end("s2", summary="Fixed the cart; tests added.")
    assert later["ended_at"] == first["ended_at"]
    assert later["summary_note_id"] == first["summary_note_id"]
    assert memory.get(first["summary_note_id"])["content"] == "Fixed the cart; tests added."


def test_a_session_started_again_keeps_its_scope(memory: recuerdo.Memory) -> None:
    memory.session_start("s3", project="shop", directory="/src/shop")
    first = memory.session_end("s3", summary="Day one.")
    resumed = memory.session_start("s3")
    assert (resumed["scope"], resumed["directory"]) == ("project:shop", "/src/shop")
    assert resumed["ended_at"] == first["ended_at"]  # it says it has ended
    ended = memory.session_end("s3", summary="Day two.")
    assert (ended["scope"], ended["ended_at"]) == ("project:shop", first["ended_at"])
    assert ended["summary_note_id"] == first["summary_note_id"]
    assert notes_by_scope(memory) == {"project:shop": ["Session s3 summary"]}
    moved = memory.session_start("s3", project="web")  # a project named moves it
    assert moved["scope"] == "project:web"
