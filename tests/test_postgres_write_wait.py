"""A PostgreSQL write waits for the memory's writer lock as long as SQLite's busy timeout, then
is refused as busy (``store_unavailable``), with nothing written. Behind a writer that stopped
mid-write (a frozen process keeps its transaction, and the lock, open) every writer of the
memory waited for ever; on SQLite they gave up after the busy timeout."""

from __future__ import annotations

import time
from collections.abc import Iterator

import psycopg
import pytest

import recuerdo
from recuerdo.store.postgres import PostgresStore, statements
from recuerdo.store.postgres.connection import schema_name
from recuerdo.store.postgres.pool import lock_key

from .postgres import contract_url, unique_memory


@pytest.fixture
def memory() -> Iterator[recuerdo.Memory]:
    store = PostgresStore(contract_url(), unique_memory("wait"))
    opened = recuerdo.open(store.memory, store=store, embedder="none")
    try:
        yield opened
    finally:
        opened.close()
        store.drop()


def test_a_write_behind_a_stopped_writer_is_refused_as_busy(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(statements, "WRITE_WAIT_MS", 400)  # read there by every write
    memory.remember("context", "before the stop")
    store = memory._store
    assert isinstance(store, PostgresStore)
    # Another session holds the writer lock and does nothing more: a frozen writer.
    with psycopg.connect(store.url, autocommit=True) as holder:
        holder.execute(
            "SELECT pg_advisory_lock(hashtextextended(%s, 0))",
            [lock_key(schema_name(store.memory))],
        )
        began = time.monotonic()
        with pytest.raises(recuerdo.StoreError) as refused:
            memory.remember("context", "behind the stopped writer")
        waited = time.monotonic() - began
        assert refused.value.code == "store_unavailable"
        assert "busy" in refused.value.detail and "nothing was written" in refused.value.detail
        assert 0.3 < waited < 30
    # Nothing of the refused write is there; once the lock is free, writes go through.
    assert [e["content"] for e in memory.recall()] == ["before the stop"]
    memory.remember("context", "after the stop")
    assert len(memory.recall()) == 2
