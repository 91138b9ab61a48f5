"""Reads do not hold the index upkeep back (decision 0177).

The upkeep's worker yields the store to writes: it waits for a pause of GATHER_SECONDS before
a round, and ends its rounds while pokes keep coming. A read pokes it too (its audit record is
flushed by the worker), so a steady stream of searches, one every 0.2 s or more often, read as
writes that never paused: after a bulk load the worker indexed one batch a second (when its
oldest pending rows were a second old), and every search meanwhile read the unindexed tail.
10,000 entries took some 25 s to index under such reads instead of about one. Reads take no
write lock, so only writes hold the worker back now. The idle work (embedding), the audit's
flush and the late tasks waited for a pause of reads until decision 0179: under the same reads
a backlog of vectors stayed for good, and the records piled up in memory. The first test
bounds the time by a margin the fault misses by far (the figures are in the decision); the
second, on fake tasks, is the case the first version of the fix missed (a round that counts
more rows than were poked, cut short by a write)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import recuerdo
from recuerdo.core import upkeep as upkeep_module
from recuerdo.core.upkeep import Claimed, Upkeep

from .conftest import eventually

ENTRIES = 10_000
WITHIN_SECONDS = 10.0


@contextlib.contextmanager
def poking(
    worker: Upkeep, rows: int, every: float, each: Callable[[], None] = lambda: None
) -> Iterator[None]:
    """While the block runs, a thread pokes ``worker`` every ``every`` seconds as a read does
    (``rows`` 0: its audit record) or a write (``rows`` 1), calling ``each`` first; the worker
    is stopped after the block."""
    stop = threading.Event()

    def run() -> None:
        while not stop.is_set():
            each()
            worker.poke(rows)
            time.sleep(every)

    thread = threading.Thread(target=run)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        worker.stop(drain=False)


def _add(counter: list[int]) -> None:
    counter[0] += 1


class Vectors:
    """An idle task: ``left`` vectors owed, embedded ``batch`` a call, a call taking
    ``seconds`` (the model's time)."""

    def __init__(self, left: int, batch: int, *, seconds: float = 0.0) -> None:
        self.left, self.batch, self.seconds = left, batch, seconds

    def __call__(self) -> int:
        done = min(self.left, self.batch)
        self.left -= done
        time.sleep(self.seconds)
        return done


def _embedded_within(task: Vectors, *, seconds: float, poked_rows: int) -> bool:
    """Whether a worker embeds all of ``task``'s vectors (poked as written rows) within
    ``seconds`` while it is poked every 0.02 s with ``poked_rows`` (0: reads, 1: writes)."""
    worker = Upkeep([lambda: 0], backlog=lambda: 0, idle_tasks=[task])
    worker.poke(task.left)  # written rows: their vectors are owed
    with poking(worker, poked_rows, every=0.02):
        return eventually(lambda: task.left == 0, seconds)


def test_searches_every_fifty_milliseconds_do_not_starve_the_index(tmp_path: Path) -> None:
    memory = recuerdo.open("reads", base_dir=tmp_path, embedder="none")
    try:
        for first in range(0, ENTRIES, 5000):
            memory.remember_many(
                [
                    {"category": "learning", "content": f"Harbour note number {n} of the load"}
                    for n in range(first, first + 5000)
                ]
            )
        assert memory._upkeep.backlog() > 0  # the load is acknowledged before it is indexed
        stop = threading.Event()
        found: list[int] = []

        def searching() -> None:
            while not stop.is_set():
                found.append(len(memory.recall(search="harbour", limit=5)))
                time.sleep(0.05)

        reader = threading.Thread(target=searching)
        reader.start()
        try:
            deadline = time.monotonic() + WITHIN_SECONDS
            while memory._upkeep.backlog() and time.monotonic() < deadline:
                time.sleep(0.1)
            left = memory._upkeep.backlog()
        finally:
            stop.set()
            reader.join()
        assert left == 0
        assert found and set(found) == {5}  # every search answered, lagging or not
    finally:
        memory.close()


class DoubleCounted:
    """An index task of ``left`` rows, a batch a call, that counts each row twice (as the
    substring and chunk indexes do, one row each: the worker's count of poked rows then runs
    out half-way) and, in its first call, meets a write (a poke while the round runs)."""

    def __init__(self, worker: list[Upkeep], left: int) -> None:
        self.worker, self.left, self.calls = worker, left, 0

    def __call__(self) -> int:
        self.calls += 1
        if self.calls == 1:
            self.worker[0].poke(1)  # a write comes in while the round runs
        done = min(self.left, 10)
        self.left -= done
        return 2 * done


def test_a_write_during_a_round_does_not_leave_the_rest_to_a_pause_of_reads() -> None:
    """The round counts more work than the rows poked, so none is left to wait for when it
    ends; but the write made it yield. Without writes waiting, the worker then waited for a
    pause of the reads too, and under steady reads the rest of the backlog was never
    indexed."""
    holder: list[Upkeep] = []
    task = DoubleCounted(holder, left=200)
    worker = Upkeep([task], backlog=lambda: task.left)
    holder.append(worker)
    worker.poke(5)  # rows written earlier (by a process that ended, say) wait too
    with poking(worker, 0, every=0.02):  # a search's audit record
        deadline = time.monotonic() + 5
        while task.left and time.monotonic() < deadline:
            time.sleep(0.05)
        assert task.left == 0


@pytest.mark.parametrize("elsewhere", [False, True])
def test_reads_are_still_gathered_when_nothing_is_left_to_index(elsewhere: bool) -> None:
    """Rows were poked that this worker will never count down: a verb's own drain indexed
    them, no index follows them, or (``elsewhere``) another server sharing the database holds
    the index work. Reads must still be gathered for their audit flush (one round for many),
    not given a round each, as the first version of 0177 gave them (a write a search)."""
    rounds: list[float] = []

    def nothing() -> int:
        if elsewhere:
            raise Claimed("indexing")
        return 0

    def flush() -> int:
        rounds.append(time.monotonic())
        return 0

    worker = Upkeep([nothing], backlog=lambda: 0, side_tasks=[flush])
    try:
        worker.poke(5)
        time.sleep(0.5)  # its first rounds find nothing to index
        before = len(rounds)
        for _ in range(50):
            worker.poke(0)  # a search every 0.02 s for a second
            time.sleep(0.02)
        time.sleep(0.3)
        assert len(rounds) - before <= 10
    finally:
        worker.stop(drain=False)


def test_searches_every_fifty_milliseconds_do_not_starve_the_vectors(tmp_path: Path) -> None:
    """Embedding waited for a pause of reads as well as writes (decision 0179): under a
    search every 0.05 s, 3,000 entries stayed without vectors for good, and every answer left
    meaning out (``queued``). It now runs once writes pause, in a share of the time."""
    memory = recuerdo.open("vectors", base_dir=tmp_path, embedder="static")
    try:
        memory.remember_many(
            [{"category": "learning", "content": f"Harbour note number {n}"} for n in range(3000)]
        )
        stop = threading.Event()

        def searching() -> None:
            while not stop.is_set():
                memory.recall(search="harbour", limit=5)
                time.sleep(0.05)

        reader = threading.Thread(target=searching)
        reader.start()
        try:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                status = memory.index_status()
                if status["meaning"] == "armed":
                    break
                time.sleep(0.2)
        finally:
            stop.set()
            reader.join()
        assert (status["meaning"], status["chunks_waiting_for_vectors"]) == ("armed", 0)
        assert status["chunks"] == 3000
    finally:
        memory.close()


def test_an_idle_task_runs_under_steady_reads_once_writes_pause() -> None:
    assert _embedded_within(Vectors(500, 50), seconds=5, poked_rows=0)  # a read's pokes


def test_the_audit_is_flushed_under_reads_that_never_pause() -> None:
    """A read's audit record waited for a pause of the reads: under a search every 0.02 s no
    round ran, and the records piled up in memory (lost if the process died). Reads are
    gathered for MAX_DELAY_SECONDS at most now: a round a second, not one a read."""
    rounds: list[float] = []
    buffered = [0]

    def flush() -> int:
        records, buffered[0] = buffered[0], 0
        if records:
            rounds.append(time.monotonic())
        return records

    unindexed = [1]

    def index() -> int:
        done, unindexed[0] = unindexed[0], 0
        return done

    worker = Upkeep([index], backlog=lambda: unindexed[0], side_tasks=[flush])
    try:
        worker.poke(1)  # a write, indexed in the first round: nothing is pending after it
        time.sleep(0.5)
        started = time.monotonic()
        while time.monotonic() - started < 3.0:
            buffered[0] += 1  # a search's record
            worker.poke(0)  # a search every 0.02 s for three seconds
            time.sleep(0.02)
        during = [moment for moment in rounds if moment >= started]
        assert 2 <= len(during) <= 10
    finally:
        worker.stop(drain=False)


def test_the_late_tasks_run_under_reads_that_never_pause() -> None:
    """The words replaced chunks left in the index are erased once writes have paused for
    LATE_SECONDS. Under a search every 0.02 s after the last write, the worker never left its
    wait for a pause of the reads, and the late tasks never ran (0177 left it, 0179 ends it)."""
    ran: list[float] = []
    unindexed = [1]

    def index() -> int:
        done, unindexed[0] = unindexed[0], 0
        return done

    def late() -> int:
        ran.append(time.monotonic())
        return 0

    worker = Upkeep([index], backlog=lambda: unindexed[0], late_tasks=[late])
    worker.poke(1)  # the last write
    with poking(worker, 0, every=0.02):
        deadline = time.monotonic() + 5
        while not ran and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ran


def test_a_write_during_the_yield_to_reads_is_gathered(monkeypatch: pytest.MonkeyPatch) -> None:
    """A write that came while the worker yielded to reads after an embedding round got a
    round as soon as the wait ended, in the middle of the writes (whether they were coming
    was looked at before the wait): it is gathered until writes pause, as after any round."""
    monkeypatch.setattr(upkeep_module, "GATHER_SECONDS", 0.4)
    monkeypatch.setattr(upkeep_module, "MAX_DELAY_SECONDS", 3600.0)  # no round for reads' sake
    indexed: list[float] = []
    embedded = threading.Event()
    calls = [0]

    def index() -> int:
        indexed.append(time.monotonic())
        return 0

    def embed() -> int:
        calls[0] += 1
        if calls[0] > 1:
            return 0
        time.sleep(0.5)  # one round of 0.5 s: the worker then yields to reads for 0.5 s
        embedded.set()
        return 64

    worker = Upkeep([index], backlog=lambda: 0, idle_tasks=[embed])
    worker.poke(1)
    with poking(worker, 0, every=0.01):
        assert embedded.wait(10)
        time.sleep(0.3)  # inside the yield, 0.2 s before its end
        written = time.monotonic()
        worker.poke(1)
        deadline = time.monotonic() + 5
        while not [t for t in indexed if t > written] and time.monotonic() < deadline:
            time.sleep(0.02)
        after = [t for t in indexed if t > written]
        assert after and after[0] - written >= 0.3  # GATHER_SECONDS: 0.4


def test_rounds_of_late_work_under_reads_flush_the_audit_once_a_second() -> None:
    """Rounds of other work run back to back (here: late work left, as after many edits),
    and each flushed the records of the reads since the one before: under 200 reads a second
    some 200 durable commits a second (the review of 0179). Reads' records are flushed once a
    MAX_DELAY_SECONDS while reads come."""
    flushes: list[float] = []
    buffered = [0]
    unindexed = [1]

    def index() -> int:
        done, unindexed[0] = unindexed[0], 0
        return done

    def flush() -> int:
        records, buffered[0] = buffered[0], 0
        if records:
            flushes.append(time.monotonic())
        return records

    def late() -> int:
        time.sleep(0.003)  # erasing a few chunks' words: more is left
        return 1

    worker = Upkeep([index], backlog=lambda: unindexed[0], side_tasks=[flush], late_tasks=[late])
    worker.poke(1)  # the last write: the late work starts LATE_SECONDS after it
    with poking(worker, 0, every=0.005, each=lambda: _add(buffered)):
        time.sleep(1.5)
        started = time.monotonic()
        time.sleep(2.0)
        during = [moment for moment in flushes if moment >= started]
        assert 1 <= len(during) <= 5


def test_a_close_with_a_large_backlog_still_writes_the_reads_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A close leaves a backlog past DRAIN_ON_CLOSE to the next process, which redoes the
    index work from the marks; it left the audit's records of the reads in memory too, and
    nothing redoes those: the searches were answered and never recorded. Rounds under reads
    flush once a MAX_DELAY_SECONDS since 2ee927e, so a second of them waited (the review of
    2ee927e)."""
    monkeypatch.setattr(upkeep_module, "DRAIN_ON_CLOSE", 0)
    memory = recuerdo.open("close", base_dir=tmp_path, embedder="none")
    try:
        memory.remember_many(
            [{"category": "learning", "content": f"Harbour note number {n}"} for n in range(50)]
        )
        assert memory._upkeep.backlog() > 0  # more than the close drains
        memory.recall(search="harbour", limit=5)
    finally:
        memory.close()
    memory = recuerdo.open("close", base_dir=tmp_path, embedder="none")
    try:
        assert [record["query"] for record in memory.audit()] == ["harbour"]
    finally:
        memory.close()


def test_vectors_get_a_share_under_writes_that_never_pause() -> None:
    """Embedding ran only once writes paused for GATHER_SECONDS, or past a backlog of 5,000
    rows: a writer saving a note every 0.02 s left a backlog below that without vectors for
    as long as it wrote (decision 0180). Owed vectors now get a share of the time."""
    # A write's pokes: one more row each, its vector owed too.
    assert _embedded_within(Vectors(500, 50, seconds=0.005), seconds=6, poked_rows=1)


def test_vectors_get_their_share_past_the_forced_backlog_too() -> None:
    """Past FORCE_BACKLOG // 20 owed rows a round embedded one batch, and every such round
    moved the share's clock: the share never came. 8,000 notes imported, then one saved every
    0.02 s: 7,760 chunks still without vectors 30 s later (4,000 imported: none after 15 s)."""
    imported = Vectors(upkeep_module.FORCE_BACKLOG // 20 + 1000, 64, seconds=0.002)
    assert _embedded_within(imported, seconds=8, poked_rows=1)


def test_a_search_does_not_wait_for_the_whole_share_under_writes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A search that embeds a small backlog before it answers (``settle``) takes the worker's
    lock for its own round. The share under writes held it for every batch of the share (up
    to half a second with the static embedder, longer with a slower model); it is taken a
    batch at a time now (the review of 0180). The share is made four seconds long here, so a
    search held for it stands apart from one that waits a batch on a loaded machine (with
    half a second, a wait of a batch measured 0.48 s at load 7.5)."""
    monkeypatch.setattr(upkeep_module, "IDLE_SHARE_UNDER_WRITES", 2.0)
    started = threading.Event()
    left = [100_000]

    def embed() -> int:
        started.set()
        time.sleep(0.05)  # one batch
        left[0] -= 50
        return 50

    def settle_task() -> int:
        return 0

    worker = Upkeep([lambda: 0], backlog=lambda: 0, idle_tasks=[embed], settle_tasks=[settle_task])
    worker.poke(10)
    with poking(worker, 1, every=0.02):
        assert started.wait(10)  # the share began
        time.sleep(0.06)  # inside it, past its first batch
        began = time.monotonic()
        worker.settle(limit=10, seconds=0.3)
        waited = time.monotonic() - began
        assert waited < 1.5  # held for the share, it waited nearly four seconds
