"""On SQLite the records that returned an item are found through a full-text index of the
records' ids (decision 0192), kept by triggers: written with a record, out when a forget
empties it or the sweep or the retention deletes it. A forget finds what it found before."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import recuerdo
from recuerdo.core import audit
from recuerdo.engine import restore_memory
from recuerdo.store import audit_found, audit_sweep
from recuerdo.store.scope import EVERY_TENANT, scoped
from recuerdo.store.sqlite.schema import SCHEMA

from .conftest import audit_kept
from .postgres import opened_on
from .test_audit_sweep import _records_returning
from .test_audit_words import _opened_at
from .test_backup import _rewrite

SQLITE_ONLY = pytest.mark.sqlite_only("the full-text index of ids is SQLite's")


INDEX = audit_found.TABLE


def _checked(memory: recuerdo.Memory) -> None:
    """FTS5's own check against the records (rank 1 compares the index with its content): a
    trigger that gave a delete other text than it indexed fails it."""
    with scoped(EVERY_TENANT), memory._store.write() as tx:
        tx.execute(f"INSERT INTO {INDEX} ({INDEX}, rank) VALUES ('integrity-check', 1)")


def _tables(memory: recuerdo.Memory) -> set[str]:
    with memory._store.read() as tx:
        rows = tx.all("SELECT name FROM sqlite_master WHERE type = 'table'")
    return {row["name"] for row in rows}


@SQLITE_ONLY
def test_a_flush_indexes_the_ids_and_writes_no_row_per_item(memory: recuerdo.Memory) -> None:
    ids = [memory.remember("learning", f"harbour crane number {n}") for n in range(5)]
    memory._upkeep.drain()
    memory.recall(search="harbour")
    memory.recall(category="learning", limit=2)
    memory.recall(search="zzqqxx")  # returns nothing
    memory.audit()
    assert "retrieval_audit_items" not in _tables(memory)
    with memory._store.read() as tx:
        records = {
            row["id"]: row["returned"]
            for row in tx.all("SELECT id, returned FROM retrieval_audit ORDER BY id")
        }
    first, second, third = records
    assert records[third] == "[]"
    for item in ids:
        expected = [first, second] if item in ids[-2:] else [first]
        assert _records_returning(memory, item) == expected
    _checked(memory)


@SQLITE_ONLY
def test_a_forget_empties_the_records_that_returned_the_item_and_only_those(
    memory: recuerdo.Memory,
) -> None:
    gone = memory.remember("learning", "the vault codename is Quorbelax")
    kept = memory.remember("learning", "the harbour cranes lift containers")
    memory._upkeep.drain()
    memory.recall(search="vault")
    memory.recall(search="harbour")
    memory.recall(category="learning")  # returned both
    memory.audit()
    assert memory.forget(gone)
    # "vault" went for its word too; the listing for returning the forgotten entry.
    assert audit_kept(memory) == ["harbour"]
    assert _records_returning(memory, gone) == []
    # The emptied listing left the index; the harbour search's record is what returns it now.
    assert _records_returning(memory, kept) == audit_kept(memory, "id")
    _checked(memory)
    memory._upkeep.drain()  # the sweep deletes the emptied records: the trigger has nothing
    _checked(memory)


@SQLITE_ONLY
def test_records_the_retention_deletes_leave_the_index(memory: recuerdo.Memory) -> None:
    item = memory.remember("learning", "harbour cranes at dawn")
    memory._upkeep.drain()
    for _ in range(3):
        memory.recall(search="harbour")
    memory.audit()
    assert _records_returning(memory, item) == audit_kept(memory, "id")
    assert len(audit_kept(memory)) == 3
    with scoped(EVERY_TENANT), memory._store.write() as tx:
        assert audit.prune_expired(tx, datetime.now(UTC) + timedelta(days=400)) == 3
    assert _records_returning(memory, item) == []
    _checked(memory)


def test_the_step_indexes_the_records_kept_before_it(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store from before the step found records by their rows per item; the step indexes
    every record's ids, so a forget after it finds the records written before, and records a
    forget emptied before it (the sweep held back) have nothing in the index."""
    before = SCHEMA.names().index(audit_found.STEP)
    with monkeypatch.context() as patch, _opened_at("sqlite", base, "", before) as memory:
        patch.setattr(audit_sweep, "sweep", lambda tx, limit=0: 0)  # the close sweeps none
        gone = memory.remember("learning", "the vault codename is Quorbelax")
        other = memory.remember("learning", "harbour cranes lift containers")
        memory._upkeep.drain()
        memory.recall(category="learning")  # returns both: found by the item's id alone
        memory.recall(search="harbour")
        memory.audit()
        assert "retrieval_audit_items" in _tables(memory)
        assert memory.forget(other)  # empties both records, which the step finds emptied
        assert audit_kept(memory) == []
        memory.recall(category="learning")
        memory.audit()
    with _opened_at("sqlite", base, "", None) as memory:
        assert "retrieval_audit_items" not in _tables(memory)
        with memory._store.read() as tx:
            assert tx.scalar("SELECT count(*) FROM retrieval_audit WHERE scrubbed = 1") == 2
        assert audit_kept(memory, "verb") == ["recall"]
        assert _records_returning(memory, gone) == audit_kept(memory, "id")
        _checked(memory)
        assert memory.forget(gone)
        assert audit_kept(memory) == []
        with memory._store.read() as tx:
            assert tx.scalar(f"SELECT count(*) FROM retrieval_audit WHERE {audit_sweep.LIVE}") == 0
        _checked(memory)
        memory._upkeep.drain()  # the sweep deletes the three emptied records
        with memory._store.read() as tx:
            assert tx.scalar("SELECT count(*) FROM retrieval_audit") == 0
        _checked(memory)


