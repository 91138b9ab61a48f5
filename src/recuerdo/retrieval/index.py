"""Keeping chunks (and so the lexical index) in step with items.

New items are chunked off the write path by the upkeep worker (items above the ``chunks``
watermark are read directly by searches until then). An item that is already chunked is
re-chunked inside the transaction that changes its text, and its chunks go with it when it is
deleted (a cascade that also removes them from the full-text index).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from ..clock import parse_time
from ..store.base import Row, Tx
from .chunk import chunk_spans

CHUNK_BATCH = 400
_MARK = "SELECT upto FROM index_marks WHERE name = 'chunks'"
_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]


def chunk_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def date_words(moment: str | None) -> str:
    """'2023-05-08T13:56:00.000000Z' -> '8 May 2023' (how people write dates in questions)."""
    if not moment:
        return ""
    try:
        stamp = parse_time(moment, "date")
    except Exception:  # a date we cannot read is simply not indexed as words
        return ""
    year, month, day = int(stamp[:4]), int(stamp[5:7]), int(stamp[8:10])
    return f"{day} {_MONTHS[month - 1]} {year}"


def _neighbours(tx: Tx, row: Row) -> str:
    """The previous and next turns of a message, as context words."""
    if row["session"] is None:
        return ""
    found = tx.all(
        "SELECT content FROM (SELECT content, id FROM items WHERE tenant = ? AND session = ?"
        " AND item_type = 'message' AND id < ? ORDER BY id DESC LIMIT 1)"
        " UNION ALL SELECT content FROM (SELECT content, id FROM items WHERE tenant = ?"
        " AND session = ? AND item_type = 'message' AND id > ? ORDER BY id LIMIT 1)",
        (row["tenant"], row["session"], row["id"], row["tenant"], row["session"], row["id"]),
    )
    return " ".join(r["content"] for r in found)


def _describe(tx: Tx, row: Row) -> tuple[str, str, bool]:
    """(title words, context words, whole) for an item's chunks."""
    tags = " ".join(json.loads(row["tags"]))
    kind = row["item_type"]
    if kind == "message":
        meta = json.loads(row["meta"])
        context = " ".join(
            part
            for part in (
                meta.get("speaker", ""),
                date_words(row["occurred_at"]),
                _neighbours(tx, row),
            )
            if part
        )
        return "", context, True
    if kind == "entry":
        return "", f"{row['category']} {tags}".strip(), False
    return row["title"] or "", f"{row['category'] or ''} {tags}".strip(), False


def index_item(tx: Tx, row: Row) -> int:
    """Cut one item into chunks and index them; return how many."""
    title, context, whole = _describe(tx, row)
    text = row["content"]
    rows = []
    for ordinal, span in enumerate(chunk_spans(text, whole=whole)):
        body = text[span.start : span.end]
        rows.append(
            (row["id"], ordinal, span.start, span.end, title, body, context, chunk_hash(body))
        )
    tx.executemany(
        "INSERT INTO chunks (item_id, ordinal, start, stop, title, body, context, hash)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    return len(rows)


def rechunk(tx: Tx, item_id: int) -> None:
    """Re-cut an item whose text or title changed (only once the worker has chunked it)."""
    if item_id > int(tx.scalar(_MARK)):
        return  # the worker has not reached it yet and will read the current text
    tx.execute("DELETE FROM chunks WHERE item_id = ?", (item_id,))
    row = tx.one("SELECT * FROM items WHERE id = ?", (item_id,))
    if row is not None:
        index_item(tx, row)


def chunk_backlog(tx: Tx) -> int:
    """Chunk the next items above the watermark; return how many items it moved over."""
    upto = int(tx.scalar(_MARK))
    rows = tx.all("SELECT * FROM items WHERE id > ? ORDER BY id LIMIT ?", (upto, CHUNK_BATCH))
    if not rows:
        return 0
    for row in rows:
        index_item(tx, row)
    tx.execute("UPDATE index_marks SET upto = ? WHERE name = 'chunks'", (rows[-1]["id"],))
    return int(rows[-1]["id"]) - upto


def unchunked(tx: Tx) -> int:
    return int(tx.scalar(f"SELECT count(*) FROM items WHERE id > ({_MARK})"))


def chunk_mark(tx: Tx) -> int:
    return int(tx.scalar(_MARK))


def item_ids_with_chunks(tx: Tx, ids: Sequence[int]) -> set[int]:
    marks = ",".join("?" * len(ids))
    return {
        r["item_id"]
        for r in tx.all(
            f"SELECT DISTINCT item_id FROM chunks WHERE item_id IN ({marks})", list(ids)
        )
    }
