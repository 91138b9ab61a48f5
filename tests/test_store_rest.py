"""A store at rest gives back the space its write-ahead log grew to (decision 0185): the worker
of the index upkeep, idle for IDLE_SECONDS, folds the log into the file and truncates it before
it ends. Before, the log stayed at its high mark (up to ``journal_size_limit``, 64 MiB) for as
long as the process lived: a third of a 10,000-note store."""

from __future__ import annotations

import os
import time

import pytest

import recuerdo
from recuerdo.core import upkeep
from recuerdo.store.sqlite.driver import sqlite3

IDLE = 0.2


def _worker_ended(memory: recuerdo.Memory, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if memory._upkeep._thread is None:
            return True
        time.sleep(0.05)
    return False


def _write_many(memory: recuerdo.Memory, count: int = 200) -> list[int]:
    return [
        int(memory.save(f"note {n}", f"words of the note number {n} " * 20)["id"])
        for n in range(count)
    ]


@pytest.fixture
def short_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upkeep, "IDLE_SECONDS", IDLE)


@pytest.mark.usefixtures("short_idle")
def test_an_idle_store_gives_the_logs_space_back(file_memory: recuerdo.Memory) -> None:
    ids = _write_many(file_memory)
    wal = f"{file_memory._store.location}-wal"
    assert os.path.getsize(wal) > 0  # the writes grew it (a stall may have rested it once)
    assert _worker_ended(file_memory)
    assert os.path.getsize(wal) == 0
    # Folded, not lost: every note reads back, from a connection of its own too.
    assert file_memory.get(ids[-1])["content"].startswith(
        f"words of the note number {len(ids) - 1}"
    )
    other = sqlite3.connect(file_memory._store.location)
    try:
        assert other.execute("SELECT count(*) FROM items WHERE item_type = 'note'").fetchone()[
            0
        ] == len(ids)
    finally:
        other.close()


@pytest.mark.usefixtures("short_idle")
def test_a_reader_holding_the_log_is_not_waited_for(file_memory: recuerdo.Memory) -> None:
    _write_many(file_memory, 50)
    path = file_memory._store.location
    reader = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM items").fetchone()
        file_memory.save("held", "a note written while the reader holds its snapshot")
        started = time.monotonic()
        assert _worker_ended(file_memory)
        # One try of the fold (log_fold.TRY_MS), not the forget's patience of 10 s.
        assert time.monotonic() - started < 8.0
        assert os.path.getsize(f"{path}-wal") > 0  # the reader still needs it
    finally:
        reader.close()
    file_memory.search("held")  # a read: the worker runs and rests again
    assert _worker_ended(file_memory)
    assert os.path.getsize(f"{path}-wal") == 0


def test_rest_keeps_every_write_on_each_backend(
    memory: recuerdo.Memory, request: pytest.FixtureRequest
) -> None:
    """Called directly (the worker stopped): a file's log is empty after it; on PostgreSQL
    (which recycles its own log) and in memory it does nothing; nothing is lost anywhere."""
    ids = _write_many(memory, 20)
    memory._upkeep.stop()  # drains, and no worker rests or writes behind the call
    wal = f"{memory.location}-wal"
    on_file = request.node.callspec.params["memory"] == "file"
    assert not on_file or os.path.getsize(wal) > 0  # a file's log, present and grown
    memory._store.rest()
    assert not on_file or os.path.getsize(wal) == 0
    assert [memory.get(i)["content"] for i in ids] == [
        f"words of the note number {n} " * 20 for n in range(len(ids))
    ]