def _leaves(memory: recuerdo.Memory, index: str) -> list[bytes]:
    """The index's leaf pages (ids 1 and 10 are its totals and its list of segments)."""
    with memory._store.read() as tx:
        rows = tx.all(f"SELECT block FROM {index}_data WHERE id > 10 ORDER BY block")
    return [bytes(row["block"]) for row in rows]


def _built_anew(memory: recuerdo.Memory) -> list[bytes]:
    """The leaves of an index of the same records built from nothing: what holds no trace of
    a deleted row."""
    with scoped(EVERY_TENANT), memory._store.write() as tx:
        tx.execute(
            "CREATE VIRTUAL TABLE anew USING fts5 (returned, content='retrieval_audit',"
            " content_rowid='id', tokenize='ascii', detail='none', columnsize=0)"
        )
        tx.execute("INSERT INTO anew (anew) VALUES ('rebuild')")
    try:
        return _leaves(memory, "anew")
    finally:
        with scoped(EVERY_TENANT), memory._store.write() as tx:
            tx.execute("DROP TABLE IF EXISTS anew")  # a failed rebuild took the table with it


@SQLITE_ONLY
def test_the_sweep_merges_the_ids_of_emptied_records_out_of_the_pages(
    memory: recuerdo.Memory,
) -> None:
    gone = memory.remember("learning", "the vault codename is Quorbelax")
    memory.remember("learning", "the harbour cranes lift containers")
    memory._upkeep.stop(drain=False)  # its rounds run below, when the test asks
    memory._upkeep.drain()
    for _ in range(3):  # a segment a flush
        memory.recall(category="learning")
        memory.recall(search="harbour")
        memory.audit()
    assert memory.forget(gone)
    assert _records_returning(memory, gone) == []  # out of the answers at once
    assert _leaves(memory, INDEX) != _built_anew(memory)  # still in the pages
    memory._upkeep.drain()  # the sweep
    assert audit_kept(memory) == ["harbour"] * 3
    assert _leaves(memory, INDEX) == _built_anew(memory)
    _checked(memory)


