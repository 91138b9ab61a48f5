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

Trust (``docs/decisions/0010-damaged-newer-full-stores.md``): a store written by a newer
recuerdo is refused before anything is written to it; a damaged one (found by the check on
open, the check in the background for large files, or any statement that meets a damaged page)
is refused from then on by every handle, with ``store_damaged``; a full disk is
``storage_full`` and leaves the store as it was. Files are created 0600 in folders of 0700.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any

from ...errors import InvalidInput, StorageFull, StoreDamaged, StoreError
from .. import row_groups
from ..base import Capabilities, Params, Row, SubstringSearch, TextSearch, VectorSearch
from . import chunk_spans, files, fresh, health, log_fold, stale_words, statistics
from .describe import SQLiteArchive, copy_file
from .driver import FTS5_SECURE_DELETE, sqlite3
from .folded_trigrams_schema import empty_entry_trigrams
from .full_text_settings import FULL_TEXT_INDEXES, configure_full_text
from .schema import SCHEMA
from .search import FTS5Text, TrigramSubstrings
from .snapshot_memo import SnapshotMemo
from .superseded_schema import PURGE

BUSY_TIMEOUT_MS = 30_000
_log = logging.getLogger("recuerdo.store")
CAPABILITIES = Capabilities(
    text_search="fts5",
    substring_search="trigram",
    vector_search="memory",
    vector_search_limit="each process holds the memory's vectors (388 bytes each) and scores "
    "them exactly up to 50,000, then through an HNSW index kept beside the file "
    "(docs/decisions/0015)",
    secure_delete=FTS5_SECURE_DELETE,
    erasure="rows are deleted with secure_delete (their bytes zeroed), full-text entries "
    "leave the index pages"
    + (" at once" if FTS5_SECURE_DELETE else " by a rebuild")
    + ", and the write-ahead log is checkpointed and truncated",
    tenant_policies="none: a file has no roles; every statement names its tenant (docs/tenancy.md)",
)


