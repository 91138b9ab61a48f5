"""Keeping chunks (and so the lexical index) in step with items.

New items are chunked off the write path by the upkeep worker (items above the ``chunks``
watermark are read directly by searches until then). An item that is already chunked and whose
text changes is queued (``rechunk_queue``): searches skip its stale chunks and read the item
itself, as they do for new items, until the worker re-cuts it. Re-indexing inside the edit
would make every edit pay for rewriting full-text pages (about 8 ms a note update at 100k notes,
against well under 1 ms for the edit itself). The re-cut keeps the chunks the new text still
has and deletes the others without a secure delete (``docs/decisions/0027``). Chunks go with
their item when it is deleted (a cascade that also removes them from the full-text index).
The chunk of an item that is one chunk keeps its span, not its text (``store/chunk_text.py``):
the queue keeps such an item's former text after an edit, until the re-cut.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..core.clock import MONTH_NAMES, parse_time
from ..store.base import CHUNK_FIELDS, Row, Tx, rows_by_id
from ..store.chunk_text import chunks_with_text
from ..store.hashes import text_key
from .chunk import Span, chunk_spans, code_spans

CHUNK_BATCH = 400
_MARK = "SELECT upto FROM index_marks WHERE name = 'chunks'"


def chunk_hash(text: str) -> bytes:
    """The key of a chunk's vector text (a SHA-256 prefix, ``store/hashes.py``)."""
    return text_key(text)


def as_cut(chunk: Row, text: str, speaker: str | None) -> bool:
    """Whether ``text``, the chunk's span of its item's text now, is the text the chunk was cut
    with (False when the item's text changed behind the store's back). Its vector text
    attests it: kept as a hash, or whole for a turn of a conversation (``speaker: text``, then
    the reply), whose hash also covers the next turn."""
    if chunk["embed_text"]:
        said = f"{speaker}: {text}"
        return bool(chunk["embed_text"] == said or chunk["embed_text"].startswith(said + "\n"))
    vector_text = f"{chunk['title']}\n{text}" if chunk["title"] else text
    return bool(chunk_hash(vector_text) == chunk["hash"])


def date_words(moment: str | None) -> str:
    """'2023-05-08T13:56:00.000000Z' -> '8 May 2023' (how people write dates in questions)."""
    if not moment:
        return ""
    try:
        stamp = parse_time(moment, "date")
    except Exception:  # a date we cannot read is simply not indexed as words
        return ""
    year, month, day = int(stamp[:4]), int(stamp[5:7]), int(stamp[8:10])
    return f"{day} {MONTH_NAMES[month - 1]} {year}"


def _neighbours(tx: Tx, row: Row) -> tuple[Row | None, Row | None]:
    """The previous and next turns of a message in its conversation. A conversation is kept
    in one scope: one of the same name in another scope is another conversation (its turns
    were indexed as this one's context, and a search in one scope answered for the other's
    words: a hunt over the doors)."""
    if row["session"] is None:
        return None, None
    common = "SELECT content, category FROM items WHERE tenant = ? AND session = ?"
    common += " AND scope = ? AND item_type = 'message'"
    where = (row["tenant"], row["session"], row["scope"], row["id"])
    before = tx.one(f"{common} AND id < ? ORDER BY id DESC LIMIT 1", where)
    after = tx.one(f"{common} AND id > ? ORDER BY id LIMIT 1", where)
    return before, after


_COLUMNS = CHUNK_FIELDS
# Where a chunk sits in its item, and what the indexes hold of it: when the second is equal in
# an old and a new cut, the old row is kept and only the first is updated.
_PLACE = slice(_COLUMNS.index("ordinal"), _COLUMNS.index("stop") + 1)
_SAME = slice(_COLUMNS.index("title"), _COLUMNS.index("hash") + 1)
_SAME_COLUMNS = _COLUMNS[_SAME]


