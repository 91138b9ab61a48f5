"""An export read again after its note moved to another key (decision 0159): the Engram
profile's save moves a personal observation's note from its topic key to ``<project>/<topic
key>`` (decision 0138), and an export written before the move names the old key. Read again,
in the memory that wrote it or in a copy that had read it, it made a second note. The moved
note is recognised (by its journal's move from that key, and by a record key that stays the
one it had before the move); a text it does not hold is kept beside it as a conflict revision,
never written over it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import recuerdo
from recuerdo.profiles.engram_scopes import observation_key

NEW, OLD = observation_key("shop", "personal", "editor")
assert isinstance(NEW, str) and OLD is not None


def _notes(memory: recuerdo.Memory) -> list[dict[str, Any]]:
    return [memory.get(n["id"]) for n in memory.list_notes(scope="user")["notes"]]


def _move(memory: recuerdo.Memory, text: str) -> int:
    """What the Engram profile's mem_save(scope=personal, project=shop, topic_key=editor)
    asks of the verb, on a note saved under the topic key alone."""
    saved = memory.save("Editor", text, key=NEW, former_key=OLD)
    assert saved["former_key"] == OLD
    return int(saved["id"])


@pytest.mark.parametrize(
    ("text", "kept"), [("vim", []), ("neovim", ["vim"])], ids=["same text", "new text"]
)
def test_an_export_read_again_after_a_move_makes_no_second_note(
    memory: recuerdo.Memory, text: str, kept: list[str]
) -> None:
    first = memory.save("Editor", "vim", key=OLD)["id"]
    records = memory.export(scope="user")["records"]
    assert _move(memory, text) == first
    reply = memory.import_records(records)
    assert reply["imported"] == 0
    [skipped] = reply["skipped"]
    assert f"moved from note key {OLD!r} to {NEW!r}" in skipped["why"]
    [note] = _notes(memory)
    assert (note["id"], note["key"], note["content"]) == (first, NEW, text)
    assert [c["content"] for c in memory.conflicts(first)] == kept
    # Read a third time: nothing more is kept (the record is known now).
    assert memory.import_records(records)["imported"] == 0
    assert len(_notes(memory)) == 1 and len(memory.conflicts(first)) == len(kept)


def test_a_copy_knows_the_moved_notes_record_from_the_export_before(
    memory: recuerdo.Memory, base: Path
) -> None:
    """The record of a moved note keeps the key it had before the move: a copy that read the
    export before the move read the record with the note's new key as a note it did not have."""
    with recuerdo.open("source", base_dir=base, embedder="none") as source:
        source.save("Editor", "vim", key=OLD)
        before = source.export(scope="user")["records"]
        _move(source, "neovim")
        after = source.export(scope="user")["records"]
    assert memory.import_records(before)["imported"] == 1
    reply = memory.import_records(after)
    assert reply["imported"] == 0 and reply["skipped"][0]["why"] == "already imported"
    assert [(n["key"], n["content"]) for n in _notes(memory)] == [(OLD, "vim")]


def test_a_copy_that_read_the_export_after_the_move_knows_the_one_before(
    memory: recuerdo.Memory, base: Path
) -> None:
    with recuerdo.open("source", base_dir=base, embedder="none") as source:
        source.save("Editor", "vim", key=OLD)
        before = source.export(scope="user")["records"]
        _move(source, "neovim")
        after = source.export(scope="user")["records"]
    assert memory.import_records(after)["imported"] == 1
    assert memory.import_records(before)["imported"] == 0
    assert [(n["key"], n["content"]) for n in _notes(memory)] == [(NEW, "neovim")]


def test_a_note_saved_at_the_key_after_the_move_does_not_take_the_moved_notes_record(
    memory: recuerdo.Memory,
) -> None:
    """The record is of the note created when it says, and moved away from its key: a note
    saved at that key since is another note (created later), and the record's text was kept
    beside it, on a note it was never a version of (the Engram profile: one project's
    personal observation on a note of no project)."""
    moved = memory.save("Editor", "vim", key=OLD)["id"]
    records = memory.export(scope="user")["records"]
    _move(memory, "neovim")
    there = memory.save("Editor", "nano", key=OLD)["id"]
    [skipped] = memory.import_records(records)["skipped"]
    assert f"note {moved} here was moved from note key {OLD!r}" in skipped["why"]
    assert [c["content"] for c in memory.conflicts(moved)] == ["vim"]
    assert memory.conflicts(there) == []
    assert len(_notes(memory)) == 2