class SQLiteTx:
    """A :class:`~recuerdo.store.base.Tx` over one sqlite3 connection."""

    __slots__ = ("_answers", "_conn", "_memo", "_on_damage", "steps_taken", "substrings", "text")
    dialect = "sqlite"
    text: TextSearch
    substrings: SubstringSearch
    vectors: VectorSearch | None = None  # each process searches the vectors it holds

    def __init__(
        self,
        conn: sqlite3.Connection,
        on_damage: Callable[[str], None],
        memo: SnapshotMemo | None = None,
        steps_taken: frozenset[str] = frozenset(),
    ) -> None:
        self._conn = conn
        self._on_damage = on_damage
        self._memo = memo
        self.steps_taken = steps_taken  # committed by an opening (migrations.has_step)
        self._answers: dict[Any, Any] | None = None
        self.text = FTS5Text(self)
        self.substrings = TrigramSubstrings(self)

    def _run(self, sql: str, params: Params) -> sqlite3.Cursor:
        try:
            return self._conn.execute(sql, params)
        except OverflowError as exc:
            raise InvalidInput("a number is out of range (at most 64 bits)") from exc
        except sqlite3.IntegrityError:
            raise  # a broken invariant is a bug to surface, not an outage
        except sqlite3.DatabaseError as exc:
            raise convert(exc, self._on_damage) from exc

    def execute(self, sql: str, params: Params = ()) -> int:
        return int(self._run(sql, params).rowcount)

    def snapshot_answers(self) -> dict[Any, Any] | None:
        """Answers kept for as long as the words index is unchanged, shared by this
        connection's reads (:mod:`.snapshot_memo`); None in a write, whose reads see its own
        uncommitted rows, and in an in-memory store."""
        if self._memo is None:
            return None
        if self._answers is None:
            try:
                self._answers = self._memo.answers(self._conn)
            except sqlite3.DatabaseError as exc:
                raise convert(exc, self._on_damage) from exc
        return self._answers

    def executemany(self, sql: str, rows: Sequence[Params]) -> int:
        try:
            return int(self._conn.executemany(sql, rows).rowcount)
        except OverflowError as exc:
            raise InvalidInput("a number is out of range (at most 64 bits)") from exc
        except sqlite3.IntegrityError:
            raise
        except sqlite3.DatabaseError as exc:
            raise convert(exc, self._on_damage) from exc

    def one(self, sql: str, params: Params = ()) -> Row | None:
        row: Row | None = self._run(sql, params).fetchone()
        return row

    def all(self, sql: str, params: Params = ()) -> list[Row]:
        try:
            rows: list[Row] = self._run(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:  # a damaged page can surface while fetching
            raise convert(exc, self._on_damage) from exc
        return rows

    def scalar(self, sql: str, params: Params = ()) -> Any:
        row = self._run(sql, params).fetchone()
        return None if row is None else row[0]

    def iterate(self, sql: str, params: Params = ()) -> Iterator[Row]:
        cursor = self._run(sql, params)
        try:
            yield from cursor
        except sqlite3.DatabaseError as exc:
            raise convert(exc, self._on_damage) from exc

    def json_text(self, column: str, key: str) -> str:
        if not key.isidentifier():
            raise ValueError(f"not a JSON key name: {key!r}")
        return f"json_extract({column}, '$.{key}')"

    def purge_deleted_text(self, *, superseded: bool = False) -> None:
        if not FTS5_SECURE_DELETE:  # this library leaves deleted terms in index segments
            # One merge of every segment drops them from the words index (contentless: it
            # cannot be rebuilt from a table), with the stale chunks' words marked deleted
            # first. The trigram index is emptied and its mark set back, as a restore does: the
            # upkeep fills it again (searches scan meanwhile).
            stale_words.erase_all(self)
            self.execute(PURGE)
            empty_entry_trigrams(self)
        elif superseded:
            # Any item's old chunk may hold the forgotten name or passage (decision 0071).
            merged = stale_words.erase_all(self)
            if self.scalar("SELECT 1 FROM chunk_fts_residue /* every tenant */ LIMIT 1"):
                # Listed before m036 by a library that could not merge at the step.
                if not merged:
                    self.execute(PURGE)
                self.execute("DELETE FROM chunk_fts_residue /* every tenant */")

    def add_chunks(self, rows: Sequence[Params]) -> list[int]:
        return chunk_spans.add_chunks(self, rows)

    def insert_returning_ids(self, sql: str, rows: Sequence[Params]) -> list[int]:
        ids: list[int] = []
        for statement, flat in row_groups.grouped(sql, rows):
            ids += sorted(int(row[0]) for row in self._run(statement, flat).fetchall())
        return ids

    def delete_superseded_chunks(self, chunks: Sequence[tuple[str, int, int]]) -> None:
        if chunks:
            chunk_spans.delete_superseded(self, chunks)


def convert(exc: sqlite3.DatabaseError, on_damage: Callable[[str], None]) -> StoreError:
    """The named error for an engine error; damage is reported to the store (sticky)."""
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    message = str(exc)
    if code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB) or "malformed" in message:
        detail = f"the database file is damaged ({message})"
        on_damage(detail)
        return StoreDamaged(damaged_detail(detail))
    if code == sqlite3.SQLITE_FULL or "database or disk is full" in message:
        return StorageFull(
            "the disk is full: nothing was written, and the memory is as it was before this "
            "call. Free some space and try again."
        )
    return StoreError(f"the database refused the operation: {exc}")


def damaged_detail(detail: str) -> str:
    return (
        f"{detail}. Nothing is read from it or written to it. Run `recuerdo --memory NAME "
        "check` for a report and `recuerdo --memory NAME recover OUT.db` to salvage what is "
        "readable."
    )


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
    damaged: str | None = None
    background: health.BackgroundCheck | None = None
    fold_owed: bool = False  # a forget's fold of the log that readers held off (0156)
    steps_taken: frozenset[str] = frozenset()  # replaced, never changed: a Tx holds it

    def mark_damaged(self, detail: str) -> None:
        if self.damaged is None:
            self.damaged = detail
            if self.path != ":memory:":
                files.write_damage_mark(self.path, detail)


_registry: dict[str, _SharedFile] = {}
_registry_lock = threading.Lock()


