"""A chunk's text is its span of its item's text (``docs/decisions/0029-chunk-spans.md``).

A chunk row keeps where it sits in its item (``start``, ``stop``: code points). Most items are
one chunk (an entry, a note, a turn): their chunk's text was the item's text a second time, a
third of the file, and is no longer kept; readers slice the item's text, which costs no more
to read than the chunk would. A chunk of an item cut into several (a long note, a document, a
source file) keeps its text (``kept_text``): reading one passage never reads a whole document,
and an edit of a long note never copies it.

While an item waits to be re-cut after an edit of its text, the chunks that keep no text still
hold the words of the text they were cut from. That text is kept meanwhile in
``rechunk_queue.cut_from`` (NULL when the text did not change, or every chunk keeps its own),
because the full-text index must be told exactly the words it holds to remove them, and the
re-cut compares the old chunks with the new. So a chunk's text is always
``coalesce(kept_text, coalesce(cut_from, content)[start:stop])``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .base import Tx

CUT_TEXT = "coalesce(q.cut_from, i.content)"
"""The text the chunks of item ``i`` that keep none were cut from, with :data:`CUT_JOIN`."""
SEVERAL = (
    "(SELECT count(*) FROM chunks o WHERE o.tenant = chunks.tenant"
    " AND o.item_id = chunks.item_id) > 1"
)
"""Whether a row of ``chunks`` belongs to an item cut into several (the rows that keep their
text, when the migration gives it to them)."""
CUT_JOIN = "LEFT JOIN rechunk_queue q ON q.tenant = i.tenant AND q.item_id = i.id"
_ITEMS_PER_QUERY = 500  # texts held at once: an item may be megabytes


def cut_texts(tx: Tx, item_ids: Iterable[int], tenant: str | None) -> dict[int, str]:
    """The text each item's chunks were cut from, by item id: ``tenant``'s items, or any
    tenant's when ``tenant`` is None (the upkeep's work on every tenant)."""
    wanted = sorted(set(item_ids))
    found: dict[int, str] = {}
    for first in range(0, len(wanted), _ITEMS_PER_QUERY):
        part = wanted[first : first + _ITEMS_PER_QUERY]
        marks = ",".join("?" * len(part))
        if tenant is None:
            sql = f"SELECT i.id, {CUT_TEXT} AS text FROM items i {CUT_JOIN} /* every tenant */"
            sql += f" WHERE i.id IN ({marks})"
            params: list[Any] = part
        else:
            sql = f"SELECT i.id, {CUT_TEXT} AS text FROM items i {CUT_JOIN}"
            sql += f" WHERE i.tenant = ? AND i.id IN ({marks})"
            params = [tenant, *part]
        for row in tx.all(sql, params):
            found[int(row["id"])] = str(row["text"])
    return found


def bodies(tx: Tx, chunks: Iterable[Mapping[str, Any]], tenant: str | None) -> dict[int, str]:
    """The text of each chunk (rows with ``id``, ``item_id``, ``start``, ``stop`` and
    ``kept_text``), by chunk id; each item's text is read once, however many of its chunks
    are asked for, and only for chunks that keep no text."""
    found: dict[int, str] = {}
    sliced = []
    for row in chunks:
        # No such column before m021; keys(): `in` tests the values of an sqlite3.Row.
        kept = row["kept_text"] if "kept_text" in row.keys() else None  # noqa: SIM118
        if kept is not None:
            found[int(row["id"])] = str(kept)
        else:
            sliced.append(row)
    texts = cut_texts(tx, (int(row["item_id"]) for row in sliced), tenant)
    for row in sliced:
        text = texts.get(int(row["item_id"]))
        if text is not None:
            found[int(row["id"])] = text[int(row["start"]) : int(row["stop"])]
    return found


def with_bodies(
    tx: Tx, chunks: Iterable[Mapping[str, Any]], tenant: str | None
) -> list[dict[str, Any]]:
    """The rows as dicts, each with its ``body``."""
    rows = [dict(row) for row in chunks]
    texts = bodies(tx, rows, tenant)
    return [{**row, "body": texts.get(int(row["id"]), "")} for row in rows]


def keep_cut_texts(tx: Tx) -> None:
    """Migration ``m021_chunk_spans``, both backends, while chunks still hold their text (and
    those of items cut into several have been given it to keep): an item whose other chunks
    do not all read as their span of its text (edited since it was cut: queued to be re-cut,
    or should be) keeps what they say of the text they were cut from in ``cut_from``, and is
    queued to be re-cut."""
    last = 0
    while True:
        items = tx.all(
            "SELECT i.id, i.tenant, i.content FROM items i /* every tenant */ WHERE i.id > ?"
            " AND EXISTS (SELECT 1 FROM chunks c WHERE c.tenant = i.tenant AND c.item_id = i.id)"
            " ORDER BY i.id LIMIT ?",
            (last, _ITEMS_PER_QUERY),
        )
        if not items:
            return
        for item in items:
            chunks = tx.all(
                "SELECT start, stop, body FROM chunks WHERE tenant = ? AND item_id = ?"
                " AND kept_text IS NULL ORDER BY start, id",
                (item["tenant"], item["id"]),
            )
            text = str(item["content"])
            if any(c["body"] != text[c["start"] : c["stop"]] for c in chunks):
                tx.execute(
                    "INSERT INTO rechunk_queue (tenant, item_id, cut_from) VALUES (?, ?, ?)"
                    " ON CONFLICT (tenant, item_id) DO UPDATE SET cut_from = excluded.cut_from",
                    (item["tenant"], item["id"], _told(chunks)),
                )
        last = int(items[-1]["id"])


def _told(chunks: Iterable[Mapping[str, Any]]) -> str:
    """A text holding each chunk's stored body at its span, blanks between: all the chunks say
    of the text they were cut from. Of overlapping chunks, the first keeps its place."""
    parts, at = [], 0
    for chunk in chunks:
        start, body = int(chunk["start"]), str(chunk["body"])
        if start >= at:
            parts += [" " * (start - at), body]
            at = start + len(body)
    return "".join(parts)
