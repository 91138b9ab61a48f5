"""Index upkeep off the write path.

Some indexes cost more to build than the write they follow (the trigram index behind entry
search costs about three times the insert). A write is acknowledged as soon as its row is
durable; an :class:`Upkeep` thread then brings such indexes up to date in batches, and readers
cover the not-yet-indexed rows themselves, so nothing written is ever missed by a read.

The thread starts on the first write, gathers writes for a moment so one transaction indexes
many rows, and ends when idle. Work that nothing waits for (the late tasks: erasing the words
replaced chunks left in the index) waits for a longer pause of the writes; under writes that
never pause it still gets a small share of the time (LATE_SHARE), and a closing process that
wrote gives it a moment (LATE_ON_CLOSE_SECONDS). ``drain()`` finishes the work synchronously
(``close()`` uses it, so short-lived processes such as CLI calls leave a complete index
behind)."""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import NamedTuple

from ..errors import StorageFull, StoreError
from ..store.scope import EVERY_TENANT, scoped

log = logging.getLogger("recuerdo.upkeep")

Task = Callable[[], int]
"""One step of upkeep: does a bounded amount of work in its own transactions; returns 0 when
nothing is left, or raises :class:`Claimed` when another process holds that work."""


class _Round(NamedTuple):
    """The work of one round: rows of the indexes the pokes count, and the rest, which none
    of those rows are (the side tasks': audit records; the idle tasks': vectors; the late
    tasks': words erased)."""

    indexed: int
    side: int
    idle: int
    late: int
    shared: bool = False  # the idle tasks' share under writes began: the worker goes on with it

    @property
    def other(self) -> int:
        return self.side + self.idle + self.late


class Claimed(Exception):
    """The work is claimed by another process sharing the store (it is doing it now). The
    worker comes back after a moment: the holder may have looked for work just before this
    process wrote, so leaving it would leave rows unindexed."""


GATHER_SECONDS = 0.2
IDLE_SECONDS = 2.0
DRAIN_ON_CLOSE = 20_000
# Past this many unindexed rows, readers' scans of the tail get slow: index even while writes
# keep coming instead of waiting for a quiet moment.
FORCE_BACKLOG = 100_000
# Under a steady stream of writes there is never a quiet moment: index at least this often.
# Reads' audit records are gathered this long at most too: reads that never paused left them
# in memory for good (decision 0179).
MAX_DELAY_SECONDS = 1.0
# The idle tasks (embedding) run once writes pause, reads or not; while reads come, the worker
# then waits as long as its round took (up to MAX_DELAY_SECONDS), so they keep the larger share
# of the GIL and the cores. Waiting for a pause of reads too left a backlog unembedded for good
# under a search every 0.2 s or more often (decision 0179).
IDLE_YIELD_TO_READS = 1.0
# Writes that never pause would hold embedding back until FORCE_BACKLOG // 20 rows wait (a note
# saved every 0.2 s: 17 minutes without vectors). Past IDLE_OVERDUE_SECONDS without an idle
# round, a round embeds for IDLE_SHARE_UNDER_WRITES of that time (decision 0180).
IDLE_OVERDUE_SECONDS = 2.0
IDLE_SHARE_UNDER_WRITES = 0.25
# The work nothing waits for (late tasks) waits for a longer pause: one between two bursts of
# writes is not it.
LATE_SECONDS = 1.0
# Writes that never pause that long would hold it back for good (decision 0073): past
# LATE_OVERDUE_SECONDS without a late round, the late tasks run anyway, for LATE_SHARE of that
# time at most (one in twenty seconds of a steady stream of writes).
LATE_OVERDUE_SECONDS = 10.0
LATE_SHARE = 0.05
# A closing process that wrote does the late work it can in this long: a CLI call that edited
# a note would otherwise leave its old words to a later process's pause. Short: it is paid by
# every such call while a long list waits (one second took a CLI edit from 2 ms to 1 s).
LATE_ON_CLOSE_SECONDS = 0.05
WORKER_NICE = 15
CLAIM_RETRY_SECONDS = 0.2
CLAIM_WAIT_ON_DRAIN = 5.0


_live: weakref.WeakSet[Upkeep] = weakref.WeakSet()