class SQLiteStore:
    """The embedded :class:`~recuerdo.store.base.Store`.

    ``SQLiteStore(path)`` opens (creating when missing) the file and brings its schema up to
    date; ``SQLiteStore(None)`` is a private in-memory database. Handles on the same file in
    one process share one writer connection. ``schema`` and ``prepare`` choose what the file
    holds (a memory by default; the token database has a schema of its own).
    """

    dialect = "sqlite"
    capabilities = CAPABILITIES
    archive = SQLiteArchive()

    def __init__(
        self,
        path: str | None,
        *,
        schema: Any = None,
        prepare: Callable[[SQLiteTx], None] | None = None,
        steps: int | None = None,
    ) -> None:
        from ..migrations import Schema

        self._schema = SCHEMA if schema is None else schema
        if steps is not None:  # a store as an older schema left it (a backup being restored)
            self._schema = Schema(steps=list(self._schema.steps[:steps]))
        self._prepare = configure_full_text if schema is None else prepare
        self.location = ":memory:" if path is None else files.absolute(path)
        self._closed = False
        copied = False
        if path is None:
            writer = files.connect(":memory:")
            try:
                fresh.copy_into(self._schema, writer)
            except BaseException:
                writer.close()
                raise
            self._shared = _SharedFile(":memory:", writer)
            self._shared.handles = 1
            self._in_memory = copied = True
        else:
            self._in_memory = False
            self._shared, copied = self._attach(self.location)
        try:
            self._open_schema(copied)
        except BaseException:
            self.close()
            raise

    def _attach(self, path: str) -> tuple[_SharedFile, bool]:
        """The process's handle on the file, and whether this call made the file whole."""
        copied = False
        with _registry_lock:
            shared = _registry.get(path)
            if shared is None:
                writer, copied = files.open_checked(
                    path, self._schema, lambda: fresh.image(self._schema)
                )
                shared = _SharedFile(path, writer)
                _registry[path] = shared
                shared.background = health.check_in_background(path, shared.mark_damaged)
            elif shared.damaged:
                raise StoreDamaged(damaged_detail(shared.damaged))
            shared.handles += 1
            return shared, copied

    def _open_schema(self, copied: bool) -> None:
        """Bring the schema up to date in one write transaction. ``copied``: the store was
        just made from the process's copy of a new store (:mod:`.fresh`), statistics
        included."""
        from ..migrations import apply, check_not_newer, stamp, steps_after_opening

        with self.write() as tx:
            joined = self._shared.depth > 1  # a write around it commits, or not, its steps
            tx.execute(fresh.MIGRATIONS_TABLE)
            recorded = tx.all("SELECT name, applied_at FROM _migrations")
            applied = [row["name"] for row in recorded]
            version = int(tx.scalar("PRAGMA user_version"))
            check_not_newer(self._schema, applied, version, self.location)
            created = not applied and fresh.is_empty(tx)
            if created:
                self._create_schema(tx, stamp())
                applied_now = True
            else:
                applied_now = bool(apply(tx, self._schema, applied, stamp()))
            if any(row["applied_at"] == fresh.COPIED for row in recorded):
                # A copy records its steps when first opened (by whichever process gets there,
                # if its maker died before that).
                tx.execute(
                    "UPDATE _migrations SET applied_at = ? WHERE applied_at = ?",
                    (stamp(), fresh.COPIED),
                )
            if applied_now or version != self._schema.version:
                tx.execute(f"PRAGMA user_version = {self._schema.version}")
            if self._prepare is not None:
                self._prepare(tx)
            if not (created or copied):  # a new store's statistics came with its schema
                with contextlib.suppress(sqlite3.DatabaseError):  # they only guide plans
                    statistics.state_tenant_share(self._shared.writer)
        # Committed: what a rolled-back opening applied is not taken. Replaced, not added to:
        # what the file held when the opening read it is all it holds.
        if not joined:
            self._shared.steps_taken = steps_after_opening(self._schema, applied)

    def _create_schema(self, tx: SQLiteTx, when: str) -> None:
        """A new store in a file found empty: what the steps leave, in one pass
        (:mod:`.fresh`)."""
        fresh.make_store(tx, fresh.fresh_schema(self._schema), self._schema.names(), when)

    def _tx(self, conn: sqlite3.Connection, memo: SnapshotMemo | None = None) -> SQLiteTx:
        return SQLiteTx(conn, self._shared.mark_damaged, memo, self._shared.steps_taken)

    @contextmanager
    def write(self, *, durable: bool = True) -> Iterator[SQLiteTx]:
        shared = self._live()
        with shared.lock:
            if shared.depth:
                shared.depth += 1
                try:
                    yield self._tx(shared.writer)
                finally:
                    shared.depth -= 1
                return
            conn = shared.writer
            with _commit_mode(conn, durable or self._in_memory):
                yield from self._transaction(shared, conn)

    def _transaction(self, shared: _SharedFile, conn: sqlite3.Connection) -> Iterator[SQLiteTx]:
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.DatabaseError as exc:
            error = convert(exc, shared.mark_damaged)
            if type(error) is StoreError:
                error = StoreError(f"the memory is busy or unavailable: {exc}")
            raise error from exc
        shared.depth = 1
        shared.owner = threading.get_ident()
        try:
            yield self._tx(conn)
        except BaseException:
            _rollback(conn)
            raise
        else:
            try:
                conn.execute("COMMIT")
            except sqlite3.DatabaseError as exc:
                _rollback(conn)
                error = convert(exc, shared.mark_damaged)
                if type(error) is StoreError:
                    error = StoreError(f"the write could not be committed: {exc}")
                raise error from exc
        finally:
            shared.depth = 0
            shared.owner = None

    @contextmanager
    def read(self) -> Iterator[SQLiteTx]:
        shared = self._live()
        if shared.owner == threading.get_ident():
            # A read inside this thread's own write must see that write's uncommitted rows.
            yield self._tx(shared.writer)
            return
        if self._in_memory:
            with shared.lock:  # an in-memory database has a single connection
                yield from self._snapshot(shared.writer)
            return
        conn = getattr(shared.readers, "conn", None)
        if conn is None:
            conn = files.connect(shared.path, read_only=True)
            shared.readers.conn = conn
            shared.readers.memo = SnapshotMemo()
            with _registry_lock:
                shared.reader_conns.append(conn)
        yield from self._snapshot(conn, shared.readers.memo)

    def _snapshot(
        self, conn: sqlite3.Connection, memo: SnapshotMemo | None = None
    ) -> Iterator[SQLiteTx]:
        try:
            conn.execute("BEGIN")
        except sqlite3.DatabaseError as exc:
            raise convert(exc, self._shared.mark_damaged) from exc
        try:
            yield self._tx(conn, memo)
        finally:
            # Ending a read never replaces the error that ended it.
            _rollback(conn)

    def _live(self) -> _SharedFile:
        if self._closed:
            raise StoreError("this memory has been closed")
        if self._shared.damaged:
            raise StoreDamaged(damaged_detail(self._shared.damaged))
        return self._shared

    def claim(self, work: str) -> AbstractContextManager[bool]:
        # One file has one writer at a time (BEGIN IMMEDIATE), and each indexing step re-reads
        # its watermark inside its write: processes sharing the file never redo a step.
        return contextlib.nullcontext(True)

    def reclaim(self) -> None:
        """Fold the WAL back into the main file and truncate it. A reader in another thread
        or process can hold the log: past ``log_fold.PATIENCE`` the fold is owed, not raised
        (the write before it is committed), and ``check`` says so (decision 0156)."""
        shared = self._live()
        if self._in_memory:
            return
        if shared.background is not None:
            shared.background.pause()  # a long check must not hold the log
        folded = log_fold.fold_truncating(
            shared.writer, shared.lock, BUSY_TIMEOUT_MS, log_fold.PATIENCE
        )
        if not folded:  # said once a forget, not at each of the upkeep's retries
            _log.warning(
                "a reader holds the write-ahead log: the pages a forget replaced stay in it"
                " until the next fold (index_status: backend.erasure_owed)"
            )
        shared.fold_owed = not folded

    def fold_log(self) -> None:
        shared = self._live()
        if self._in_memory:
            return
        # PASSIVE never calls the busy handler: what a reader still needs stays in the log.
        with shared.lock:
            shared.writer.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    def rest(self) -> None:  # one try: a reader holding the log keeps it (decision 0185)
        if not self._in_memory:
            log_fold.fold_once(self._live(), BUSY_TIMEOUT_MS)

    def erase_stale_words(self) -> int:
        shared = self._live()
        if shared.fold_owed:  # a forget's fold that a reader held off (decision 0156)
            shared.fold_owed = not log_fold.fold_once(shared, BUSY_TIMEOUT_MS)
        with self.read() as tx:  # most pauses find none: no write for them
            if not stale_words.waiting(tx):
                return 0
        with self.write(durable=False) as tx:  # redone after a crash that undid it
            erased, more = stale_words.erase_some(tx)
        if not more:
            # The pages it rewrote, folded now: the next forget folds the log before it
            # answers, and would copy them itself (decision 0069).
            self.fold_log()
        return erased

    def grew(self, rows: int) -> None:
        """Nothing: the planner's figures are stated, not sampled (decision 0018)."""

    def optimize(self) -> None:
        shared = self._live()
        with shared.lock:
            statistics.refresh(shared.writer)

    def compact(self) -> dict[str, Any]:
        """The full-text indexes merged into one segment each, written again in their
        configured page size (decision 0067); VACUUM: the file written again without the pages
        deletions freed (secure_delete zeroed them, but they stayed in the file); then the
        write-ahead log, which VACUUM filled with the whole file, folded in and truncated."""
        shared = self._live()
        started = time.perf_counter()
        with shared.lock:
            before = _database_bytes(shared.writer)
            try:
                for index in FULL_TEXT_INDEXES:
                    shared.writer.execute(f"INSERT INTO {index} ({index}) VALUES ('optimize')")
                shared.writer.execute("VACUUM")
            except sqlite3.DatabaseError as exc:
                raise convert(exc, shared.mark_damaged) from exc
            after = _database_bytes(shared.writer)
        self.reclaim()
        folded = not shared.fold_owed  # a reader held the log: the next forget or close folds it
        return {
            "dialect": "sqlite",
            "rebuilt": list(FULL_TEXT_INDEXES),
            "bytes_before": before,
            "bytes_after": after,
            "wal_folded": folded,
            "seconds": round(time.perf_counter() - started, 3),
        }

    @property
    def schema_steps(self) -> list[str]:
        """The names of the migration steps this store's schema is made of."""
        names: list[str] = self._schema.names()
        return names

    def copy_to(self, target: str) -> None:
        """A consistent copy of the live store at ``target`` (SQLite's online backup)."""
        shared = self._live()
        if self._in_memory:
            raise StoreError("an in-memory store has no file to copy; back it up as an archive")
        with shared.lock:
            copy_file(shared.writer, target)

    @property
    def fold_owed(self) -> bool:
        return self._live().fold_owed

    def check(self) -> dict[str, Any]:
        shared = self._live()
        with shared.lock:
            return {**health.report(shared.writer), "wal_fold_owed": shared.fold_owed}

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
            if shared.background is not None:
                shared.background.stop()
            for conn in shared.reader_conns:
                conn.close()
        with shared.lock:
            if not shared.damaged:
                _refresh_statistics(shared.writer)
            shared.writer.close()


