"""The narrow storage protocols every backend implements.

The families speak portable SQL through a :class:`Tx` (``?`` placeholders; ``ON CONFLICT``,
``RETURNING``, ``coalesce``, ``CASE``: what SQLite and PostgreSQL both understand). What differs
between backends sits behind small protocols a backend attaches to its transactions:

* :class:`TextSearch`: ranked word search over chunks (SQLite FTS5 BM25, PostgreSQL tsvector);
* :class:`SubstringSearch`: any substring, any case, over entries (a trigram index, pg_trgm);
* :class:`VectorSearch`: nearest vectors ordered by the database (pgvector's HNSW), where the
  backend has it; without it (``Tx.vectors`` is None) each process searches the vectors it holds;
* erasure: :meth:`Tx.purge_deleted_text` inside a forgetting transaction and
  :meth:`Store.reclaim` after it commits (a WAL checkpoint, a VACUUM);
* maintenance: :meth:`Store.check` and :meth:`Store.optimize`.

:class:`Capabilities` says what a backend does natively, so answers can state their limits
(``index_status``). Keeping this surface small is what lets a PostgreSQL store, or a fake, stand
in for the embedded SQLite one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

Row = Mapping[str, Any]
Params = Sequence[Any]

CHUNK_FIELDS = (
    *("tenant", "item_id", "ordinal", "start", "stop"),
    *("title", "body", "context", "embed_text", "hash", "kept_text"),
)
"""A new chunk, as :meth:`Tx.add_chunks` takes it. ``body`` is the chunk's text, its item's
text at ``[start, stop)`` (code points): indexed, not stored as such; ``kept_text`` is the
same text when the row keeps it (a chunk of an item cut into several), else None
(``store/chunk_text.py``)."""
STORED_CHUNK_FIELDS = tuple(name for name in CHUNK_FIELDS if name != "body")
_STORED = [CHUNK_FIELDS.index(name) for name in STORED_CHUNK_FIELDS]
_WORDS = [CHUNK_FIELDS.index(name) for name in ("title", "body", "context")]


def stored_fields(row: Params) -> tuple[Any, ...]:
    """A row of :data:`CHUNK_FIELDS` as the values of :data:`STORED_CHUNK_FIELDS`."""
    return tuple(row[i] for i in _STORED)


def word_fields(row: Params) -> tuple[Any, ...]:
    """What the words index holds of a row of :data:`CHUNK_FIELDS`: (title, body, context)."""
    return tuple(row[i] for i in _WORDS)


class TextSearch(Protocol):
    """Ranked word search over the chunks' title, body and context (title weighs most)."""

    def rank(
        self, tenant: str, words: Sequence[str], mode: str, limit: int, offset: int
    ) -> list[tuple[int, float]]:
        """``(chunk id, score)`` best first (higher is better): chunks holding any word
        (``mode="any"``) or every word (``"all"``); ties broken by chunk id, so pages taken
        with ``offset`` never overlap. Words are plain tokens: never query syntax.

        A backend may rank ``tenant``'s chunks only (PostgreSQL) or every chunk of the memory
        (SQLite's one full-text index): callers keep the tenant's chunks among those ranked."""

    def ranks_others(self, tenant: str) -> bool:
        """Whether :meth:`rank` may offer chunks of tenants other than ``tenant`` (an index
        shared by the memory's tenants, where another tenant has chunks)."""

    def holding_every(self, words: Sequence[str], among: Sequence[int]) -> set[int] | None:
        """The chunks of ``among`` whose indexed words include each of ``words`` (ASCII words
        as a query wrote them): an ASCII text that holds them all as written is among these.
        None where the backend does not narrow them cheaply (every chunk may then hold them)."""

    def words_held(self, tenant: str, words: Sequence[str]) -> set[str]:
        """The words of ``words`` that some chunk of ``tenant`` holds, each matched as
        :meth:`rank` matches a word alone; an index lookup each, nothing ranked."""