def test_the_note_at_the_key_keeps_its_own_record_and_a_stranger_s(
    memory: recuerdo.Memory, base: Path
) -> None:
    """The note at the key still takes a record of its own creation, and one of no note here
    (another memory's, its creation neither note's): kept beside it, as before the moves."""
    memory.save("Editor", "vim", key=OLD)
    _move(memory, "neovim")
    there = memory.save("Editor", "nano", key=OLD)["id"]
    own = memory.export(scope="user")["records"]
    memory.save("Editor", "nano, tabs", key=OLD)
    with recuerdo.open("other", base_dir=base, embedder="none") as other:
        other.save("Editor", "emacs", key=OLD)
        stranger = other.export(scope="user")["records"]
    assert memory.import_records([own[0], own[2]])["imported"] == 0
    assert memory.import_records(stranger)["imported"] == 0
    assert [c["content"] for c in memory.conflicts(there)] == ["nano", "emacs"]


def test_a_note_moved_twice_is_found_from_its_first_key(memory: recuerdo.Memory) -> None:
    first = memory.save("Editor", "vim", key=OLD)["id"]
    records = memory.export(scope="user")["records"]
    _move(memory, "vim")
    memory.save("Editor", "vim", key="elsewhere/editor", former_key=NEW)
    assert memory.import_records(records)["imported"] == 0
    [note] = _notes(memory)
    assert (note["id"], note["key"]) == (first, "elsewhere/editor")
    assert memory.export(scope="user")["records"][1]["key"] == records[1]["key"]


def test_a_deleted_moved_note_is_not_found(memory: recuerdo.Memory) -> None:
    """A deleted note is not read into, as for a note at the key (the record makes a note)."""
    first = memory.save("Editor", "vim", key=OLD)["id"]
    records = memory.export(scope="user")["records"]
    _move(memory, "neovim")
    memory.delete(first)
    assert memory.import_records(records)["imported"] == 1
    [note] = _notes(memory)
    assert (note["key"], note["content"]) == (OLD, "vim")


def test_another_scope_is_not_looked_in(memory: recuerdo.Memory) -> None:
    memory.save("Editor", "vim", key=OLD)
    records = memory.export(scope="user")["records"]
    _move(memory, "neovim")
    assert memory.import_records(records, scope="project:copy")["imported"] == 1


def test_another_notes_record_of_the_old_key_makes_its_own_note(
    memory: recuerdo.Memory, base: Path
) -> None:
    """The moved note is known by its creation, not by the key it left: a record of another
    note that had that key (another memory's) is not read into it, as before the change."""
    with recuerdo.open("other", base_dir=base, embedder="none") as other:
        other.save("Editor", "emacs", key=OLD)
        records = other.export(scope="user")["records"]
    moved = memory.save("Editor", "vim", key=OLD)["id"]
    _move(memory, "neovim")
    assert memory.import_records(records)["imported"] == 1
    assert sorted((n["key"], n["content"]) for n in _notes(memory)) == [
        (OLD, "emacs"),
        (NEW, "neovim"),
    ]
    assert memory.conflicts(moved) == []


def test_a_copys_export_from_before_the_move_is_known_by_its_dates(
    memory: recuerdo.Memory, base: Path
) -> None:
    """A copy keeps the note's dates (0116): its export before the move names the note's
    creation, and is read into the moved note here (the copy never moved it)."""
    first = memory.save("Editor", "vim", key=OLD)["id"]
    with recuerdo.open("copy", base_dir=base, embedder="none") as copy:
        copy.import_records(memory.export(scope="user")["records"])
        copy.save("Editor", "vim, tabs", key=OLD)
        records = copy.export(scope="user")["records"]
    _move(memory, "neovim")
    assert memory.import_records(records)["imported"] == 0
    assert [n["id"] for n in _notes(memory)] == [first]
    assert [c["content"] for c in memory.conflicts(first)] == ["vim, tabs"]
