"""The upkeep worker outlives an error of one of its tasks: the next write retries."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from recuerdo.core.upkeep import Upkeep
from recuerdo.errors import StorageFull


def test_a_task_that_fails_once_is_retried_at_the_next_write(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Before: an error other than a store's ended the worker thread, which stayed recorded as
    the worker, so no later write started another and nothing was indexed again."""
    failed, done = threading.Event(), threading.Event()
    calls = []

    def task() -> int:
        calls.append(len(calls))
        if len(calls) == 1:
            failed.set()
            raise RuntimeError("a task's own bug")
        done.set()
        return 0

    upkeep = Upkeep([task], backlog=lambda: 0)
    try:
        with caplog.at_level(logging.ERROR, logger="recuerdo.upkeep"):
            upkeep.poke()
            assert failed.wait(10)
            upkeep.poke()
            assert done.wait(10), "the worker did not come back after the error"
        assert upkeep.running
        assert any("a task's own bug" in (r.exc_text or "") for r in caplog.records)
    finally:
        upkeep.stop(drain=False)


@pytest.mark.parametrize("failing", ["idle", "side", "index"])
def test_a_failing_task_does_not_give_every_read_a_round(failing: str) -> None:
    """After an error the worker waits for the next write (or gathers reads, a round a second
    at most). Before: the rows or vectors the failed round left owed made the worker wait for
    writes only, so every read's poke started a round at once, which failed again: under 300
    reads a second with the embedding failing in the worker, 299 rounds a second, each a
    durable commit of one read's audit record and a logged traceback (decision 0179's review;
    with the audit's flush failing, a full disk, the same on the code before 0179). With the
    index task failing (``index``), before the side tasks that flush the reads' records, the
    first read since the last flush stayed a second old for good: 225 rounds a second
    (the review of 2ee927e)."""
    rounds = [0]

    def index() -> int:
        rounds[0] += 1
        if failing == "index":
            raise StorageFull("the disk is full")
        return 0

    def side() -> int:
        if failing == "side":
            raise StorageFull("the disk is full")
        return 0

    def embed() -> int:
        if failing == "idle":
            raise RuntimeError("the model failed")
        return 0

    upkeep = Upkeep([index], backlog=lambda: 0, idle_tasks=[embed], side_tasks=[side])
    try:
        logging.disable(logging.CRITICAL)
        upkeep.poke(5)  # written rows: their index and vectors are owed
        time.sleep(0.5)  # the round after the writes' pause fails
        before = rounds[0]
        started = time.monotonic()
        while time.monotonic() - started < 2.0:
            upkeep.poke(0)  # a read every 0.005 s
            time.sleep(0.005)
        assert rounds[0] - before <= 5
    finally:
        logging.disable(logging.NOTSET)
        upkeep.stop(drain=False)


def test_a_failing_index_task_does_not_keep_the_reads_records_in_memory() -> None:
    """The side tasks ran after the index tasks in a round, so an index task failing every
    round (a bug, a corrupt index) kept every read's audit record in memory for as long as it
    failed: 1,200 held after 4 s under 300 reads a second (the review of 2ee927e). They run
    still when the index tasks fail."""
    flushed = [0]
    buffered = [0]

    def index() -> int:
        raise RuntimeError("the index is broken")

    def flush() -> int:
        records, buffered[0] = buffered[0], 0
        flushed[0] += records
        return records

    upkeep = Upkeep([index], backlog=lambda: 0, side_tasks=[flush])
    try:
        logging.disable(logging.CRITICAL)
        upkeep.poke(1)
        started = time.monotonic()
        while time.monotonic() - started < 3.0:
            buffered[0] += 1  # a read's record
            upkeep.poke(0)
            time.sleep(0.01)
        assert flushed[0] > 0 and buffered[0] < 200
    finally:
        logging.disable(logging.NOTSET)
        upkeep.stop(drain=False)
