"""A search's audit record does not wait for a flush under way (decision 0190): the flush takes
the buffer and commits it while new records gather in a new one. A reader that flushes still
sees every record taken before its flush, and a flush that fails loses none."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import recuerdo
from recuerdo.errors import StoreError

from .conftest import audit_kept
from .postgres import opened_on

PATIENCE = 10.0  # seconds: far beyond any wait but the one the test makes on purpose


@pytest.fixture(params=["sqlite", "postgres"])
def memory(
    request: pytest.FixtureRequest, base: Path, held_upkeep: None
) -> Iterator[recuerdo.Memory]:
    with (
        opened_on(request.param, base, "flushing") as (name, where),
        recuerdo.open(name, embedder="none", **where) as opened,
    ):
        opened.remember("context", "the deploy window is on Friday", ["ops"])
        opened.remember("context", "the canary runs for an hour", ["ops"])
        yield opened


@contextlib.contextmanager
def write_held(memory: recuerdo.Memory) -> Iterator[None]:
    """Another thread holds the store's write lock until the block ends."""
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with memory._store.write():
            holding.set()
            release.wait(3 * PATIENCE)  # past every join below: only the test releases it

    holder = threading.Thread(target=hold)
    holder.start()
    assert holding.wait(PATIENCE)
    try:
        yield
    finally:
        release.set()
        holder.join(PATIENCE)


def started(work: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(work()), daemon=True)
    thread.start()
    return thread, out


def flush(memory: recuerdo.Memory) -> int:
    return memory._audit.flush(memory._store)


def test_a_search_is_recorded_while_a_flush_waits_for_the_write_lock(
    memory: recuerdo.Memory,
) -> None:
    assert memory.recall(search="deploy")
    with write_held(memory):
        flushing, flushed = started(lambda: flush(memory))
        flushing.join(0.2)  # the flush has taken the buffer and waits for the write lock
        assert flushing.is_alive()
        searching, found = started(lambda: memory.recall(search="canary"))
        # Before 0190 the record waited for the flush's lock, held until the commit.
        searching.join(PATIENCE)
        assert not searching.is_alive()
        assert found and found[0]
    flushing.join(PATIENCE)
    assert flushed == [1]
    assert len(memory._audit) == 1  # the search's record, taken during the flush
    assert flush(memory) == 1
    assert audit_kept(memory) == ["deploy", "canary"]


def test_a_flush_waits_for_the_flush_under_way(memory: recuerdo.Memory) -> None:
    """A reader flushes first to see every record taken before it: one taken by a flush
    that has not committed yet is waited for, not missed."""
    # The prune done first: one still due sent the second flush to the write lock too, and
    # a flush that returned with an empty buffer passed (the review of 0190).
    flush(memory)
    memory.recall(search="deploy")
    with write_held(memory):
        first, _ = started(lambda: flush(memory))
        first.join(0.2)
        second, second_flushed = started(lambda: flush(memory))
        second.join(0.2)
        assert second.is_alive()  # not back with an empty buffer while the first waits
    first.join(PATIENCE)
    second.join(PATIENCE)
    assert second_flushed == [0]
    assert audit_kept(memory) == ["deploy"]


def test_the_audit_verb_shows_a_search_a_flush_under_way_took(memory: recuerdo.Memory) -> None:
    """The verb's own flush finds the buffer empty: the record is in the worker's flush,
    not committed yet, and the verb's answer is read once that flush has committed."""
    flush(memory)  # the prune done: the verb's flush has nothing of its own to write
    memory.recall(search="deploy")
    with write_held(memory):
        first, _ = started(lambda: flush(memory))
        first.join(0.2)
        assert first.is_alive()
        reading, shown = started(lambda: memory.audit())
        reading.join(0.2)
    reading.join(PATIENCE)
    first.join(PATIENCE)
    assert [record["query"] for record in shown[0]] == ["deploy"]


