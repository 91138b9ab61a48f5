"""The embedded store: one SQLite file per declared memory (or one in-memory database).

Durability and concurrency choices (see ``docs/decisions/0001-sqlite-durability.md``):

* WAL journal with ``synchronous=FULL``: a commit returns only after the WAL is on disk, so an
  acknowledged write survives ``kill -9`` and power loss alike.
* Writes start with ``BEGIN IMMEDIATE`` so two processes never deadlock upgrading a read lock;
  a generous busy timeout makes concurrent writers queue instead of failing.
* One write connection per file per process (shared by every :class:`SQLiteStore` handle of that
  file, guarded by a lock), and one read connection per thread, so readers never wait on the
  writer inside a process.
* ``secure_delete`` so deleted rows are overwritten on disk, not merely unlinked.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidInput, StoreError
from .base import Params, Row
from .engine import FTS5_SECURE_DELETE, sqlite3
from .migrations import apply_migrations

BUSY_TIMEOUT_MS = 30_000
_SYNC_MODES = {"full": "FULL", "normal": "NORMAL", "extra": "EXTRA"}


def _sync_mode() -> str:
    """``RECUERDO_SYNC`` may relax durability (``normal``) for throwaway stores; FULL otherwise."""
    return _SYNC_MODES.get(os.environ.get("RECUERDO_SYNC", "full").lower(), "FULL")


def _fold(text: str | None) -> str | None:
    return None if text is None else text.casefold()


def _connect(path: str, *, read_only: bool = False) -> sqlite3.Connection:
    conn = sqlite3.connect(
        path,
        isolation_level=None,  # we issue BEGIN/COMMIT ourselves
        check_same_thread=False,
        timeout=BUSY_TIMEOUT_MS / 1000,
        uri=path.startswith("file:"),
    )
    conn.row_factory = sqlite3.Row
    # Unicode-aware case folding for substring matches the trigram index cannot answer.
    conn.create_function("recuerdo_fold", 1, _fold, deterministic=True)
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA secure_delete=ON")
    conn.execute("PRAGMA temp_store=MEMORY")
    conn.execute("PRAGMA cache_size=-32768")  # 32 MiB of pages per connection
    # After a checkpoint, give the WAL's space back beyond 64 MiB (bulk loads grow it a lot).
    conn.execute("PRAGMA journal_size_limit=67108864")
    if path != ":memory:":
        _set_wal(conn)
    conn.execute(f"PRAGMA synchronous={_sync_mode()}")
    if read_only:
        conn.execute("PRAGMA query_only=ON")
    return conn


def _set_wal(conn: sqlite3.Connection) -> None:
    # Switching to WAL needs a moment of exclusive access; another process opening the same
    # new file at the same instant can make it report busy once, so ask again.
    for _ in range(50):
        try:
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        except sqlite3.OperationalError:
            mode = ""
        if str(mode).lower() == "wal":
            return
        threading.Event().wait(0.05)
    raise StoreError("could not switch the database to WAL mode (is the file on a network share?)")


class _SQLiteTx:
    """A :class:`~recuerdo.store.base.Tx` over one sqlite3 connection."""

    __slots__ = ("_conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def _run(self, sql: str, params: Params) -> sqlite3.Cursor:
        try:
            return self._conn.execute(sql, params)
        except OverflowError as exc:
            raise InvalidInput("a number is out of range (at most 64 bits)") from exc
        except sqlite3.IntegrityError:
            raise  # a broken invariant is a bug to surface, not an outage
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"the database refused the operation: {exc}") from exc

    def execute(self, sql: str, params: Params = ()) -> int:
        return int(self._run(sql, params).rowcount)

    def executemany(self, sql: str, rows: Sequence[Params]) -> int:
        try:
            return int(self._conn.executemany(sql, rows).rowcount)
        except sqlite3.IntegrityError:
            raise
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"the database refused the operation: {exc}") from exc

    def one(self, sql: str, params: Params = ()) -> Row | None:
        row: Row | None = self._run(sql, params).fetchone()
        return row

    def all(self, sql: str, params: Params = ()) -> list[Row]:
        rows: list[Row] = self._run(sql, params).fetchall()
        return rows

    def scalar(self, sql: str, params: Params = ()) -> Any:
        row = self._run(sql, params).fetchone()
        return None if row is None else row[0]

    def iterate(self, sql: str, params: Params = ()) -> Iterator[Row]:
        yield from self._run(sql, params)


@dataclass
class _SharedFile:
    """What one process holds for one database file: the writer and its bookkeeping."""

    path: str
    writer: sqlite3.Connection
    lock: threading.RLock = field(default_factory=threading.RLock)
    depth: int = 0
    owner: int | None = None
    handles: int = 0
    readers: threading.local = field(default_factory=threading.local)
    reader_conns: list[sqlite3.Connection] = field(default_factory=list)


_registry: dict[str, _SharedFile] = {}
_registry_lock = threading.Lock()


class SQLiteStore:
    """The embedded :class:`~recuerdo.store.base.Store`.

    ``SQLiteStore(path)`` opens (creating when missing) the file and brings its schema up to
    date; ``SQLiteStore(None)`` is a private in-memory database. Handles on the same file in
    one process share one writer connection.
    """

    dialect = "sqlite"

    def __init__(self, path: str | None) -> None:
        self.location = ":memory:" if path is None else os.path.abspath(path)
        self._closed = False
        if path is None:
            self._shared = _SharedFile(":memory:", _connect(":memory:"))
            self._shared.handles = 1
            self._in_memory = True
        else:
            self._in_memory = False
            self._shared = self._attach(self.location)
        try:
            with self.write() as tx:
                apply_migrations(tx, fts_secure_delete=FTS5_SECURE_DELETE)
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _attach(path: str) -> _SharedFile:
        with _registry_lock:
            shared = _registry.get(path)
            if shared is None:
                try:
                    shared = _SharedFile(path, _connect(path))
                except sqlite3.Error as exc:
                    raise StoreError(f"cannot open the memory at {path}: {exc}") from exc
                _registry[path] = shared
            shared.handles += 1
            return shared

    @contextmanager
    def write(self) -> Iterator[_SQLiteTx]:
        shared = self._live()
        with shared.lock:
            if shared.depth:
                shared.depth += 1
                try:
                    yield _SQLiteTx(shared.writer)
                finally:
                    shared.depth -= 1
                return
            conn = shared.writer
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise StoreError(f"the memory is busy or unavailable: {exc}") from exc
            shared.depth = 1
            shared.owner = threading.get_ident()
            try:
                yield _SQLiteTx(conn)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            else:
                try:
                    conn.execute("COMMIT")
                except sqlite3.Error as exc:
                    conn.execute("ROLLBACK")
                    raise StoreError(f"the write could not be committed: {exc}") from exc
            finally:
                shared.depth = 0
                shared.owner = None

    @contextmanager
    def read(self) -> Iterator[_SQLiteTx]:
        shared = self._live()
        if shared.owner == threading.get_ident():
            # A read inside this thread's own write must see that write's uncommitted rows.
            yield _SQLiteTx(shared.writer)
            return
        if self._in_memory:
            with shared.lock:  # an in-memory database has a single connection
                yield from self._snapshot(shared.writer)
            return
        conn = getattr(shared.readers, "conn", None)
        if conn is None:
            conn = _connect(shared.path, read_only=True)
            shared.readers.conn = conn
            with _registry_lock:
                shared.reader_conns.append(conn)
        yield from self._snapshot(conn)

    @staticmethod
    def _snapshot(conn: sqlite3.Connection) -> Iterator[_SQLiteTx]:
        conn.execute("BEGIN")
        try:
            yield _SQLiteTx(conn)
        finally:
            conn.execute("COMMIT")

    def _live(self) -> _SharedFile:
        if self._closed:
            raise StoreError("this memory has been closed")
        return self._shared

    def checkpoint(self) -> None:
        """Fold the WAL back into the main file and truncate it. A reader in another thread
        or process can hold the log for a moment, so ask a few times."""
        shared = self._live()
        if self._in_memory:
            return
        for _ in range(50):
            with shared.lock:
                busy = shared.writer.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            if not busy:
                return
            threading.Event().wait(0.02)
        raise StoreError("the write-ahead log could not be folded in: a reader holds it")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        shared = self._shared
        if self._in_memory:
            shared.writer.close()
            return
        with _registry_lock:
            shared.handles -= 1
            if shared.handles > 0:
                return
            _registry.pop(shared.path, None)
            for conn in shared.reader_conns:
                conn.close()
        with shared.lock:
            shared.writer.close()