@dataclass(frozen=True)
class SubstringPart:
    """One part of the items that may hold a needle: the rows of ``source`` (a FROM clause
    that names the items table ``items``) for which ``condition`` holds (its parameters
    ``params``), read newest first by the ORDER BY term ``newest_first``, in the index's own
    order (so a listing stops after its limit).

    The caller adds its own conditions on ``items`` (the tenant, the entries, its filters) to
    the same statement: the rows the index offers are checked against them as they are read,
    with no second lookup of each row."""

    source: str
    condition: str
    params: list[Any]
    newest_first: str = "items.id DESC"


class SubstringSearch(Protocol):
    """Any substring, in any case, of an entry's content."""

    def candidates(self, needle: str) -> list[SubstringPart] | None:
        """The parts holding the items whose content may contain ``needle``, answered from an
        index (the caller narrows them to a tenant's entries); None when no index can answer
        it (the caller then tests every row with :meth:`condition`).

        The parts are disjoint and descend: every row of a part is newer than every row of the
        parts after it, so a newest-first listing reads them in turn and stops after its limit
        (each part is read in its ``newest_first`` order, so it stops early too)."""

    def condition(self, needle: str, alias: str) -> tuple[str, list[Any]]:
        """A SQL condition (and its parameters) true for the rows of the items table aliased
        ``alias`` whose content contains ``needle``, ignoring case."""

    def folded_copies(self, contents: Sequence[str]) -> list[str | None] | None:
        """For entries about to be inserted with ``contents``: what each keeps in the items'
        ``folded`` column so that it is found by case folding (PostgreSQL, decision 0055), or
        None when none of them keeps anything (SQLite always: it folds as it indexes)."""

    def catch_up(self) -> int:
        """Index the next rows the index does not hold yet; how many (0 when complete)."""

    def waiting(self) -> int:
        """How many rows wait to be indexed (readers cover them by scanning)."""


class VectorSearch(Protocol):
    """Nearest vectors, ordered by the database through an index of each model's vectors."""

    def follow(self, model: str, dim: int, *, caught_up: bool) -> None:
        """Inside a write that stores ``model``'s vectors: make sure the database indexes them.
        A model's index is built once its vectors have caught up with the chunks
        (``caught_up``: this write takes the last of the backlog), over all of them at once;
        later vectors join it as they are inserted."""

    def order(
        self, alias: str, model: str, dim: int, query: Sequence[float], limit: int, exact: bool
    ) -> tuple[str, str, list[Any]]:
        """``(distance, condition, parameters)`` for a query over the embeddings aliased
        ``alias``: ``distance`` is an SQL expression (with ``parameters``) of the cosine
        distance between a row's vector and ``query``, to ``ORDER BY`` before ``LIMIT limit``;
        ``condition`` keeps ``model``'s rows. With ``exact`` the index is not used: every row
        the other conditions keep is scored (an index scan can stop short when filters reject
        most of what it offers)."""


