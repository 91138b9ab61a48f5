"""Words of unspaced scripts and symbols in SQLite's word index: the step
``m045_unspaced_words`` (``docs/decisions/0147-words-of-unspaced-scripts.md``).

FTS5 takes tokenizers from C only, so ``chunk_fts`` is given each text spelled out by
:func:`~recuerdo.store.unspaced.indexed_text` (a run of Han, Kana or Hangul as its pairs and
characters, a symbol as a word), and ``unicode61`` cuts the spelled text as it cut any text.
The index is contentless: a row leaves it only when told the exact words it was given, so
every way words leave says them spelled the same way. In Python (new chunks, a re-cut that
deletes at once, the erasure of stale chunks, a refill) through :func:`as_indexed`; in the
delete triggers through the SQL function ``recuerdo_words``, which every connection of the
store registers (``files.py``). Two guard triggers call it too, so that a process of a
version before the step, whose connections lack it, cannot write the index unspelled.

A store opened at a schema before the step (a restore's, before it takes the later steps)
holds the words as given, and its triggers say them so: :func:`as_indexed` gives them so
there too. The step replaces the three triggers, and where any chunk's text (or a stale
chunk's) reads otherwise spelled, empties the index and fills it again (a contentless index
cannot tell which of its rows were given which words).

Since ``m048_width_forms`` (``width_words.py``) each text has its width forms folded before it
is spelled (:func:`~recuerdo.store.unspaced.folded_text`), and the triggers and guards call
``recuerdo_folded_words``; since ``m049_unmarked_words`` (``unmarked_words.py``) a run of
Thai, Lao, Khmer or Myanmar is spelled as its letters, and they call
``recuerdo_unmarked_words``. :func:`spelling` says which of the four a store's schema uses.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..chunk_text import chunks_with_text
from ..migrations import has_step
from ..unspaced import folded_or_none, indexed_or_none, words_of

if TYPE_CHECKING:
    from ..base import Tx

STEP = "m045_unspaced_words"
FUNCTION = "recuerdo_words"
FOLDED_STEP = "m048_width_forms"
FOLDED_FUNCTION = "recuerdo_folded_words"
"""Width forms folded too (decision 0161, ``width_words.py``): a function of its own name, so
that a process of a version before that step, which has only ``recuerdo_words``, stops at
the triggers instead of taking out words other than those the index was given."""
UNMARKED_STEP = "m049_unmarked_words"
UNMARKED_FUNCTION = "recuerdo_unmarked_words"
"""Thai, Lao, Khmer and Myanmar as their letters (decision 0174, ``unmarked_words.py``): a
name of its own again, for the reason above."""
Spelling = Callable[[str | None], str | None]
_PAST_ASCII = "length(CAST({0} AS BLOB)) <> length({0})"
_BATCH = 500


def guard(when: str, table: str, function: str = FUNCTION, name: str = "spelled") -> str:
    """A trigger that does nothing where ``function`` is registered and stops the statement
    where it is not: a process of a version before the step (its connections have no such
    function) would give the index unspelled words, or take spelled ones out unspelled, and a
    later delete of those would find the index damaged (m048 makes them again with
    ``recuerdo_folded_words``, ``name`` "folded")."""
    return (
        f"CREATE TRIGGER {table}_words_{name} BEFORE {when} ON {table}"
        f" WHEN {function}(NULL) IS NOT NULL BEGIN SELECT 1; END"
    )


GUARDS = (guard("INSERT", "chunks"), guard("DELETE", "chunk_fts_stale"))
"""A new chunk's words and a stale chunk's erasure: the two writes of the index an older
process makes in Python (its deletes of chunks and items already stop at the triggers)."""


def spelled(column: str) -> str:
    """An SQL text as the index is given it, from the step on (to the next)."""
    return f"{FUNCTION}({column})"


def folded(column: str) -> str:
    """An SQL text as the index is given it, from the step ``m048_width_forms`` on."""
    return f"{FOLDED_FUNCTION}({column})"


def unmarked(column: str) -> str:
    """An SQL text as the index is given it, from the step ``m049_unmarked_words`` on."""
    return f"{UNMARKED_FUNCTION}({column})"


def _as_given(text: str | None) -> str | None:
    return text


def spelling(tx: Tx) -> Spelling:
    """How the store's schema gives the index a text: folded and spelled with the letters of
    Thai and the others (m049), folded and spelled (m048), spelled (m045), or as it is."""
    if has_step(tx, UNMARKED_STEP):
        return words_of
    if has_step(tx, FOLDED_STEP):
        return folded_or_none
    return indexed_or_none if has_step(tx, STEP) else _as_given


def as_indexed(
    tx: Tx, texts: Sequence[str | None], *, spell: Spelling | None = None
) -> tuple[str | None, ...]:
    """A chunk's (title, body, context) as the words index is given them (``spell`` None: as
    the store's schema says, asked only of a text that some step's spelling changes)."""
    # A text the newest spelling leaves as it is, every older one leaves so too.
    words = tuple(words_of(text) for text in texts)
    if words == tuple(texts):
        return words
    if spell is None:
        spell = spelling(tx)
    return words if spell is words_of else tuple(spell(text) for text in texts)


def rewire(
    tx: Tx,
    words: Callable[[str], str],
    guards: Sequence[str],
    *,
    old_guards: bool = False,
    replaced: str = "spelled",
) -> None:
    """The three delete triggers made again, each text wrapped by ``words`` as the index is
    now given it, and ``guards`` made (replacing the guards named ``replaced``, those of 0147
    by default, where ``old_guards``): m045's, m048's and m049's."""
    from . import stale_words
    from .chunk_spans import chunk_delete_trigger, item_delete_trigger

    dropped = ("items_chunk_words", "chunk_fts_delete", "items_stale_words")
    old = tuple(f"{table}_words_{replaced}" for table in ("chunks", "chunk_fts_stale"))
    for trigger in (*dropped, *(old if old_guards else ())):
        tx.execute(f"DROP TRIGGER {trigger}")
    tx.execute(item_delete_trigger(words))
    tx.execute(chunk_delete_trigger(stale_words.NOT_LISTED.format(chunk="old.id"), words))
    tx.execute(stale_words.item_delete_trigger(words))
    for trigger in guards:
        tx.execute(trigger)


