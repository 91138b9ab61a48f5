"""Index upkeep off the write path.

Some indexes cost more to build than the write they follow (the trigram index behind entry
search costs about three times the insert). A write is acknowledged as soon as its row is
durable; an :class:`Upkeep` thread then brings such indexes up to date in batches, and readers
cover the not-yet-indexed rows themselves, so nothing written is ever missed by a read.

The thread starts on the first write, gathers writes for a moment so one transaction indexes
many rows, and ends when idle. ``drain()`` finishes the work synchronously (``close()`` uses it,
so short-lived processes such as CLI calls leave a complete index behind).
"""

from __future__ import annotations

import atexit
import threading
import time
import weakref
from collections.abc import Callable, Sequence

from .errors import StoreError

Task = Callable[[], int]
"""One step of upkeep: does a bounded amount of work in its own transactions; returns 0 when
nothing is left."""

GATHER_SECONDS = 0.2
IDLE_SECONDS = 2.0
DRAIN_ON_CLOSE = 20_000
# Past this many unindexed rows, readers' scans of the tail get slow: index even while writes
# keep coming instead of waiting for a quiet moment.
FORCE_BACKLOG = 100_000


_live: weakref.WeakSet[Upkeep] = weakref.WeakSet()


@atexit.register
def _stop_workers() -> None:
    # A worker killed inside native code (an embedding model) at interpreter exit aborts the
    # process; stop them first. Work left over is picked up by the next process.
    for upkeep in list(_live):
        upkeep.stop(drain=False)


class Upkeep:
    def __init__(
        self, tasks: Sequence[Task], backlog: Callable[[], int], on_close: Sequence[Task] = ()
    ) -> None:
        self._tasks = tuple(tasks)
        self._on_close = tuple(on_close)
        _live.add(self)
        self._backlog = backlog
        self._wake = threading.Event()
        self._guard = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._stopped = threading.Event()
        self._working = threading.Lock()  # one round of tasks at a time (worker or drain)
        self._last_poke = 0.0
        self._pending = 0

    def poke(self, rows: int = 1) -> None:
        """Note that ``rows`` rows were written; make sure a worker will index them."""
        with self._guard:
            if self._stopping:
                return
            self._last_poke = time.monotonic()
            self._pending += rows
            self._wake.set()
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="recuerdo-upkeep", daemon=True
                )
                self._thread.start()

    def step(self) -> int:
        """One round of every task; how much work they did."""
        with self._working:
            return sum(task() for task in self._tasks)

    def backlog(self) -> int:
        return self._backlog()

    def drain(self, limit: int | None = None, tasks: Sequence[Task] | None = None) -> int:
        """Do the pending work now (at most about ``limit`` rows); return the work done."""
        chosen = self._tasks if tasks is None else tuple(tasks)
        done = 0
        while limit is None or done < limit:
            with self._working:
                work = sum(task() for task in chosen)
            if work == 0:
                break
            done += work
        return done

    def _run(self) -> None:
        while True:
            if not self._wake.wait(IDLE_SECONDS):
                with self._guard:
                    if not self._wake.is_set():
                        self._thread = None
                        return
            self._wake.clear()
            if not self._quiet_moment():
                return
            try:
                while not self._stopping and (work := self.step()):
                    with self._guard:
                        self._pending = max(0, self._pending - work)
                        busy = time.monotonic() - self._last_poke < GATHER_SECONDS
                    if busy:  # writes are coming in again: let them have the store
                        self._wake.set()
                        break
            except StoreError:
                pass  # the store is closing or busy; the next write or open retries

    def _quiet_moment(self) -> bool:
        """Wait until writes pause (or the backlog grows too large); False when stopping."""
        while True:
            with self._guard:
                quiet_for = time.monotonic() - self._last_poke
                urgent = self._pending >= FORCE_BACKLOG
            if quiet_for >= GATHER_SECONDS or urgent:
                return not self._stopping
            if self._stopped.wait(GATHER_SECONDS - quiet_for):
                return False

    def stop(self, *, drain: bool = True) -> None:
        """End the worker; with ``drain``, finish a small backlog before returning."""
        with self._guard:
            self._stopping = True
            self._stopped.set()
            thread = self._thread
            self._wake.set()
        if thread is not None:
            thread.join()
        if drain and self.backlog() <= DRAIN_ON_CLOSE:
            self.drain(tasks=self._on_close)