class FailingOnce:
    """A store whose first write fails at commit, as a full disk would make it, while another
    thread searches."""

    def __init__(self, store: Any, meanwhile: Callable[[], Any]) -> None:
        self._store = store
        self.failed = False
        self._meanwhile = meanwhile  # what another thread does while the write is under way
        self.meanwhile_done = False

    def write(self, **kwargs: Any) -> Any:
        if self.failed:
            return self._store.write(**kwargs)
        self.failed = True
        return self._failing(**kwargs)

    @contextlib.contextmanager
    def _failing(self, **kwargs: Any) -> Iterator[Any]:
        with self._store.write(**kwargs) as tx:
            yield tx
            beside = threading.Thread(target=self._meanwhile)
            beside.start()
            beside.join(PATIENCE)
            self.meanwhile_done = not beside.is_alive()
            raise StoreError("the write could not be committed: disk full")


def test_a_failed_flush_puts_its_records_back_ahead_of_those_taken_meanwhile(
    memory: recuerdo.Memory,
) -> None:
    memory.recall(search="deploy")
    memory.recall(search="window")
    failing = FailingOnce(memory._store, lambda: memory.recall(search="canary"))
    with pytest.raises(StoreError):
        memory._audit.flush(failing)  # type: ignore[arg-type]
    assert failing.meanwhile_done  # the search did not wait for the flush
    assert audit_kept(memory) == []  # rolled back: nothing half written
    assert len(memory._audit) == 3
    assert memory._audit.flush(failing) == 3  # type: ignore[arg-type]
    assert audit_kept(memory) == ["deploy", "window", "canary"]


class Gated:
    """A store whose next write waits for the test: a flush that called it has taken the
    buffer, and holds no lock of the store's yet."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.reached, self.opened = threading.Event(), threading.Event()

    @contextlib.contextmanager
    def write(self, **kwargs: Any) -> Iterator[Any]:
        self.reached.set()
        assert self.opened.wait(3 * PATIENCE)
        with self._store.write(**kwargs) as tx:
            yield tx


def test_a_forget_waits_for_a_flush_under_way_and_drops_none_of_its_records(
    memory: recuerdo.Memory,
) -> None:
    """The forget's flush waits for the worker's, which writes the records it took before the
    forget scrubs: the search that found the forgotten entry goes, the other stays. Had the
    forget gone ahead, the worker's flush found the count moved and dropped both."""
    deploy = memory.recall(search="deploy")[0]["id"]
    memory.recall(search="canary")
    gated = Gated(memory._store)
    worker, _ = started(lambda: memory._audit.flush(gated))  # type: ignore[arg-type]
    assert gated.reached.wait(PATIENCE)
    forgetting, forgot = started(lambda: memory.forget(deploy))
    forgetting.join(0.2)
    gated.opened.set()
    worker.join(PATIENCE)
    forgetting.join(PATIENCE)
    assert forgot == [True]
    assert audit_kept(memory) == ["canary"]
    assert memory._audit.dropped == 0


class Interrupting:
    """The audit's buffer lock, whose ``nth`` release is followed by a Ctrl-C: the interpreter
    runs a signal's handler once a call returns, this one's as any other."""

    def __init__(self, lock: Any, nth: int) -> None:
        self._lock, self._nth, self.calls = lock, nth, 0

    def __enter__(self) -> Any:
        return self._lock.__enter__()

    def __exit__(self, *exc: Any) -> None:
        self._lock.__exit__(*exc)
        self.calls += 1
        if self.calls == self._nth:
            raise KeyboardInterrupt


@pytest.mark.parametrize("nth", [1, 2, 3])
def test_an_interrupt_in_a_flush_loses_no_record(memory: recuerdo.Memory, nth: int) -> None:
    """Rolled back, a record stays in the buffer; committed, it leaves it: once either way.
    Taken from the buffer before the write's ``try``, a Ctrl-C as the take's lock was released
    lost it (the review of 0190)."""
    memory.recall(search="deploy")
    log = memory._audit
    lock, log._lock = log._lock, Interrupting(log._lock, nth)  # type: ignore[assignment]
    try:
        with contextlib.suppress(KeyboardInterrupt):
            flush(memory)
    finally:
        log._lock = lock
    assert len(audit_kept(memory)) + len(log) == 1
    flush(memory)
    assert audit_kept(memory) == ["deploy"]