@pytest.mark.parametrize(
    ("source", "target"),
    [("sqlite", "postgres"), ("postgres", "sqlite")],
    ids=["to_postgres", "to_sqlite"],
)
def test_a_restore_into_the_other_backend_finds_the_records_by_their_ids(
    base: Path, source: str, target: str
) -> None:
    """Neither archive holds how the records are found by id (SQLite's index, PostgreSQL's rows
    per item): the restoring store makes it again from the records, and a forget there empties
    a restored record that returned the forgotten entry."""
    with (
        opened_on(source, base / "from", "audit-from") as (name, where),
        recuerdo.open(name, embedder="none", **where) as memory,
    ):
        gone = memory.remember("learning", "the vault codename is Quorbelax")
        memory.remember("learning", "the harbour cranes lift containers")
        memory._upkeep.drain()
        memory.recall(category="learning")  # returns both; no word of either asked
        memory.audit()
        memory.backup(base / "audit.rbk")
    with opened_on(target, base / "to", "audit-to") as (name, where):
        restore_memory(name, base / "audit.rbk", **where)
        with recuerdo.open(name, embedder="none", create=False, **where) as restored:
            assert audit_kept(restored, "verb") == ["recall"]
            assert restored.forget(gone)
            assert audit_kept(restored, "verb") == []


def test_an_archive_holding_rows_per_item_restores_without_them(base: Path) -> None:
    """Archives written before 0192 hold a row per item returned (PostgreSQL's, and SQLite's
    before m051); a store that keeps no such table skips them and finds the records anew."""
    with recuerdo.open("rows", base_dir=base, embedder="none") as memory:
        gone = memory.remember("learning", "the vault codename is Quorbelax")
        memory._upkeep.drain()
        memory.recall(category="learning")
        memory.audit()
        memory.backup(base / "new.rbk")

    def with_rows(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        header, *rows, end = lines
        record = next(row["r"] for row in rows if row.get("t") == "retrieval_audit")
        item_row = {"tenant": "local", "item_id": gone, "audit_id": record["id"]}
        tables = {**header["tables"], "retrieval_audit_items": 1}
        return [
            {**header, "tables": tables},
            *rows,
            {"t": "retrieval_audit_items", "r": item_row},
            {**end, "rows": end["rows"] + 1},
        ]

    _rewrite(base / "new.rbk", base / "old.rbk", with_rows)
    restore_memory("restored", base / "old.rbk", base_dir=base)
    with recuerdo.open("restored", base_dir=base, embedder="none", create=False) as restored:
        assert audit_kept(restored, "verb") == ["recall"]
        assert restored.forget(gone)
        assert audit_kept(restored, "verb") == []


@SQLITE_ONLY
def test_forgetting_a_scope_merges_the_ids_of_its_records_out_of_the_pages(
    memory: recuerdo.Memory,
) -> None:
    """Forgetting a whole scope deletes its audit records outright (no emptied record waits
    for the sweep): their ids, the forgotten entries' among them, must still leave the pages."""
    memory.remember("learning", "the vault codename is Quorbelax", scope="project:a")
    memory.remember("learning", "the harbour cranes lift containers", scope="project:b")
    memory._upkeep.stop(drain=False)  # its rounds run below, when the test asks
    memory._upkeep.drain()
    for _ in range(3):  # a segment a flush
        memory.recall(category="learning", scope="project:a")
        memory.recall(category="learning", scope="project:b")
        memory.audit()
    memory.forget_knowledge("project:a", all=True)
    assert audit_kept(memory, "scope") == ["project:b"] * 3
    memory._upkeep.drain()  # the sweep's round
    assert _leaves(memory, INDEX) == _built_anew(memory)
    _checked(memory)


@SQLITE_ONLY
def test_records_the_retention_deletes_before_the_sweep_still_leave_the_pages(
    memory: recuerdo.Memory,
) -> None:
    """An upkeep round flushes (and, once an hour or at open, prunes) before it sweeps: a
    record a forget emptied can be past its retention by then. The merge that takes the
    forgotten ids out of the pages must not depend on the sweep deleting it."""
    gone = memory.remember("learning", "the vault codename is Quorbelax")
    memory._upkeep.stop(drain=False)  # its rounds run below, when the test asks
    memory._upkeep.drain()
    for _ in range(3):  # a segment a flush
        memory.recall(category="learning")
        memory.audit()
    assert memory.forget(gone)
    with scoped(EVERY_TENANT), memory._store.write() as tx:
        assert audit.prune_expired(tx, datetime.now(UTC) + timedelta(days=400)) == 0
    memory._upkeep.drain()  # the sweep's round
    assert _leaves(memory, INDEX) == _built_anew(memory)
    _checked(memory)
