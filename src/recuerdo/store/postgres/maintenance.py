"""Maintenance of one memory's tables on PostgreSQL: VACUUM after a forgetting, ANALYZE after
a load. Each is one statement over the memory's own tables: every VACUUM or ANALYZE statement
reads the whole database's ``pg_class`` at its end (8-9 ms a table one by one in a database of
414 schemas, about 1 ms a table together), and a bare ``ANALYZE`` would take every memory of
the database.

Statistics after a load: a table just filled has none until autovacuum's next round (up to a
minute), and the planner, expecting one row, walks an index once per row it joins. Counting
the entries that hold a common word after 1,300 were remembered took 103 ms instead of 5.6
once analysed. So a process analyses its memory once the rows it wrote since it last did reach
what the table held then (at least ``FIRST_ANALYZE_ROWS``): a few statements over a load of
any size, and none for the steady trickle autovacuum handles.

VACUUM after a forgetting (decision 0061): ``INDEX_CLEANUP ON``, since a plain VACUUM skips
the indexes when the dead rows sit on under 2% of a table's pages (a forget in a large
memory): their index entries, titles, topic keys and entity names among them, stayed; and
``FREEZE`` (decision 0146), since a VACUUM prunes no page another session holds pinned unless
it must freeze a row there, and said nothing; then ``ANALYZE``, since the statistics quoted
forgotten texts until analysed again (decision 0070). Its cost grows with the
indexes' size, so it runs on a thread of the process, not in the forget's call, and forgets
that come while it runs share the next one. The forget's own transaction
records the VACUUM as owed (``RECLAIM_OWED`` in ``index_marks``): a process that ends before it
ran leaves the mark, and the next store to open the memory runs it. The tables it finds
emptied keep the statistics they had: those are cleared after it (``empty_stats.py``), and
those it could not clear stay owed (``_Shared.statistics_owed``, written down in
``index_marks`` for the next store to open the memory if this process ends first)."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..base import OWED_MARKS, RECLAIM_OWED
from . import empty_stats

if TYPE_CHECKING:
    from .connection import PostgresStore, _Shared

FIRST_ANALYZE_ROWS = 500
VACUUM_EVERY_INDEX = "VACUUM (INDEX_CLEANUP ON)"
VACUUM_WAITING_FOR_PINS = "VACUUM (FREEZE, INDEX_CLEANUP ON)"
"""A forget's VACUUM (decision 0146): one that must freeze a row waits for the cleanup lock of
its page instead of passing by a page another session holds pinned (a scan, a cursor, a buffer
being written out), and FREEZE makes every row older than its horizon one to freeze, the
forget's dead rows included. What it leaves is only what a snapshot still sees, which the wait
for older transactions (``_OLDER_RUNNING``) rules out for the forget's rows, and the VACUUM's
own horizon, read after it (``_PASSED_MARK``, decision 0163), confirms. The plain form
(``VACUUM_EVERY_INDEX``) runs when that wait gave up: the run is incomplete anyway. Counting the
dead rows a plain VACUUM left (0137) could not tell the forget's from rows a later snapshot sees,
nor see a left row that others' changes to the table hid (CI runs of stop 58). A table's first
FREEZE writes its pages not yet frozen (639 KiB of WAL against 24 at 20,000 entries, 31 ms
against 24); later ones cost what a plain VACUUM does."""
PIN_PATIENCE_MS = 10_000
"""How long a forget's VACUUM may take, at least (it waits for a pin: a cursor held open in an
idle transaction holds it for ever); past it the run is incomplete, the mark stays and it is
tried again later. Pages it froze before it was cancelled stay frozen: the next try passes
them by. As long as a lock may hold it (its ``lock_timeout``, set from this): a close waits
no longer for another session's cursor than for its lock (60 s held a close 70 s, the review
of 0146). A large memory's own work is given more (``PIN_PATIENCE_MS_PER_ROW``)."""
PIN_PATIENCE_MS_PER_ROW = 0.1  # a million rows: 100 s more

