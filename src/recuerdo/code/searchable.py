"""The text of the tip's files as searchable items (``item_type = 'code'``).

Each UTF-8 file at the tip of an ingested branch is one item (scope ``code:<repo>``, key and
title = its path) cut into chunks of whole lines, so search, its filters and its indexes serve
code like any other text. The items follow the tip: a file changed by an ingest is re-cut, a
deleted, refused or binary one loses its item. Chunks are cut here, when the item is written,
so the background indexer leaves them as they are.
"""

from __future__ import annotations

import json
from typing import Any

from ..retrieval.chunk import Span
from ..retrieval.index import insert_chunks
from ..store.base import Tx

MAX_LINES = 60
MIN_LINES = 20
MAX_CHARS = 4000
MAX_SEARCHABLE_BYTES = 2**20


def scope_of(repo: str) -> str:
    return f"code:{repo}"


def line_spans(text: str) -> list[Span]:
    """Chunks of whole lines: at most MAX_LINES lines and about MAX_CHARS characters, ended
    after a blank line when one falls in the second part of the window (code reads in
    blocks); a single longer line is cut by characters."""
    starts = [0]
    for index, char in enumerate(text):
        if char == "\n" and index + 1 < len(text):
            starts.append(index + 1)
    ends = [*starts[1:], len(text)]
    spans: list[Span] = []
    first = 0
    while first < len(starts):
        last = first
        while (
            last + 1 < len(starts)
            and last + 1 - first < MAX_LINES
            and ends[last + 1] - starts[first] <= MAX_CHARS
        ):
            last += 1
        if last + 1 < len(starts):
            for candidate in range(last, first + MIN_LINES - 1, -1):
                if not text[starts[candidate] : ends[candidate]].strip():
                    last = candidate
                    break
        start, stop = starts[first], ends[last]
        while stop - start > MAX_CHARS and last == first:  # one very long line
            spans.append(Span(start, start + MAX_CHARS))
            start += MAX_CHARS
        if text[start:stop].strip():
            spans.append(Span(start, stop))
        first = last + 1
    return spans


def line_range(text: str, start: int, stop: int) -> tuple[int, int]:
    """1-based first and last line of ``text[start:stop]``."""
    first = text.count("\n", 0, start) + 1
    return first, first + text.count("\n", start, max(start, stop - 1))


def put(
    tx: Tx,
    tenant: str,
    repo: str,
    path: str,
    text: str,
    meta: dict[str, Any],
    item_id: int | None,
    source: str,
    at: str,
) -> int:
    """Write (or rewrite) a file's item and its chunks; the item's id."""
    scope = scope_of(repo)
    encoded = json.dumps(meta, sort_keys=True)
    if item_id is not None:
        tx.execute("DELETE FROM chunks WHERE item_id = ?", (item_id,))
        tx.execute(
            "UPDATE items SET content = ?, meta = ?, updated_at = ?, occurred_at = ?,"
            " version = version + 1 WHERE id = ?",
            (text, encoded, at, meta["time"], item_id),
        )
        # An item the indexer has not reached yet would be chunked twice; the queue that
        # re-cuts edited items must not re-cut this one by sentences either.
        tx.execute("DELETE FROM rechunk_queue WHERE item_id = ?", (item_id,))
    else:
        item_id = int(
            tx.scalar(
                "INSERT INTO items (tenant, scope, item_type, title, key, content, source,"
                " meta, created_at, updated_at, occurred_at)"
                " VALUES (?, ?, 'code', ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (tenant, scope, path, path, text, source, encoded, at, at, meta["time"]),
            )
        )
    insert_chunks(tx, item_id, text, line_spans(text), title=path)
    return item_id


def drop(tx: Tx, item_id: int) -> None:
    tx.execute("DELETE FROM items WHERE id = ?", (item_id,))


def searchable(size: int | None, encoding: str | None) -> bool:
    return encoding == "utf-8" and size is not None and size <= MAX_SEARCHABLE_BYTES