class Tx(Protocol):
    """One open transaction. Statements use ``?`` placeholders."""

    dialect: str
    text: TextSearch
    substrings: SubstringSearch
    vectors: VectorSearch | None
    """None: the backend has no vector index; the meaning stage searches the vectors each
    process holds (``index.vector_set``)."""

    def execute(self, sql: str, params: Params = ()) -> int:
        """Run a statement; return the number of rows it changed."""

    def executemany(self, sql: str, rows: Sequence[Params]) -> int:
        """Run one statement for each parameter row; return the rows changed."""

    def one(self, sql: str, params: Params = ()) -> Row | None:
        """The first row of a query, or ``None``."""

    def all(self, sql: str, params: Params = ()) -> list[Row]:
        """Every row of a query."""

    def scalar(self, sql: str, params: Params = ()) -> Any:
        """The first column of the first row, or ``None``."""

    def iterate(self, sql: str, params: Params = ()) -> Iterator[Row]:
        """Rows one at a time, for large reads."""

    def json_text(self, column: str, key: str) -> str:
        """An SQL expression: the text value of ``key`` in the JSON object of ``column``."""

    def purge_deleted_text(self, *, superseded: bool = False) -> None:
        """Inside a forgetting transaction: make the words of deleted rows leave the full-text
        indexes now (where the index does not remove them on delete). With ``superseded``,
        also the words that any item's superseded chunks left there
        (:meth:`delete_superseded_chunks`): a forgotten name or passage may sit in another
        item's old chunk. A forgotten item's own superseded chunks go with its row, whatever
        is asked."""

    def insert_returning_ids(self, sql: str, rows: Sequence[Params]) -> list[int]:
        """Insert each parameter row with ``sql`` (``INSERT ... VALUES (one row) RETURNING
        id``); the new ids, in the rows' order. A backend may send several rows a statement
        (SQLite) or all the statements in one round trip (a server)."""

    def add_chunks(self, rows: Sequence[Params]) -> list[int]:
        """Store new chunks (rows of :data:`CHUNK_FIELDS`, their items' text unchanged since
        they were cut) and index their words; their ids, in order. The body is not kept: the
        words index holds what it needs, and readers slice it out of the item."""

    def delete_superseded_chunks(self, chunks: Sequence[tuple[str, int, int]]) -> None:
        """Delete chunks ``(tenant, item_id, chunk_id)`` that an edit of their item replaced.
        Their words may stay in the full-text index (as they stay in the item's history), never
        found by a search, until :meth:`Store.erase_stale_words` erases them, the item is
        deleted or :meth:`purge_deleted_text` asks for them."""


@dataclass(frozen=True)
class Capabilities:
    """What a backend does natively (reported by ``index_status``)."""

    text_search: str
    """``fts5`` or ``tsvector``."""
    substring_search: str
    """``trigram`` (an index), or ``scan`` (every row read: the stated fallback)."""
    vector_search: str
    """``memory`` (vectors held by each process: exact, then HNSW above 50k) or ``pgvector``
    (an HNSW index in the database)."""
    vector_search_limit: str
    """What the vector search costs and where it stops being exact, in one sentence."""
    secure_delete: bool
    """Whether deleted text leaves the index pages at once."""
    erasure: str
    """What forgetting guarantees about old bytes, in one sentence."""
    tenant_policies: str
    """Whether row-level policies hold the connected role, and which searches they keep from
    their indexes, in one sentence starting ``none``, ``lifted``, ``held`` or ``held, indexes
    unused``."""