HORIZON_PATIENCE = 10.0  # seconds a VACUUM waits for older transactions before it runs anyway
RETRY_AFTER = 30.0  # seconds before a VACUUM that ran too early is run again
MAINTAIN_SINCE = 170000
"""PostgreSQL 17's MAINTAIN privilege (decision 0149): a role granted it on a table (``GRANT
ALL`` includes it, and so does membership of ``pg_maintain``) may VACUUM, ANALYZE and REINDEX
the table without owning it. Before 17 only the owner (or a role that has its privileges)
may; anyone else's VACUUM or ANALYZE skips the table with a warning, and no error."""
_MAY_MAINTAIN = {
    False: "pg_has_role(current_user, relowner, 'USAGE')",
    True: "has_table_privilege(oid, 'MAINTAIN')",  # the check VACUUM and REINDEX make
}
_TABLES_OF = (
    "SELECT relname, {} AS maintained, reltuples"
    " FROM pg_class WHERE relnamespace = %s::regnamespace AND relkind = 'r'"
)
# Whether anything of this database (not this session) holds a transaction id or a snapshot
# from before the marked transaction (%s, a txid_current()), which a VACUUM's horizon would
# then keep (decision 0163): a session (its ids show to any role), a prepared transaction
# (in no session's row), a standby's feedback (a walsender of no database, or the slot it left)
# or a replication slot's xmin. Ages count back from the next id: the marked one is
# (next - mark) back. A mark from another server's ids (a restore) lies ahead of the next id,
# and holds nothing back.
_OLDER_RUNNING = """
    WITH mark AS (
        SELECT txid_snapshot_xmax(txid_current_snapshot()) - %s AS back
    )
    SELECT mark.back > 0 AND (
        EXISTS (
            SELECT 1 FROM pg_stat_activity
            WHERE (datname = current_database() OR backend_type = 'walsender')
              AND pid <> pg_backend_pid()
              AND (age(backend_xid) >= mark.back OR age(backend_xmin) >= mark.back)
        )
        OR EXISTS (
            SELECT 1 FROM pg_prepared_xacts
            WHERE database = current_database() AND age(transaction) >= mark.back
        )
        OR EXISTS (SELECT 1 FROM pg_replication_slots WHERE age(xmin) >= mark.back)
    )
    FROM mark
"""
# Whether the VACUUM (FREEZE) just run came after the marked transaction (%s) in every table
# of the memory (the schema, %s) and its TOAST tables (decision 0163): such a VACUUM sets
# ``relfrozenxid`` to the oldest id it left, at most its own horizon, and it never moves back.
# Past the mark, every row the forget deleted was removable, and removed; at or before it,
# something the wait above did not see held the horizon, and the rows may stay. The 32-bit
# id is widened with the epoch of the current snapshot's xmax, which it never passes.
_PASSED_MARK = """
    WITH now AS (SELECT txid_snapshot_xmax(txid_current_snapshot()) AS xmax),
    tables AS (
        SELECT oid, reltoastrelid FROM pg_class
        WHERE relnamespace = %s::regnamespace AND relkind = 'r'
    )
    SELECT coalesce(bool_and(
        now.xmax - (now.xmax %% 4294967296 - c.relfrozenxid::text::bigint + 4294967296)
            %% 4294967296 > %s
    ), true)
    FROM pg_class c, now
    WHERE c.oid IN (SELECT oid FROM tables UNION SELECT reltoastrelid FROM tables)
"""

_log = logging.getLogger("recuerdo.store")


def each_table(store: PostgresStore, command: str) -> None:
    """``command`` (ANALYZE) over every table of the memory, in one statement, by a role that
    may maintain them (``may_maintain``)."""
    shared = store._live()
    with store._connection(shared) as conn:
        listed, maintained, _ = _tables(conn, shared.schema)
        # Never a bare command: it would take the whole database. Any other role would only
        # be told, table by table, that it was skipped.
        if listed and maintained:
            conn.execute(f"{command} {listed}")


def may_maintain(conn: Any, schema: str) -> bool:
    """Whether this role may VACUUM, ANALYZE and REINDEX every table of the memory: it owns
    them (or has their owner's privileges), or from PostgreSQL 17 holds MAINTAIN on each."""
    return _tables(conn, schema)[1]


def _tables(conn: Any, schema: str) -> tuple[str, bool, dict[str, float]]:
    """The memory's tables, qualified and listed for one statement ("" when the schema holds
    none: a dropped memory), whether this role may maintain every one (``may_maintain``:
    anyone else's VACUUM does nothing), and each one's rows as the statistics count them (-1:
    never counted). Found by the schema's name, not the search path, which falls back to
    ``public`` once the schema is gone."""
    from .pool import _quote

    rule = _MAY_MAINTAIN[conn.info.server_version >= MAINTAIN_SINCE]
    rows = conn.execute(_TABLES_OF.format(rule), [schema]).fetchall()
    listed = ", ".join(f"{_quote(schema)}.{_quote(row[0])}" for row in rows)
    return listed, all(row[1] for row in rows), {row[0]: float(row[2]) for row in rows}


def owed_mark(conn: Any, name: str) -> int | None:
    """The newest transaction id that left ``name`` owed (one of ``OWED_MARKS``), if any."""
    row = conn.execute("SELECT upto FROM index_marks WHERE name = %s", [name]).fetchone()
    return None if row is None else int(row[0])


