"""Width forms folded in SQLite's word index: the step ``m048_width_forms``
(``docs/decisions/0161-width-forms-are-one-word.md``).

From the step on, ``chunk_fts`` is given each text with its fullwidth and halfwidth forms
folded (``store/width_forms.py``), then spelled as since m045. The index is contentless, so
the words a row leaves with must be those it was given: the delete triggers now call
``recuerdo_folded_words`` where they called ``recuerdo_words``. A new name, not a new meaning
for the old one: a process of a version before the step still open on the file has only
``recuerdo_words``, which would take a fullwidth chunk out with other words than it was given
(the index damaged); with the new name its deletes, chunk inserts and stale erasures stop
("no such function"), as 0147's guards stopped the versions before them.

The rows whose text the fold changes are few in any memory (a character of U+FF01-U+FFEE,
found by ``GLOB`` without Python): each is taken out with its old words and given its new
ones; a stale chunk's words are erased, as the upkeep would have. Other rows are not read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..chunk_text import chunks_with_text
from ..unspaced import folded_or_none, indexed_or_none
from ..width_forms import has_width_forms
from .superseded_schema import DELETE_WORDS
from .unspaced_words import FOLDED_FUNCTION, folded, guard

if TYPE_CHECKING:
    from ..base import Tx

_WIDTH_FORM = "{0} GLOB '*[\uff01-\uffee]*'"
_FIELDS = ("title", "body", "context")
_BATCH = 500
GUARDS = (
    guard("INSERT", "chunks", FOLDED_FUNCTION, "folded"),
    guard("DELETE", "chunk_fts_stale", FOLDED_FUNCTION, "folded"),
)
"""0147's two guards, calling the new function (they replace those calling the old one)."""


def _refolded(texts: tuple[str | None, ...]) -> bool:
    """Whether the fold changes the words of a (title, body, context)."""
    return any(
        has_width_forms(text) and folded_or_none(text) != indexed_or_none(text) for text in texts
    )


def m048_width_forms(tx: Tx) -> None:
    """The step (registered in later_steps.py)."""
    from . import stale_words
    from .chunk_spans import INDEXED, INSERT_WORDS, chunk_delete_trigger, item_delete_trigger

    for trigger in (
        "items_chunk_words",
        "chunk_fts_delete",
        "items_stale_words",
        "chunks_words_spelled",
        "chunk_fts_stale_words_spelled",
    ):
        tx.execute(f"DROP TRIGGER {trigger}")
    tx.execute(item_delete_trigger(folded))
    tx.execute(chunk_delete_trigger(stale_words.NOT_LISTED.format(chunk="old.id"), folded))
    tx.execute(stale_words.item_delete_trigger(folded))
    for trigger in GUARDS:
        tx.execute(trigger)
    held = f"{INDEXED.format(chunk='c')} AND {stale_words.NOT_LISTED.format(chunk='c.id')}"
    texts_of = ("c.title", "c.context", "coalesce(c.kept_text, q.cut_from, i.content)")
    with_forms = " OR ".join(_WIDTH_FORM.format(column) for column in texts_of)
    last = 0
    while rows := chunks_with_text(
        tx,
        f"c.id > ? AND ({with_forms}) AND {held} ORDER BY c.id LIMIT ?",
        (last, _BATCH),
        every_tenant=True,
    ):
        last = int(rows[-1]["id"])
        changed = [
            (row["id"], texts)
            for row in rows
            if _refolded(texts := tuple(row[field] for field in _FIELDS))
        ]
        tx.executemany(
            f"{DELETE_WORDS} VALUES ('delete', ?, ?, ?, ?)",
            [(chunk_id, *map(indexed_or_none, texts)) for chunk_id, texts in changed],
        )
        tx.executemany(
            INSERT_WORDS, [(chunk_id, *map(folded_or_none, t)) for chunk_id, t in changed]
        )
    condition = " OR ".join(_WIDTH_FORM.format(field) for field in _FIELDS)
    stale = [
        (row["id"], texts)
        for row in tx.all(
            f"SELECT id, title, body, context FROM {stale_words.TABLE} /* every tenant */"
            f" WHERE {condition}"
        )
        if _refolded(texts := tuple(row[field] for field in _FIELDS))
    ]
    tx.executemany(
        f"{DELETE_WORDS} VALUES ('delete', ?, ?, ?, ?)",
        [(chunk_id, *map(indexed_or_none, texts)) for chunk_id, texts in stale],
    )
    for chunk_id, _ in stale:
        tx.execute(f"DELETE FROM {stale_words.TABLE} /* every tenant */ WHERE id = ?", (chunk_id,))
