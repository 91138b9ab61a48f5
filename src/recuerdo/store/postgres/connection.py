"""The PostgreSQL store: each declared memory is one schema of a database that any number of
``recuerdo serve`` processes share (``docs/decisions/0013-postgresql.md``).

* Connections come from a pool per (database, memory); statements keep the families' ``?``
  placeholders, numbered for the server once per statement text (``statements.py``).
* A write transaction first takes a transaction-scoped advisory lock of its memory, so writes
  to one memory are serialized across processes and machines as SQLite's ``BEGIN IMMEDIATE``
  serializes them in a file: ids commit in the order given (indexing watermarks rely on it),
  and a read-then-write cannot race another server. Reads are lock-free read-only snapshots.
* Nothing is held per process that another process needs: the migration runs under the same
  lock, background indexing claims its work in the database, and each process's vector set
  follows new rows by id.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from ...errors import StoreError
from ..base import (
    Capabilities,
    Params,
    Row,
    SubstringSearch,
    TextSearch,
    VectorSearch,
)
from ..scope import EVERY_TENANT, EVERY_TENANT_STATEMENT, current, scoped
from . import chunk_spans, maintenance, policies, rebuild, statements
from . import vectors as pgvectors
from .describe import PostgresArchive
from .folds import Parting, keep_current
from .pool import _MEMORY_SCHEMAS, _open_pool, _quote, lock_key, redact
from .schemas import SCHEMA_PREFIX, schema_name
from .search import ScanSubstrings, TrigramSubstrings, TsvectorText
from .statements import convert, translated
from .vectors import PgvectorSearch, VectorState


class PostgresTx:
    """A :class:`~recuerdo.store.base.Tx` over one psycopg connection."""

    __slots__ = ("_conn", "_local", "_scope", "steps_taken", "substrings", "text", "vectors")
    dialect = "postgres"
    text: TextSearch
    substrings: SubstringSearch
    vectors: VectorSearch | None

    def __init__(self, conn: Any, shared: _Shared, scope: str = EVERY_TENANT) -> None:
        self._conn = conn
        self._local = shared.local
        self._scope = scope
        self.steps_taken = shared.steps_taken  # committed by an opening (migrations.has_step)
        self.text = TsvectorText(self, lengths=shared.lengths)
        self.substrings = (TrigramSubstrings if shared.trigrams else ScanSubstrings)(
            self, shared.parting
        )
        vectors = shared.vectors
        self.vectors = None if vectors is None else PgvectorSearch(self, vectors)

    @contextmanager
    def _scope_for(self, sql: str) -> Iterator[None]:
        if self._scope != EVERY_TENANT and EVERY_TENANT_STATEMENT in sql:
            # A statement marked memory-wide reads every tenant's rows on purpose (the
            # tenancy test lists each): the policies let it, for this statement only.
            _set_scope(self._conn, EVERY_TENANT)
            try:
                yield
            finally:
                _set_scope(self._conn, self._scope)
        else:
            yield

    def _run(self, sql: str, params: Params) -> Any:
        with translated(), self._scope_for(sql):
            return statements.run(self._conn, sql, params)

    def execute(self, sql: str, params: Params = ()) -> int:
        return int(self._run(sql, params).rowcount)

    def executemany(self, sql: str, rows: Sequence[Params]) -> int:
        if not rows:
            return 0
        with translated(), self._scope_for(sql):
            return statements.run_many(self._conn, sql, rows)

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

    def json_text(self, column: str, key: str) -> str:
        if not key.isidentifier():
            raise ValueError(f"not a JSON key name: {key!r}")
        # The families keep JSON as text (as SQLite does); a malformed value reads as NULL.
        return f"recuerdo_json_text({column}, '{key}')"

    def purge_deleted_text(self, *, superseded: bool = False) -> None:
        # A chunk row holds its words. The dead rows go at the VACUUM Store.reclaim asks for
        # after the commit; this transaction marks it owed (a process that ends first leaves
        # it to the next), and the commit asks for it. A forget that changed no row (no id
        # assigned, whatever statement or trigger) owes nothing: marking it cost a VACUUM of
        # every table and said a rebuild was owed (decision 0066).
        if self.scalar("SELECT txid_current_if_assigned() IS NULL"):
            return
        maintenance.owe_reclaim(self)
        self._local.owes_reclaim = True

    def add_chunks(self, rows: Sequence[Params]) -> list[int]:
        return chunk_spans.add_chunks(self._conn, rows)

    def insert_returning_ids(self, sql: str, rows: Sequence[Params]) -> list[int]:
        return statements.returning_ids(self._conn, sql, rows)

    def delete_superseded_chunks(self, chunks: Sequence[tuple[str, int, int]]) -> None:
        # Deleting the row deletes its words (above): nothing stays to purge later.
        self.executemany(
            "DELETE FROM chunks WHERE tenant = ? AND id = ?", [(t, c) for t, _, c in chunks]
        )


@dataclass
class _Shared:
    """One (database, memory) pair in this process: the pool and each thread's transaction."""

    pool: Any
    schema: str
    lock_key: str
    handles: int = 0
    local: threading.local = field(default_factory=threading.local)
    trigrams: bool = False
    lengths: bool = False  # chunks.tokens (m027): a store at an older step has none
    parting: Parting | None = None  # folds.keep_current (m030; None before it)
    vectors: VectorState | None = None
    policies: str = ""  # what the tenant policies leave of the indexes (policies.reach)
    reclaimer: maintenance.Reclaimer = field(init=False)  # this process's VACUUMs (0061)
    grown: int = 0  # rows written since this process last analysed (maintenance.grew)
    analyzed_rows: int | None = None
    statistics_owed: set[str] = field(default_factory=set)  # emptied tables (empty_stats.py)
    steps_taken: frozenset[str] = frozenset()  # replaced, never changed: a Tx holds it

    def __post_init__(self) -> None:
        self.reclaimer = maintenance.Reclaimer(partial(maintenance.reclaim_owed, self))


