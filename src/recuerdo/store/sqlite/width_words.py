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
Past a few such rows the old words are marked deleted rather than securely deleted one by one,
and one merge of the index drops them (as ``stale_words.erase_all``): no page keeps them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..chunk_text import CHUNK_JOIN, chunks_with_text
from ..unspaced import folded_or_none, indexed_or_none
from ..width_forms import has_width_forms
from .driver import FTS5_SECURE_DELETE
from .superseded_schema import DELETE_WORDS, PURGE
from .unspaced_words import FOLDED_FUNCTION, folded, guard, rewire

if TYPE_CHECKING:
    from ..base import Tx

_WIDTH_FORM = "{0} GLOB '*[\uff01-\uffee]*'"
_FIELDS = ("title", "body", "context")
_BATCH = 500
Words = tuple[str | None, ...]
GUARDS = (
    guard("INSERT", "chunks", FOLDED_FUNCTION, "folded"),
    guard("DELETE", "chunk_fts_stale", FOLDED_FUNCTION, "folded"),
)
"""0147's two guards, calling the new function (they replace those calling the old one)."""


def _refolded(rows: list[Any]) -> list[tuple[int, Words, Words]]:
    """The rows whose (title, body, context) the fold gives other words: each id with its
    old words and its new ones (each text spelled once: spelling costs more than the rest)."""
    changed = []
    for row in rows:
        texts = tuple(row[field] for field in _FIELDS)
        if any(has_width_forms(text) for text in texts):
            old = tuple(map(indexed_or_none, texts))
            new = tuple(map(folded_or_none, texts))
            if old != new:
                changed.append((int(row["id"]), old, new))
    return changed


def m048_width_forms(tx: Tx) -> None:
    """The step (registered in later_steps.py)."""
    from . import stale_words
    from .chunk_spans import INDEXED, INSERT_WORDS

    rewire(tx, folded, GUARDS, old_guards=True)
    held = f"{INDEXED.format(chunk='c')} AND {stale_words.NOT_LISTED.format(chunk='c.id')}"
    texts_of = ("c.title", "c.context", "coalesce(c.kept_text, q.cut_from, i.content)")
    with_forms = " OR ".join(_WIDTH_FORM.format(column) for column in texts_of)
    condition = " OR ".join(_WIDTH_FORM.format(field) for field in _FIELDS)
    # A secure delete rewrites the pages of each row's words (8.3 s of 9.7 for 5,000 notes
    # of fullwidth and halfwidth text): past a few rows, each is marked deleted instead and
    # one merge of the index drops the old words with their markers, as erase_all does.
    many = tx.scalar(
        f"SELECT (SELECT count(*) FROM chunks c {CHUNK_JOIN} /* every tenant */"
        f" WHERE ({with_forms}) AND {held}) + (SELECT count(*) FROM {stale_words.TABLE}"
        f" /* every tenant */ WHERE {condition})"
    )
    merged = FTS5_SECURE_DELETE and int(many) > stale_words.ERASE_ONE_BY_ONE
    if FTS5_SECURE_DELETE:
        # Set here, not left to the open's settings, which are written after the steps: a
        # file last written by a library without it holds none, and each row's old words
        # would stay in the index's pages, marked deleted, after its note is forgotten.
        tx.execute(stale_words.SECURE_DELETE, (0 if merged else 1,))
    last = 0
    while rows := chunks_with_text(
        tx,
        f"c.id > ? AND ({with_forms}) AND {held} ORDER BY c.id LIMIT ?",
        (last, _BATCH),
        every_tenant=True,
    ):
        last = int(rows[-1]["id"])
        changed = _refolded(rows)
        tx.executemany(
            f"{DELETE_WORDS} VALUES ('delete', ?, ?, ?, ?)",
            [(chunk_id, *old) for chunk_id, old, _ in changed],
        )
        tx.executemany(INSERT_WORDS, [(chunk_id, *new) for chunk_id, _, new in changed])
    stale = _refolded(
        tx.all(
            f"SELECT id, title, body, context FROM {stale_words.TABLE} /* every tenant */"
            f" WHERE {condition}"
        )
    )
    tx.executemany(
        f"{DELETE_WORDS} VALUES ('delete', ?, ?, ?, ?)",
        [(chunk_id, *old) for chunk_id, old, _ in stale],
    )
    tx.executemany(
        f"DELETE FROM {stale_words.TABLE} /* every tenant */ WHERE id = ?",
        [(chunk_id,) for chunk_id, _, _ in stale],
    )
    if merged:
        tx.execute(stale_words.SECURE_DELETE, (1,))
        tx.execute(PURGE)
