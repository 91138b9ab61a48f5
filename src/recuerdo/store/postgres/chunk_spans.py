"""Chunks as spans of their item's text, on PostgreSQL (migration ``m021_chunk_spans``;
``docs/decisions/0029-chunk-spans.md``).

As on SQLite, a chunk row keeps its place in its item, and its text only when its item was cut
into several (``store/chunk_text.py``): the body of a one-chunk item's chunk was the item's text
again, in the row (too short for TOAST to compress). A chunk's
words (``words``, the weighted tsvector) can no longer be a column generated from the row: they
are computed as the row is written, from the text in hand (:func:`add_chunks`). Deleting a row
deletes its words, so nothing else changes; ``rechunk_queue.cut_from`` serves the re-cut's
comparison of old chunks with new.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..base import STORED_CHUNK_FIELDS, Tx, stored_fields, word_fields
from ..chunk_text import SEVERAL, chunks_with_text, keep_cut_texts
from . import statements
from .word_folds import fold_fields

WORDS = (
    "setweight(to_tsvector('recuerdo_words', ?), 'A')"
    " || setweight(to_tsvector('recuerdo_words', ?), 'B')"
    " || setweight(to_tsvector('recuerdo_words', ?), 'C')"
)
"""The tsvector of (title, body, context), as the generated column of ``m005`` made it; each
text is given folded (:func:`.word_folds.fold_fields`)."""
INSERT = (
    f"INSERT INTO chunks ({', '.join(STORED_CHUNK_FIELDS)}, words)"
    f" VALUES ({', '.join('?' * len(STORED_CHUNK_FIELDS))}, {WORDS}) RETURNING id"
)


def insert_params(row: Sequence[Any]) -> tuple[Any, ...]:
    """A row of ``CHUNK_FIELDS`` as the parameters of :data:`INSERT`."""
    return (*stored_fields(row), *fold_fields(word_fields(row)))


def add_chunks(conn: Any, rows: Sequence[Sequence[Any]]) -> list[int]:
    """:meth:`Tx.add_chunks` on PostgreSQL."""
    return statements.returning_ids(conn, INSERT, [insert_params(row) for row in rows])


def fill_words(tx: Tx) -> None:
    """The words of chunks that have none (rows restored from an archive, which leaves them
    out)."""
    while rows := chunks_with_text(
        tx, "c.words IS NULL ORDER BY c.id LIMIT 500", (), every_tenant=True
    ):
        write_words(tx, rows)


def write_words(tx: Tx, chunks: Sequence[Mapping[str, Any]]) -> None:
    """The words of ``chunks`` (rows of :func:`~recuerdo.store.chunk_text.chunks_with_text`)
    written again from their folded text."""
    tx.executemany(
        f"UPDATE chunks /* every tenant */ SET words = {WORDS} WHERE tenant = ? AND id = ?",
        [
            (*fold_fields((c["title"], c["body"], c["context"])), c["tenant"], c["id"])
            for c in chunks
        ],
    )


def m021_chunk_spans(tx: Tx) -> None:
    """The step (registered in schema.py)."""
    tx.execute("ALTER TABLE rechunk_queue ADD COLUMN cut_from TEXT")
    tx.execute("ALTER TABLE chunks ADD COLUMN kept_text TEXT")
    tx.execute(f"UPDATE chunks /* every tenant */ SET kept_text = body WHERE {SEVERAL}")
    keep_cut_texts(tx)
    # The words keep their values and become an ordinary column, written with each row.
    tx.execute("ALTER TABLE chunks ALTER COLUMN words DROP EXPRESSION")
    tx.execute("ALTER TABLE chunks DROP COLUMN body")


def m023_missed_vectors(tx: Tx) -> None:
    """Nothing to do on PostgreSQL: chunk ids come from an identity column, never given twice,
    so no chunk was passed over by an embedding mark (the SQLite step explains the fault)."""
