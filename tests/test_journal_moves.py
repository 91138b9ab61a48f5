"""A ``move`` journal line names the keys the note moved between (decision 0159, step
``m047_journal_move_keys``): the line said ``move`` and nothing of where from, so an owner
auditing the history could not tell which key the note had answered to. Lines written before
the step read as unknown (null); an erased note's keys leave the journal with it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import recuerdo
from recuerdo.store.journal_moves import STEP
from recuerdo.store.sqlite import files

from .conftest import statements_run
from .postgres import opened_on

OLD, NEW, LAST = "editor", "shop/editor", "work/editor"
BACKENDS = ["sqlite", "postgres"]


def _moves(memory: recuerdo.Memory) -> list[tuple[Any, Any]]:
    return [
        (line["from_key"], line["to_key"])
        for line in reversed(memory.journal())
        if line["operation"] == "move"
    ]


def test_a_move_line_names_both_keys(memory: recuerdo.Memory) -> None:
    note = memory.save("Editor", "vim", key=OLD)["id"]
    memory.save("Editor", "neovim", key=NEW, former_key=OLD)
    memory.save("Editor", "helix", key=LAST, former_key=NEW)
    assert _moves(memory) == [(OLD, NEW), (NEW, LAST)]
    lines = [line for line in memory.journal() if line["item_id"] == note]
    # Only a move names keys: every other line is as it was.
    assert all(("from_key" in line) == (line["operation"] == "move") for line in lines)


def test_the_keys_are_read_over_http(over_http: Any) -> None:
    """The journal's published reply names the keys (each reply type forbids keys it does not
    declare, and the door checks its replies against it)."""
    over_http("save", {"title": "Editor", "content": "vim", "key": OLD})
    over_http("save", {"title": "Editor", "content": "vim", "key": NEW, "former_key": OLD})
    [line] = [line for line in over_http("journal", {}) if line["operation"] == "move"]
    assert (line["from_key"], line["to_key"]) == (OLD, NEW)


def _key_words(memory: recuerdo.Memory) -> list[Any]:
    with memory._store.read() as tx:
        return [
            (row["from_key"], row["to_key"])
            for row in tx.all(
                "SELECT from_key, to_key FROM journal WHERE from_key IS NOT NULL"
                " OR to_key IS NOT NULL"
            )
        ]


@pytest.mark.parametrize("how", ["hard delete", "forget the scope"])
def test_an_erased_notes_keys_leave_the_journal(memory: recuerdo.Memory, how: str) -> None:
    """A key is words the note held: an erased note's keys stayed in its move lines."""
    scope = "project:shop"
    note = memory.save("Editor", "vim", key=OLD, scope=scope)["id"]
    memory.save("Editor", "neovim", key=NEW, former_key=OLD, scope=scope)
    kept = memory.save("Other", "kept", key="a", scope="user")["id"]
    memory.save("Other", "kept", key="b", former_key="a", scope="user")
    if how == "hard delete":
        memory.delete(note, hard=True)
    else:
        memory.forget_knowledge(scope, all=True)
    assert _key_words(memory) == [("a", "b")]
    assert memory.get(kept)["key"] == "b"
    assert (None, None) in _moves(memory)  # the line stays: a move happened, keys unknown


def _as_at_m046(memory: recuerdo.Memory) -> None:
    """The store as the code before the step left it: no key columns, the step not taken."""
    with memory._store.write() as tx:
        tx.execute("DROP INDEX journal_moves")
        tx.execute("DROP INDEX journal_moved_items")
        tx.execute("ALTER TABLE journal DROP COLUMN from_key")
        tx.execute("ALTER TABLE journal DROP COLUMN to_key")
        tx.execute("DELETE FROM _migrations WHERE name = ?", (STEP,))
    # A step is never taken back but here: the handle forgets it took it (decision 0170), as
    # the code before the step never knew it.
    shared = memory._store._shared  # type: ignore[attr-defined]
    shared.steps_taken = shared.steps_taken - {STEP}


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_store_at_m046_gains_the_keys_and_reads_its_moves_as_unknown(
    backend: str, base: Path
) -> None:
    with opened_on(backend, base, "jmoves") as (name, where):
        with recuerdo.open(name, **where, embedder="none") as memory:
            note = memory.save("Editor", "vim", key=OLD)["id"]
            _as_at_m046(memory)
            # Written by the code before the step: a move line without keys.
            memory.save("Editor", "neovim", key=NEW, former_key=OLD)
            assert _moves(memory) == [(None, None)]
        with recuerdo.open(name, **where, embedder="none") as memory:
            with memory._store.read() as tx:
                assert tx.scalar("SELECT 1 FROM _migrations WHERE name = ?", (STEP,)) == 1
            assert _moves(memory) == [(None, None)]
            memory.save("Editor", "helix", key=LAST, former_key=NEW)
            assert _moves(memory) == [(None, None), (NEW, LAST)]
            assert [n["id"] for n in memory.list_notes(scope="user")["notes"]] == [note]


def test_the_keys_of_a_notes_moves_are_found_by_its_id_not_by_walking_the_journal(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An export page asks for the first keys of its notes, and an erasure blanks its notes'
    keys, by item id: with no index on the ids, each read every line of the scope's journal
    (SQLite: an export of 300 moved notes over 300,000 lines 0.28 s instead of 0.02 s, each
    hard delete 141 ms instead of 23 ms; PostgreSQL alike)."""
    with recuerdo.open("plans", base_dir=base, embedder="none") as memory:
        note = memory.save("Editor", "vim", key=OLD)["id"]
        memory.save("Editor", "vim", key=NEW, former_key=OLD)
        for i in range(20):
            memory.save(f"n{i}", "x", key=f"k{i}")
        with statements_run(monkeypatch) as seen:
            memory.export(scope="user")
            memory.delete(note, hard=True)
        location = memory.location
    conn = files.connect(location, read_only=True)
    try:
        plans = {
            sql: [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params)]
            for sql, params in seen
            if "journal" in sql and "item_id IN" in sql
        }
    finally:
        conn.close()
    assert len(plans) == 2, plans  # the export's and the erasure's
    for sql, plan in plans.items():
        assert any("journal_moved_items" in line for line in plan), (sql, plan)


def test_a_forgotten_scope_leaves_no_key_of_a_note_erased_by_an_older_process(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process of the code before m047, still running on the store another opened (and
    migrated), erases a note without blanking its move line's keys: a forget of the scope
    takes every key of the scope's move lines, not only those of the notes it finds."""
    from recuerdo.store import journal_moves

    scope = "project:shop"
    note = memory.save("Editor", "vim", key=OLD, scope=scope)["id"]
    memory.save("Editor", "neovim", key=NEW, former_key=OLD, scope=scope)
    memory.save("Other", "kept", key="a", scope="user")
    memory.save("Other", "kept", key="b", former_key="a", scope="user")
    with monkeypatch.context() as older:
        older.setattr(journal_moves, "forget_keys", lambda *_args: None)
        memory.delete(note, hard=True)
    assert (OLD, NEW) in _key_words(memory)
    memory.save("Later", "x", key="c", scope=scope)
    memory.forget_knowledge(scope, all=True)
    assert _key_words(memory) == [("a", "b")]
