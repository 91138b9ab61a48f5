"""A forget folds the write-ahead log back into the file so that no copy of its text stays
(decision 0005); a reader holding the log held each try for the writer's whole busy wait,
fifty times over: the forget answered after up to 25 minutes, then raised although its write
was committed. Now it waits a bounded time, the fold stays owed, ``index_status`` says so,
and the upkeep's next pause folds it (decision 0156)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

import recuerdo
from recuerdo.store.base import REBUILD_OWED, RECLAIM_OWED
from recuerdo.store.sqlite.driver import sqlite3

from .postgres import SETTLED_WITHIN

SECRET_WORD = "Xandrofeliq"


def _erasure_owed(memory: recuerdo.Memory) -> bool:
    return bool(memory.index_status()["backend"]["erasure_owed"])


def test_a_reader_holding_the_log_no_longer_holds_the_forget(
    file_memory: recuerdo.Memory, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from recuerdo.store.sqlite import log_fold

    entry = file_memory.remember("learning", f"the {SECRET_WORD} vault code")
    file_memory._upkeep.drain()
    path = file_memory._store.location
    patience = 2.0  # 10 s as shipped: the forget waits it out, 10 s of a test run
    monkeypatch.setattr(log_fold, "PATIENCE", patience)
    reader = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM items").fetchone()
    outcome: list[object] = []
    forgetting = threading.Thread(target=lambda: outcome.append(file_memory.forget(entry)))
    forgetting.daemon = True
    try:
        forgetting.start()
        forgetting.join(timeout=patience + 20)
        assert not forgetting.is_alive()  # before: 50 tries of 30 s each
        assert outcome == [True]  # answered, not raised: the forget is committed
        assert _erasure_owed(file_memory)
        assert os.path.getsize(f"{path}-wal") > 0
        for _ in range(3):  # the upkeep's pauses retry the fold while the reader holds it
            file_memory._store.erase_stale_words()
        assert _erasure_owed(file_memory)
        warned = [r for r in caplog.records if "holds the write-ahead log" in r.getMessage()]
        assert len(warned) == 1  # said by the forget, not again at each retry
    finally:
        reader.close()
    file_memory._store.erase_stale_words()  # what the upkeep's next pause runs
    assert not _erasure_owed(file_memory)
    assert os.path.getsize(f"{path}-wal") == 0
    assert SECRET_WORD.encode() not in Path(path).read_bytes()


def test_no_erasure_is_owed_once_a_forget_has_folded(memory: recuerdo.Memory) -> None:
    entry = memory.remember("learning", f"the {SECRET_WORD} vault code")
    assert memory.forget(entry)
    settle = getattr(memory._store, "settle", None)
    if settle is not None:  # PostgreSQL: the forget's VACUUM, on a thread of its own
        assert settle(SETTLED_WITHIN)
    assert not _erasure_owed(memory)


def test_each_owed_mark_answers_for_itself(memory: recuerdo.Memory) -> None:
    """A VACUUM owed (PostgreSQL's forget, ``RECLAIM_OWED``) is an erasure owed, and a rebuild
    owed is not: ``index_status`` reads both marks in one query, each answers alone."""

    def owed() -> tuple[bool, bool]:
        backend = memory.index_status()["backend"]
        return backend["erasure_owed"], backend["rebuild_owed"]

    assert owed() == (False, False)
    with memory._store.write() as tx:
        tx.execute("INSERT INTO index_marks (name, upto) VALUES (?, 0)", (RECLAIM_OWED,))
    assert owed() == (True, False)
    with memory._store.write() as tx:
        tx.execute("DELETE FROM index_marks WHERE name = ?", (RECLAIM_OWED,))
        tx.execute("INSERT INTO index_marks (name, upto) VALUES (?, 0)", (REBUILD_OWED,))
    assert owed() == (False, True)


def test_a_write_beside_the_fold_keeps_its_own_busy_wait(file_memory: recuerdo.Memory) -> None:
    """The fold lowers the writer's busy wait for each of its tries only: a write after it
    waits for a lock as long as before."""
    file_memory.remember("learning", "first")
    file_memory._store.reclaim()
    with file_memory._store._live().lock:
        wait = file_memory._store._live().writer.execute("PRAGMA busy_timeout").fetchone()[0]
    assert wait == 30_000