def clear_mark(conn: Any, name: str, upto: int) -> None:
    """``name`` paid for the transactions up to ``upto``: a later one keeps it owed."""
    conn.execute("DELETE FROM index_marks WHERE name = %s AND upto <= %s", [name, upto])


def grew(store: PostgresStore, rows: int) -> None:
    """A committed write added about ``rows`` items: analyse the memory once this process's
    writes since its last analysis reach what the items table held then. Never raises: the
    write is committed, and autovacuum analyses later anyway."""
    import psycopg

    from ...errors import StoreError

    with contextlib.suppress(psycopg.Error, StoreError):
        _grew(store, rows)


def _grew(store: PostgresStore, rows: int) -> None:
    from .pool import _quote

    shared = store._live()
    if shared.analyzed_rows is None:  # what the last analysis counted (-1: never analysed)
        with store._connection(shared) as conn:
            counted = conn.execute(
                "SELECT reltuples FROM pg_class WHERE oid = to_regclass(%s)",
                [f"{_quote(shared.schema)}.items"],
            ).fetchone()
        shared.analyzed_rows = max(0, int(counted[0])) if counted else 0
    shared.grown += rows
    if shared.grown < max(FIRST_ANALYZE_ROWS, shared.analyzed_rows):
        return
    shared.analyzed_rows += shared.grown
    shared.grown = 0
    each_table(store, "ANALYZE")


def owed_at_open(tx: Any, shared: _Shared) -> bool:
    """Whether a process that ended left the memory owing a VACUUM (a forget's) or the clear of
    tables a forget emptied (``empty_stats.keep_owed``), which are taken into ``shared``."""
    shared.statistics_owed |= empty_stats.owed_tables(tx)
    vacuum = tx.scalar("SELECT 1 FROM index_marks WHERE name = ?", (RECLAIM_OWED,))
    if vacuum is not None or not shared.statistics_owed:
        return vacuum is not None
    if tx._conn.info.server_version >= empty_stats.CLEAR_FUNCTION_SINCE:
        return True
    # Before 18 only the owner may clear them: a MAINTAIN holder's open (decision 0149) would
    # VACUUM every table to clear none, at every open, until the owner's.
    owed = sorted(shared.statistics_owed)
    return owed != empty_stats.not_owned(tx._conn, shared.schema, owed)


def owe_reclaim(tx: Any) -> None:
    """Inside a forgetting transaction: the memory owes a VACUUM once it commits, and a rebuild
    of its GIN indexes (``compact``, decision 0066), which keep the keys only the forgotten
    rows held. Each mark holds the newest such transaction's id."""
    tx.execute(
        "INSERT INTO index_marks (name, upto) VALUES (?, txid_current()), (?, txid_current())"
        " ON CONFLICT (name) DO UPDATE SET upto = greatest(index_marks.upto, excluded.upto)",
        OWED_MARKS,
    )


def reclaim_owed(shared: _Shared, patience: float | None = None) -> bool:
    """One VACUUM of every table of the memory, index entries included, then an ANALYZE (the
    statistics quote sampled rows, decision 0070); True when it came after every transaction of
    the database that was running when the forgets committed and did not wait past its
    patience for a page (``VACUUM_WAITING_FOR_PINS``), and their mark is cleared. A VACUUM
    cannot remove a row that a transaction older than its deletion may still read, so it first
    waits (up to ``patience`` seconds) for those to end: otherwise the rows would stay, and
    their index entries with them, until a VACUUM that reaches the indexes. It takes a
    connection of the memory's pool, not a store handle: the handle that asked may be closed
    by now, and another still serve."""
    import psycopg

    with shared.pool.connection(timeout=60) as conn:
        # Counted now, before the wait below: an autovacuum that analysed a table during it
        # would count it empty already, and it would not be found emptied.
        listed, maintained, counted = _tables(conn, shared.schema)
        if not listed:  # the memory was dropped: never a bare VACUUM (the whole database)
            return True
        if not maintained:
            # A role that may use the memory but neither owns its tables nor (from 17) holds
            # MAINTAIN on them: its VACUUM would skip each with a warning. The mark stays for
            # the next open by a role that may.
            return True
        mark = owed_mark(conn, RECLAIM_OWED)
        # read when called (a test shortens it), as PIN_PATIENCE_MS below is
        deadline = time.monotonic() + (HORIZON_PATIENCE if patience is None else patience)
        behind = mark is not None
        while behind:
            behind = bool(conn.execute(_OLDER_RUNNING, [mark]).fetchone()[0])
            if not behind or time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        timed_out = False
        # A lock held elsewhere must not hold a close; a pin no longer than a lock (below).
        conn.execute(f"SET lock_timeout = {PIN_PATIENCE_MS}")
        try:
            if behind:  # incomplete whatever it removes: no wait for pins (the review of 0146)
                _log.info("the VACUUM owed after a forget runs with older transactions still open")
                conn.execute(f"{VACUUM_EVERY_INDEX} {listed}")
            else:
                rows = sum(max(value, 0.0) for value in counted.values())
                patience_ms = PIN_PATIENCE_MS + int(rows * PIN_PATIENCE_MS_PER_ROW)
                conn.execute(f"SET statement_timeout = {patience_ms}")
                try:
                    conn.execute(f"{VACUUM_WAITING_FOR_PINS} {listed}")
                except psycopg.errors.QueryCanceled:
                    timed_out = True
                    _log.info("the VACUUM owed after a forget waited too long for a page")
                finally:
                    conn.execute("RESET statement_timeout")
                if not timed_out and mark is not None:
                    behind = not conn.execute(_PASSED_MARK, [shared.schema, mark]).fetchone()[0]
                    if behind:
                        _log.info("the VACUUM owed after a forget came before its horizon passed")
            conn.execute(f"ANALYZE {listed}")
        except BaseException:
            # The tables it analysed before it failed are counted empty already: owed.
            _clear_emptied(conn, shared, counted, behind=True)
            raise
        finally:
            conn.execute("RESET lock_timeout")
        complete = not (behind or timed_out)
        if mark is not None and complete:
            clear_mark(conn, RECLAIM_OWED, mark)
        _clear_emptied(conn, shared, counted, not complete)
    return complete


