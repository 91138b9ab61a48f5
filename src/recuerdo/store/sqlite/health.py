"""Is a SQLite file whole? The check before use, the background check, and the full report.

``PRAGMA quick_check`` reads the whole file: about 55 MB/s here (17 s for a 968 MB file), so a
file up to ``SYNC_CHECK_BYTES`` is checked before it is used, and a larger one in the background
a few seconds after it is opened (short command-line calls never pay for it). Damage found either
way, or met by any statement, is recorded beside the file and refused from then on.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from ...errors import StoreDamaged, StoreError
from .. import released_hashes, tallies
from . import stale_words
from .driver import sqlite3
from .full_text_settings import FULL_TEXT_INDEXES
from .search import INDEXED_UPTO

SYNC_CHECK_BYTES = 8 * 1024 * 1024
BACKGROUND_DELAY_SECONDS = 5.0
RETRY_SECONDS = 60.0


def applied_steps(conn: sqlite3.Connection) -> list[str]:
    """The schema steps the file has taken, by name (none: no record)."""
    has_table = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_migrations'"
    ).fetchone()
    if has_table is None:
        return []
    return [row[0] for row in conn.execute("SELECT name FROM _migrations")]


def check_before_use(conn: sqlite3.Connection, path: str, schema: Any) -> None:
    """Refuse a file written by a newer recuerdo, or a small file that is damaged; nothing is
    written to the file here."""
    from ..migrations import check_not_newer
    from .connection import damaged_detail

    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        applied = applied_steps(conn)
    except sqlite3.DatabaseError as exc:
        raise _opening_error(exc, path) from exc
    check_not_newer(schema, applied, version, path)
    size = sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))
    if size <= SYNC_CHECK_BYTES:
        problems = quick_check(conn)
        if problems:
            from .files import write_damage_mark

            detail = f"the database file is damaged ({problems[0]})"
            write_damage_mark(path, detail)
            raise StoreDamaged(damaged_detail(detail))


def _opening_error(exc: sqlite3.DatabaseError, path: str) -> StoreError:
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    if code == sqlite3.SQLITE_NOTADB:
        return StoreError(f"the file at {path} is not a recuerdo memory (not a SQLite database)")
    from .connection import convert
    from .files import write_damage_mark

    return convert(exc, lambda detail: write_damage_mark(path, detail))


def quick_check(conn: sqlite3.Connection) -> list[str]:
    """The problems ``PRAGMA quick_check`` finds (none: the file is whole)."""
    try:
        rows = [str(row[0]) for row in conn.execute("PRAGMA quick_check(20)")]
    except sqlite3.DatabaseError as exc:
        return [str(exc)]
    return [] if rows == ["ok"] else rows


class BackgroundCheck:
    """``quick_check`` of a large file on a connection of its own, started a moment after the
    file is opened; :meth:`pause` interrupts it (a checkpoint must not wait for it) and it
    starts again later."""

    def __init__(self, path: str, on_damage: Callable[[str], None]) -> None:
        self._path = path
        self._on_damage = on_damage
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._done = False
        self._stopped = False
        self._timer: threading.Timer | None = None

    def start(self, delay: float = BACKGROUND_DELAY_SECONDS) -> None:
        with self._lock:
            if self._done or self._stopped:
                return
            self._timer = threading.Timer(delay, self._run)
            self._timer.daemon = True
            self._timer.start()

    def _run(self) -> None:
        from .files import raw_connection

        try:
            conn = raw_connection(self._path, read_only=True)
        except StoreError:
            return
        with self._lock:
            if self._stopped:
                conn.close()
                return
            self._conn = conn
        try:
            rows = [str(row[0]) for row in conn.execute("PRAGMA quick_check(20)")]
        except sqlite3.OperationalError as exc:
            if "interrupt" in str(exc):
                self._finish(conn)
                self.start(RETRY_SECONDS)
                return
            rows = [str(exc)]
        except sqlite3.DatabaseError as exc:
            rows = [str(exc)]
        self._finish(conn)
        with self._lock:
            self._done = True
        if rows != ["ok"]:
            self._on_damage(f"the database file is damaged ({rows[0]})")

    def _finish(self, conn: sqlite3.Connection) -> None:
        with self._lock:
            self._conn = None
        conn.close()

    def pause(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.interrupt()

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            if self._timer is not None:
                self._timer.cancel()
            if self._conn is not None:
                self._conn.interrupt()


def check_in_background(path: str, on_damage: Callable[[str], None]) -> BackgroundCheck | None:
    """A background check for a file too large to check before use (None for small ones)."""
    if path == ":memory:":
        return None
    size = sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))
    if size <= SYNC_CHECK_BYTES:
        return None
    check = BackgroundCheck(path, on_damage)
    check.start()
    return check


def _busy(exc: sqlite3.DatabaseError) -> bool:
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    return code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED) or "database is locked" in str(exc)


def report(conn: sqlite3.Connection) -> dict[str, Any]:
    """The whole file's integrity, the full-text indexes' agreement with their tables, and the
    consistency of chunks, vectors, the entries' folded stretches and index marks."""
    problems: list[str] = []
    try:
        integrity = [str(row[0]) for row in conn.execute("PRAGMA integrity_check(100)")]
    except sqlite3.DatabaseError as exc:
        integrity = [str(exc)]
    if integrity != ["ok"]:
        problems += [f"integrity: {line}" for line in integrity]
        return {"ok": False, "integrity": integrity, "problems": problems}
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    # Each index is checked for its own consistency (rank 0): chunk_fts has no table to read
    # (its rows are compared with the chunks below), entry_trigrams holds only the entries up
    # to its mark, and the audit's index of ids is checked as the others are.
    for fts in FULL_TEXT_INDEXES:
        if fts in tables:
            try:
                conn.execute(f"INSERT INTO {fts} ({fts}, rank) VALUES ('integrity-check', 0)")
            except sqlite3.DatabaseError as exc:
                if _busy(exc):  # another process writes: no verdict, never a false "damaged"
                    raise StoreError(
                        f"the memory is busy (another process is writing to it), so {fts} "
                        "could not be checked now: run check again when it is idle"
                    ) from exc
                problems.append(f"{fts}: the full-text index is damaged ({exc})")
    counts: dict[str, int] = {}
    if "chunks" in tables:
        for name, sql in _CONSISTENCY:
            if any(later in sql and later not in tables for later in _LATER_TABLES):
                continue  # a store from before the step that made the table
            if sql == _ORPHAN_WORDS and stale_words.TABLE in tables:
                sql += f" AND {stale_words.NOT_LISTED.format(chunk='d.id')}"  # kept (m036)
            found = int(conn.execute(sql).fetchone()[0])
            counts[name] = found
            if found:
                problems.append(f"{name}: {found}")
    return {"ok": not problems, "integrity": integrity, "problems": problems, "counts": counts}


