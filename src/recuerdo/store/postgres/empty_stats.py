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
its own type again. On an empty table nothing is rewritten, but the change takes the table's
strongest lock: a table some transaction is reading is skipped (``LOCK_WAIT``), and cleared at
``compact`` or a later forget's VACUUM. Not changed: columns a foreign key, a policy, a view or
a generated column uses (the tenant, the ids, a vector: no forgotten text), and numbers, dates
and booleans.

Which tables: those a VACUUM found emptied (:func:`emptied`, from the row counts before and
after it), and at ``compact`` every empty one: no owner may read which hold statistics
(``pg_stats`` hides a table under row-level security, ``pg_statistic`` is a superuser's).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

LOCK_WAIT = "100ms"
"""How long the lock is waited for. While a strong lock waits, every later reader of the table
waits behind it: a wait of seconds would stall the memory's reads."""

_log = logging.getLogger("recuerdo.store")

# The columns of the listed tables whose type may quote text, with the type and the collation
# that give each column its own type again. Only columns nothing uses but what a change of type
# rebuilds on an empty table alone: the table's indexes and its own constraints, its own
# default, extended statistics, and triggers (made again around the change). A foreign key
# would be checked under a lock on the other table too; a policy, a view, a function's body or
# another column's generation refuse the change. Not a table with an invalid index either: an
# interrupted rebuild's leftover, which the change would build again, valid (compact drops
# only invalid ones).
_TEXT_COLUMNS = """
    SELECT c.relname AS table_name, a.attname AS column_name,
           format_type(a.atttypid, a.atttypmod) AS type_name,
           CASE WHEN a.attcollation <> t.typcollation
                THEN quote_ident(cn.nspname) || '.' || quote_ident(co.collname) END AS collation
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

_ROWS = (
    "SELECT relname, reltuples FROM pg_class"
    " WHERE relnamespace = %s::regnamespace AND relkind = 'r'"
)


def row_counts(conn: Any, schema: str) -> dict[str, float]:
    """Each table's rows as the statistics count them (-1: never counted)."""
    return {row["relname"]: float(row["reltuples"]) for row in conn.execute(_ROWS, [schema])}


def emptied(before: dict[str, float], after: dict[str, float]) -> list[str]:
    """The tables that held rows by ``before`` and hold none by ``after``: the VACUUM between
    the two readings analysed them empty, and kept the statistics they had."""
    return sorted(t for t, rows in after.items() if rows == 0 and before.get(t, 0) > 0)


# The columns of the listed tables and of their expression indexes, for
# ``pg_clear_attribute_stats`` (PostgreSQL 18), which clears any column under a light lock.
_EVERY_COLUMN = """
    SELECT c.relname AS table_name, r.relname AS relation, a.attname AS column_name
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

Change = Callable[[Any, str], None]
"""What clears one table's statistics, given the connection and the table's qualified name,
inside the transaction that holds its lock."""


def clear(conn: Any, schema: str, tables: list[str]) -> list[str]:
    """Clear the statistics of ``tables`` on ``conn`` (autocommit, the tables' owner); the
    tables cleared. A table that is locked, or holds rows again, is left as it is."""
    import psycopg

    from .connection import _quote

    by_function = conn.info.server_version >= CLEAR_FUNCTION_SINCE
    changes = (_by_function if by_function else _by_retyping)(conn, schema, tables)
    cleared = []
    for table, change in changes.items():
        qualified = f"{_quote(schema)}.{_quote(table)}"
        try:
            with conn.transaction():
                conn.execute(f"SET LOCAL lock_timeout = '{LOCK_WAIT}'")
                # Every tenant's rows (row-level security applies to the owner too).
                conn.execute("SELECT set_config('recuerdo.tenant', '*', true)")
                if not by_function:
                    conn.execute(f"LOCK TABLE {qualified} IN ACCESS EXCLUSIVE MODE")
                if conn.execute(f"SELECT 1 FROM {qualified} LIMIT 1").fetchone() is not None:
                    continue  # rows came since the VACUUM: the next ANALYZE samples them
                change(conn, qualified)
        except psycopg.errors.LockNotAvailable:
            _log.info("the statistics of %s wait for a later VACUUM: the table is in use", table)
            continue
        except psycopg.Error:  # the VACUUM's other work stands; say what was not done
            _log.warning("the statistics of %s could not be cleared", table, exc_info=True)
            continue
        cleared.append(table)
    return cleared


def _by_function(conn: Any, schema: str, tables: list[str]) -> dict[str, Change]:
    columns: dict[str, list[tuple[str, str]]] = {}
    for row in conn.execute(_EVERY_COLUMN, {"schema": schema, "tables": tables}).fetchall():
        columns.setdefault(row["table_name"], []).append((row["relation"], row["column_name"]))

    def change(named: list[tuple[str, str]]) -> Change:
        def run(conn: Any, qualified: str) -> None:
            conn.execute(
                "SELECT pg_clear_attribute_stats(%s, relation, column_name, false)"
                " FROM unnest(%s::text[], %s::text[]) AS c (relation, column_name)",
                [schema, [r for r, _ in named], [c for _, c in named]],
            )

        return run

    return {table: change(named) for table, named in columns.items()}


def _by_retyping(conn: Any, schema: str, tables: list[str]) -> dict[str, Change]:
    from .connection import _quote

    columns: dict[str, list[str]] = {}
    for row in conn.execute(_TEXT_COLUMNS, {"schema": schema, "tables": tables}).fetchall():
        collation = row["collation"]
        columns.setdefault(row["table_name"], []).append(
            f"ALTER COLUMN {_quote(row['column_name'])} TYPE {row['type_name']}"
            + ("" if collation is None else f" COLLATE {collation}")
        )

    def change(retyped: str) -> Change:
        def run(conn: Any, qualified: str) -> None:
            triggers = conn.execute(_TRIGGERS_ON_COLUMNS, [qualified]).fetchall()
            for trigger in triggers:
                conn.execute(f"DROP TRIGGER {_quote(trigger['name'])} ON {qualified}")
            conn.execute(f"ALTER TABLE {qualified} {retyped}")
            for trigger in triggers:
                conn.execute(trigger["definition"])  # made enabled: set as it was
                if trigger["state"] in _TRIGGER_STATES:
                    conn.execute(
                        f"ALTER TABLE {qualified} {_TRIGGER_STATES[trigger['state']]}"
                        f" {_quote(trigger['name'])}"
                    )

        return run

    return {table: change(", ".join(retyped)) for table, retyped in columns.items()}
