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
found by ``GLOB`` without Python): each is given its new words (``respelling.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..unspaced import folded_or_none, indexed_or_none
from ..width_forms import has_width_forms
from .respelling import FIELDS, Words, respell
from .unspaced_words import FOLDED_FUNCTION, folded, guard, rewire

if TYPE_CHECKING:
    from ..base import Tx

_WIDTH_FORM = "{0} GLOB '*[\uff01-\uffee]*'"
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
        texts = tuple(row[field] for field in FIELDS)
        if any(has_width_forms(text) for text in texts):
            old = tuple(map(indexed_or_none, texts))
            new = tuple(map(folded_or_none, texts))
            if old != new:
                changed.append((int(row["id"]), old, new))
    return changed


def m048_width_forms(tx: Tx) -> None:
    """The step (registered in later_steps.py)."""
    rewire(tx, folded, GUARDS, old_guards=True)
    respell(tx, _WIDTH_FORM, _refolded)