@atexit.register
def _stop_workers() -> None:
    # A worker killed inside native code (an embedding model) at interpreter exit aborts the
    # process; stop them first. Work left over is picked up by the next process.
    for upkeep in list(_live):
        upkeep.stop(drain=False)


def _lower_priority() -> None:
    """Index work yields the CPU to requests: on Linux a thread has its own nice value."""
    with contextlib.suppress(AttributeError, OSError):  # elsewhere: normal priority
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), WORKER_NICE)


class Upkeep:
    def __init__(
        self,
        tasks: Sequence[Task],
        backlog: Callable[[], int],
        idle_tasks: Sequence[Task] = (),
        settle_tasks: Sequence[Task] = (),
        late_tasks: Sequence[Task] = (),
        side_tasks: Sequence[Task] = (),
        rest_tasks: Sequence[Callable[[], None]] = (),
    ) -> None:
        self._tasks = tuple(tasks)
        # Run when the worker has been idle IDLE_SECONDS, before it ends: what the store gives
        # back once nothing is left to do (the write-ahead log's space, decision 0185).
        self._rest_tasks = tuple(rest_tasks)
        # Run with the tasks at every round, but their work is of rows no write counted (the
        # audit's records, which reads add): it does not count the poked rows down.
        self._side_tasks = tuple(side_tasks)
        self._idle_tasks = tuple(idle_tasks)
        self._late_tasks = tuple(late_tasks)
        self._settle_tasks = tuple(settle_tasks)
        self._deferred = 0
        self._last_idle = time.monotonic()  # the last round of the idle tasks
        _live.add(self)
        self._backlog = backlog
        self._wake = threading.Event()
        self._guard = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._stopped = threading.Event()
        self._working = threading.Lock()  # one round of tasks at a time (worker or drain)
        self._last_poke = 0.0
        # The last poke that counted rows: a write. Only writes want the store the worker
        # yields (a read takes no write lock); reads poke for their audit to be flushed, and
        # counted as writes that never paused, a search every 0.2 s held the indexing of a
        # bulk load to one batch a second (decision 0177).
        self._last_rows = 0.0
        # A round that indexed rows ended because writes came: rows may wait that the pending
        # count no longer shows (a round counts each row once an index, more than was poked).
        self._behind = False
        # The last round found no index work it could do (none left, or claimed by another
        # process): the pending count may never fall then (rows a verb's drain indexed, rows
        # no index follows, rows another server indexes), and reads must not each get a round
        # of their own. A write's poke clears it.
        self._nothing_to_index = False
        # This process's last write (0: none). A read's poke (its audit) is no write, nor one
        # for rows an earlier process left unindexed.
        self._last_write = 0.0
        self._last_late = time.monotonic()  # the last round of the late tasks (the worker's)
        self._first_pending = 0.0
        self._pending = 0
        self._first_read = 0.0  # the first read's poke since the last round (0: none)
        # The last round failed: what it left owed waits for the next write (or a round of
        # gathered reads). Counted as waiting for writes only, every read started a round at
        # once, which failed again: a commit and a traceback a read (decision 0179's review).
        self._failed = False
        self._skipped = False  # a task found its work claimed elsewhere: come back to it

    def poke(self, rows: int = 1, *, left: bool = False) -> None:
        """Note that ``rows`` rows were written; make sure a worker will index them. ``left``:
        they are rows an earlier process left unindexed, not this process's writes."""
        with self._guard:
            moment = time.monotonic()
            if rows and not left:
                self._last_write = moment  # also after a stop: the close owes its late work
            if self._stopping:
                return
            self._last_poke = moment
            if rows:
                self._last_rows = moment
                self._nothing_to_index = False
                self._failed = False
            elif not self._first_read:
                self._first_read = moment
            if self._pending == 0 and rows:
                self._first_pending = self._last_poke
            self._pending += rows
            self._deferred += rows
            self._wake.set()
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="recuerdo-upkeep", daemon=True
                )
                self._thread.start()

    def step(self, *, quiet: bool = True, late: bool = False) -> int:
        """One round of the tasks; how much work they did. The costly idle tasks (embedding)
        run in a quiet moment; otherwise, for a share of the time once they have waited
        IDLE_OVERDUE_SECONDS, and a batch a round when their backlog has grown large, so a
        steady stream of requests is never starved of CPU by them; the late tasks (what
        nothing waits for) only when ``late``: after a pause of LATE_SECONDS."""
        done = self._round(quiet=quiet, late=late)
        return done.indexed + done.other

    def _round(self, *, quiet: bool, late: bool, side: bool = True) -> _Round:
        """:meth:`step`'s round; the side tasks only with ``side``."""
        with self._working:
            try:
                work = sum(self._attempt(task) for task in self._tasks)
            except Exception:
                # The reads' records still reach the disk: an index task failing every round
                # kept them all in memory (1,200 after 4 s under 300 reads a second).
                if side:
                    self._side_round()
                raise
            with self._guard:
                self._nothing_to_index = work == 0
            flushed = self._side_round() if side else 0
            idle, shared = 0, False
            if quiet:
                idle = self._idle_round()
            elif self._idle_overdue():
                idle = self._idle_round()
                shared = bool(idle)
            elif self._deferred >= FORCE_BACKLOG // 20:
                # A batch a round besides the share, which it does not put off: a batch a
                # round that moved the share's clock left 8,000 imported notes' vectors to it.
                idle = self._idle_round(shared=False)
            return _Round(work, flushed, idle, self._late_round() if late else 0, shared)

    def _idle_round(self, *, shared: bool = True) -> int:
        """One round of the idle tasks (the caller holds ``_working``); unless ``shared`` is
        false, it is kept as the last (IDLE_OVERDUE_SECONDS), even when a task fails."""
        try:
            idle = sum(self._attempt(task) for task in self._idle_tasks)
        finally:
            if shared:
                with self._guard:
                    self._last_idle = time.monotonic()
        with self._guard:
            self._deferred = max(0, self._deferred - idle) if idle else 0
        return idle

    def _idle_overdue(self) -> bool:
        with self._guard:
            waited = time.monotonic() - self._last_idle
            return bool(self._idle_tasks) and self._deferred > 0 and waited >= IDLE_OVERDUE_SECONDS

    def _late_round(self) -> int:
        """One round of the late tasks (the caller holds ``_working``); its time is kept even
        when a task fails: a failing one waits for its next turn, not the next round."""
        try:
            return sum(self._attempt(task) for task in self._late_tasks)
        finally:
            with self._guard:
                self._last_late = time.monotonic()

    def _rounds_for(
        self, one_round: Callable[[], int], seconds: float, *, closing: bool = False
    ) -> int:
        """Rounds of ``one_round`` (the late tasks', the idle tasks') until they find no work,
        or for ``seconds`` at most (no new round after it), or until a stop unless
        ``closing``; the work done. Each round takes ``_working`` and its own transactions
        alone: the writes go on between them, and a search that embeds a small backlog before
        it answers (``settle``) does not wait for the whole share (up to half a second).

        The shares: the late tasks' under writes that never paused is LATE_SHARE of the
        LATE_OVERDUE_SECONDS they waited (not of a longer wait: a memory idle for hours would
        otherwise hold its next writes back for minutes), a closing process's
        LATE_ON_CLOSE_SECONDS; the idle tasks' under writes is what is left of
        IDLE_SHARE_UNDER_WRITES x IDLE_OVERDUE_SECONDS after the round that began it."""
        deadline = time.monotonic() + seconds
        done = 0
        while (closing or not self._stopping) and time.monotonic() < deadline:
            with self._working:
                work = one_round()
            done += work
            if not work:
                break
        return done

    def _attempt(self, task: Task) -> int:
        try:
            # Indexing is memory-wide work, even when a verb drains it for its caller.
            with scoped(EVERY_TENANT):
                return task()
        except Claimed:
            with self._guard:
                self._skipped = True
            return 0

    def _take_skipped(self) -> bool:
        with self._guard:
            skipped, self._skipped = self._skipped, False
            return skipped

    def backlog(self) -> int:
        return self._backlog()

    @property
    def running(self) -> bool:
        """Whether a worker is keeping the indexes up to date in this process."""
        return self._thread is not None and self._thread.is_alive()

    def drain(
        self,
        limit: int | None = None,
        tasks: Sequence[Task] | None = None,
        *,
        seconds: float | None = None,
    ) -> int:
        """Do the pending work now (at most about ``limit`` rows, and no new round after
        ``seconds``); return the work done."""
        every = (*self._tasks, *self._side_tasks, *self._idle_tasks, *self._late_tasks)
        chosen = every if tasks is None else tuple(tasks)
        done = 0
        deadline = None if seconds is None else time.monotonic() + seconds
        # Work another process holds is waited for (a little): it may have looked for work
        # before this process's last write, and a drain promises that write is indexed.
        patience = time.monotonic() + CLAIM_WAIT_ON_DRAIN
        self._take_skipped()
        while (limit is None or done < limit) and (deadline is None or time.monotonic() < deadline):
            with self._working:
                work = sum(self._attempt(task) for task in chosen)
            done += work
            if work == 0:
                if not self._take_skipped() or time.monotonic() >= patience:
                    break
                time.sleep(CLAIM_RETRY_SECONDS / 4)
        return done

    def settle(self, limit: int, seconds: float) -> int:
        """The part of the work a read waits for before it answers by meaning: the newest
        writes' chunks and vectors (``settle_tasks``).
        The rest (the audit's durable commit, the trigram index, orphaned vectors) is left to
        the worker: a search right after a save did all of it and took 11.0 ms at p50
        instead of 6.9 (10,000 notes, docs/decisions/0031)."""
        return self.drain(limit, self._settle_tasks, seconds=seconds)

    def _run(self) -> None:
        _lower_priority()
        while True:
            if not self._wake.wait(IDLE_SECONDS):
                self._rest()
                with self._guard:
                    if not self._wake.is_set():
                        self._thread = None
                        return
            self._wake.clear()
            if not self._quiet_moment():
                return
            try:
                first = True
                while not self._stopping:
                    with self._guard:
                        started = time.monotonic()
                        # Reads take no write lock: only a pause of the writes is waited for.
                        writes_quiet = started - self._last_rows >= GATHER_SECONDS
                        late = bool(self._late_tasks) and self._unwritten_for() >= LATE_SECONDS
                        overdue = bool(self._late_tasks) and not late and self._late_overdue()
                        # Rounds of other work that follow one another under reads flush the
                        # reads' records once a MAX_DELAY_SECONDS, and when they end: each
                        # flushed the few taken since the last, about a durable commit a read
                        # (the review of 0179).
                        first_read = self._first_read
                        side = (
                            first
                            or not first_read
                            or started - self._last_poke >= GATHER_SECONDS
                            or started - first_read >= MAX_DELAY_SECONDS
                        )
                    done = self._round(quiet=writes_quiet, late=late, side=side)
                    first = False
                    with self._guard:
                        self._failed = False
                        self._pending = max(0, self._pending - done.indexed)
                        self._first_pending = time.monotonic()
                    further = done.indexed + done.idle + done.late
                    if done.shared:
                        share = IDLE_SHARE_UNDER_WRITES * IDLE_OVERDUE_SECONDS
                        left = share - (time.monotonic() - started)
                        further += self._rounds_for(self._idle_round, left)
                    if overdue:
                        further += self._rounds_for(
                            self._late_round, LATE_SHARE * LATE_OVERDUE_SECONDS
                        )
                    with self._guard:
                        moment = time.monotonic()
                        busy = moment - self._last_rows < GATHER_SECONDS
                        reading = moment - self._last_poke < GATHER_SECONDS
                        self._behind = busy and done.indexed > 0
                    # The audit's records alone go on only when reads pause: while they come,
                    # each round would find a few and flush them, a durable commit a read.
                    work = further + (0 if reading else done.side)
                    if done.idle and reading and not busy:
                        yielded = min(MAX_DELAY_SECONDS, (moment - started) * IDLE_YIELD_TO_READS)
                        if self._stopped.wait(yielded):
                            break
                        with self._guard:  # a write that came meanwhile is gathered first
                            busy = time.monotonic() - self._last_rows < GATHER_SECONDS
                    if busy or not work:
                        if busy:  # writes are coming in again: let them have the store
                            self._wake.set()
                        elif self._take_skipped() and not self._stopped.wait(CLAIM_RETRY_SECONDS):
                            self._wake.set()  # another process held some work: look again
                        elif self._late_tasks and not late and self._paused():
                            continue  # the pause lasted: the late tasks' round
                        self._flush_reads()
                        break
            except StoreError:
                self._fail()  # the store is closing, busy or full; the next write retries
            except Exception:
                self._fail()
                # A thread that ended here would stay recorded as the worker, and no later
                # write would start another: indexing would stop for the process's life.
                # The worker stays, and the next write retries.
                log.exception("index upkeep failed; the next write retries it")

    def _rest(self) -> None:
        for task in self._rest_tasks:
            if self._stopping:
                return  # the close gives it all back
            try:
                with self._working:
                    task()
            except StoreError:
                pass  # busy or closing: the next idle moment, or the close, gives it back
            except Exception:
                log.warning("the store's rest failed", exc_info=True)

    def _flush_reads(self) -> None:
        """The side tasks, when reads' records wait that the last rounds left (they are not
        left in memory while the worker sleeps)."""
        with self._guard:
            waiting = bool(self._first_read)
        if waiting:
            with self._working:
                self._side_round()

    def _side_round(self) -> int:
        """The side tasks' round (the caller holds ``_working``): they flush the records of
        the reads so far."""
        with self._guard:
            self._first_read = 0
        return sum(self._attempt(task) for task in self._side_tasks)

    def _fail(self) -> None:
        """After a failed round: reads are gathered again, and the rows it left are overdue
        MAX_DELAY_SECONDS later, not at once (each read started a round otherwise). So are the
        reads' records a round that failed before its side tasks left: their first read's
        moment stayed MAX_DELAY_SECONDS old, and every read started a round (the review of
        2ee927e: 225 a second with the index task failing)."""
        with self._guard:
            self._failed = True
            self._first_pending = time.monotonic()
            if self._first_read:
                self._first_read = self._first_pending

    def _late_overdue(self) -> bool:
        """Whether the late tasks waited LATE_OVERDUE_SECONDS for a pause (under ``_guard``)."""
        return time.monotonic() - self._last_late >= LATE_OVERDUE_SECONDS

    def _unwritten_for(self) -> float:
        """Seconds since the last write (under ``_guard``)."""
        return time.monotonic() - self._last_write

    def _paused(self) -> bool:
        """Wait until writes have paused for LATE_SECONDS; False if a poke (a write, or a
        read's audit: the next quiet round then looks again) or the worker's stop came first."""
        with self._guard:
            left = LATE_SECONDS - self._unwritten_for()
        return not self._wake.wait(max(0.0, left)) and not self._stopping

    def _quiet_moment(self) -> bool:
        """Wait until writes pause (or the backlog grows too large); False when stopping.
        Reads are no writes: while written rows wait (poked, or left by a round that writes
        cut short) or their vectors do, they do not make the worker wait (``_last_rows``).
        With none waiting, a read's poke is gathered with the next ones: the round it asks for
        only flushes audit records, one write for many reads; but for MAX_DELAY_SECONDS at
        most, or reads that never pause would keep their records in memory for good."""
        while True:
            with self._guard:
                moment = time.monotonic()
                mine = self._pending > 0 and not self._nothing_to_index
                owed = self._deferred > 0 and bool(self._idle_tasks)  # vectors, say
                writes_only = (mine or self._behind or owed) and not self._failed
                since = self._last_rows if writes_only else self._last_poke
                quiet_for = moment - since
                overdue = self._pending > 0 and moment - self._first_pending >= MAX_DELAY_SECONDS
                first_read = self._first_read
                reads_waited = bool(first_read) and moment - first_read >= MAX_DELAY_SECONDS
                urgent = self._pending >= FORCE_BACKLOG or overdue or reads_waited
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
        if drain:
            # A larger backlog is left to the next process, which redoes the index work from
            # the marks; the reads' audit records in memory nothing redoes (the review of
            # 2ee927e).
            small = self.backlog() <= DRAIN_ON_CLOSE
            try:
                self.drain(tasks=(*self._tasks, *self._side_tasks) if small else self._side_tasks)
            except StorageFull as full:
                # Every acknowledged write is stored; what is left is index work the next
                # process redoes from the marks. Failing the close for it lost nothing but
                # made `with recuerdo.open(...)` raise after writes that all succeeded.
                log.warning("recuerdo: %s; the indexes catch up when the memory next opens", full)
                return
            if small and self._late_tasks and self._last_write:  # after the close's re-cut
                # Work nothing waits for: a busy or closing store leaves it to a later process.
                with contextlib.suppress(StoreError):
                    self._rounds_for(self._late_round, LATE_ON_CLOSE_SECONDS, closing=True)
