"""What SQLite's planner is told about the tenant column.

Every index starts with ``tenant`` (issue 16: ready to distribute by tenant), and almost every
store holds one tenant. Without statistics SQLite assumes that an equality on an index's first
column leaves about ten rows, and ``ANALYZE`` with an ``analysis_limit`` samples too few rows to
see otherwise (it reported 401 rows per tenant for 100,000 chunks of one tenant). Either way the
planner reads "``tenant = ?``" as selective: for ``WHERE c.id IN (...500 ids...) AND
i.tenant = ?`` it walked every chunk of the tenant through an index instead of looking up the
500 rows by id (8.5 ms against 1.0 ms at 100,000 messages; search over messages spent most of
its time there).

So the statistics say what is true of a store of one tenant: the tenant narrows nothing. Each
tenant-first index gets a ``sqlite_stat1`` row whose second figure (rows per distinct first
column) is the table's row count: written when the index has none (a new store, a new index),
and corrected after every ``ANALYZE`` (``PRAGMA optimize``), which would put the sampled figure
back. The other figures are ``ANALYZE``'s, or, for an index never analysed, SQLite's own
defaults (ten rows per value of the next column, halving after it, one for a unique key) over
at least ``SMALLEST_TABLE`` rows: a new store grows within its first session, and a plan made
for an empty table would scan it. Such defaults are marked, and the next refresh of the
statistics analyses their tables.

A refresh (:func:`refresh`, at the last close and ``Store.optimize``) of a store that did not
change writes nothing. ``PRAGMA optimize`` picks an empty table whose figures say a million rows
as "changed", and its ANALYZE drops those figures; the defaults written back made every close a
write of some twenty commits (10-40 ms on a disk). So the tables it picks are analysed here,
less the empty ones. A ``WITHOUT ROWID`` table's key has its figures under the table's own
name, as ANALYZE writes them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

from .driver import sqlite3

TENANT = "tenant"
SMALLEST_TABLE = 1_000_000  # as SQLite assumes of a table never analysed
# SQLite skips words it does not know in a stat; this one marks figures that are not ANALYZE's,
# so that the next refresh analyses the table (PRAGMA optimize would trust them).
DEFAULTED = "recuerdo-default"


ANALYSIS_LIMIT = 400
"""Rows sampled per index by ANALYZE: bounds a refresh's cost on a large store."""
# PRAGMA optimize's default choice of work (0xfffe) with the bit that lists its ANALYZE
# statements instead of running them.
_OPTIMIZE_LISTED = 0xFFFF
_ANALYZE = re.compile(r'ANALYZE "main"\."((?:[^"]|"")+)"')


def refresh(conn: sqlite3.Connection) -> None:
    """Bring the planner's statistics up to date, as SQLite advises before a close: the tables
    still holding stated defaults, then those ``PRAGMA optimize`` finds changed (but empty
    ones), then the tenant's figures, in one transaction. The caller holds the process's
    write lock."""
    conn.execute(f"PRAGMA analysis_limit = {ANALYSIS_LIMIT}")
    with _transaction(conn, "refreshed_statistics"):
        _analyze_defaulted(conn)
        for (statement,) in conn.execute(f"PRAGMA optimize({_OPTIMIZE_LISTED})").fetchall():
            named = _ANALYZE.fullmatch(str(statement))
            table = named.group(1).replace('""', '"') if named else None
            if table is None or not _is_empty(conn, table):
                conn.execute(str(statement))
        state_tenant_share(conn)


