"""A new SQLite store gets its schema in one pass (``store/sqlite/fresh.py``): it must be the
very store its migration steps make one by one, the way an older store is brought up to date."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from recuerdo.errors import StoreError
from recuerdo.security.tokens import TOKEN_SCHEMA
from recuerdo.store.migrations import Schema, apply, stamp
from recuerdo.store.sqlite import files, fresh, sqlite3
from recuerdo.store.sqlite.connection import SQLiteStore, SQLiteTx
from recuerdo.store.sqlite.schema import SCHEMA

from .conftest import db_dump, statements_run


def _contents(path: Path) -> dict[str, object]:
    """Everything a store's file says, but where its pages sit and when steps ran."""
    conn = sqlite3.connect(path)
    try:
        listed = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_schema")
        objects = sorted(tuple(row) for row in listed)
        rows = {}
        for (name,) in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'"):
            if str(name).startswith("sqlite_stat"):
                continue
            try:
                found = conn.execute(f'SELECT * FROM "{name}"').fetchall()
            except sqlite3.DatabaseError:
                continue  # a virtual table answers through its shadow tables, read here too
            if name == "_migrations":
                found = [(step, "") for step, _ in found]
            rows[name] = sorted(found, key=repr)
        # Within a kind, the order matters: triggers on one event fire in the order they were
        # made, and a backup lists the tables in that order. (SQLite's own objects, such as a
        # key's index, come with their table.)
        made = conn.execute(
            "SELECT type, name FROM sqlite_schema WHERE name NOT LIKE 'sqlite!_%' ESCAPE '!'"
            " ORDER BY type, rowid"
        ).fetchall()
        return {
            "objects": objects,
            "order": made,
            "rows": rows,
            # What the planner is told of the tenant-first indexes (the others' figures are
            # ANALYZE's samples of the store's own past).
            "indexes with statistics": sorted(
                conn.execute("SELECT tbl, idx FROM sqlite_stat1 WHERE idx IS NOT NULL")
            ),
            "stated defaults": sorted(
                conn.execute(
                    "SELECT tbl, idx, stat FROM sqlite_stat1 WHERE stat LIKE '% recuerdo-%'"
                )
            ),
            "version": conn.execute("PRAGMA user_version").fetchone()[0],
            "steps": [row[0] for row in conn.execute("SELECT name FROM _migrations ORDER BY name")],
        }
    finally:
        conn.close()


def _step_by_step(
    path: Path, first: int, schema: Schema | None = None, last: int | None = None
) -> None:
    """A store whose ``first`` steps ran one by one, opened by the version that has ``last``
    steps (this one by default): the steps between run one by one, as for an older store."""
    conn = files.connect(str(path))
    conn.execute("BEGIN IMMEDIATE")
    tx = SQLiteTx(conn, lambda _: None)
    tx.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    apply(tx, Schema(steps=(schema or SCHEMA).steps[:first]), [], stamp())
    tx.execute(f"PRAGMA user_version = {first}")
    conn.execute("COMMIT")
    conn.close()
    SQLiteStore(str(path), schema=schema, steps=last).close()


def _new_store(path: Path) -> Path:
    SQLiteStore(str(path)).close()
    return path


@pytest.mark.parametrize("first", [5, 13, 14, len(SCHEMA.steps) - 1])
def test_a_new_store_is_what_its_steps_make_one_by_one(tmp_path: Path, first: int) -> None:
    SQLiteStore(str(tmp_path / "new.db")).close()
    _step_by_step(tmp_path / "stepped.db", first)
    new, stepped = _contents(tmp_path / "new.db"), _contents(tmp_path / "stepped.db")
    assert new["steps"] == sorted(SCHEMA.names())
    assert len(new["objects"]) > 100  # tables, indexes and triggers, not an empty file
    assert new == stepped


def test_an_older_schema_written_new_is_that_schemas_store(tmp_path: Path) -> None:
    """A restore writes a new store at the backup's steps: only those steps' objects."""
    SQLiteStore(str(tmp_path / "old.db"), steps=13).close()
    _step_by_step(tmp_path / "stepped.db", 5, last=13)
    old = _contents(tmp_path / "old.db")
    assert old["version"] == 13
    assert old["steps"] == sorted(SCHEMA.names()[:13])
    assert old == _contents(tmp_path / "stepped.db")
    assert old["objects"] != _contents(_new_store(tmp_path / "new.db"))["objects"]


def test_the_token_database_is_what_its_steps_make(tmp_path: Path) -> None:
    SQLiteStore(str(tmp_path / "new.db"), schema=TOKEN_SCHEMA).close()
    _step_by_step(tmp_path / "stepped.db", 1, TOKEN_SCHEMA)
    assert _contents(tmp_path / "new.db") == _contents(tmp_path / "stepped.db")