def chunk_rows(tx: Tx, row: Row) -> list[tuple[Any, ...]]:
    """One item's chunks, as rows of ``CHUNK_FIELDS`` (``Tx.add_chunks``).

    Each chunk gets the words that describe it (``title``; ``context``: a message's speaker,
    date and neighbouring turns, an entry's category and tags) and the text its vector will
    mean. A message's vector text is "speaker: turn" followed by the reply it got: a turn's
    meaning is completed by its answer (LoCoMo dense R@10 rose from 46 to 55 on three
    conversations). The chunk's hash is that of its vector text, so unchanged text is never
    embedded twice."""
    text = row["content"]
    tags = " ".join(json.loads(row["tags"]))
    title, whole, after = "", False, None
    if row["item_type"] == "message":
        before, after = _neighbours(tx, row)
        speaker = json.loads(row["meta"]).get("speaker", "")
        context = " ".join(
            part
            for part in (
                speaker,
                date_words(row["occurred_at"]),
                before["content"] if before else "",
                after["content"] if after else "",
            )
            if part
        )
        whole = True
    elif row["item_type"] == "entry":
        context = f"{row['category']} {tags}".strip()
    elif row["item_type"] == "code":
        title, context = row["title"] or "", row["scope"]
    else:
        title = row["title"] or ""
        context = f"{row['category'] or ''} {tags}".strip()
    rows = []
    spans = code_spans(text) if row["item_type"] == "code" else chunk_spans(text, whole=whole)
    several = len(spans) > 1  # their chunks keep their text (store/chunk_text.py)
    for ordinal, span in enumerate(spans):
        body = text[span.start : span.end]
        embed_text = None
        if row["item_type"] == "message":
            embed_text = f"{row['category']}: {body}"
            if after is not None:
                embed_text += f"\n{after['category']}: {after['content']}"
        vector_text = embed_text or (f"{title}\n{body}" if title else body)
        rows.append(
            (
                row["tenant"],
                row["id"],
                ordinal,
                span.start,
                span.end,
                title,
                body,
                context,
                embed_text,
                chunk_hash(vector_text),
                body if several else None,
            )
        )
    return rows


def passage_key(title: str, body: str) -> bytes:
    """The key a passage cut by its writer is stored under (``chunks.hash``, indexed): what
    finds a document ingested again by its first passage."""
    return chunk_hash(f"{title}\n{body}" if title else body)


def insert_chunks(
    tx: Tx, tenant: str, item_id: int, text: str, spans: Sequence[Span], *, title: str = ""
) -> list[int]:
    """Chunks at given spans (documents and passages cut by their writer) of ``text``, the
    item's text; their ids. Spans in order, apart, and inside the text (``ValueError``
    otherwise): a passage is a span of the text, which its chunk may be read from
    (``store/chunk_text.py``)."""
    rows = []
    several = len(check_spans(text, spans)) > 1
    for ordinal, span in enumerate(spans):
        body = text[span.start : span.end]
        key = passage_key(title, body)
        rows.append(
            (tenant, item_id, ordinal, *span, title, body, "", None, key, body if several else None)
        )
    return tx.add_chunks(rows)


def check_spans(text: str, spans: Sequence[Span]) -> Sequence[Span]:
    """``spans``, when they are in order, apart and inside ``text``; else ``ValueError``."""
    end = 0
    for ordinal, span in enumerate(spans):
        if not end <= span.start <= span.end <= len(text):
            raise ValueError(f"passage {ordinal} ({span.start}-{span.end}) overlaps or overruns")
        end = span.end
    return spans


def rechunk(tx: Tx, tenant: str, item_id: int, cut_from: str | None = None) -> None:
    """Queue an item whose text or title changed for re-cutting (once the worker has chunked
    it at all; before that, the worker will read the current text anyway). ``cut_from`` is
    its text before this change, when the change is to its text: its chunks that keep no text
    hold that text's words until the re-cut (``store/chunk_text.py``); it is kept only when
    it has such a chunk (so never a long note's). A second change before the re-cut keeps the
    first one's: the chunks were cut from the oldest."""
    if item_id <= int(tx.scalar(_MARK)):
        if cut_from is not None and not tx.scalar(
            "SELECT 1 FROM chunks WHERE tenant = ? AND item_id = ? AND kept_text IS NULL LIMIT 1",
            (tenant, item_id),
        ):
            cut_from = None
        tx.execute(
            "INSERT INTO rechunk_queue (tenant, item_id, cut_from) VALUES (?, ?, ?)"
            " ON CONFLICT (tenant, item_id) DO UPDATE"
            " SET cut_from = coalesce(rechunk_queue.cut_from, excluded.cut_from)",
            (tenant, item_id, cut_from),
        )


def stale(alias: str, column: str = "item_id") -> str:
    """A condition true when the item ``alias.column`` (of the tenant ``alias.tenant``) has
    stale chunks: readers exclude its chunks and read the item directly."""
    return (
        f"EXISTS (SELECT 1 FROM rechunk_queue q WHERE q.tenant = {alias}.tenant"
        f" AND q.item_id = {alias}.{column})"
    )


def rechunk_backlog(tx: Tx) -> int:
    """Re-cut the next queued items; return how many.

    A chunk whose words and vector text the new cut has too is kept (its id, its vector and
    its full-text entry; only its position is updated): an edit of one paragraph of a long
    note replaces one chunk, not all of them. The others are superseded
    (``Tx.delete_superseded_chunks``): on SQLite their words stay in the full-text index,
    found by no search, until the upkeep (decisions 0072, 0073: after a pause of the writes, in
    a share of the time, at a close) or a forget erases them (a secure delete of each was most
    of the cost of a re-cut)."""
    queued = [
        (str(row["tenant"]), int(row["item_id"]))
        for row in tx.all(
            "SELECT tenant, item_id FROM rechunk_queue /* every tenant */ ORDER BY item_id LIMIT ?",
            (CHUNK_BATCH,),
        )
    ]
    _recut(tx, queued)
    return len(queued)


