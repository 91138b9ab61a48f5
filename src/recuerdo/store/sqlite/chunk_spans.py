"""Chunks as spans of their item's text, on SQLite (migration ``m021_chunk_spans``;
``docs/decisions/0029-chunk-spans.md``).

A chunk row keeps its place in its item, and its text only when its item was cut into several
(``store/chunk_text.py``); the words index ``chunk_fts`` is contentless: it holds its words and
reads no table. FTS5 removes a row from a contentless index only when told the row's exact
words (with ``secure-delete``, it then rewrites the pages that held them: what makes forgetting
erase). The words of a chunk are its title, its context and its text (kept, or its span of the
text its item was cut from), so every way a chunk leaves says them again:

* new chunks are indexed by :func:`add_chunks` from the text in hand;
* a deleted item takes its chunks' words out of the index first (``items_chunk_words``): the
  item's text is read once for all of its chunks;
* a chunk deleted by itself (a passage blanked out of a document) takes its words out as it
  goes (``chunk_fts_delete``), unless the index holds it no more (a deleted item has done so
  already) or the re-cut of an edited item left them there, listed as stale
  (:func:`delete_superseded`, ``stale_words.py``).

``contentless_delete`` would remove a row without its words, but only by marking it deleted:
its words stay in the index's pages until the segment holding them is merged, and a forgotten
word must leave the file at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..base import STORED_CHUNK_FIELDS, stored_fields, word_fields
from ..chunk_text import CUT_JOIN, CUT_TEXT, SEVERAL, by_id, chunks_with_text, keep_cut_texts
from . import stale_words
from .superseded_schema import DELETE_WORDS
from .unspaced_words import Spelling, as_indexed, spelling

if TYPE_CHECKING:
    from ..base import Tx

CHUNK_FTS = (
    "CREATE VIRTUAL TABLE chunk_fts USING fts5 (title, body, context, content='',"
    " tokenize='porter unicode61 remove_diacritics 2')"
)
INDEXED = "EXISTS (SELECT 1 FROM chunk_fts_docsize d WHERE d.id = {chunk}.id)"


def _as_given(text: str) -> str:
    return text


def chunk_delete_trigger(also: str = "", words: Callable[[str], str] = _as_given) -> str:
    """``chunk_fts_delete``: a chunk deleted by itself takes its words out of the index, when
    the index holds them and ``also`` (an SQL condition on ``old``, from m036) holds. ``words``
    wraps each text as the index was given it (``recuerdo_words`` since m045,
    ``recuerdo_folded_words`` since m048, ``recuerdo_unmarked_words`` since m049)."""
    body = f"coalesce(old.kept_text, substr({CUT_TEXT}, old.start + 1, old.stop - old.start))"
    return f"""CREATE TRIGGER chunk_fts_delete AFTER DELETE ON chunks
    WHEN {INDEXED.format(chunk="old")}{f" AND {also}" if also else ""}
    BEGIN
        {DELETE_WORDS}
        SELECT 'delete', old.id, {words("old.title")},
            {words(body)},
            {words("old.context")}
        FROM items i {CUT_JOIN} WHERE i.tenant = old.tenant AND i.id = old.item_id;
    END"""


def item_delete_trigger(words: Callable[[str], str] = _as_given) -> str:
    """``items_chunk_words``: a deleted item takes its chunks' words out of the index first.
    The item's text is read once (OLD.content is a register), for its chunk that keeps no
    text: one, at the start of it (an item cut into several has its chunks keep theirs)."""
    body = words(
        """coalesce(c.kept_text, substr(coalesce((SELECT q.cut_from
            FROM rechunk_queue q WHERE q.tenant = old.tenant AND q.item_id = old.id),
            old.content), c.start + 1, c.stop - c.start))"""
    )
    return f"""CREATE TRIGGER items_chunk_words BEFORE DELETE ON items
    WHEN EXISTS (SELECT 1 FROM chunks c WHERE c.tenant = old.tenant AND c.item_id = old.id)
    BEGIN
        {DELETE_WORDS}
        SELECT 'delete', c.id, {words("c.title")}, {body}, {words("c.context")}
        FROM chunks c WHERE c.tenant = old.tenant AND c.item_id = old.id
            AND {INDEXED.format(chunk="c")};
    END"""


TRIGGERS = (item_delete_trigger(), chunk_delete_trigger())
INSERT_WORDS = "INSERT INTO chunk_fts (rowid, title, body, context) VALUES (?, ?, ?, ?)"
_CHUNKS_PER_STEP = 500


def add_chunks(tx: Tx, rows: Sequence[Sequence[Any]]) -> list[int]:
    """:meth:`Tx.add_chunks` on SQLite: the rows without their body, the words with it."""
    if not rows:
        return []
    # Known here (one writer at a time), the ids key both inserts. Never one at or below an
    # embedding mark: the worker embeds the chunks above its mark, so a chunk given the id of
    # one just deleted (the newest note's chunk, replaced by an edit) would never get a vector.
    # Nor one the words index holds: a stale chunk's words stay under its id (stale_words.py),
    # whatever the library that opens the store.
    first = int(
        tx.scalar(
            "SELECT max(coalesce((SELECT max(id) FROM chunks /* every tenant */), 0),"
            " coalesce((SELECT max(id) FROM chunk_fts_docsize), 0),"
            " coalesce((SELECT max(upto) FROM index_marks WHERE name LIKE 'embed:%'), 0)) + 1"
        )
    )
    ids = list(range(first, first + len(rows)))
    pairs = list(zip(ids, rows, strict=True))
    tx.executemany(
        f"INSERT INTO chunks (id, {', '.join(STORED_CHUNK_FIELDS)})"
        f" VALUES (?, {', '.join('?' * len(STORED_CHUNK_FIELDS))})",
        [(chunk_id, *stored_fields(row)) for chunk_id, row in pairs],
    )
    tx.executemany(
        INSERT_WORDS,
        [(chunk_id, *as_indexed(tx, word_fields(row))) for chunk_id, row in pairs],
    )
    return ids


def delete_superseded(tx: Tx, chunks: Sequence[tuple[str, int, int]]) -> None:
    """Chunks ``(tenant, item_id, chunk_id)`` that a re-cut replaced go. Their words, read from
    the text they were cut from (still queued), stay in the index, listed as stale, until the
    upkeep or a forget erases them (``stale_words.py``: what a secure delete of each costs). A
    library without the secure delete takes them out now (every forget merges the whole index
    there), as does a store at a schema before ``m036_stale_words``."""
    by_tenant: dict[str, list[tuple[int, int]]] = {}
    for tenant, item_id, chunk_id in chunks:
        by_tenant.setdefault(tenant, []).append((item_id, chunk_id))
    words = []
    for tenant, pairs in by_tenant.items():
        rows = by_id(tx, [chunk_id for _, chunk_id in pairs], tenant)
        words += [
            (tenant, item_id, chunk_id, row["title"], row["body"], row["context"])
            for item_id, chunk_id in pairs
            if (row := rows.get(chunk_id)) is not None
        ]
    if stale_words.kept(tx):
        stale_words.keep(tx, words)
    else:  # a secure delete where the library has it (a store at an older schema)
        tx.executemany(
            f"{DELETE_WORDS} VALUES ('delete', ?, ?, ?, ?)",
            [(w[2], *as_indexed(tx, w[3:])) for w in words],
        )
    tx.executemany("DELETE FROM chunks WHERE tenant = ? AND id = ?", [(t, c) for t, _, c in chunks])


def index_all(tx: Tx, *, spell: Spelling | None = None) -> None:
    """Fill the (empty) words index from every chunk (the step, a restore, a recovery), a
    batch of chunks a query, as PostgreSQL's :func:`fill_words` does (``spell``: as
    :func:`.unspaced_words.as_indexed` takes it, asked of the store once, not of each chunk)."""
    if spell is None:
        spell = spelling(tx)
    last = 0
    while rows := chunks_with_text(
        tx, "c.id > ? ORDER BY c.id LIMIT ?", (last, _CHUNKS_PER_STEP), every_tenant=True
    ):
        tx.executemany(
            INSERT_WORDS,
            [
                (c["id"], *as_indexed(tx, (c["title"], c["body"], c["context"]), spell=spell))
                for c in rows
            ],
        )
        last = int(rows[-1]["id"])


def m021_chunk_spans(tx: Tx) -> None:
    """The body of ``m021_chunk_spans`` on SQLite."""
    tx.execute("ALTER TABLE rechunk_queue ADD COLUMN cut_from TEXT")
    tx.execute("ALTER TABLE chunks ADD COLUMN kept_text TEXT")
    tx.execute(f"UPDATE chunks /* every tenant */ SET kept_text = body WHERE {SEVERAL}")
    tx.execute("DROP TRIGGER chunk_fts_insert")
    tx.execute("DROP TRIGGER chunk_fts_delete")
    tx.execute("DROP TABLE chunk_fts")
    tx.execute(CHUNK_FTS)
    keep_cut_texts(tx)
    index_all(tx)
    # Rewrites every chunk row; the pages it frees stay in the file for new rows (a VACUUM
    # gives them back to the file system).
    tx.execute("ALTER TABLE chunks DROP COLUMN body")
    for trigger in TRIGGERS:
        tx.execute(trigger)


def m023_missed_vectors(tx: Tx) -> None:
    """Before this version :func:`add_chunks` could give a new chunk the id of one just deleted
    (the memory's newest chunk, replaced by an edit of its note), at or below an embedding
    mark: the worker, which embeds the chunks above its mark, never gave it a vector. Each
    model's mark goes back to just below the first chunk it passed without a vector of that
    model; the worker reads on from there (a chunk whose text has its vector is not embedded
    again)."""
    for mark in tx.all("SELECT name, upto FROM index_marks WHERE name LIKE 'embed:%'"):
        missed = tx.scalar(
            "SELECT min(c.id) FROM chunks c /* every tenant */ WHERE c.id <= ? AND NOT EXISTS"
            " (SELECT 1 FROM embeddings e WHERE e.model = ? AND e.hash = c.hash)",
            (mark["upto"], str(mark["name"]).removeprefix("embed:")),
        )
        if missed is not None:
            tx.execute(
                "UPDATE index_marks SET upto = ? WHERE name = ?", (int(missed) - 1, mark["name"])
            )