def test_each_new_store_records_when_it_was_made(tmp_path: Path) -> None:
    """The steps' record says when this store got them, not when the process first did."""
    stamps = []
    for name in ("a.db", "b.db"):
        SQLiteStore(str(tmp_path / name)).close()
        conn = sqlite3.connect(tmp_path / name)
        stamps.append({row[0] for row in conn.execute("SELECT applied_at FROM _migrations")})
        conn.close()
    assert all(len(found) == 1 for found in stamps)
    assert stamps[0] != stamps[1]


def test_a_file_that_holds_other_tables_is_not_written_over(tmp_path: Path) -> None:
    """Only an empty database takes the one-pass schema: another program's tables (or a store
    from before the steps' record) go through the steps, which refuse what they cannot read."""
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE items (x)")
    conn.execute("INSERT INTO items VALUES (1)")
    conn.commit()
    conn.close()
    before = db_dump(path)
    with pytest.raises(StoreError, match="table items already exists") as refused:
        SQLiteStore(str(path)).close()
    assert refused.value.code == "store_unavailable"
    assert db_dump(path) == before == ["items: (1,)"]


def _statements_opening(
    monkeypatch: pytest.MonkeyPatch, open_store: Callable[[], None]
) -> list[str]:
    """The SQL a store's own transactions run while ``open_store`` makes a new store."""
    with statements_run(monkeypatch) as seen:
        open_store()
    return [" ".join(sql.split()) for sql, _ in seen]


@pytest.mark.parametrize("in_memory", [False, True], ids=["file", "in_memory"])
def test_a_new_store_is_a_copy_not_a_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_memory: bool
) -> None:
    """Once a process has made a store, the next new store is a copy of its pages: its own
    transaction creates nothing (the replay ran some 90 statements, 4.5 ms, for each one)."""
    SQLiteStore(str(tmp_path / "first.db")).close()
    SQLiteStore(None).close()
    path = None if in_memory else str(tmp_path / "second.db")
    seen = _statements_opening(monkeypatch, lambda: SQLiteStore(path).close())
    created = [sql for sql in seen if sql.upper().startswith("CREATE")]
    assert created == [" ".join(fresh.MIGRATIONS_TABLE.split())]  # IF NOT EXISTS: a no-op
    assert any(sql.startswith("UPDATE _migrations SET applied_at") for sql in seen)
    if not in_memory:
        assert _contents(tmp_path / "second.db") == _contents(tmp_path / "first.db")
        assert fresh.COPIED not in _step_times(tmp_path / "second.db")


def _step_times(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {str(row[0]) for row in conn.execute("SELECT applied_at FROM _migrations")}
    finally:
        conn.close()


def test_a_copy_whose_maker_died_gets_its_step_times_at_the_next_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file linked whole by a process that died before its first transaction records its
    steps' times when another process opens it; a store already stamped is not written."""
    path = tmp_path / "orphan.db"
    path.write_bytes(fresh.image(SCHEMA))  # what the dead process left under the name
    assert _step_times(path) == {fresh.COPIED}
    SQLiteStore(str(path)).close()
    [opened] = _step_times(path)
    assert opened != fresh.COPIED
    assert _contents(path) == _contents(_new_store(tmp_path / "new.db"))
    seen = _statements_opening(monkeypatch, lambda: SQLiteStore(str(path)).close())
    assert not [sql for sql in seen if sql.startswith("UPDATE _migrations")]
    assert _step_times(path) == {opened}


def _no_tmpfile(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    monkeypatch.delattr(os, "O_TMPFILE", raising=False)


def _no_links(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    def refused(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", refused)


def _an_empty_file(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    path.touch(mode=0o600)


@pytest.mark.parametrize(
    ("condition", "made"),
    [(_no_tmpfile, files.WHOLE), (_no_links, files.EMPTY), (_an_empty_file, None)],
    ids=["no unnamed files", "no hard links", "an empty file there"],
)
def test_every_way_of_making_a_file_makes_the_same_store(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    condition: Callable[..., None],
    made: str | None,
) -> None:
    """Where the file system has no unnamed files (a draft is written beside the file, then
    removed), no hard links (the file is made empty and its transaction replays the schema),
    or an empty file is already there (replayed): the same store, and nothing else left."""
    reference = _new_store(tmp_path / "reference" / "new.db")
    folder = tmp_path / "made"
    folder.mkdir()
    condition(monkeypatch, folder / "new.db")
    results: list[str | None] = []
    create = files._create

    def recorded(path: str, image: Any = None) -> str | None:
        results.append(create(path, image))
        return results[-1]

    monkeypatch.setattr(files, "_create", recorded)
    SQLiteStore(str(folder / "new.db")).close()
    monkeypatch.undo()
    assert results == [made]
    assert _contents(folder / "new.db") == _contents(reference)
    assert sorted(p.name for p in folder.iterdir()) == ["new.db"]