def turns_beside(tx: Tx, tenant: str, item_ids: Sequence[int]) -> list[int]:
    """The messages whose chunks hold words of the messages ``item_ids`` as their context
    (the nearest turns before and after each, in its conversation), leaving out those given:
    what a forget of those messages must re-cut (:func:`recut_now`)."""
    gone = set(item_ids)
    beside: set[int] = set()
    turns = rows_by_id(
        tx,
        "SELECT id, session, scope FROM items",
        gone,
        where="tenant = ? AND item_type = 'message' AND session IS NOT NULL",
        params=(tenant,),
    )
    near = "SELECT id FROM items WHERE tenant = ? AND session = ? AND scope = ?"
    near += " AND item_type = 'message'"
    for item_id, row in turns.items():
        for order, side in (("DESC", "<"), ("", ">")):
            for other in tx.all(
                f"{near} AND id {side} ? ORDER BY id {order} LIMIT ?",
                (tenant, row["session"], row["scope"], item_id, len(gone) + 1),
            ):
                if int(other["id"]) not in gone:
                    beside.add(int(other["id"]))
                    break
    return sorted(beside)


def recut_now(tx: Tx, tenant: str, item_ids: Sequence[int]) -> None:
    """Re-cut these items inside this transaction (a forget: their chunks must not keep the
    forgotten words until the worker comes by). Items not chunked yet are left to it."""
    mark = int(tx.scalar(_MARK))
    _recut(tx, [(tenant, item_id) for item_id in item_ids if item_id <= mark])


def _recut(tx: Tx, items: list[tuple[str, int]]) -> None:
    """Cut the items ``(tenant, id)`` again from their text (see :func:`rechunk_backlog`), and
    take them off the re-cut queue where they were on it."""
    superseded: list[tuple[str, int, int]] = []
    moved: list[tuple[int, int, int, str, int]] = []
    fresh: list[tuple[Any, ...]] = []
    for tenant, item_id in items:
        row = tx.one("SELECT * FROM items WHERE tenant = ? AND id = ?", (tenant, item_id))
        spare: dict[tuple[Any, ...], list[Row]] = {}
        for old in chunks_with_text(  # as they were cut (the text before the edit)
            tx, "c.tenant = ? AND c.item_id = ? ORDER BY c.ordinal", (tenant, item_id)
        ):
            spare.setdefault(tuple(old[c] for c in _SAME_COLUMNS), []).append(old)
        for new in chunk_rows(tx, row) if row is not None else []:
            alike = spare.get(new[_SAME])
            if not alike:
                fresh.append(new)
                continue
            kept = alike.pop(0)
            if tuple(kept[c] for c in _COLUMNS[_PLACE]) != new[_PLACE]:
                moved.append((*new[_PLACE], tenant, int(kept["id"])))
        superseded += [(tenant, item_id, int(c["id"])) for left in spare.values() for c in left]
    tx.delete_superseded_chunks(superseded)
    tx.executemany(
        "UPDATE chunks SET ordinal = ?, start = ?, stop = ? WHERE tenant = ? AND id = ?", moved
    )
    # The kept chunks' text is the item's own now, at their new places: the old text goes.
    tx.executemany("DELETE FROM rechunk_queue WHERE tenant = ? AND item_id = ?", items)
    tx.add_chunks(fresh)


def chunk_backlog(tx: Tx) -> int:
    """Chunk the next items above the watermark; return how many items it moved over."""
    upto = int(tx.scalar(_MARK))
    rows = tx.all(
        "SELECT * FROM items /* every tenant */ WHERE id > ? ORDER BY id LIMIT ?",
        (upto, CHUNK_BATCH),
    )
    if not rows:
        return 0
    done = {
        r["item_id"]
        for r in tx.all(  # documents are cut when they are stored
            "SELECT DISTINCT item_id FROM chunks /* every tenant */"
            " WHERE item_id > ? AND item_id <= ?",
            (upto, rows[-1]["id"]),
        )
    }
    tx.add_chunks([chunk for row in rows if row["id"] not in done for chunk in chunk_rows(tx, row)])
    tx.execute("UPDATE index_marks SET upto = ? WHERE name = 'chunks'", (rows[-1]["id"],))
    return int(rows[-1]["id"]) - upto


def unchunked(tx: Tx) -> int:
    """Items not (or no longer) chunked: new ones and those waiting to be re-cut."""
    fresh = int(tx.scalar(f"SELECT count(*) FROM items /* every tenant */ WHERE id > ({_MARK})"))
    return fresh + int(tx.scalar("SELECT count(*) FROM rechunk_queue /* every tenant */"))


def chunk_mark(tx: Tx) -> int:
    return int(tx.scalar(_MARK))
