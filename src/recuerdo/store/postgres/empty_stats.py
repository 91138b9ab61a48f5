"""The planner's statistics of a table a forget left empty (decision 0076).

The VACUUM after a forget takes the statistics again from the rows left (decision 0070), but
an ANALYZE that finds no row writes none, and PostgreSQL keeps the old ones: the tag of the
last tagged entry forgotten stayed in ``pg_stats`` for ``item_tags.tag``, and forgetting every
entry left ``items.content``, ``chunks.words`` and the trigram index's ``lower(content)`` as
they were, whole short texts and words among them.

From PostgreSQL 18 ``pg_clear_attribute_stats`` clears each column of such a table and of its
expression indexes, under the lock a VACUUM takes. Before it, no owner's statement clears a
column's statistics but a change of its type, which drops them (and those of the indexes
built over the column, which are built again). So each text column of an empty table is given
its own type again. Nothing is rewritten, but the change takes the table's strongest lock and
rebuilds the table's indexes: it waits ``LOCK_WAIT`` at most for the lock (a table some
transaction is reading is left owed), and does not follow a VACUUM that found older
transactions running (of those ``pg_stat_activity`` shows it: its indexes would be rebuilt
over the rows that VACUUM could not remove, under that lock: seconds at 200,000 rows). Not
changed: columns something else uses than what the change rebuilds on the table alone (see
``_TEXT_COLUMNS``; on our schema the tenants and three conversation ids), and numbers, dates
and booleans; nor a pgvector column under its generated one (decision 0076's "Left").

Which tables: those a VACUUM found emptied (:func:`emptied`, from the row counts before and
after it), and those still owed (in use, or after a VACUUM that could not remove the rows);
at ``compact`` every empty one: no owner may read which hold statistics (``pg_stats`` hides a
table under row-level security, ``pg_statistic`` is a superuser's). The owed ones are written
down in ``index_marks`` (:func:`keep_owed`, decision 0078): a process that ends owing some
leaves them to the next store that opens the memory (:func:`owed_tables`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from ..base import STATISTICS_OWED

LOCK_WAIT = "100ms"
"""How long the lock is waited for. While a strong lock waits, every later reader of the table
waits behind it: a wait of seconds would stall the memory's reads."""

_log = logging.getLogger("recuerdo.store")

# The columns of the listed tables whose type may quote text: (column, the type and collation
# that give it its own type again). Only columns nothing uses but what a change of type
# rebuilds on an empty table alone: the table's indexes and its own constraints, its own
# default, extended statistics, and triggers (made again around the change). A foreign key
# would be checked under a lock on the other table too; a policy, a view, a function's body or
# another column's generation refuse the change. Not a table with an invalid index either: an
# interrupted rebuild's leftover, which the change would build again, valid (compact drops
# only invalid ones).
_TEXT_COLUMNS = """
    SELECT c.relname AS table_name, a.attname AS first,
           format_type(a.atttypid, a.atttypmod) || CASE WHEN a.attcollation <> t.typcollation
                THEN ' COLLATE ' || quote_ident(cn.nspname) || '.' || quote_ident(co.collname)
                ELSE '' END AS second
    FROM pg_class c
    JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
    JOIN pg_type t ON t.oid = a.atttypid
    LEFT JOIN pg_collation co ON co.oid = a.attcollation
    LEFT JOIN pg_namespace cn ON cn.oid = co.collnamespace
    WHERE c.relnamespace = %(schema)s::regnamespace AND c.relkind = 'r'
      AND c.relname = ANY (%(tables)s) AND t.typcategory NOT IN ('N', 'D', 'B')
      AND NOT EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND NOT i.indisvalid)
      AND NOT EXISTS (
          SELECT 1 FROM pg_depend d
          WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = c.oid
            AND d.refobjsubid = a.attnum
            AND NOT (
                (d.classid = 'pg_class'::regclass AND EXISTS (
                    SELECT 1 FROM pg_index i WHERE i.indexrelid = d.objid AND i.indrelid = c.oid
                ))
                OR (d.classid = 'pg_constraint'::regclass AND EXISTS (
                    SELECT 1 FROM pg_constraint k
                    WHERE k.oid = d.objid AND k.conrelid = c.oid AND k.contype <> 'f'
                ))
                OR (d.classid = 'pg_attrdef'::regclass AND EXISTS (
                    SELECT 1 FROM pg_attrdef ad WHERE ad.oid = d.objid AND ad.adnum = a.attnum
                ))
                OR d.classid IN ('pg_trigger'::regclass, 'pg_statistic_ext'::regclass)
            )
      )
    ORDER BY c.relname, a.attnum
"""

