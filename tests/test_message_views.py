"""A message is its conversation's members' only, through every verb that shows items: pins,
context sets, recent, context, links and Markdown exports showed any message to whoever named
its id (a hunt over the messages). Each test fails on the code before."""

from __future__ import annotations

from pathlib import Path

import pytest

import recuerdo

SECRET = "Bob's new salary is 180k"


@pytest.fixture
def sent(memory: recuerdo.Memory) -> tuple[recuerdo.Memory, recuerdo.Memory, int]:
    """Alice writes to Bob; Eve, of the same tenant, is no member."""
    alice, bob, eve = (memory.agent(name) for name in ("alice", "bob", "eve"))
    for view in (alice, bob, eve):
        view.bind_address(f"{view.principal}@local")
    message = alice.send_message(["bob@local"], "salary review", SECRET)
    return alice, eve, int(message["id"])


def test_a_non_member_can_neither_pin_nor_set_a_message(
    sent: tuple[recuerdo.Memory, recuerdo.Memory, int],
) -> None:
    _, eve, message = sent
    with pytest.raises(recuerdo.ItemNotFound):
        eve.pin(message)
    with pytest.raises(recuerdo.ItemNotFound):
        eve.context_set("loot", [message])
    assert eve.pins() == [] and eve.context_sets() == []


def test_a_members_pin_or_set_shows_the_message_to_members_only(
    sent: tuple[recuerdo.Memory, recuerdo.Memory, int],
) -> None:
    alice, eve, message = sent
    alice.pin(message)
    alice.context_set("review", [message])
    assert [p["id"] for p in alice.pins()] == [message]
    assert SECRET in alice.recent()["text"]
    assert eve.pins() == [] and eve.context_sets() == []
    assert SECRET not in eve.recent()["text"]
    assert SECRET not in eve.recent(context_set_name="review")["text"]
    assert SECRET not in eve.context("salary", context_set_name="review")["context"]


def test_a_note_linked_to_a_message_shows_its_subject_to_members_only(
    sent: tuple[recuerdo.Memory, recuerdo.Memory, int], tmp_path: Path
) -> None:
    alice, eve, message = sent
    note = alice.save("Planning", "a note anyone reads")["id"]
    alice.link(note, message)
    assert [link["id"] for link in alice.links(note)["outgoing"]] == [message]
    assert eve.links(note)["outgoing"] == []
    eve.export_markdown(tmp_path / "eve")
    alice.export_markdown(tmp_path / "alice")
    assert "salary review" not in "".join(p.read_text() for p in (tmp_path / "eve").rglob("*.md"))
    assert "salary review" in "".join(p.read_text() for p in (tmp_path / "alice").rglob("*.md"))
