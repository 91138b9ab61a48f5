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
any size, and none for the steady trickle autovacuum handles."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .connection import PostgresStore

FIRST_ANALYZE_ROWS = 500


def each_table(store: PostgresStore, command: str, tables: Sequence[str] = ()) -> None:
    """``command`` (VACUUM, ANALYZE) over ``tables``, or every table of the memory."""
    from .connection import _quote

    shared = store._live()
    names = list(tables) or store.archive.table_names_of(store)
    if not names:  # never a bare command: it would take the whole database
        return
    listed = ", ".join(f"{_quote(shared.schema)}.{_quote(name)}" for name in names)
    with store._connection(shared) as conn:
        conn.execute(f"{command} {listed}")


def grew(store: PostgresStore, rows: int) -> None:
    """A committed write added about ``rows`` items: analyse the memory once this process's
    writes since its last analysis reach what the items table held then. Never raises: the
    write is committed, and autovacuum analyses later anyway."""
    import psycopg

    from ...errors import StoreError

    with contextlib.suppress(psycopg.Error, StoreError):
        _grew(store, rows)


def _grew(store: PostgresStore, rows: int) -> None:
    from .connection import _quote

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
