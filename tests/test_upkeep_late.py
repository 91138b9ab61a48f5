"""The upkeep's late tasks (decision 0072): they run once the writes have paused for
LATE_SECONDS, whatever reads poke the worker meanwhile, and a stop never waits for the pause.
Fake tasks on a real worker thread."""

from __future__ import annotations

import time

import pytest

from recuerdo.core import upkeep as upkeep_module
from recuerdo.core.upkeep import Upkeep

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
    """A late task that always has more work, each batch taking ``seconds``."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds

    def __call__(self) -> int:
        self.calls.append(time.monotonic())
        time.sleep(self.seconds)
        return 1


def test_writes_that_never_pause_leave_the_late_tasks_a_bounded_share(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Writes 50 ms apart never give the pause: once LATE_OVERDUE_SECONDS have passed, the
    late tasks run anyway, while the writes go on, for about LATE_SHARE of the time (decision
    0073). Before, they never ran until the writes stopped."""
    monkeypatch.setattr(upkeep_module, "LATE_OVERDUE_SECONDS", 0.5)
    monkeypatch.setattr(upkeep_module, "LATE_SHARE", 0.05)  # 25 ms a round: one or two batches
    late = Endless(0.02)
    worker = Upkeep([lambda: 0], backlog=lambda: 0, late_tasks=[late])
    try:
        writing_until = time.monotonic() + 3
        while time.monotonic() < writing_until:
            worker.poke(1)
            time.sleep(0.05)
        assert len(late.calls) >= 2  # while the writes went on
        # Unbounded, a task that always has work would have run all along: about 150 batches.
        assert len(late.calls) <= 40
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
    started = time.monotonic()
    worker.stop(drain=True)
    assert late.calls  # it had its moment
    assert time.monotonic() - started < 3


def test_idle_and_late_work_does_not_count_as_rows_indexed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The rows the writes poked stay owed until the tasks index them: the embedding's or the
    erasure's work is of other rows. Counted against them, it cancelled the count, and the
    overdue round (MAX_DELAY_SECONDS) never came for rows still waiting."""
    worker, late = _worker(monkeypatch, 0.2)
    embedded = Batches(left=1)
    worker._idle_tasks = (embedded,)
    try:
        worker.poke(5)
        assert eventually(lambda: late.left == 0 and embedded.left == 0, 10)
        assert worker._pending == 5  # the tasks (lambda: 0) indexed none of them
    finally:
        worker.stop(drain=False)
