"""``recover`` of a file an older recuerdo wrote gives what opening the file gives: the rows go
into a store at the file's own steps, and the steps it is older than run on them. A file of a
newer recuerdo is refused, as its open is."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

import recuerdo
from recuerdo.core import audit
from recuerdo.engine import recover_memory
from recuerdo.index.chunks import chunk_hash
from recuerdo.notes.history import normalized_hash
from recuerdo.store.hashes import BINARY_KEYS
from recuerdo.store.sqlite import SQLiteStore, sqlite3
from recuerdo.store.sqlite.schema import SCHEMA

from .test_backup import deep_dump

STEP = "m022_binary_keys"


TEXT = "Restart the queue first."


def _written_before_m022(path: Path) -> None:
    """A memory file as a recuerdo before m022 left it: a note, its chunk and the chunk's
    vector, their keys stored as 32 hex digits."""
    store = SQLiteStore(str(path), steps=SCHEMA.names().index(STEP))
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    try:
        with store.write() as tx:
            tx.execute(
                "INSERT INTO items (id, tenant, scope, item_type, category, title, key, content,"
                " source, created_at, updated_at, content_hash) VALUES (1, 'local', 'user',"
                " 'note', 'manual', 'Runbook', 'runbook', ?, 'main', ?, ?, ?)",
                (TEXT, now, now, normalized_hash(TEXT).hex()),
            )
            tx.execute(
                "INSERT INTO chunks (id, item_id, ordinal, start, stop, title, hash, tenant)"
                " VALUES (1, 1, 0, 0, ?, 'Runbook', ?, 'local')",
                (len(TEXT), chunk_hash(TEXT).hex()),
            )
            tx.execute(
                "INSERT INTO embeddings (model, hash, vector) VALUES ('static', ?, ?)",
                (chunk_hash(TEXT).hex(), bytes(16)),
            )
    finally:
        store.close()


def test_a_file_from_before_a_converting_step_recovers_as_it_opens(base: Path) -> None:
    """The rows went into the current schema as they were: the keys stayed hex text where
    every key written since is 16 bytes, so none ever matched them (the same note saved again
    was a new version, not a repeat)."""
    state = base / ".recuerdo" / "state"
    state.mkdir(parents=True)
    _written_before_m022(state / "old.db")
    shutil.copy(state / "old.db", base / "opened.db")
    SQLiteStore(str(base / "opened.db")).close()  # the steps, as an open takes them
    report = recover_memory("old", base / "recovered.db", base_dir=base)
    assert report["lost"] == 0
    conn = sqlite3.connect(str(base / "recovered.db"))
    try:
        for table, column in BINARY_KEYS:
            kinds = conn.execute(f"SELECT DISTINCT typeof({column}) FROM {table}").fetchall()
            assert kinds == [("blob",)], table
    finally:
        conn.close()
    opened, recovered = deep_dump(base / "opened.db"), deep_dump(base / "recovered.db")
    # The marks say how far the derived indexes got; recover starts them over.
    del opened["index_marks"], recovered["index_marks"]
    assert recovered == opened
    store = SQLiteStore(str(base / "recovered.db"))
    try:
        with recuerdo.open("recovered", store=store, embedder="none") as memory:
            again = memory.save("Runbook", TEXT, scope="user")  # no key: found by its hash
            assert (again["id"], memory.get(1)["version"], memory.get(1)["duplicates"]) == (
                1,
                1,
                1,
            )
    finally:
        store.close()


def test_a_file_of_a_newer_recuerdo_is_refused_and_nothing_is_written(base: Path) -> None:
    """Its rows were copied into this version's schema: what the newer steps added was lost
    without a word."""
    with recuerdo.open("newer", base_dir=base, embedder="none") as memory:
        memory.remember("learning", "kept by a newer recuerdo")
    path = base / ".recuerdo" / "state" / "newer.db"
    conn = sqlite3.connect(str(path))
    try:
        conn.execute("INSERT INTO _migrations (name, applied_at) VALUES ('m999_later', 'now')")
        conn.commit()
    finally:
        conn.close()
    with pytest.raises(recuerdo.StoreTooNew) as refused:
        recover_memory("newer", base / "recovered.db", base_dir=base)
    assert refused.value.code == "store_too_new"
    assert not list(base.glob("recovered.db*"))


@pytest.mark.parametrize("steps", [1, 2, 4])
def test_a_file_from_before_the_word_index_recovers(base: Path, steps: int) -> None:
    """A store at a step before both full-text indexes exist could not be opened (its open set
    the indexes' settings): recover, which now builds the file's own steps, failed on such
    files with "no such table" (the review of 0122)."""
    state = base / ".recuerdo" / "state"
    state.mkdir(parents=True)
    store = SQLiteStore(str(state / "early.db"), steps=steps)
    try:
        with store.write() as tx:
            tx.execute(
                "INSERT INTO items (tenant, scope, item_type, category, content, source,"
                " created_at, updated_at) VALUES ('local', 'user', 'entry', 'learning', ?,"
                " 'main', '2024-01-01T00:00:00.000000Z', '2024-01-01T00:00:00.000000Z')",
                (TEXT,),
            )
    finally:
        store.close()
    report = recover_memory("early", base / "recovered.db", base_dir=base)
    assert report["lost"] == 0
    store = SQLiteStore(str(base / "recovered.db"))
    try:
        with recuerdo.open("recovered", store=store, embedder="none") as memory:
            assert [e["content"] for e in memory.recall(search="queue")] == [TEXT]
    finally:
        store.close()


def test_the_forget_counts_carry_over_to_the_recovered_file(base: Path) -> None:
    """The counts of each tenant's forgets (decision 0085) started at 0 again in the recovered
    file: a log that had seen the file's count took every later record for one taken before
    a forget, and a count that climbed back to it passed records quoting a forgotten name."""
    with recuerdo.open("counted", base_dir=base, embedder="none") as memory:
        other = memory.for_tenant("acme")
        for view, times in ((memory, 3), (other, 1)):
            for i in range(times):
                assert view.forget(view.remember("learning", f"to forget {i}"))
        memory.remember("learning", "kept")
    recover_memory("counted", base / "recovered.db", base_dir=base)
    store = SQLiteStore(str(base / "recovered.db"))
    try:
        with store.read() as tx:
            assert audit.forgets(tx) == {"local": 3, "acme": 1}
    finally:
        store.close()


def test_the_scope_counts_of_confined_forgets_carry_over_too(base: Path) -> None:
    """A confined caller's forgets are counted by scope (decision 0139), beside the tenant's."""
    with recuerdo.open("counted", base_dir=base, embedder="none") as memory:
        both = memory.for_principal("lim", "acme", scopes=["project:a", "project:b"])
        entry = both.remember("learning", "to forget", scope="project:a")
        assert both.forget(entry, scope="project:a")
        assert memory.forget(memory.remember("learning", "to forget"))
    recover_memory("counted", base / "recovered.db", base_dir=base)
    store = SQLiteStore(str(base / "recovered.db"))
    try:
        with store.read() as tx:
            assert audit.forgets(tx) == {"local": 1}
            assert audit.scope_forgets(tx) == {("acme", "project:a"): 1, ("acme", "project:b"): 1}
    finally:
        store.close()


@pytest.mark.parametrize("damaged", [None, "x", -5], ids=["null", "text", "negative"])
def test_a_damaged_forget_count_starts_again_and_the_rest_recovers(
    base: Path, damaged: object
) -> None:
    """A count the damage turned into no number was carried as it read: a null failed the
    whole recover (NOT NULL), and text was kept where every reader takes an integer."""
    with recuerdo.open("counted", base_dir=base, embedder="none") as memory:
        other = memory.for_tenant("acme")
        for view in (memory, other):
            assert view.forget(view.remember("learning", "to forget"))
        memory.remember("learning", "kept")
    path = base / ".recuerdo" / "state" / "counted.db"
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA writable_schema = ON")  # as damage leaves it: no NOT NULL held
        conn.execute(
            "UPDATE sqlite_master SET sql = replace(sql, 'upto INTEGER NOT NULL', 'upto')"
            " WHERE name = 'index_marks'"
        )
        conn.commit()
    finally:
        conn.close()
    conn = sqlite3.connect(path)
    try:
        conn.execute(
            "UPDATE index_marks SET upto = ? WHERE name = ?", (damaged, audit.FORGETS + "acme")
        )
        conn.commit()
    finally:
        conn.close()
    recover_memory("counted", base / "recovered.db", base_dir=base)
    store = SQLiteStore(str(base / "recovered.db"))
    try:
        with store.read() as tx:
            assert audit.forgets(tx) == {"local": 1}
    finally:
        store.close()
