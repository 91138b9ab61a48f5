"""The upkeep's late tasks (decision 0072): they run once the writes have paused for
LATE_SECONDS, whatever reads poke the worker meanwhile, and a stop never waits for the pause.
Fake tasks on a real worker thread, and the memory's own worker."""

from __future__ import annotations

import itertools
import time

import pytest

import recuerdo
from recuerdo.core import upkeep as upkeep_module
from recuerdo.core.upkeep import Upkeep
from recuerdo.errors import StoreError

from .conftest import eventually


class Batches:
    """A task with ``left`` batches of work; when each was called."""

    def __init__(self, left: int = 3) -> None:
        self.left = left
        self.calls: list[float] = []

    def __call__(self) -> int:
        self.calls.append(time.monotonic())
        if self.left:
            self.left -= 1
            return 1
        return 0


def _worker(monkeypatch: pytest.MonkeyPatch, late_seconds: float) -> tuple[Upkeep, Batches]:
    monkeypatch.setattr(upkeep_module, "LATE_SECONDS", late_seconds)
    late = Batches()
    return Upkeep([lambda: 0], backlog=lambda: 0, late_tasks=[late]), late


def _no_round_before_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep a worker from any round of its own until it is stopped. A process that never
    wrote counts as paused since ever (its last write is at 0), so a round that a stall of the
    loaded machine gave it would do the late work a test says the close must not do."""
    monkeypatch.setattr(upkeep_module, "GATHER_SECONDS", 3600.0)
    monkeypatch.setattr(upkeep_module, "MAX_DELAY_SECONDS", 3600.0)


def test_a_late_task_runs_once_the_writes_have_paused(monkeypatch: pytest.MonkeyPatch) -> None:
    worker, late = _worker(monkeypatch, 0.4)
    try:
        written = time.monotonic()
        worker.poke(1)
        assert eventually(lambda: late.left == 0, 10)  # every batch, in the pause's rounds
        assert late.calls[0] >= written + 0.4
    finally:
        worker.stop(drain=False)


@pytest.mark.parametrize("every", [0.05, 0.3])
def test_reads_do_not_hold_the_late_tasks_back(
    monkeypatch: pytest.MonkeyPatch, every: float
) -> None:
    """A read pokes the worker for its audit record (no rows): a memory searched every moment
    after an edit still gets its late work done. Timed from any poke, it never came."""
    worker, late = _worker(monkeypatch, 0.4)
    try:
        worker.poke(1)
        reading_until = time.monotonic() + 5
        while time.monotonic() < reading_until and not late.calls:
            worker.poke(0)
            time.sleep(every)
        assert late.calls  # while the reads went on
    finally:
        worker.stop(drain=False)


def test_a_stop_never_waits_for_the_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    worker, late = _worker(monkeypatch, 30)
    worker.poke(1)
    time.sleep(0.5)  # past the quiet round: the worker waits for the pause now
    started = time.monotonic()
    worker.stop(drain=False)
    assert time.monotonic() - started < 5
    assert late.calls == []
    assert not worker.running


class Endless(Batches):
    """A late task that has more work for far longer than any test waits (``ENOUGH`` batches,
    then none: a test whose bound is gone fails instead of hanging), each batch taking
    ``seconds``."""

    ENOUGH = 400

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds

    def __call__(self) -> int:
        self.calls.append(time.monotonic())
        if len(self.calls) > self.ENOUGH:
            return 0
        time.sleep(self.seconds)
        return 1


def _rounds(calls: list[float], gap: float = 0.2) -> list[list[float]]:
    """The calls grouped into the rounds they came in (a round's calls are one batch apart)."""
    rounds: list[list[float]] = []
    for moment in calls:
        if rounds and moment - rounds[-1][-1] < gap:
            rounds[-1].append(moment)
        else:
            rounds.append([moment])
    return rounds


def test_writes_that_never_pause_leave_the_late_tasks_a_bounded_share(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Writes 50 ms apart never give the pause: once LATE_OVERDUE_SECONDS have passed, the
    late tasks run anyway, while the writes go on, for about LATE_SHARE of that time a round
    (decision 0073). Before, they never ran until the writes stopped."""
    monkeypatch.setattr(upkeep_module, "LATE_OVERDUE_SECONDS", 0.5)
    monkeypatch.setattr(upkeep_module, "LATE_SHARE", 0.05)  # 25 ms a round: one or two batches
    # No pause round: a main thread stalled a second would give one, which is no share.
    monkeypatch.setattr(upkeep_module, "LATE_SECONDS", 3600.0)
    late = Endless(0.02)
    worker = Upkeep([lambda: 0], backlog=lambda: 0, late_tasks=[late])
    try:
        writing_until = time.monotonic() + 30  # a loaded machine delays the low-priority worker
        while time.monotonic() < writing_until and len(_rounds(late.calls)) < 2:
            worker.poke(1)
            time.sleep(0.05)
        worker.stop(drain=False)
        rounds = _rounds(late.calls)
        assert len(rounds) >= 2  # while the writes went on
        # Each round stops after its share: a task that always has work would otherwise run
        # on until the writes stop.
        assert max(len(batches) for batches in rounds) <= 3
    finally:
        worker.stop(drain=False)


@pytest.mark.parametrize(
    ("rows", "drain", "left"),
    [(1, True, 0), (1, False, 3), (0, True, 3)],
    ids=["wrote, closing", "stopped without drain", "only read, closing"],
)
def test_a_closing_worker_gives_the_late_tasks_their_moment(
    monkeypatch: pytest.MonkeyPatch, rows: int, drain: bool, left: int
) -> None:
    """A stop that drains (a closing process) does the late work after its own tasks, with no
    pause waited for, if the process wrote (a read's poke, for its audit record, is no write:
    a search from the command line must not pay for another process's edits); a stop without
    drain leaves it (decision 0073)."""
    _no_round_before_stop(monkeypatch)
    worker, late = _worker(monkeypatch, 3600)
    worker.poke(rows)
    worker.stop(drain=drain)
    assert late.left == left


def test_a_closing_worker_stops_the_late_work_after_its_moment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The close's late work ends after LATE_ON_CLOSE_SECONDS, its work left to a later
    process: a long list must not hold a closing process for minutes."""
    monkeypatch.setattr(upkeep_module, "LATE_ON_CLOSE_SECONDS", 0.3)
    monkeypatch.setattr(upkeep_module, "LATE_SECONDS", 3600.0)
    late = Endless(0.05)
    worker = Upkeep([lambda: 0], backlog=lambda: 0, late_tasks=[late])
    worker.poke(1)
    worker.stop(drain=True)
    assert late.calls  # it had its moment
    # No new round after it: 0.3 s of 0.05 s batches, and the one that began before its end
    # (a few more where the machine stalled a sleep; without the bound, all of ENOUGH).
    assert len(late.calls) <= 0.3 / 0.05 + 2


def test_idle_and_late_work_does_not_count_as_rows_indexed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The rows the writes poked stay owed until the tasks index them: the embedding's or the
    erasure's work is of other rows. Counted against them, it cancelled the count, and the
    overdue round (MAX_DELAY_SECONDS) never came for rows still waiting. The audit's work
    (records reads add) is run at every round, and counts none of them either."""
    monkeypatch.setattr(upkeep_module, "LATE_SECONDS", 0.2)
    late, embedded, audited = Batches(), Batches(left=1), Batches(left=4)
    worker = Upkeep(
        [lambda: 0],
        backlog=lambda: 0,
        idle_tasks=[embedded],
        late_tasks=[late],
        side_tasks=[audited],  # the audit's records, which reads add
    )
    try:
        worker.poke(5)
        assert eventually(lambda: not (late.left or embedded.left or audited.left), 10)
        assert worker._pending == 5  # the tasks (lambda: 0) indexed none of them
    finally:
        worker.stop(drain=False)


def test_a_close_whose_late_work_fails_still_closes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The late work at close is work nothing waits for: a busy or closing store leaves it to
    a later process, and the close does not fail for it."""
    monkeypatch.setattr(upkeep_module, "LATE_SECONDS", 3600.0)

    def busy() -> int:
        raise StoreError("the memory is busy")

    worker = Upkeep([lambda: 0], backlog=lambda: 0, late_tasks=[busy])
    worker.poke(1)
    worker.stop(drain=True)
    assert not worker.running


def test_rows_an_earlier_process_left_are_no_write_of_this_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A process that opens a memory with rows left unindexed pokes its worker for them: that
    is no write of its own, so its close does no late work (decision 0073)."""
    _no_round_before_stop(monkeypatch)
    worker, late = _worker(monkeypatch, 3600)
    worker.poke(left=True)
    worker.stop(drain=True)
    assert late.left == 3


@pytest.mark.parametrize(
    ("quiet", "late", "expected"), [(False, False, 3), (True, True, 3 + 5 + 7)]
)
def test_a_round_reports_the_work_of_every_kind_of_task(
    quiet: bool, late: bool, expected: int
) -> None:
    """The round's work (whether the worker goes on) is every task's: the side tasks' work
    was lost whenever the idle tasks ran in the same round."""
    worker = Upkeep(
        [lambda: 1],
        backlog=lambda: 0,
        side_tasks=[lambda: 2],
        idle_tasks=[lambda: 5],
        late_tasks=[lambda: 7],
    )
    assert worker.step(quiet=quiet, late=late) == expected


def test_a_failing_late_task_waits_for_the_next_share(monkeypatch: pytest.MonkeyPatch) -> None:
    """A late task that fails (a busy store) under writes that never pause is tried again at
    the next share, LATE_OVERDUE_SECONDS later, not at every round of the worker."""
    monkeypatch.setattr(upkeep_module, "MAX_DELAY_SECONDS", 0.05)  # a round every 50 ms
    monkeypatch.setattr(upkeep_module, "LATE_OVERDUE_SECONDS", 0.5)
    # No pause round: a stalled main thread would otherwise give one, which is no share.
    monkeypatch.setattr(upkeep_module, "LATE_SECONDS", 3600.0)
    calls: list[float] = []

    def busy() -> int:
        calls.append(time.monotonic())
        raise StoreError("the memory is busy")

    worker = Upkeep([lambda: 0], backlog=lambda: 0, late_tasks=[busy])
    try:
        writing_until = time.monotonic() + 30
        while time.monotonic() < writing_until and len(calls) < 3:
            worker.poke(1)
            time.sleep(0.02)
    finally:
        worker.stop(drain=False)
    assert len(calls) >= 3
    assert min(later - earlier for earlier, later in itertools.pairwise(calls)) >= 0.45


def test_a_write_after_the_worker_stopped_still_gets_the_closes_late_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A process that stopped its worker (a test, a benchmark) and then wrote is still a
    process that wrote when it closes."""
    worker, late = _worker(monkeypatch, 3600)
    worker.stop(drain=False)
    worker.poke(1)
    worker.stop(drain=True)
    assert late.left == 0


def test_the_audits_records_are_not_counted_as_rows_indexed(memory: recuerdo.Memory) -> None:
    """The memory's worker runs the audit's flush and sweep beside its indexing (decision
    0073): the records that searches leave are written in the same round, and counted apart
    from the rows the writes poked."""
    memory._upkeep.stop(drain=False)
    memory.remember("learning", "harbour cranes at dawn")
    memory._upkeep.drain()
    for _ in range(3):
        memory.search("harbour")
    done = memory._upkeep._round(quiet=False, late=False)
    assert (done.indexed, done.other) == (0, 3)  # the flush wrote the three searches' records
    assert [record["query"] for record in memory.audit(limit=5)] == ["harbour"] * 3