# The triggers that name a column of ``table`` (``UPDATE OF``, ``WHEN``): PostgreSQL refuses to
# change the column's type under them, so they are dropped and made again around the change,
# in its transaction, in the state they were in.
_TRIGGERS_ON_COLUMNS = """
    SELECT DISTINCT tg.tgname AS name, pg_get_triggerdef(tg.oid) AS definition,
           tg.tgenabled AS state
    FROM pg_trigger tg
    JOIN pg_depend d ON d.classid = 'pg_trigger'::regclass AND d.objid = tg.oid
        AND d.refclassid = 'pg_class'::regclass AND d.refobjid = tg.tgrelid AND d.refobjsubid > 0
    WHERE tg.tgrelid = %s::regclass AND NOT tg.tgisinternal
"""

_TRIGGER_STATES = {
    "D": "DISABLE TRIGGER",
    "R": "ENABLE REPLICA TRIGGER",
    "A": "ENABLE ALWAYS TRIGGER",
}

# The columns of the listed tables and of their expression indexes, for
# ``pg_clear_attribute_stats`` (PostgreSQL 18): (relation, column).
_EVERY_COLUMN = """
    SELECT c.relname AS table_name, r.relname AS first, a.attname AS second
    FROM pg_class c
    JOIN pg_class r ON r.oid = c.oid OR r.oid IN (
        SELECT i.indexrelid FROM pg_index i WHERE i.indrelid = c.oid AND i.indexprs IS NOT NULL
    )
    JOIN pg_attribute a ON a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped
    WHERE c.relnamespace = %(schema)s::regnamespace AND c.relkind = 'r'
      AND c.relname = ANY (%(tables)s)
    ORDER BY c.relname, r.relname, a.attnum
"""
CLEAR_FUNCTION_SINCE = 180000
"""The server version with ``pg_clear_attribute_stats``."""

_ROWS = (
    "SELECT relname, reltuples FROM pg_class"
    " WHERE relnamespace = %s::regnamespace AND relkind = 'r'"
)
# Of the listed tables, those whose type this role may not change (it does not own them):
# a role granted MAINTAIN on PostgreSQL 17 (decision 0149) may vacuum and lock them, not that.
_NOT_OWNED = (
    "SELECT relname FROM pg_class WHERE relnamespace = %s::regnamespace AND relkind = 'r'"
    " AND relname = ANY (%s) AND NOT pg_has_role(current_user, relowner, 'USAGE')"
)


@dataclass(frozen=True)
class Cleared:
    cleared: list[str]
    """The tables whose statistics were cleared (or taken again from the rows that came
    since they were emptied)."""
    owed: list[str]
    """The tables left empty and not cleared: in use, or a failure (logged). After a failure
    to read the catalog, those asked for (none when every empty table was)."""


def owed_tables(tx: Any) -> set[str]:
    """The tables written down as owed (:func:`keep_owed`), by any process (``tx``: a store's
    transaction)."""
    start = len(STATISTICS_OWED) + 1
    return {
        row["owed"]
        for row in tx.all(
            "SELECT substr(name, ?) AS owed FROM index_marks WHERE starts_with(name, ?)",
            (start, STATISTICS_OWED),
        )
    }


def keep_owed(conn: Any, owed: list[str], settled: list[str]) -> None:
    """Write down the ``owed`` tables in ``index_marks`` and strike out the ``settled`` ones, on
    ``conn`` (autocommit). Only what this clear settled: another process may have written a
    table down since its counts were read (compact's "every other" struck out such a mark:
    the review's). Only logs a database error: the tables stay owed in this process."""
    import psycopg

    try:
        with conn.transaction():
            if settled:
                conn.execute(
                    "DELETE FROM index_marks WHERE name = ANY (%s)",
                    [[STATISTICS_OWED + table for table in settled]],
                )
            if owed:
                conn.execute(
                    "INSERT INTO index_marks (name, upto) SELECT unnest(%s::text[]), 0"
                    " ON CONFLICT (name) DO NOTHING",
                    [[STATISTICS_OWED + table for table in owed]],
                )
    except psycopg.Error:
        _log.warning("the tables whose statistics are owed were not written down", exc_info=True)


def row_counts(conn: Any, schema: str) -> dict[str, float]:
    """Each table's rows as the statistics count them (-1: never counted)."""
    return {row["relname"]: float(row["reltuples"]) for row in conn.execute(_ROWS, [schema])}


def not_owned(conn: Any, schema: str, tables: list[str]) -> list[str]:
    """Of ``tables``, those only their owner may clear before PostgreSQL 18."""
    return sorted(row[0] for row in conn.execute(_NOT_OWNED, [schema, tables]).fetchall())