def _refresh_statistics(conn: sqlite3.Connection) -> None:
    """Keep the planner's statistics current, as SQLite advises, before the last close. A
    sample of rows per index (``analysis_limit``) bounds the cost on a large store; the tenant's
    figure it samples wrong is then stated (``statistics``). Stale statistics only make plans
    worse, so a failure here never stops a close."""
    with contextlib.suppress(sqlite3.DatabaseError):
        statistics.refresh(conn)


_NORMAL = 1  # PRAGMA synchronous: 0 OFF, 1 NORMAL, 2 FULL, 3 EXTRA


@contextmanager
def _commit_mode(conn: sqlite3.Connection, durable: bool) -> Iterator[None]:
    """A transaction that only writes what durable rows can make again commits without
    waiting for the disk (``synchronous=NORMAL``: in WAL mode a commit is then ordered, never
    torn, and the next durable commit syncs it with its own); the connection is set back to
    its durable mode at once (``Store.write``)."""
    mode = 0 if durable else int(conn.execute("PRAGMA synchronous").fetchone()[0])
    if mode <= _NORMAL:  # durable, or already relaxed (RECUERDO_SYNC)
        yield
        return
    conn.execute("PRAGMA synchronous=NORMAL")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA synchronous={mode}")


def _rollback(conn: sqlite3.Connection) -> None:
    """Roll back what is open; SQLite may already have (after a full disk, a damaged page)."""
    if conn.in_transaction:
        with contextlib.suppress(sqlite3.DatabaseError):  # gone either way
            conn.execute("ROLLBACK")


def _database_bytes(conn: sqlite3.Connection) -> int:
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    return int(pages) * int(conn.execute("PRAGMA page_size").fetchone()[0])