def _reads_otherwise(tx: Tx) -> bool:
    """Whether any chunk or stale chunk has a text the spelling changes (the texts past ASCII
    are found by SQL, and only those read in Python)."""
    past_ascii = " OR ".join(
        _PAST_ASCII.format(column)
        for column in ("c.title", "c.context", "coalesce(c.kept_text, q.cut_from, i.content)")
    )
    last = 0
    while rows := chunks_with_text(
        tx, f"c.id > ? AND ({past_ascii}) ORDER BY c.id LIMIT ?", (last, _BATCH), every_tenant=True
    ):
        for row in rows:
            texts = (row["title"], row["body"], row["context"])
            if as_indexed(tx, texts, spell=indexed_or_none) != texts:
                return True
        last = int(rows[-1]["id"])
    stale_past_ascii = " OR ".join(_PAST_ASCII.format(c) for c in ("title", "body", "context"))
    for stale in tx.all(
        f"SELECT title, body, context FROM chunk_fts_stale /* every tenant */"
        f" WHERE {stale_past_ascii}"
    ):
        texts = (stale["title"], stale["body"], stale["context"])
        if as_indexed(tx, texts, spell=indexed_or_none) != texts:
            return True
    return False


def m045_unspaced_words(tx: Tx) -> None:
    """The step (registered in later_steps.py)."""
    from . import stale_words
    from .chunk_spans import index_all

    rewire(tx, spelled, GUARDS)
    if _reads_otherwise(tx):
        # The stale chunks' words go with the rest: erased, as the upkeep would have.
        tx.execute("INSERT INTO chunk_fts (chunk_fts) VALUES ('delete-all')")
        tx.execute(f"DELETE FROM {stale_words.TABLE} /* every tenant */")
        index_all(tx, spell=indexed_or_none)