@contextmanager
def _transaction(conn: sqlite3.Connection, name: str) -> Iterator[None]:
    """One transaction for what is written inside. Outside a transaction it takes the write
    lock at once (``BEGIN IMMEDIATE`` waits for another writer as ``busy_timeout`` allows; a
    deferred transaction that reads first fails at its first write without waiting). Inside
    one it is a savepoint named ``name``. Nothing of it stays after an error."""
    nested = conn.in_transaction
    conn.execute(f"SAVEPOINT {name}" if nested else "BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if conn.in_transaction:  # a full disk or an I/O error has already rolled it back
            if nested:
                conn.execute(f"ROLLBACK TO {name}")
                conn.execute(f"RELEASE {name}")
            else:
                conn.execute("ROLLBACK")
        raise
    conn.execute(f"RELEASE {name}" if nested else "COMMIT")


def _is_empty(conn: sqlite3.Connection, table: str) -> bool:
    quoted = table.replace('"', '""')
    return conn.execute(f'SELECT 1 FROM "{quoted}" LIMIT 1').fetchone() is None


def _analyze_defaulted(conn: sqlite3.Connection) -> None:
    """ANALYZE the tables whose statistics are still the defaults written by
    :func:`state_tenant_share` (run before ``PRAGMA optimize``, under the write lock)."""
    tables = [
        str(row[0])
        for row in conn.execute(
            "SELECT DISTINCT tbl FROM sqlite_stat1 WHERE stat LIKE ?", (f"% {DEFAULTED}",)
        )
    ]
    for table in tables:
        # An empty table keeps its defaults: ANALYZE would write nothing for it, and the next
        # open would write the defaults again (a write at every open of an unchanged store).
        if not _is_empty(conn, table):
            conn.execute(f'ANALYZE "{table}"')


def state_tenant_share(conn: sqlite3.Connection) -> int:
    """Write or correct the ``sqlite_stat1`` row of every tenant-first index; then reload the
    statistics into ``conn``. Returns how many rows changed. The caller holds the write lock
    (inside or outside a transaction); the rows change in one transaction, not one commit
    each."""
    if conn.execute("SELECT 1 FROM sqlite_schema WHERE name = 'sqlite_stat1'").fetchone() is None:
        conn.execute("ANALYZE sqlite_schema")  # creates sqlite_stat1
    stats = {
        (str(table), str(index)): str(stat)
        for table, index, stat in conn.execute(
            "SELECT tbl, idx, stat FROM sqlite_stat1 WHERE idx IS NOT NULL"
        )
    }
    strays: list[tuple[str, str]] = []  # rows under a key index's name (an earlier version's)
    written: list[tuple[str, str, str]] = []
    counts: dict[str, int] = {}
    for index in _tenant_first_indexes(conn):
        if index.misnamed and (index.table, index.misnamed) in stats:
            strays.append((index.table, index.misnamed))
        stat = stats.get((index.table, index.stated))
        # (For a partial index, the table's count is an upper bound of its rows.)
        wanted = (
            _corrected(stat)
            if stat is not None
            else _default(conn, index.table, index.columns, index.unique, counts)
        )
        if wanted is not None and wanted != stat:
            written.append((index.table, index.stated, wanted))
    if not strays and not written:
        return 0
    replaced = [(table, index) for table, index, _ in written]
    with _transaction(conn, "stated_tenant_share"):
        conn.executemany("DELETE FROM sqlite_stat1 WHERE tbl = ? AND idx = ?", strays + replaced)
        conn.executemany("INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES (?, ?, ?)", written)
        conn.execute("ANALYZE sqlite_schema")  # the planner reads sqlite_stat1 again
    return len(strays) + len(written)


class _Index(NamedTuple):
    """A tenant-first index: its table, the name its figures go under in ``sqlite_stat1``, its
    column count, whether it is unique, and the name of a ``WITHOUT ROWID`` table's key index
    (whose figures ANALYZE writes under the table's name; an earlier version wrote defaults
    under this one, where they competed with ANALYZE's)."""

    table: str
    stated: str
    columns: int
    unique: bool
    misnamed: str | None = None


# The answer of ``_tenant_first_indexes`` for each schema met (the text of every object in
# it): asked at every open and close, it took 0.6 ms of the 1 ms a store's statistics cost
# when nothing needs correcting; the schema's text is read in 0.03 ms.
_FOUND_BY_SCHEMA: dict[str, tuple[_Index, ...]] = {}
_SCHEMAS_KEPT = 16


def _tenant_first_indexes(conn: sqlite3.Connection) -> tuple[_Index, ...]:
    """Every index whose first column is the tenant."""
    schema = str(
        _scalar(
            conn,
            "SELECT group_concat(type || ' ' || name || ' ' || tbl_name || ' '"
            " || coalesce(sql, ''), char(10)) FROM sqlite_schema",
        )
    )
    found = _FOUND_BY_SCHEMA.get(schema)
    if found is None:
        if len(_FOUND_BY_SCHEMA) >= _SCHEMAS_KEPT:
            _FOUND_BY_SCHEMA.clear()
        found = _FOUND_BY_SCHEMA[schema] = _read_tenant_first_indexes(conn)
    return found


def _read_tenant_first_indexes(conn: sqlite3.Connection) -> tuple[_Index, ...]:
    # One statement over the pragma functions: a store has some 40 indexes, and asking for each
    # one's columns apart cost hundreds of statements at every open.
    rows = conn.execute(
        """
        SELECT t.name, i.name, i."unique", i.origin,
               (SELECT l.wr FROM pragma_table_list(t.name) AS l),
               (SELECT count(*) FROM pragma_index_info(i.name)),
               (SELECT c.name FROM pragma_index_info(i.name) AS c WHERE c.seqno = 0)
        FROM sqlite_schema AS t, pragma_index_list(t.name) AS i
        WHERE t.type = 'table' AND t.name NOT LIKE 'sqlite_%'
        ORDER BY t.name, i.seq DESC
        """
    ).fetchall()
    found = []
    for table, index, unique, origin, without_rowid, columns, first in rows:
        if not columns or first != TENANT:
            continue
        if origin == "pk" and without_rowid:
            found.append(_Index(str(table), str(table), int(columns), bool(unique), str(index)))
        else:
            found.append(_Index(str(table), str(index), int(columns), bool(unique)))
    return tuple(found)


def _corrected(stat: str) -> str | None:
    """``stat`` with its tenant figure set to its row count (None when it has no such figure)."""
    fields = stat.split(" ")
    if len(fields) < 2 or not fields[0].isdigit() or not fields[1].isdigit():
        return None
    if int(fields[0]) == 0:  # an empty (partial) index: ANALYZE found nothing to correct
        return None
    fields[1] = str(max(int(fields[0]), 1))
    return " ".join(fields)


def _default(
    conn: sqlite3.Connection, table: str, columns: int, unique: bool, counts: dict[str, int]
) -> str:
    if table not in counts:  # counted once however many indexes the table has
        counts[table] = int(_scalar(conn, f'SELECT count(*) FROM "{table}"'))
    rows = max(counts[table], SMALLEST_TABLE)
    figures = [rows, rows]
    per_value = 10
    for position in range(1, columns):
        last = position == columns - 1
        figures.append(1 if unique and last else per_value)
        per_value = max(1, per_value // 2)
    return " ".join(map(str, figures)) + f" {DEFAULTED}"


def _scalar(conn: sqlite3.Connection, sql: str) -> Any:
    return conn.execute(sql).fetchone()[0]
