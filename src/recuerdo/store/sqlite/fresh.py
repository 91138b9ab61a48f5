"""A new store's schema in one pass: what the migrations leave, replayed.

A new SQLite store used to run every migration step in turn: 23 steps and some 230
statements, several of them table rebuilds (m014 alone rebuilds every table to lead its keys
with the tenant). That was 20-30 ms of CPU per new memory, paid again by every tenant, every
restore into a new file and every test store (decision 0034).

So each process runs the steps once, on a private in-memory database, and keeps what they
left: the ``CREATE`` statements of the tables, indexes, views and triggers, the rows the
steps wrote, and the planner's statistics a new store starts with (``statistics.py``). A new
store gets those statements and rows inside the same opening transaction the steps would have
run in, and records every step as applied. The steps stay the only
definition of the schema (nothing here is written by hand), and a store that already holds a
step still takes the remaining steps one by one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from ..base import Tx
from .driver import sqlite3


@dataclass(frozen=True)
class FreshSchema:
    """What a store's migration steps leave in an empty database."""

    tables: tuple[str, ...]
    """The CREATE statements of the tables, in the order the steps made them."""
    rows: tuple[tuple[str, tuple[str, ...], tuple[tuple[Any, ...], ...]], ...]
    """(table, columns, rows) of every table the steps wrote rows to."""
    built_on: tuple[str, ...]
    """The indexes, views and triggers, in the order the steps made them (a trigger fires
    before the ones made after it on the same event)."""


STATISTICS = "sqlite_stat1"
_made: dict[Hashable, FreshSchema] = {}
_lock = threading.Lock()


def fresh_schema(key: Hashable, run_steps: Callable[[sqlite3.Connection], None]) -> FreshSchema:
    """The schema ``run_steps`` builds, built once per process for each ``key``."""
    with _lock:
        made = _made.get(key)
        if made is None:
            made = _made[key] = _build(run_steps)
        return made


def _build(run_steps: Callable[[sqlite3.Connection], None]) -> FreshSchema:
    from . import files
    from .statistics import state_tenant_share

    conn = files.connect(":memory:")
    try:
        run_steps(conn)
        # The planner's figures a new store is opened with (what ``state_tenant_share`` would
        # write at its first open: 70 rows, each table counted) are kept as rows like the others.
        state_tenant_share(conn)
        objects = conn.execute(
            "SELECT type, name, sql FROM sqlite_schema WHERE sql IS NOT NULL"
            " AND name NOT LIKE 'sqlite!_%' ESCAPE '!' AND name <> '_migrations' ORDER BY rowid"
        ).fetchall()
        virtual = {str(o[1]) for o in objects if str(o[2]).upper().startswith("CREATE VIRTUAL")}
        shadows = _shadow_tables(conn, virtual)
        made = [(str(kind), str(name), str(sql)) for kind, name, sql in objects]
        tables = [(name, sql) for kind, name, sql in made if kind == "table"]
        rows = []
        # (The shadow tables' first rows are written by their virtual table's CREATE.)
        written = [name for name, _ in tables if name not in virtual | shadows]
        for table in [*written, "sqlite_sequence", STATISTICS]:
            columns = _stored_columns(conn, table)
            listed = ", ".join(f'"{c}"' for c in columns)
            found = conn.execute(f'SELECT {listed} FROM "{table}"').fetchall() if columns else []
            if found:
                rows.append((table, columns, tuple(tuple(row) for row in found)))
        return FreshSchema(
            tables=tuple(sql for name, sql in tables if name not in shadows),
            rows=tuple(rows),
            built_on=tuple(sql for kind, _, sql in made if kind != "table"),
        )
    finally:
        conn.close()


def _shadow_tables(conn: sqlite3.Connection, virtual: set[str]) -> set[str]:
    """The tables a virtual table made for itself: they are created with it, not apart."""
    try:
        listed = conn.execute("PRAGMA main.table_list").fetchall()
    except sqlite3.DatabaseError:  # before SQLite 3.37: FTS5 names them after their table
        names = [str(row[0]) for row in conn.execute("SELECT name FROM sqlite_schema")]
        suffixes = ("_data", "_idx", "_content", "_docsize", "_config")
        return {n for n in names for v in virtual if n in {v + s for s in suffixes}}
    return {str(row[1]) for row in listed if row[2] == "shadow"}


def is_empty(tx: Tx) -> bool:
    """Whether the database holds nothing but the (empty) record of applied steps: a store
    being created, not one written by something else or before the record existed."""
    # (The record's primary key has an index of its own, named after its table.)
    tables = {str(row["tbl_name"]) for row in tx.all("SELECT tbl_name FROM sqlite_schema")}
    return tables <= {"_migrations"}


def replay(tx: Tx, fresh: FreshSchema) -> None:
    """Create ``fresh``'s objects and rows in an empty database, inside ``tx``: the tables,
    their rows, then what is built on them (no trigger fires on a row the steps wrote), then
    the planner's statistics."""
    for statement in fresh.tables:
        tx.execute(statement)
    # SQLite's table of statistics, as the template has it (made there by state_tenant_share,
    # with no row where no index leads with the tenant).
    tx.execute("ANALYZE sqlite_schema")
    stated = any(table == STATISTICS for table, _, _ in fresh.rows)
    for table, columns, rows in fresh.rows:
        names = ", ".join(f'"{c}"' for c in columns)
        marks = ", ".join("?" for _ in columns)
        tx.executemany(f'INSERT INTO "{table}" ({names}) VALUES ({marks})', rows)
    for statement in fresh.built_on:
        tx.execute(statement)
    if stated:
        tx.execute("ANALYZE sqlite_schema")  # the planner reads them again


def _stored_columns(conn: sqlite3.Connection, table: str) -> tuple[str, ...]:
    """The columns a row is written with (a generated column is computed, never written)."""
    return tuple(
        str(row[1]) for row in conn.execute(f'PRAGMA table_xinfo("{table}")') if row[6] == 0
    )
