"""Layouts of older schemas, for tests that write a store as the code of that schema did.

* Before ``m022_binary_keys`` text keys were hex digits (32 since m018, 64 before it).
* Before ``m021_chunk_spans`` each chunk row held its text (``body``), the words index took it
  from the row (a trigger on SQLite, a generated column on PostgreSQL), and the re-cut queue
  kept no former text.
* Before ``m029_folded_trigrams`` the trigram index held each entry's text alone, and no table
  of folded texts existed."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest

from recuerdo.index import chunks as chunk_index
from recuerdo.notes import history
from recuerdo.store import chunk_text
from recuerdo.store.base import CHUNK_FIELDS, Tx
from recuerdo.store.postgres.connection import PostgresTx
from recuerdo.store.sqlite.connection import SQLiteTx
from recuerdo.store.sqlite.search import INDEX_CHUNK, INDEXED_UPTO, TrigramSubstrings

_OLD_FIELDS = [name for name in CHUNK_FIELDS if name != "kept_text"]
_INSERT = (
    f"INSERT INTO chunks ({', '.join(_OLD_FIELDS)})"
    f" VALUES ({', '.join('?' * len(_OLD_FIELDS))}) RETURNING id"
)


def _add_chunks(tx: Tx, rows: Sequence[Sequence[Any]]) -> list[int]:
    return [int(tx.scalar(_INSERT, row[: len(_OLD_FIELDS)])) for row in rows]


def _rechunk(tx: Tx, tenant: str, item_id: int, cut_from: str | None = None) -> None:
    if item_id <= chunk_index.chunk_mark(tx):
        tx.execute(
            "INSERT INTO rechunk_queue (tenant, item_id) VALUES (?, ?)"
            " ON CONFLICT (tenant, item_id) DO NOTHING",
            (tenant, item_id),
        )


def _catch_up_before_folds(self: TrigramSubstrings) -> int:
    tx = self._tx
    upto = int(tx.scalar(INDEXED_UPTO))
    last = tx.scalar(
        "SELECT max(id) FROM (SELECT id FROM items WHERE id > ? ORDER BY id LIMIT ?)",
        (upto, INDEX_CHUNK),
    )
    if last is None:
        return 0
    tx.execute(
        "INSERT INTO entry_trigrams (rowid, content) SELECT -id, content FROM items"
        " WHERE id > ? AND id <= ? AND item_type = 'entry' ORDER BY id DESC",
        (upto, last),
    )
    tx.execute("UPDATE index_marks SET upto = ? WHERE name = 'entry_trigrams'", (last,))
    return int(last) - upto


@contextmanager
def entries_indexed_before_folds(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """While it is open, the upkeep indexes entries as before m029 (a store opened at an older
    step has no table of folded texts)."""
    with monkeypatch.context() as old:
        old.setattr(TrigramSubstrings, "catch_up", _catch_up_before_folds)
        yield


@contextmanager
def hex_keys(monkeypatch: pytest.MonkeyPatch, digits: int = 32) -> Iterator[None]:
    """While it is open, text keys are written as hex digits (before m022; 64 before m018),
    and entries are indexed as before m029."""

    def key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:digits]

    with monkeypatch.context() as old, entries_indexed_before_folds(monkeypatch):
        old.setattr(chunk_index, "chunk_hash", key)
        old.setattr(history, "normalized_hash", lambda text: key(" ".join(text.lower().split())))
        yield


@contextmanager
def layout_before_spans(monkeypatch: pytest.MonkeyPatch, digits: int = 32) -> Iterator[None]:
    """While it is open, the verbs write chunks as before m021 (a store opened at an older
    step), with hex keys, and read their text from the row; the upkeep's re-cut is not run
    meanwhile."""
    with monkeypatch.context() as old, hex_keys(monkeypatch, digits):
        old.setattr(SQLiteTx, "add_chunks", _add_chunks)
        old.setattr(PostgresTx, "add_chunks", _add_chunks)
        old.setattr(chunk_index, "rechunk", _rechunk)
        old.setattr(chunk_text, "KEPT", "c.body")
        old.setattr(chunk_text, "WHOLE", "NULL")
        old.setattr(chunk_text, "CHUNK_JOIN", "")
        yield