def emptied(before: dict[str, float], after: dict[str, float]) -> list[str]:
    """The tables that held rows by ``before`` and hold none by ``after``: the VACUUM between
    the two readings analysed them empty, and kept the statistics they had."""
    return sorted(t for t, rows in after.items() if rows == 0 and before.get(t, 0) > 0)


def clear(
    conn: Any, schema: str, tables: list[str] | None = None, *, early: bool = False
) -> Cleared:
    """Clear the statistics of ``tables`` (None: every table counted empty) on ``conn``
    (autocommit, the tables' owner). A table holding rows again is analysed: a sample of
    them replaces the old one (left to the next ANALYZE, the old statistics stayed until a
    compact: autovacuum waits for 50 changed rows and more, decision 0078). Never raises a
    database error: what it could not do is logged and owed. ``early``: after a VACUUM that
    came before older transactions ended, which before PostgreSQL 18 leaves every table owed
    (its indexes would be rebuilt over the rows that VACUUM could not remove, under the
    table's strongest lock)."""
    import psycopg

    by_function = conn.info.server_version >= CLEAR_FUNCTION_SINCE
    if early and not by_function:
        return Cleared([], sorted(tables or []))
    try:
        if tables is None:
            tables = sorted(t for t, rows in row_counts(conn, schema).items() if rows == 0)
        left = [] if by_function else not_owned(conn, schema, tables)
        if left:  # not tried: each try took the table's strongest lock, then failed
            _log.info("the statistics of %s are left to their owner", ", ".join(left))
            tables = [table for table in tables if table not in left]
        query = _EVERY_COLUMN if by_function else _TEXT_COLUMNS
        columns: dict[str, list[tuple[str, str]]] = {}
        for row in conn.execute(query, {"schema": schema, "tables": tables}).fetchall():
            columns.setdefault(row["table_name"], []).append((row["first"], row["second"]))
    except psycopg.Error:
        _log.warning("the statistics of empty tables could not be cleared", exc_info=True)
        return Cleared([], sorted(tables or []))
    cleared, owed = [], list(left)
    for table, named in columns.items():
        try:
            _clear_table(conn, schema, table, named, by_function)
            cleared.append(table)
        except psycopg.errors.LockNotAvailable:
            _log.info("the statistics of %s are owed: the table is in use", table)
            owed.append(table)
        except psycopg.Error:
            _log.warning("the statistics of %s could not be cleared", table, exc_info=True)
            owed.append(table)
    return Cleared(cleared, owed)


def _clear_table(
    conn: Any, schema: str, table: str, named: list[tuple[str, str]], by_function: bool
) -> None:
    """Clear one table's statistics, in a transaction of its own (analyse it when it holds
    rows). ``named``: (relation, column) to clear by function, or (column, its type) to
    change."""
    from ..scope import EVERY_TENANT
    from .connection import _set_scope
    from .pool import _quote

    qualified = f"{_quote(schema)}.{_quote(table)}"
    with conn.transaction():
        conn.execute(f"SET LOCAL lock_timeout = '{LOCK_WAIT}'")
        _set_scope(conn, EVERY_TENANT)  # row-level security applies to the owner too
        if not by_function:
            conn.execute(f"LOCK TABLE {qualified} IN ACCESS EXCLUSIVE MODE")
        if conn.execute(f"SELECT 1 FROM {qualified} LIMIT 1").fetchone() is not None:
            conn.execute(f"ANALYZE {qualified}")  # rows came since the VACUUM: few, as yet
            return
        if by_function:
            conn.execute(
                "SELECT pg_clear_attribute_stats(%s, relation, column_name, false)"
                " FROM unnest(%s::text[], %s::text[]) AS c (relation, column_name)",
                [schema, [relation for relation, _ in named], [column for _, column in named]],
            )
            return
        triggers = conn.execute(_TRIGGERS_ON_COLUMNS, [qualified]).fetchall()
        for trigger in triggers:
            conn.execute(f"DROP TRIGGER {_quote(trigger['name'])} ON {qualified}")
        conn.execute(
            f"ALTER TABLE {qualified} "
            + ", ".join(f"ALTER COLUMN {_quote(column)} TYPE {type_}" for column, type_ in named)
        )
        for trigger in triggers:
            conn.execute(trigger["definition"])  # made enabled: set as it was
            if trigger["state"] in _TRIGGER_STATES:
                conn.execute(
                    f"ALTER TABLE {qualified} {_TRIGGER_STATES[trigger['state']]}"
                    f" {_quote(trigger['name'])}"
                )