_FOLDS = "entry_trigrams_folds"
_LATER_TABLES = (_FOLDS, tallies.TABLE, released_hashes.TABLE, stale_words.TABLE)  # m029-m036
_ORPHAN_WORDS = (
    "SELECT count(*) FROM chunk_fts_docsize d WHERE NOT EXISTS (SELECT 1 FROM chunks c"
    " WHERE c.id = d.id)"
)
_CONSISTENCY = (
    # The tallies the overview and status read (m031), against a recount of the items.
    (tallies.CHECKED, tallies.DIFFERENCES),
    (released_hashes.CHECKED, released_hashes.UNRELEASED),
    (
        "chunks outside their item's text",
        "SELECT count(*) FROM chunks c JOIN items i ON i.id = c.item_id"
        " WHERE (c.start < 0 OR c.stop > length(i.content) OR c.start > c.stop)"
        " AND c.item_id NOT IN (SELECT item_id FROM rechunk_queue)",
    ),
    (
        # The words index reads no table (m021): it is checked against the chunks by its rows.
        "chunks missing from the words index",
        "SELECT count(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM chunk_fts_docsize d"
        " WHERE d.id = c.id)",
    ),
    ("words of chunks no longer there", _ORPHAN_WORDS),
    (
        "chunks of missing items",
        "SELECT count(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM items i"
        " WHERE i.id = c.item_id)",
    ),
    (
        # Each model's first vector is found once (a subquery per row sorted the model's
        # vectors for every vector: over 15 minutes at 100,000).
        "vectors of a wrong size",
        "SELECT count(*) FROM (SELECT model, min(id) AS first FROM embeddings GROUP BY model) m"
        " JOIN embeddings f ON f.id = m.first"
        " JOIN embeddings e ON e.model = m.model AND length(e.vector) <> length(f.vector)",
    ),
    (
        # The folded stretches an indexed entry needs (m029): one missing or stale, and the
        # index no longer offers "Straße" for "STRASSE". Python is asked about the entries
        # with text past ASCII only (``recuerdo_folded_extras``, as the upkeep asks).
        "entries indexed without their folded stretches",
        "SELECT count(*) FROM items i LEFT JOIN entry_trigrams_folds f ON f.id = i.id"
        f" WHERE i.item_type = 'entry' AND i.id <= ({INDEXED_UPTO})"
        " AND length(CAST(i.content AS BLOB)) <> length(i.content)"
        " AND recuerdo_folded_extras(i.content) IS NOT f.folded",
    ),
    (
        # Stretches hold an entry's text: ones left by an entry forgotten must not stay. (Ones
        # beyond the index's mark are harmless: the upkeep deletes them as it reaches them.)
        "folded stretches of no entry",
        "SELECT count(*) FROM entry_trigrams_folds f WHERE NOT EXISTS (SELECT 1 FROM items i"
        " WHERE i.id = f.id AND i.item_type = 'entry')",
    ),
    (
        # Beyond every id ever given (AUTOINCREMENT): an item written later would be taken
        # for indexed. The newest item's id may be gone (a forget, a hard delete) and the
        # marks past it: that is no damage.
        "index marks beyond the last item",
        "SELECT count(*) FROM index_marks WHERE name IN ('chunks', 'entry_trigrams')"
        " AND upto > coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'items'), 0)",
    ),
    (
        # A stale chunk's id is never a chunk's: its old words would answer for the new one.
        "chunks listed as stale",
        f"SELECT count(*) FROM {stale_words.TABLE} s JOIN chunks c ON c.id = s.id",
    ),
    (
        # Told words the index does not hold, a contentless index is damaged by the delete.
        "stale chunks not in the words index",
        f"SELECT count(*) FROM {stale_words.TABLE} s WHERE NOT EXISTS"
        " (SELECT 1 FROM chunk_fts_docsize d WHERE d.id = s.id)",
    ),
    (
        "stale chunks of missing items",
        f"SELECT count(*) FROM {stale_words.TABLE} s WHERE NOT EXISTS (SELECT 1 FROM items i"
        " WHERE i.tenant = s.tenant AND i.id = s.item_id)",
    ),
)


def examine(path: str) -> dict[str, Any]:
    """:func:`report` for a file, on a read-only connection of its own; the damage mark beside
    the file follows the verdict."""
    from .files import clear_damage_mark, raw_connection, write_damage_mark

    # Read-write, inside a transaction rolled back at the end: FTS5's integrity-check is an
    # INSERT (it writes nothing, but needs a connection that could).
    try:
        conn = raw_connection(path)
    except StoreDamaged as damaged:  # not even its first page reads: the verdict, not an error
        cause = str(damaged.__cause__ or damaged.detail)
        write_damage_mark(path, f"the database file is damaged ({cause})")
        return {
            "ok": False,
            "integrity": [cause],
            "problems": [f"integrity: {cause}"],
            "path": path,
        }
    try:
        conn.execute("BEGIN")
        result = report(conn)
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        conn.close()
    result["path"] = path
    if result["ok"]:
        clear_damage_mark(path)
    elif result["integrity"] != ["ok"]:
        write_damage_mark(path, f"the database file is damaged ({result['integrity'][0]})")
    return result
