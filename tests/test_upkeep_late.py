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
