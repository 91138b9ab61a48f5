"""Salvage what is readable from a damaged SQLite memory into a new one.

Each table is copied in rowid order, a batch at a time; a batch that meets a damaged page is
read again row by row, and the rows that cannot be read are counted as lost. Tables without a
rowid are read as far as they can be. The full-text indexes are rebuilt from the copied rows,
not copied, and so are the tallies of what the memory holds; the id sequence is carried over,
so an id is never given out twice.

The rows go into a store at the file's own schema steps, and the steps the file is older than
then run on them, as they do when such a file is opened: a step that converts what it finds
(m022's binary keys, m018's shorter ones) would otherwise never see the rows copied into the
current schema. A file whose steps cannot be read is copied into the current schema.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ...errors import InvalidInput, StoreError
from .. import audit_filters, audit_words, entity_names, note_projects, released_hashes, tallies
from ..migrations import check_not_newer
from .driver import sqlite3
from .files import add_functions
from .health import applied_steps

BATCH = 1000
# The tallies (m031) are counted again as the items are copied: the old ones would count the
# items lost to the damage, and a store from before the step has none to copy. The released
# hashes (m032) are found again: the chunks lost to the damage released none. The audit
# records' words (m034) are found again from the records copied: a store from before the step
# has none, and a damaged table would leave records no forget could find.
_NOT_COPIED = {
    "_migrations",
    "sqlite_sequence",
    "index_marks",
    tallies.TABLE,
    released_hashes.TABLE,
    audit_words.TABLE,
}


def _readable(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    conn.row_factory = sqlite3.Row
    return conn


def recover(source: str, target: str) -> dict[str, Any]:
    """Copy every readable row of the memory at ``source`` into a new memory at ``target``;
    report per table what was recovered and what was lost."""
    from .chunk_spans import index_all
    from .connection import SQLiteStore, SQLiteTx
    from .schema import SCHEMA
    from .tag_categories_schema import FILL_CATEGORIES

    if not os.path.exists(source):
        raise InvalidInput(f"no memory at {source}")
    if os.path.exists(target):
        raise InvalidInput(f"{target} exists already: recover writes a new file")
    old = _readable(source)
    try:
        steps = _file_steps(old, source)
        SQLiteStore(target, steps=steps).close()  # the file's schema, empty
    except BaseException:
        old.close()
        raise
    new = sqlite3.connect(target, isolation_level=None)
    new.row_factory = sqlite3.Row
    # The delete triggers spell the words they take out (m045): a chunk dropped as an orphan
    # below fires them.
    add_functions(new)
    # Rows come in as they can be read: a row whose parent was lost is removed at the end.
    new.execute("PRAGMA foreign_keys=OFF")
    taken = set(SCHEMA.names()[:steps]) if steps is not None else None
    report: dict[str, Any] = {"source": source, "target": target, "tables": {}}
    try:
        new.execute("BEGIN IMMEDIATE")
        wanted = [
            row["name"]
            for row in new.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE"
                " 'CREATE VIRTUAL%' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '%_fts%'"
                " AND name NOT LIKE 'entry_trigrams%' ORDER BY rowid"
            )
            if row["name"] not in _NOT_COPIED
        ]
        for table in wanted:
            report["tables"][table] = _copy_table(old, new, table)
        for table, removed in _drop_orphans(new).items():
            entry = report["tables"][table]
            entry["recovered"] -= removed
            entry["lost"] += removed
            entry["complete"] = False
        _carry_sequence(old, new)
        _carry_forget_counts(old, new)
        copied = SQLiteTx(new, lambda _: None)

        def taken_step(name: str) -> bool:  # a later one fills what it needs when it runs
            return taken is None or name in taken

        if taken_step("m032_released_hashes"):
            # Vectors whose chunks were lost (or dropped above) wait for the upkeep's collection.
            new.execute(released_hashes.RELEASE_UNUSED)
        if taken_step("m026_tag_categories"):
            new.execute(FILL_CATEGORIES)  # tag rows of a damaged table, without categories
        if taken_step("m034_audit_words"):
            audit_words.fill(copied)
        if taken_step("m037_unescaped_audit_filters"):
            audit_filters.unescape(copied)
        if taken_step("m038_nfc_entity_names"):
            entity_names.refold(copied)
        if taken_step(note_projects.STEP):
            note_projects.fill(copied)  # items of a file older than the step, without it
        if taken_step("m021_chunk_spans"):
            # The words index holds no text to copy: it is filled again from the chunks' spans
            # (before the step, the chunks' insert trigger filled it as they were copied).
            index_all(copied)
        # Derived work starts over: the upkeep re-indexes (the trigram index is empty: items
        # were copied without it) and re-embeds what is missing.
        new.execute("UPDATE index_marks SET upto = 0 WHERE name = 'entry_trigrams'")
        new.execute(
            "UPDATE index_marks SET upto = coalesce((SELECT max(item_id) FROM chunks), 0)"
            " WHERE name = 'chunks'"
        )
        new.execute("COMMIT")
    except BaseException:
        if new.in_transaction:
            new.execute("ROLLBACK")
        raise
    finally:
        old.close()
        new.close()
    SQLiteStore(target).close()  # the steps the file is older than, on the rows copied
    tables = report["tables"]
    report["recovered"] = sum(t["recovered"] for t in tables.values())
    report["lost"] = sum(t["lost"] for t in tables.values())
    report["incomplete_tables"] = sorted(name for name, t in tables.items() if not t["complete"])
    return report


def _file_steps(old: sqlite3.Connection, source: str) -> int | None:
    """How many of this version's steps the file has taken (None: its record is unreadable);
    a file of a newer recuerdo is refused, as its open is: its rows would lose what the newer
    steps added."""
    from .schema import SCHEMA

    try:
        applied = applied_steps(old)
        version = int(old.execute("PRAGMA user_version").fetchone()[0])
    except sqlite3.DatabaseError:
        return None
    check_not_newer(SCHEMA, applied, version, source)
    known = SCHEMA.names()
    if set(applied) != set(known[: len(applied)]):
        return None  # steps out of order: no schema of this version is the file's
    if len(applied) <= known.index(_FIRST_COPIED_AT_ITS_STEP):
        # Before the chunks and their index marks exist, recover's own fix-ups have nothing
        # to work on: such a file's rows go into the current schema, as before 0122.
        return None
    return len(applied)


_FIRST_COPIED_AT_ITS_STEP = "m005_retrieval"


def _drop_orphans(conn: sqlite3.Connection) -> dict[str, int]:
    """Delete rows whose parent row was lost; how many per table."""
    removed: dict[str, int] = {}
    for _ in range(10):  # a parent removed here can orphan its own children
        found = conn.execute("PRAGMA foreign_key_check").fetchall()
        if not found:
            break
        for row in found:
            table, rowid, parent = row[0], row[1], row[2]
            if rowid is not None:
                conn.execute(f'DELETE FROM "{table}" WHERE rowid = ?', (rowid,))
            else:  # a table without rowid: remove every row pointing at a missing parent
                conn.execute(
                    f'DELETE FROM "{table}" WHERE NOT EXISTS (SELECT 1 FROM "{parent}" p'
                    f' WHERE p.id = "{table}".{_child_column(conn, table, parent)})'
                )
            removed[table] = removed.get(table, 0) + 1
    return removed


def _child_column(conn: sqlite3.Connection, table: str, parent: str) -> str:
    for row in conn.execute(f'PRAGMA foreign_key_list("{table}")'):
        if row[2] == parent:
            return f'"{row[3]}"'
    raise StoreError(f"no link from {table} to {parent}")


def _copy_table(old: sqlite3.Connection, new: sqlite3.Connection, table: str) -> dict[str, Any]:
    new_columns = [row[1] for row in new.execute(f'PRAGMA table_info("{table}")')]
    if not new_columns:
        return {"recovered": 0, "lost": 0, "complete": False, "note": "not in this schema"}
    try:
        old_columns = [row[1] for row in old.execute(f'PRAGMA table_info("{table}")')]
        has_rowid = _has_rowid(old, table)
    except sqlite3.DatabaseError as exc:
        return {"recovered": 0, "lost": 0, "complete": False, "note": str(exc)}
    columns = [c for c in old_columns if c in new_columns]
    if not columns:  # a table of a later step than the file's: nothing of it to lose
        return {"recovered": 0, "lost": 0, "complete": True, "note": "not in the file's schema"}
    listed = ", ".join(f'"{c}"' for c in columns)
    insert = (
        f'INSERT INTO "{table}" ({listed}) VALUES ({", ".join("?" * len(columns))})'
        " ON CONFLICT DO NOTHING"
    )
    if not has_rowid:
        return _copy_without_rowid(old, new, table, listed, insert)
    recovered, lost, last = 0, 0, 0
    top = _max_rowid(old, table)
    complete = True
    while True:
        try:
            rows = old.execute(
                f'SELECT rowid AS _r, {listed} FROM "{table}" WHERE rowid > ? ORDER BY rowid'
                " LIMIT ?",
                (last, BATCH),
            ).fetchall()
        except sqlite3.DatabaseError:
            complete = False
            found, missing, last = _probe(old, table, listed, last, top)
            lost += missing
            if found is None:
                break
            rows = [found]
        if not rows:
            break
        new.executemany(insert, [tuple(row[c] for c in columns) for row in rows])
        recovered += len(rows)
        last = rows[-1]["_r"]
    return {"recovered": recovered, "lost": lost, "complete": complete}


def _probe(
    old: sqlite3.Connection, table: str, listed: str, last: int, top: int | None
) -> tuple[Any, int, int]:
    """Rows after ``last``, one rowid at a time, past the damage: (the next readable row or
    None, the rowids that could not be read, the rowid reached)."""
    limit = (top if top is not None else last + 100_000) + 1
    lost = 0
    rowid = last + 1
    while rowid <= limit:
        try:
            row = old.execute(
                f'SELECT rowid AS _r, {listed} FROM "{table}" WHERE rowid = ?', (rowid,)
            ).fetchone()
        except sqlite3.DatabaseError:
            lost += 1
            rowid += 1
            continue
        if row is not None:
            return row, lost, rowid
        rowid += 1
    return None, lost, rowid


def _copy_without_rowid(
    old: sqlite3.Connection, new: sqlite3.Connection, table: str, listed: str, insert: str
) -> dict[str, Any]:
    recovered = 0
    complete = True
    cursor = old.execute(f'SELECT {listed} FROM "{table}"')
    try:
        for row in cursor:
            new.execute(insert, tuple(row))
            recovered += 1
    except sqlite3.DatabaseError:
        complete = False
    return {"recovered": recovered, "lost": 0, "complete": complete}


def _has_rowid(conn: sqlite3.Connection, table: str) -> bool:
    sql = conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
    ).fetchone()
    return sql is not None and "WITHOUT ROWID" not in str(sql[0]).upper()


def _max_rowid(conn: sqlite3.Connection, table: str) -> int | None:
    try:
        value = conn.execute(f'SELECT max(rowid) FROM "{table}"').fetchone()[0]
    except sqlite3.DatabaseError:
        return None
    return None if value is None else int(value)


def _carry_sequence(old: sqlite3.Connection, new: sqlite3.Connection) -> None:
    try:
        rows = old.execute("SELECT name, seq FROM sqlite_sequence").fetchall()
    except sqlite3.DatabaseError:
        return
    for row in rows:
        new.execute(
            "UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = ?", (row["seq"], row["name"])
        )


# ``core.audit.FORGETS``: the rows of ``index_marks`` counting each tenant's forgets (0085).
_FORGET_COUNTS = "audit_forgets:"


def _carry_forget_counts(old: sqlite3.Connection, new: sqlite3.Connection) -> None:
    """Each tenant's count of forgets, as far as the file's marks can be read. The other
    marks say how far derived work went and start over; these only ever climb: a log that
    took a count from the damaged file drops a record whose count is not the file's, so a
    count back at 0 dropped its later records, and one climbing back to it again passed
    records taken before a forget."""
    try:
        # A count the damage left as no count (null, text, below 0) starts again: carried as
        # read, a null failed the whole recover and text failed every reader of the counts.
        rows = old.execute(
            f"SELECT name, upto FROM index_marks WHERE substr(name, 1, {len(_FORGET_COUNTS)}) = ?"
            " AND typeof(upto) = 'integer' AND upto >= 0",
            (_FORGET_COUNTS,),
        ).fetchall()
    except sqlite3.DatabaseError:
        return  # unreadable (or a file from before the marks): the counts start again
    new.executemany(
        "INSERT INTO index_marks (name, upto) VALUES (?, ?) ON CONFLICT (name)"
        " DO UPDATE SET upto = max(upto, excluded.upto)",
        [(row["name"], row["upto"]) for row in rows],
    )


def recover_file(source: str | Path, target: str | Path) -> dict[str, Any]:
    try:
        return recover(str(source), str(target))
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"the damaged memory could not be read at all: {exc}") from exc
