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

Replaying still parsed and ran some 90 statements per store (4.5 ms). So the replay is done
once more per process, into a private in-memory copy (:func:`copy_into`): a new in-memory
store is that copy's pages (SQLite's backup, 0.06 ms), and a new file starts as those pages
written out (:func:`image`), put in place whole by the creating call (``files.open_checked``).
The replay above stays for a file that exists but is empty.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..base import Tx
from .driver import sqlite3

if TYPE_CHECKING:
    from ..migrations import Schema


@dataclass(frozen=True)
class FreshSchema:
    """What a store's migration steps leave in an empty database."""

    tables: tuple[str, ...]
    """The CREATE statements of the tables, in the order the steps made them."""
    rows: tuple[tuple[str, tuple[str, ...], tuple[tuple[Any, ...], ...]], ...]
    """(table, columns, rows) of every table the steps wrote rows to."""
    built_on: tuple[str, ...]
    """The indexes, views and triggers, in the order the steps made them (on one event, SQLite
    fires the newest trigger first)."""


STATISTICS = "sqlite_stat1"
MIGRATIONS_TABLE = (
    "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
)
COPIED = "copied"
"""What a copy records as the time of each step: the opening transaction writes its own."""
_made: dict[Hashable, FreshSchema] = {}
_copies: dict[Hashable, sqlite3.Connection] = {}
_images: dict[Hashable, bytes] = {}
_lock = threading.Lock()


_abandoned: list[sqlite3.Connection] = []


def _forget_connections() -> None:
    """In a forked child: SQLite's connections must not cross a fork (the parent's threads
    may hold their mutexes), so the copies are made again there; the schemas and images are
    plain values and stay. The parent's are never used nor closed (closing takes the mutexes
    too): they are kept, unreferenced elsewhere, until the process ends."""
    global _lock
    _lock = threading.Lock()
    _abandoned.extend(_copies.values())
    _copies.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_connections)


def fresh_schema(schema: Schema) -> FreshSchema:
    """What ``schema``'s steps leave, found once per process for each schema."""
    with _lock:
        return _fresh(schema)


def copy_into(schema: Schema, target: sqlite3.Connection) -> None:
    """Make ``target`` (an empty database, outside any transaction) a new store of ``schema``:
    every object and row its steps leave, each step recorded as applied at :data:`COPIED`."""
    with _lock:
        _copy(schema).backup(target)


def image(schema: Schema) -> bytes:
    """The bytes of a new store's file, as :func:`copy_into` would leave it."""
    key = _key(schema)
    with _lock:
        made = _images.get(key)
        if made is None:
            made = _images[key] = _written(_copy(schema))
        return made


def make_store(tx: Tx, made: FreshSchema, names: list[str], when: str) -> None:
    """Inside ``tx``, on an empty database: the record of steps, ``made`` replayed, and each
    of ``names`` recorded as applied at ``when``."""
    tx.execute(MIGRATIONS_TABLE)
    replay(tx, made)
    tx.executemany(
        "INSERT INTO _migrations (name, applied_at) VALUES (?, ?)",
        [(name, when) for name in names],
    )


def _key(schema: Schema) -> Hashable:
    return tuple(schema.steps)


def _fresh(schema: Schema) -> FreshSchema:
    key = _key(schema)
    made = _made.get(key)
    if made is None:
        made = _made[key] = _build(schema)
    return made


def _copy(schema: Schema) -> sqlite3.Connection:
    key = _key(schema)
    copy = _copies.get(key)
    if copy is None:
        copy = _copies[key] = _in_memory(
            lambda tx: make_store(tx, _fresh(schema), schema.names(), COPIED)
        )
    return copy


def _in_memory(fill: Callable[[Tx], None]) -> sqlite3.Connection:
    """A private in-memory database, filled in one transaction."""
    from .connection import SQLiteTx

    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    try:
        conn.execute("BEGIN IMMEDIATE")
        fill(SQLiteTx(conn, lambda _: None))
        conn.execute("COMMIT")
    except BaseException:
        conn.close()
        raise
    return conn


def _written(copy: sqlite3.Connection) -> bytes:
    """The file SQLite writes for ``copy``: its pages, no journal."""
    fd, path = tempfile.mkstemp(suffix=".db")
    os.close(fd)
    try:
        out = sqlite3.connect(path)
        try:
            out.execute("PRAGMA journal_mode=OFF")
            out.execute("PRAGMA synchronous=OFF")
            copy.backup(out)
        finally:
            out.close()
        with open(path, "rb") as written:
            return written.read()
    finally:
        os.unlink(path)


def _build(schema: Schema) -> FreshSchema:
    from ..migrations import apply, stamp
    from . import files
    from .connection import SQLiteTx
    from .statistics import state_tenant_share

    conn = files.connect(":memory:")
    try:
        # The steps one by one, as an older store takes them.
        conn.execute("BEGIN IMMEDIATE")
        steps = SQLiteTx(conn, lambda _: None)
        steps.execute(MIGRATIONS_TABLE)
        apply(steps, schema, [], stamp())
        conn.execute("COMMIT")
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