def _clear_emptied(conn: Any, shared: _Shared, counted: dict[str, float], behind: bool) -> None:
    """Clear the statistics of the tables the VACUUM found emptied, which keep the ones they
    had (decision 0076), and of those still owed; ``behind``: it came before older
    transactions ended, or gave up waiting for a page (``empty_stats.clear``'s ``early``). The
    owed set is changed in place, never replaced: ``compact`` may change it meanwhile."""
    import psycopg

    try:
        now = _tables(conn, shared.schema)[2]
    except psycopg.Error:
        _log.warning("the tables a forget emptied could not be counted", exc_info=True)
        return
    shared.statistics_owed |= set(empty_stats.emptied(counted, now))
    asked = sorted(shared.statistics_owed)
    if asked:
        still = empty_stats.clear(conn, shared.schema, asked, early=behind).owed
        shared.statistics_owed -= set(asked) - set(still)
        empty_stats.keep_owed(conn, still, sorted(set(asked) - set(still)))


class Reclaimer:
    """Runs ``vacuum`` on a thread of its own whenever asked; asks that come while it runs are
    served by one more run, and a run that says it was not complete (False) is asked for
    again ``retry_after`` seconds later. ``stop`` runs what is owed, then ends the thread."""

    def __init__(self, vacuum: Callable[[], bool], retry_after: float = RETRY_AFTER) -> None:
        self._retry_after = retry_after
        self._vacuum = vacuum
        self._changed = threading.Condition()
        self._owed = False
        self._running = False
        self._incomplete = False  # the last run came before older transactions ended
        self._stopped = False
        self._last_try = False  # the try stop() allows after the run under way is taken
        self._thread: threading.Thread | None = None

    def ask(self) -> None:
        with self._changed:
            if self._stopped:
                return
            self._owed = True
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._serve, name="recuerdo-reclaim", daemon=True
                )
                self._thread.start()
            self._changed.notify_all()

    def settle(self, timeout: float | None = None) -> bool:
        """Wait until nothing asked is left to run: False if ``timeout`` came first."""
        with self._changed:
            return self._changed.wait_for(
                lambda: not (self._owed or self._running or self._incomplete), timeout
            )

    def stop(self) -> None:
        with self._changed:
            self._stopped = True
            # One more try before the end: now if the last run was incomplete, else after the
            # run under way if that one is (``_serve``).
            self._owed = self._owed or self._incomplete
            self._last_try = not self._running
            self._changed.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join()

    def _serve(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._owed or self._stopped)
                if not self._owed:
                    return
                self._owed, self._running = False, True
            done = False
            try:
                done = self._vacuum()
            except Exception:  # the mark stays: the next open of the memory runs it again
                _log.warning("the VACUUM owed after a forget failed", exc_info=True)
            finally:
                with self._changed:
                    self._running = False
                    self._incomplete = not done
                    if self._stopped and not done and not self._last_try:
                        # stopped while this run went on: a close then ended on a run that
                        # failed (a lock held past its timeout), with no retry (stop 59's CI)
                        self._owed, self._last_try = True, True
                    self._changed.notify_all()
            if not done and not self._stopped:  # the mark stays; tried again while serving
                retry = threading.Timer(self._retry_after, self.ask)
                retry.daemon = True
                retry.start()
