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
"""

from __future__ import annotations

from typing import Any

from .driver import sqlite3

TENANT = "tenant"
SMALLEST_TABLE = 1_000_000  # as SQLite assumes of a table never analysed
# SQLite skips words it does not know in a stat; this one marks figures that are not ANALYZE's,
# so that the next refresh analyses the table (PRAGMA optimize would trust them).
DEFAULTED = "recuerdo-default"


def analyze_defaulted(conn: sqlite3.Connection) -> None:
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
        if conn.execute(f'SELECT 1 FROM "{table}" LIMIT 1').fetchone() is not None:
            conn.execute(f'ANALYZE "{table}"')


def state_tenant_share(conn: sqlite3.Connection) -> int:
    """Write or correct the ``sqlite_stat1`` row of every tenant-first index; then reload the
    statistics into ``conn``. Returns how many rows changed. The caller holds the write lock
    (inside or outside a transaction)."""
    if conn.execute("SELECT 1 FROM sqlite_schema WHERE name = 'sqlite_stat1'").fetchone() is None:
        conn.execute("ANALYZE sqlite_schema")  # creates sqlite_stat1
    stats = {
        (str(table), str(index)): str(stat)
        for table, index, stat in conn.execute(
            "SELECT tbl, idx, stat FROM sqlite_stat1 WHERE idx IS NOT NULL"
        )
    }
    changed = 0
    counts: dict[str, int] = {}
    for table, index, columns, unique in _tenant_first_indexes(conn):
        stat = stats.get((table, index))
        # (For a partial index, the table's count is an upper bound of its rows.)
        wanted = (
            _corrected(stat) if stat is not None else _default(conn, table, columns, unique, counts)
        )
        if wanted is None or wanted == stat:
            continue
        conn.execute("DELETE FROM sqlite_stat1 WHERE tbl = ? AND idx = ?", (table, index))
        conn.execute(
            "INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES (?, ?, ?)", (table, index, wanted)
        )
        changed += 1
    if changed:
        conn.execute("ANALYZE sqlite_schema")  # the planner reads sqlite_stat1 again
    return changed


# The answer of ``_tenant_first_indexes`` for each schema met (the text of every object in
# it): asked at every open and close, it took 0.6 ms of the 1 ms a store's statistics cost
# when nothing needs correcting; the schema's text is read in 0.03 ms.
_FOUND_BY_SCHEMA: dict[str, tuple[tuple[str, str, int, bool], ...]] = {}
_SCHEMAS_KEPT = 16


def _tenant_first_indexes(conn: sqlite3.Connection) -> tuple[tuple[str, str, int, bool], ...]:
    """(table, index, column count, unique) of every index whose first column is the tenant."""
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


def _read_tenant_first_indexes(conn: sqlite3.Connection) -> tuple[tuple[str, str, int, bool], ...]:
    # One statement over the pragma functions: a store has some 40 indexes, and asking for each
    # one's columns apart cost hundreds of statements at every open.
    rows = conn.execute(
        """
        SELECT t.name, i.name, i."unique",
               (SELECT count(*) FROM pragma_index_info(i.name)),
               (SELECT c.name FROM pragma_index_info(i.name) AS c WHERE c.seqno = 0)
        FROM sqlite_schema AS t, pragma_index_list(t.name) AS i
        WHERE t.type = 'table' AND t.name NOT LIKE 'sqlite_%'
        ORDER BY t.name, i.seq DESC
        """
    ).fetchall()
    return tuple(
        (str(table), str(index), int(columns), bool(unique))
        for table, index, unique, columns, first in rows
        if columns and first == TENANT
    )


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