class Store(Protocol):
    """A memory's durable state: one per declared name."""

    dialect: str
    """``"sqlite"`` or ``"postgres"``."""

    location: str
    """Where the state lives (a file path, ``:memory:`` or a connection URL without secrets)."""

    @property
    def capabilities(self) -> Capabilities:
        """What this backend does natively (``index_status`` reports it)."""

    @property
    def archive(self) -> Any:
        """How the backup archive reads and restores this store (``store.archive.Describes``)."""

    @property
    def schema_steps(self) -> list[str]:
        """The names of the migration steps this store's schema is made of."""

    def read(self) -> AbstractContextManager[Tx]:
        """A consistent snapshot for reading."""

    def write(self, *, durable: bool = True) -> AbstractContextManager[Tx]:
        """A write transaction: committed when the block exits normally, rolled back when it
        raises. Nested calls in one thread join the outer transaction (and its durability).

        ``durable`` (every acknowledged write): the commit returns once the transaction is on
        disk. ``durable=False`` is for transactions that only write what durable rows can make
        again (indexes, and the marks that say how far they got, in the same transaction): the
        commit does not wait for the disk. A crash of the machine, never of the process, may
        undo such a transaction; its work is then done again. Later durable commits carry it
        to disk with them."""

    def claim(self, work: str) -> AbstractContextManager[bool]:
        """Exclusive right, among every process sharing this store, to do the background work
        named ``work`` (chunking, embedding with a model) while the block runs: True when this
        caller has it, False at once when another process holds it (that one does the work).
        The work itself runs in ordinary transactions inside the block."""

    def reclaim(self) -> None:
        """After a forgetting transaction committed: give the old pages back so no copy of the
        forgotten text stays (fold and truncate the WAL; vacuum)."""

    def fold_log(self) -> None:
        """Fold what the write-ahead log holds into the file now, as far as no reader or writer
        has to be waited for, and never wait: a later :meth:`reclaim` has that much less to
        copy before its forget answers. The upkeep calls it after deleting what forgets left
        to it (``store/audit_sweep.py``). SQLite: a passive checkpoint. PostgreSQL: nothing
        (the server checkpoints, and a forget's reclaim is a VACUUM, not a fold)."""

    def rest(self) -> None:
        """The process has nothing left to do for now (its upkeep ended, idle): give the space
        the write-ahead log grew to back, as far as no reader has to be waited for, and never
        wait. SQLite: fold the log and truncate it to nothing (a busy store kept it at its high
        mark, up to ``journal_size_limit``: a third of a 10,000-note store, decision 0185).
        PostgreSQL: nothing (the server recycles its own log)."""

    def erase_stale_words(self) -> int:
        """Erase from the full-text index the words of a few chunks
        :meth:`Tx.delete_superseded_chunks` left there, in a transaction of its own; how many
        (0: none were left; most calls then write nothing). The upkeep's, after a pause of the
        writes, in a share of the time when none comes, and at a close (decision 0073).
        SQLite: a secure delete of each (``store/sqlite/stale_words.py``), after one try of
        the log's fold when one is owed (:attr:`fold_owed`). PostgreSQL: nothing (a chunk's
        words leave with its row)."""

    def grew(self, rows: int) -> None:
        """A committed write added about ``rows`` items: a backend whose planner samples
        statistics takes new ones when its tables have grown enough."""

    def optimize(self) -> None:
        """Refresh the planner's statistics (after bulk loads, and now and then)."""

    def compact(self) -> dict[str, Any]:
        """The owner's maintenance after deletions. SQLite: each full-text index merged into one
        segment, then the file written again by VACUUM, without the pages they freed (writers
        wait). PostgreSQL: every GIN index built again
        (a GIN index keeps each key until then) while reads and writes go on, and the
        planner's statistics taken again. Returns what was done."""

    def check(self) -> dict[str, Any]:
        """Integrity of the store and consistency of its indexes: ``{ok, problems, ...}``."""

    @property
    def fold_owed(self) -> bool:
        """SQLite: a forget's fold of the write-ahead log, which readers held off past its
        patience (decision 0156): the log still holds the pages the forget replaced until the
        upkeep's next pause, the next forget or the close folds it. PostgreSQL: False (its
        forget's VACUUM, owed until it runs, is marked ``RECLAIM_OWED``)."""

    def close(self) -> None:
        """Release connections; the state stays on disk."""


RECLAIM_OWED = "reclaim_owed"
"""The ``index_marks`` row of the VACUUM a forget left owed (PostgreSQL, decision 0061)."""
REBUILD_OWED = "gin_rebuild_owed"
"""The ``index_marks`` row of a rebuild a forget left owed (PostgreSQL's GIN indexes, 0066)."""
OWED_MARKS = (RECLAIM_OWED, REBUILD_OWED)
"""Both name their server's transaction ids: a restored copy owes neither."""
STATISTICS_OWED = "statistics_owed:"
"""The ``index_marks`` rows (this, then a table's name) of the tables a forget left empty whose
statistics are not cleared yet (PostgreSQL, decision 0078): a restored copy owes none."""
FORGOTTEN_MARKS = (
    f"DELETE FROM index_marks WHERE name IN (?, ?) OR substr(name, 1, {len(STATISTICS_OWED)}) = ?"
)
"""The statement that strikes out, after a restore, what the archive's memory owed: its
parameters are ``OWED_MARKS`` and ``STATISTICS_OWED``."""