_registry: dict[tuple[str, str], _Shared] = {}
_registry_lock = threading.Lock()


def memory_names(url: str) -> list[str]:
    """The memories the database at ``url`` holds (unsorted, names not checked)."""
    import psycopg

    try:
        with psycopg.connect(url, autocommit=True) as conn:
            rows = conn.execute(_MEMORY_SCHEMAS, [SCHEMA_PREFIX]).fetchall()
    except psycopg.Error as exc:
        raise StoreError(f"cannot reach the database at {redact(url)}: {exc}") from exc
    return [row[0][len(SCHEMA_PREFIX) :] for row in rows]


_TRY_CLAIM = "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))"
_END_CLAIM = "SELECT pg_advisory_unlock(hashtextextended(%s, 0))"


class PostgresStore:
    """The shared :class:`~recuerdo.store.base.Store`: ``PostgresStore(url, "notes")`` opens
    (creating when missing) the memory ``notes`` in the database at ``url`` and brings its
    schema up to date. Handles on the same memory in one process share one pool. With
    ``create=False`` a memory the database does not hold is :class:`MemoryNotFound`, and
    nothing is created (no schema, no table)."""

    dialect = "postgres"
    archive = PostgresArchive()

    def __init__(
        self, url: str, memory: str, *, steps: int | None = None, create: bool = True
    ) -> None:
        from ..migrations import Schema
        from .schema import SCHEMA

        self._schema = SCHEMA
        if steps is not None:  # a store as an older schema left it (a backup being restored)
            self._schema = Schema(steps=list(SCHEMA.steps[:steps]))
        self.url = url
        self.memory = memory
        self.location = f"{redact(url)}#{schema_name(memory)}"
        self._closed = False
        self._shared = self._attach(url, schema_name(memory), create)
        try:
            self._open_schema()
        except BaseException:
            self.close()
            raise

    @property
    def capabilities(self) -> Capabilities:
        vectors = self._shared.vectors
        return Capabilities(
            text_search="tsvector",
            substring_search="trigram" if self._shared.trigrams else "scan",
            vector_search="memory" if vectors is None else "pgvector",
            vector_search_limit=_vector_limit(vectors),
            secure_delete=False,
            erasure="rows are deleted, then the memory's tables and indexes are vacuumed and "
            "their statistics taken again (a table left empty has them cleared, before "
            "PostgreSQL 18 those of its text columns; what waits for `compact`: "
            "docs/decisions/0076); old "
            "row versions can stay in unused pages, the write-ahead log and replicas until "
            "PostgreSQL reuses or recycles them, and words only forgotten text held stay keys "
            "of the GIN indexes until `compact` rebuilds them (docs/decisions/0066)",
            tenant_policies=self._shared.policies,
        )

    def _attach(self, url: str, schema: str, create: bool) -> _Shared:
        key = (url, schema)
        with _registry_lock:
            shared = _registry.get(key)
            if shared is None:
                shared = _Shared(_open_pool(url, schema, create), schema, lock_key(schema))
                _registry[key] = shared
            shared.handles += 1
            return shared

    def _open_schema(self) -> None:
        from ..migrations import apply, check_not_newer, stamp, steps_after_opening

        # Memory-wide work (the steps, the folded copies), whatever tenant the caller is
        # serving: under row-level security a tenant's scope would hide the others' rows.
        with scoped(EVERY_TENANT), self.write() as tx:
            joined = self._shared.local.writing > 1  # a write around it commits its steps, or not
            made = tx.scalar(
                "SELECT to_regclass(?)", (f"{_quote(self._shared.schema)}._migrations",)
            )
            if made is None:  # its CREATE needs a privilege a role using a memory may lack
                tx.execute(
                    "CREATE TABLE IF NOT EXISTS _migrations"
                    " (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
                )
            applied = [row["name"] for row in tx.all("SELECT name FROM _migrations ORDER BY name")]
            check_not_newer(self._schema, applied, len(applied), self.location)
            apply(tx, self._schema, applied, stamp())
            self._shared.trigrams = bool(
                tx.scalar("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'")
            )
            self._shared.lengths = "m027_chunk_tokens" in self._schema.names()
            if "m030_folded_entries" in self._schema.names():
                self._shared.parting = keep_current(tx)
            if "m017_vector_index" in self._schema.names():
                pgvectors.install(tx)  # also when the server gained pgvector since m017 ran
            self._shared.vectors = pgvectors.enabled(tx)
            self._shared.policies = policies.reach(tx, self._shared.trigrams)
            owed = "m002_entry_substring_index" in self._schema.names() and (
                maintenance.owed_at_open(tx, self._shared)
            )
        # Committed: what a rolled-back opening applied is not taken. Replaced, not added to:
        # the schema may have been dropped and made again at an older step since an opening.
        if not joined:
            self._shared.steps_taken = steps_after_opening(self._schema, applied)
        if owed:  # a forget whose process ended before its VACUUM ran, or its clear
            self.reclaim()

    def _live(self) -> _Shared:
        if self._closed:
            raise StoreError("this memory has been closed")
        return self._shared

    @contextmanager
    def write(self, *, durable: bool = True) -> Iterator[PostgresTx]:
        shared = self._live()
        local = shared.local
        if getattr(local, "writing", 0):
            local.writing += 1
            try:
                yield PostgresTx(local.conn, shared, local.scope)
            finally:
                local.writing -= 1
            return
        import psycopg  # a lock wait past WRITE_WAIT_MS is its error, made busy below

        scope = current()
        with self._connection(shared) as conn:
            self._begin(conn, "BEGIN", scope, durable=durable, writes=True)
            try:
                conn.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [shared.lock_key]
                )
            except Exception as exc:
                _rollback(conn)
                if isinstance(exc, psycopg.Error):
                    raise convert(exc) from exc
                raise
            local.conn, local.writing, local.scope = conn, 1, scope
            local.owes_reclaim = False
            try:
                yield PostgresTx(conn, shared, scope)
            except BaseException:
                _rollback(conn)
                raise
            else:
                self._commit(conn)
                if local.owes_reclaim:
                    # The write is committed, and its mark durable: a failure to ask now is
                    # made good at the next open, never reported as the write's.
                    with contextlib.suppress(StoreError, RuntimeError):
                        self.reclaim()
            finally:
                local.conn, local.writing, local.owes_reclaim = None, 0, False

    @contextmanager
    def read(self) -> Iterator[PostgresTx]:
        shared = self._live()
        local = shared.local
        if getattr(local, "writing", 0):
            # A read inside this thread's own write must see that write's uncommitted rows.
            yield PostgresTx(local.conn, shared, local.scope)
            return
        scope = current()
        with self._connection(shared) as conn:
            self._begin(conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", scope)
            try:
                yield PostgresTx(conn, shared, scope)
            finally:
                _rollback(conn)

    @contextmanager
    def _connection(self, shared: _Shared) -> Iterator[Any]:
        import psycopg_pool

        try:
            context = shared.pool.connection(timeout=60)
            conn = context.__enter__()
        except psycopg_pool.PoolTimeout as exc:
            raise StoreError(f"the database is unreachable or busy: {exc}") from exc
        try:
            yield conn
        except BaseException as exc:
            context.__exit__(type(exc), exc, exc.__traceback__)
            raise
        else:
            context.__exit__(None, None, None)

    @staticmethod
    def _begin(
        conn: Any,
        statement: str,
        scope: str = EVERY_TENANT,
        *,
        durable: bool = True,
        writes: bool = False,
    ) -> None:
        import psycopg
        from psycopg import sql

        # The tenant for the row-level security policies (m016), with the BEGIN in one round
        # trip; a transaction of rebuildable rows commits asynchronously (``Store.write``); a
        # write waits for a lock no longer than SQLite's busy timeout, then is busy (0142).
        scoped = sql.SQL("{}; SELECT set_config('recuerdo.tenant', {}, true){}{}").format(
            sql.SQL(statement),
            sql.Literal(scope),
            sql.SQL("" if durable else "; SET LOCAL synchronous_commit TO OFF"),
            sql.SQL(f"; SET LOCAL lock_timeout = {statements.WRITE_WAIT_MS}" if writes else ""),
        )
        try:
            conn.execute(scoped)
        except psycopg.Error as exc:
            raise convert(exc) from exc

    @staticmethod
    def _commit(conn: Any) -> None:
        import psycopg

        try:
            conn.execute("COMMIT")
        except psycopg.Error as exc:
            _rollback(conn)
            error = convert(exc)
            if type(error) is StoreError:
                error = StoreError(f"the write could not be committed: {exc}")
            raise error from exc

    @contextmanager
    def claim(self, work: str) -> Iterator[bool]:
        """Claim ``work`` through the database: a session advisory lock named by the memory and
        the work, tried (``pg_try_advisory_lock``) so a server finding it held moves on at once
        instead of queueing behind it, and held on a connection of its own until the block
        ends. Released by the database if the holder dies. The claim comes before the write
        lock and is never waited for, so the two cannot deadlock.

        No transaction stays open while the work runs. The row lock this used before kept one
        open, with a transaction id, for the whole block (a batch of embeddings, seconds to
        minutes): no VACUUM of the database could remove a row deleted meanwhile, the rows a
        forget deletes included (decision 0061)."""
        import psycopg

        key = f"{self._live().lock_key}:claim:{work}"
        with self._connection(self._shared) as conn:
            try:
                taken = conn.execute(_TRY_CLAIM, [key]).fetchone()[0]
            except psycopg.Error as exc:
                raise convert(exc) from exc
            try:
                yield bool(taken)
            finally:
                if taken:
                    _end_claim(conn, key)

    def reclaim(self) -> None:
        # On the reclaimer's thread: its cost grows with the indexes (decision 0061).
        self._live().reclaimer.ask()

    def fold_log(self) -> None:
        """Nothing: the server checkpoints its own log, and the rows a sweep deletes hold no
        forgotten text to VACUUM away (decision 0069). Nor is a fold owed (``fold_owed``):
        a forget's VACUUM is, in ``index_marks`` (``RECLAIM_OWED``)."""

    fold_owed = False

    def rest(self) -> None:
        """Nothing: the server recycles its own log."""

    def erase_stale_words(self) -> int:
        return 0  # a chunk's words leave with its row (PostgresTx.delete_superseded_chunks)

    def settle(self, timeout: float | None = None) -> bool:
        """Wait for the VACUUM that forgets asked for (tests, and callers about to copy the
        database's files): False if ``timeout`` came first."""
        return self._live().reclaimer.settle(timeout)

    def optimize(self) -> None:
        maintenance.each_table(self, "ANALYZE")

    def compact(self) -> dict[str, Any]:
        return rebuild.compact(self)

    def grew(self, rows: int) -> None:
        maintenance.grew(self, rows)

    @property
    def schema_steps(self) -> list[str]:
        return list(self._schema.names())

    def check(self) -> dict[str, Any]:
        from .describe import check

        with self.read() as tx:
            return check(tx, self._shared.parting)

    def drop(self) -> None:
        """Remove this memory from the database (every table of its schema)."""
        shared = self._live()
        shared.reclaimer.stop()  # no VACUUM of the memory may run once its schema is gone
        with self._connection(shared) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {_quote(shared.schema)} CASCADE")
        shared.steps_taken = frozenset()  # a handle still open must not answer for a new one
        self.close()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        shared = self._shared
        with _registry_lock:
            shared.handles -= 1
            if shared.handles > 0:
                return
            _registry.pop((self.url, shared.schema), None)
        shared.reclaimer.stop()  # the VACUUM owed by this process's forgets runs first
        shared.pool.close()


def _end_claim(conn: Any, key: str) -> None:
    """Release a claim. A connection that cannot say it did is closed, so the pool drops it
    and the server releases the claim with the session; the block's own error, if any, is
    the one raised."""
    import psycopg

    try:
        released = conn.execute(_END_CLAIM, [key]).fetchone()[0]
    except psycopg.Error:
        released = False
    if not released:
        conn.close()


def _set_scope(conn: Any, scope: str) -> None:
    conn.execute("SELECT set_config('recuerdo.tenant', %s, true)", [scope])


def _vector_limit(state: VectorState | None) -> str:
    if state is None:
        return (
            "no pgvector on this server (or not installed, and this role may not install it: "
            "a superuser's CREATE EXTENSION vector is taken at the next open): each server "
            "process holds the memory's vectors (388 "
            "bytes each) and scores them exactly up to 50,000, then through an HNSW index it "
            "builds and caches on its machine"
        )
    return (
        f"an HNSW index per model in the database (pgvector {state.version}, cosine, "
        f"m {pgvectors.HNSW_M}, ef_construction {pgvectors.HNSW_EF_CONSTRUCTION}), searched "
        "with the filters applied"
        + (" by iterative scans" if state.iterative else "")
        + "; a model's index is built when its first load of vectors has caught up (scored "
        "exactly until then)"
        + "; when the filters reject most of what it offers, the rows that pass are scored "
        "exactly in the database"
    )


def _rollback(conn: Any) -> None:
    import psycopg

    with contextlib.suppress(psycopg.Error):  # a lost connection was rolled back already
        conn.execute("ROLLBACK")
