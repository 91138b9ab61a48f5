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
``coalesce(kept_text, coalesce(cut_from, content)[start:stop])``, and it is the text the
full-text index was given for the chunk: the search's exact-word check relies on it, looking
for a query's words only in the ASCII texts whose indexed words include them
(``retrieval/exact.py``). The writes
that change an item's text keep it so: an edit queues the item to be re-cut, in its own
transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .base import Params, Tx

CUT_TEXT = "coalesce(q.cut_from, i.content)"
"""The text the chunks of item ``i`` that keep none were cut from, with :data:`CUT_JOIN`."""
CUT_JOIN = "LEFT JOIN rechunk_queue q ON q.tenant = i.tenant AND q.item_id = i.id"
KEPT = "c.kept_text"
WHOLE = "CASE WHEN c.kept_text IS NULL THEN coalesce(q.cut_from, i.content) END"
"""With :data:`CHUNK_JOIN`: the text chunk ``c`` keeps, or else the text it was cut from (read
only then: a long document is never read for one passage); Python slices the chunk's span out of
it (cheaper than SQL's ``substr``, which counts its way through the text)."""
CHUNK_JOIN = (
    "JOIN items i ON i.tenant = c.tenant AND i.id = c.item_id"
    " LEFT JOIN rechunk_queue q ON q.tenant = c.tenant AND q.item_id = c.item_id"
)
SEVERAL = (
    "(SELECT count(*) FROM chunks o WHERE o.tenant = chunks.tenant"
    " AND o.item_id = chunks.item_id) > 1"
)
"""Whether a row of ``chunks`` belongs to an item cut into several (the rows that keep their
text, when the migration gives it to them)."""
_IDS_PER_QUERY = 500


_TEXT_ALIASES = ("at_", "to_", "kept_", "whole_")


def text_columns() -> str:
    """The columns :func:`text_of` reads, for a query over chunks ``c`` that joins their items
    ``i`` and ``rechunk_queue q`` as :data:`CHUNK_JOIN` does."""
    return f"c.start AS at_, c.stop AS to_, {KEPT} AS kept_, {WHOLE} AS whole_"


def text_of(row: Mapping[str, Any]) -> str:
    """The text of the chunk of a row that has :func:`text_columns`: the text it keeps, or
    Python's slice of its span of the text it was cut from (cheaper than SQL's ``substr``)."""
    kept = row["kept_"]
    return str(kept) if kept is not None else str(row["whole_"])[row["at_"] : row["to_"]]


def chunks_with_text(
    tx: Tx, where: str, params: Params, *, every_tenant: bool = False
) -> list[dict[str, Any]]:
    """Rows of ``chunks c`` (every column) matching ``where`` (conditions on ``c``, then any
    ``ORDER BY`` and ``LIMIT``), each with its text as ``body``."""
    scope = " /* every tenant */" if every_tenant else ""
    found = []
    for row in tx.all(
        f"SELECT c.*, {text_columns()} FROM chunks c {CHUNK_JOIN}{scope} WHERE {where}", params
    ):
        chunk = dict(row)
        chunk["body"] = text_of(row)
        for alias in _TEXT_ALIASES:
            del chunk[alias]
        found.append(chunk)
    return found


def by_id(tx: Tx, chunk_ids: Iterable[int], tenant: str | None) -> dict[int, dict[str, Any]]:
    """The chunks ``chunk_ids`` of ``tenant`` (any tenant's when None), with their text."""
    wanted = sorted(set(chunk_ids))
    found: dict[int, dict[str, Any]] = {}
    for first in range(0, len(wanted), _IDS_PER_QUERY):
        part: Sequence[Any] = wanted[first : first + _IDS_PER_QUERY]
        marks = ",".join("?" * len(part))
        if tenant is not None:
            part = [tenant, *part]
        rows = chunks_with_text(
            tx,
            ("c.tenant = ? AND " if tenant is not None else "") + f"c.id IN ({marks})",
            part,
            every_tenant=tenant is None,
        )
        found.update((int(row["id"]), row) for row in rows)
    return found


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
            (last, _IDS_PER_QUERY),
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