_IDS_PER_QUERY = 10_000  # bound parameters, well under SQLite's limit
_V = TypeVar("_V")


def rows_by_id(
    tx: Tx, select: str, ids: Iterable[int], *, where: str = "", params: Params = ()
) -> dict[int, Row]:
    """``{id: row}`` for ``select`` (``SELECT ... FROM table``, whose rows have an ``id``)
    restricted to ``ids`` and to the extra condition ``where`` (with ``params``)."""
    wanted = sorted(set(ids))
    found: dict[int, Row] = {}
    for first in range(0, len(wanted), _IDS_PER_QUERY):
        part = wanted[first : first + _IDS_PER_QUERY]
        marks = ",".join("?" * len(part))
        condition = f" AND ({where})" if where else ""
        for row in tx.all(f"{select} WHERE id IN ({marks}){condition}", [*part, *params]):
            found[row["id"]] = row
    return found


def like_pattern(text: str) -> str:
    """``%text%`` for ``LIKE ? ESCAPE '\\'``, with LIKE's own characters escaped."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def any_tag(alias: str, tags: Sequence[str]) -> tuple[str, list[Any]]:
    """The condition (and its parameters) that the item ``alias`` carries at least one of
    ``tags``, tested row by row as the item is read.

    ``LIMIT 1`` keeps SQLite 3.51 from turning the ``EXISTS`` into a join over the tag index,
    which yields the item once for each of its tags that is asked for (an entry tagged ``b``
    and ``c``, listed twice by a search for either)."""
    return (
        f"EXISTS (SELECT 1 FROM item_tags t WHERE t.tenant = {alias}.tenant"
        f" AND t.item_id = {alias}.id AND t.tag IN ({marks(tags)}) LIMIT 1)",
        [*tags],
    )


def every_tag(alias: str, tags: Sequence[str]) -> tuple[str, list[Any]]:
    """The condition (and its parameters) that the item ``alias`` carries all of ``tags``
    (given without repeats)."""
    return (
        f"(SELECT count(*) FROM item_tags t WHERE t.tenant = {alias}.tenant"
        f" AND t.item_id = {alias}.id AND t.tag IN ({marks(tags)})) = ?",
        [*tags, len(tags)],
    )


def tagged_ids(
    alias: str, tenant: str, tags: Sequence[str], *, every: bool, category: str | None = None
) -> tuple[str, list[Any]]:
    """The condition (and its parameters) that the item ``alias`` is among those carrying one
    of ``tags`` (or, with ``every``, all of them, given without repeats), as the list of their
    ids read from the tag index: the tags' own rows drive a listing, not the items. With a
    ``category``, only the tag rows of items of that category (the index holds it, m026), and
    those without one (written by an earlier version's server on the same PostgreSQL memory):
    the caller checks the item's own category too.

    Tested row by row instead (:func:`every_tag`), a listing by every tag walked the tenant's
    items newest first until enough carried them all: 160 ms for two tags among 100,000
    entries, where the two tags' rows are some 6,600."""
    of_category = "" if category is None else " AND (t.category = ? OR t.category IS NULL)"
    grouped = " GROUP BY t.item_id HAVING count(*) = ?" if every else ""
    return (
        f"{alias}.id IN (SELECT t.item_id FROM item_tags t WHERE t.tenant = ?"
        f" AND t.tag IN ({marks(tags)}){of_category}{grouped})",
        [tenant, *tags, *([] if category is None else [category]), *([len(tags)] if every else [])],
    )


def marks(values: Sequence[Any]) -> str:
    """The parameter marks of an ``IN (...)`` list of ``values``."""
    return ", ".join("?" * len(values))


def groups(values: Sequence[_V], size: int) -> Iterator[Sequence[_V]]:
    """``values`` in consecutive groups of ``size`` (the last may be shorter): a statement each,
    under the database's limit of bound parameters."""
    for first in range(0, len(values), size):
        yield values[first : first + size]
