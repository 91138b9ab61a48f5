"""The upkeep worker outlives an error of one of its tasks: the next write retries."""

from __future__ import annotations

import logging
import threading

import pytest

from recuerdo.core.upkeep import Upkeep


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
