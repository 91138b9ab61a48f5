"""The SQLite store: migrations, pragmas, files, transactions."""

from __future__ import annotations

from pathlib import Path

import pytest

import recuerdo
from recuerdo.store import SQLiteStore
from recuerdo.store.sqlite import sqlite3
from recuerdo.store.sqlite.schema import SCHEMA


def test_migrations_are_recorded_once_in_order(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    SQLiteStore(str(path)).close()
    conn = sqlite3.connect(path)
    names = [r[0] for r in conn.execute("SELECT name FROM _migrations ORDER BY rowid")]
    assert names == SCHEMA.names()
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA.version
    conn.close()
    before = path.read_bytes()
    SQLiteStore(str(path)).close()  # nothing left to apply: nothing written
    assert path.read_bytes() == before


def test_pragmas_of_the_file_store(file_memory: recuerdo.Memory) -> None:
    conn = sqlite3.connect(file_memory.location)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    store = SQLiteStore(file_memory.location)
    with store.read() as tx:
        assert tx.scalar("PRAGMA foreign_keys") == 1
        assert tx.scalar("PRAGMA secure_delete") == 1
        assert tx.scalar("PRAGMA synchronous") == 2  # FULL
    store.close()


def test_every_connection_keeps_a_small_page_cache(file_memory: recuerdo.Memory) -> None:
    """A server holds one reader per thread and a writer, each with its own page cache over
    pages the OS caches too: each keeps at most 8 MiB (peak memory, issue 17; a writer of
    32 MiB bought bulk loads nothing measurable, docs/decisions/0031)."""
    from recuerdo.store.sqlite.files import READER_CACHE_KIB, WRITER_CACHE_KIB

    store = SQLiteStore(file_memory.location)
    with store.read() as tx:
        reader = tx.scalar("PRAGMA cache_size")
    with store.write() as tx:
        writer = tx.scalar("PRAGMA cache_size")
    store.close()
    assert (reader, writer) == (READER_CACHE_KIB, WRITER_CACHE_KIB)
    assert -reader <= 8192 and -writer <= 8192


def test_write_rolls_back_on_error(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "r.db"))
    with pytest.raises(RuntimeError), store.write() as tx:
        tx.execute(
            "INSERT INTO rules (tenant, name, level, description, created_at, updated_at)"
            " VALUES ('t', 'n', 'must', 'd', 'x', 'x')"
        )
        raise RuntimeError("boom")
    with store.read() as tx:
        assert tx.scalar("SELECT count(*) FROM rules") == 0
    store.close()


def test_in_memory_store_touches_no_disk(tmp_path: Path) -> None:
    with recuerdo.open("ram", base_dir=tmp_path, in_memory=True) as mem:
        mem.remember("learning", "only in RAM")
        assert mem.location == ":memory:"
        assert len(mem.recall()) == 1
    assert list(tmp_path.iterdir()) == []
    with recuerdo.open("ram", base_dir=tmp_path, in_memory=True) as mem:
        assert mem.recall() == []


def test_state_location_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with recuerdo.open("here") as mem:
        assert Path(mem.location) == tmp_path / ".recuerdo" / "state" / "here.db"
    assert (tmp_path / ".recuerdo" / ".gitignore").read_text().splitlines()[-1] == "*"
    monkeypatch.setenv("RECUERDO_STATE_DIR", str(tmp_path / "env"))
    with recuerdo.open("there") as mem:
        assert Path(mem.location) == tmp_path / "env" / ".recuerdo" / "state" / "there.db"
    with recuerdo.open("explicit", base_dir=tmp_path / "arg") as mem:
        assert Path(mem.location) == tmp_path / "arg" / ".recuerdo" / "state" / "explicit.db"


def test_closed_memory_refuses_with_a_named_error(tmp_path: Path) -> None:
    mem = recuerdo.open("closed", base_dir=tmp_path)
    mem.close()
    with pytest.raises(recuerdo.StoreError) as caught:
        mem.recall()
    assert caught.value.code == "store_unavailable" and caught.value.status == 503


def test_unopenable_location_is_a_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(recuerdo.StoreError):
        SQLiteStore(str(blocker / "x.db"))


def test_not_a_database_is_a_store_error(tmp_path: Path) -> None:
    state = tmp_path / ".recuerdo" / "state"
    state.mkdir(parents=True)
    (state / "junk.db").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(recuerdo.StoreError):
        recuerdo.open("junk", base_dir=tmp_path)


def test_m008_numbers_facts_stated_twice_in_one_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store written before m008: two alike facts of one call (the first ended by a replace)
    get twins 0 and 1, so that their export keys differ."""
    path = tmp_path / ".recuerdo" / "state" / "old.db"
    path.parent.mkdir(parents=True)
    steps = list(SCHEMA.steps)
    monkeypatch.setattr(SCHEMA, "steps", [m for m in steps if m[0] != "m008_fact_twins"])
    SQLiteStore(str(path)).close()
    conn = sqlite3.connect(path)
    stamp = "2026-01-01T00:00:00.000000Z"
    for name in ("Ann", "Bob"):
        conn.execute(
            "INSERT INTO entities (tenant, scope, name, folded, recorded_at)"
            " VALUES ('local', 'user', ?, ?, ?)",
            (name, name.lower(), stamp),
        )
    for obj, ended, replaced_by in ((1, stamp, 2), (2, None, None), (1, None, None)):
        conn.execute(
            "INSERT INTO facts (tenant, scope, subject_id, relation, object_id, recorded_at,"
            " ended_at, replaced_by) VALUES ('local', 'user', 1, 'knows', ?, ?, ?, ?)",
            (obj, stamp, ended, replaced_by),
        )
    conn.commit()
    conn.close()
    monkeypatch.setattr(SCHEMA, "steps", steps)
    with recuerdo.open("old", base_dir=tmp_path) as memory:
        with memory._store.read() as tx:
            twins = [r["twin"] for r in tx.all("SELECT twin FROM facts ORDER BY id")]
        keys = [r["key"] for r in memory.export(scope="user")["records"] if r["record"] == "fact"]
    assert twins == [0, 0, 1]
    assert len(set(keys)) == 3
