"""Thai, Lao, Khmer and Myanmar as their letters in SQLite's word index: the step
``m049_unmarked_words`` (``docs/decisions/0174-words-of-thai-lao-khmer-and-myanmar.md``).

From the step on, ``chunk_fts`` is given a run of these scripts as the pairs and letters of
its letters, their combining marks left out (``store/unspaced.py``): the delete triggers
call ``recuerdo_unmarked_words`` where they called ``recuerdo_folded_words``. A new name
again, as m048 took one: a process of a version before the step, still open on the file,
would take a Thai chunk out with other words than it was given (the index damaged); with the
new name its deletes, chunk inserts and stale erasures stop ("no such function").

The rows whose words change are those with a character of these scripts' blocks (found by
``GLOB``): each is given its new words (``respelling.py``); no other row is read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..unspaced import MARKED_BLOCKS, folded_or_none, words_of
from .respelling import FIELDS, Words, respell
from .unspaced_words import UNMARKED_FUNCTION, guard, rewire, unmarked

if TYPE_CHECKING:
    from ..base import Tx

_MARKED = "{0} GLOB '*[" + "".join(f"{chr(a)}-{chr(b)}" for a, b in MARKED_BLOCKS) + "]*'"
GUARDS = (
    guard("INSERT", "chunks", UNMARKED_FUNCTION, "unmarked"),
    guard("DELETE", "chunk_fts_stale", UNMARKED_FUNCTION, "unmarked"),
)
"""m048's two guards, calling the new function (they replace those calling the old one)."""


def _unmarked(rows: list[Any]) -> list[tuple[int, Words, Words]]:
    """The rows whose (title, body, context) the step gives other words: each id with its old
    words and its new ones."""
    changed = []
    for row in rows:
        texts = tuple(row[field] for field in FIELDS)
        old = tuple(map(folded_or_none, texts))
        new = tuple(map(words_of, texts))
        if old != new:
            changed.append((int(row["id"]), old, new))
    return changed


def m049_unmarked_words(tx: Tx) -> None:
    """The step (registered in later_steps.py)."""
    rewire(tx, unmarked, GUARDS, old_guards=True, replaced="folded")
    respell(tx, _MARKED, _unmarked)
