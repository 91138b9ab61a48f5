"""A forget empties the audit records it drops, and the upkeep deletes them later
(decision 0069): deleting a record at the forget deleted its row for every item it returned,
each at that item's place in an index, and an erasing forget writes every page it touched."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import recuerdo
from recuerdo.core import audit
from recuerdo.store import audit_found, audit_sweep
from recuerdo.store.audit_words import TABLE as WORDS
from recuerdo.store.postgres import PostgresStore
from recuerdo.store.scope import EVERY_TENANT, scoped
from recuerdo.store.sqlite import sqlite3
from recuerdo.store.sqlite.schema import SCHEMA

from .conftest import audit_kept, ended_without_closing, eventually
from .postgres import contract_url, unique_memory
from .test_audit_words import _opened_at

INDEX = audit_found.TABLE


def _one(memory: recuerdo.Memory, sql: str, params: Any = ()) -> Any:
    with memory._store.read() as tx:
        return tx.scalar(sql, params)


def _records_returning(memory: recuerdo.Memory, item: int, tenant: str = "local") -> list[int]:
    """The records a forget of ``item`` finds, read here with SQL of the test's own: through
    the full-text index of the records' ids on SQLite since m051 (decision 0192), through a row
    per item elsewhere. Item ids are global: the index needs no tenant."""
    with memory._store.read() as tx:
        if audit_found.in_index(tx):
            rows = tx.all(
                f"SELECT rowid AS id FROM {INDEX} WHERE {INDEX} MATCH ? ORDER BY rowid",
                (f'"{item}"',),
            )
        else:
            rows = tx.all(
                "SELECT audit_id AS id FROM retrieval_audit_items WHERE tenant = ?"
                " AND item_id = ? ORDER BY audit_id",
                (tenant, item),
            )
    return [row["id"] for row in rows]


def _searched(memory: recuerdo.Memory, *queries: str) -> dict[str, int]:
    """Each query searched and flushed; the id of its record."""
    for query in queries:
        memory.search(query)
    memory.audit()
    with memory._store.read() as tx:
        rows = tx.all("SELECT id, query FROM retrieval_audit WHERE tenant = 'local'")
    return {row["query"]: row["id"] for row in rows}


def test_a_forget_empties_the_records_it_drops_and_the_upkeep_deletes_them(
    memory: recuerdo.Memory,
) -> None:
    kept = memory.remember("learning", "the harbour cranes lift containers at dawn")
    gone = memory.remember("learning", "the harbour vault codename is Quorbelax")
    memory._upkeep.stop(drain=False)  # its rounds run below, when the test asks
    memory._upkeep.drain()
    records = _searched(memory, "harbour", "invoices")
    harbour = records["harbour"]
    assert _records_returning(memory, kept) == _records_returning(memory, gone) == [harbour]
    assert memory.forget(gone)

    with memory._store.read() as tx:
        row = tx.one(
            "SELECT query, filters, returned, scrubbed FROM retrieval_audit WHERE id = ?",
            (records["harbour"],),
        )
        words = tx.scalar(f"SELECT count(*) FROM {WORDS} WHERE audit_id = ?", (records["harbour"],))
    assert row is not None
    assert (row["query"], row["filters"], row["returned"], row["scrubbed"]) == (None, "{}", "[]", 1)
    assert words == 0  # digests of what was asked go at once: a dictionary could reverse them
    assert _records_returning(memory, gone) == []  # the forgotten item's trace went
    # The full-text index answers for no emptied record; the rows of the other items wait for
    # the sweep.
    emptied_waits = [] if memory._store.dialect == "sqlite" else [harbour]
    assert _records_returning(memory, kept) == emptied_waits
    assert [record["query"] for record in memory.audit()] == ["invoices"]

    cranes = _searched(memory, "cranes")["cranes"]  # a flush leaves it: a forget flushes first
    assert _one(memory, "SELECT count(*) FROM retrieval_audit WHERE scrubbed = 1") == 1
    memory._upkeep.drain()  # the upkeep's round deletes it
    assert _one(memory, "SELECT count(*) FROM retrieval_audit WHERE scrubbed = 1") == 0
    assert (
        _one(memory, "SELECT count(*) FROM retrieval_audit WHERE id = ?", (records["harbour"],))
        == 0
    )
    assert _records_returning(memory, kept) == [cranes]
    assert audit_kept(memory) == ["invoices", "cranes"]


def test_a_record_emptied_once_is_not_counted_again(memory: recuerdo.Memory) -> None:
    """A second forget of another item the emptied record returned finds it emptied already."""
    first = memory.remember("learning", "harbour cranes at dawn")
    second = memory.remember("learning", "harbour tugs at dusk")
    memory._upkeep.drain()
    records = _searched(memory, "harbour")
    assert _records_returning(memory, second) == [records["harbour"]]
    with memory._store.write() as tx:
        assert audit.scrub(tx, "local", items=[first]) == 1
        assert audit.scrub(tx, "local", items=[second]) == 0
    assert _records_returning(memory, first) == _records_returning(memory, second) == []


def test_the_sweep_takes_every_tenants_records_a_batch_at_a_time(memory: recuerdo.Memory) -> None:
    views = {tenant: memory.for_tenant(tenant) for tenant in ("ann", "bob")}
    entries = {
        tenant: view.remember("learning", "harbour cranes") for tenant, view in views.items()
    }
    # Returned beside the forgotten entries: the rows of these wait for the sweep (PostgreSQL).
    others = {
        tenant: view.remember("learning", "harbour cranes at dawn")
        for tenant, view in views.items()
    }
    memory._upkeep.stop(drain=False)
    memory._upkeep.drain()
    for view in views.values():
        view.search("harbour")
        view.search("cranes")
    memory.audit()
    for tenant, view in views.items():
        assert view.forget(entries[tenant])
    with scoped(EVERY_TENANT), memory._store.write() as tx:
        waiting = "SELECT count(*) FROM retrieval_audit /* every tenant */ WHERE scrubbed = 1"
        assert tx.scalar(waiting) == 4
        assert [audit_sweep.sweep(tx, 3), audit_sweep.sweep(tx, 3)] == [3, 1]
        assert audit_sweep.sweep(tx, 3) == 0
    for tenant, other in others.items():
        assert _records_returning(memory, entries[tenant], tenant) == []
        assert _records_returning(memory, other, tenant) == []


@pytest.mark.sqlite_only("the bytes of a file")
def test_the_query_of_an_emptied_record_leaves_the_file(base: Path) -> None:
    marker = "Zelquovantrish"
    with recuerdo.open("sweep", base_dir=base, embedder="none") as memory:
        for number in range(60):  # records on several pages, as a real audit's
            memory.search(f"ordinary harbour matter number {number}")
        gone = memory.remember("learning", f"{marker} is the vault codename")
        memory._upkeep.drain()
        memory.search(f"what is {marker}")
        memory.audit()
        assert memory.forget(gone)
        files = [p for p in (base / ".recuerdo" / "state").iterdir() if p.is_file()]
        raw = b"".join(path.read_bytes() for path in files).lower()
        assert marker.lower().encode() not in raw


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_store_from_before_the_step_deletes_and_then_empties(base: Path, kind: str) -> None:
    """At an older schema (a restore's) a forget deletes the records, as it did; once the step
    has run, it empties them."""
    name = unique_memory("sweep")
    before = SCHEMA.names().index(audit_sweep.STEP)
    try:
        with _opened_at(kind, base, name, before) as memory:
            first = memory.remember("learning", "harbour cranes at dawn")
            memory._upkeep.drain()
            _searched(memory, "harbour", "invoices")
            assert memory.forget(first)
            assert audit_kept(memory) == ["invoices"]
        with _opened_at(kind, base, name, None) as memory:
            second = memory.remember("learning", "harbour tugs at dusk")
            memory._upkeep.stop(drain=False)
            memory._upkeep.drain()
            _searched(memory, "harbour")
            assert memory.forget(second)
            assert audit_kept(memory) == ["invoices"]
            assert _one(memory, "SELECT count(*) FROM retrieval_audit WHERE scrubbed = 1") == 1
    finally:
        if kind == "postgres":
            PostgresStore(contract_url(), name).drop()


def _emptied(memory: recuerdo.Memory) -> int:
    return int(_one(memory, "SELECT count(*) FROM retrieval_audit WHERE scrubbed = 1"))


def _three_emptied(memory: recuerdo.Memory) -> None:
    entry = memory.remember("learning", "harbour cranes at dawn")
    memory._upkeep.stop(drain=False)
    memory._upkeep.drain()
    _searched(memory, "harbour", "cranes", "dawn")
    assert memory.forget(entry)
    assert _emptied(memory) == 3


def test_a_round_sweeps_a_batch_and_the_next_rounds_the_rest(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    _three_emptied(memory)
    monkeypatch.setattr(audit_sweep, "SWEEP_BATCH", 2)
    assert memory._audit.sweep(memory._store) == 2
    assert memory._upkeep.drain() >= 1  # a full batch: the rest is owed to the next round
    assert _emptied(memory) == 0


def test_a_sweep_the_store_refused_is_owed_again(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    _three_emptied(memory)

    def busy(tx: object, limit: int) -> int:
        raise recuerdo.StoreError("the memory is busy")

    with monkeypatch.context() as patch:
        patch.setattr(audit_sweep, "sweep", busy)
        with pytest.raises(recuerdo.StoreError):
            memory._audit.sweep(memory._store)
    assert memory._audit.sweep(memory._store) == 3


def test_records_a_process_left_emptied_are_swept_by_the_next(base: Path) -> None:
    """The process that emptied them ended before its upkeep's round."""
    ended_without_closing(
        base,
        "left",
        "entry = memory.remember('learning', 'harbour cranes at dawn')",
        "memory._upkeep.stop(drain=False)",
        "memory._upkeep.drain()",
        "memory.search('harbour')",
        "memory.audit()",
        "assert memory.forget(entry)",
    )
    with recuerdo.open("left", base_dir=base, embedder="none") as memory:
        memory._upkeep.stop(drain=False)
        assert _emptied(memory) == 1
        memory._upkeep.drain()
        assert _emptied(memory) == 0


@pytest.mark.sqlite_only("a reader holding SQLite's log")
def test_the_sweep_does_not_wait_for_a_reader(file_memory: recuerdo.Memory) -> None:
    """Its fold of the log is only for speed: a TRUNCATE checkpoint waited for the reader
    (30 s a try), holding the writer meanwhile."""
    _three_emptied(file_memory)
    reader = sqlite3.connect(file_memory.location)
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM items").fetchone()  # holds its snapshot
        sweeping = threading.Thread(target=file_memory._audit.sweep, args=(file_memory._store,))
        sweeping.start()
        sweeping.join(timeout=10)
        assert not sweeping.is_alive()
    finally:
        reader.close()
    assert _emptied(file_memory) == 0


def test_the_worker_sweeps_after_a_forget_unasked(file_memory: recuerdo.Memory) -> None:
    """The forget wakes the upkeep: its worker deletes the emptied records in a quiet moment,
    with no drain and no later write (the wiring is the same on every backend)."""
    memory = file_memory
    entry = memory.remember("learning", "harbour cranes at dawn")
    memory._upkeep.drain()
    _searched(memory, "harbour")
    # The worker the write woke goes idle first: only the forget wakes it.
    assert eventually(lambda: not memory._upkeep.running)
    assert memory.forget(entry)
    eventually(lambda: _emptied(memory) == 0)
    assert _emptied(memory) == 0


def test_closing_sweeps(base: Path) -> None:
    with recuerdo.open("closing", base_dir=base, embedder="none") as memory:
        entry = memory.remember("learning", "harbour cranes at dawn")
        memory._upkeep.drain()
        _searched(memory, "harbour")
        memory._upkeep.stop(drain=False)  # no worker: the close alone is left to sweep
        assert memory.forget(entry)
        assert _emptied(memory) == 1
    with recuerdo.open("closing", base_dir=base, embedder="none") as memory:
        assert _emptied(memory) == 0


def test_the_retention_leaves_emptied_records_to_the_sweep(memory: recuerdo.Memory) -> None:
    """A record a forget emptied is the sweep's, on every backend: the sweep is what merges the
    ids it held out of SQLite's index of ids (0192), and a prune that took it first (a round
    prunes before it sweeps) left the sweep nothing to do."""
    gone = memory.remember("learning", "the vault codename is Quorbelax")
    memory.remember("learning", "harbour cranes at dawn")
    memory._upkeep.stop(drain=False)  # its rounds run below, when the test asks
    memory._upkeep.drain()
    _searched(memory, "vault", "harbour")  # the first returns the entry forgotten below
    assert memory.forget(gone)
    with scoped(EVERY_TENANT), memory._store.write() as tx:
        assert audit.prune_expired(tx, datetime.now(UTC) + timedelta(days=400)) == 1
    assert _emptied(memory) == 1
    assert _one(memory, "SELECT count(*) FROM retrieval_audit") == 1
    memory._upkeep.drain()  # the sweep's round
    assert _one(memory, "SELECT count(*) FROM retrieval_audit") == 0
