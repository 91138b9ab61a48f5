"""The rows of SQLite's word index whose words a step's spelling changes, given their new
words: the work of steps ``m048_width_forms`` and ``m049_unmarked_words`` once their triggers
are made (``width_words.py``, ``unmarked_words.py``).

The index is contentless: a row leaves it only when told the exact words it was given. So the
rows a step may change are found by SQL (``GLOB`` over the characters it spells otherwise,
without Python), each is taken out with its old words and given its new ones, and a stale
chunk's words are erased, as the upkeep would have. Other rows are not read. Past a few such
rows the old words are marked deleted rather than securely deleted one by one, and one merge
of the index drops them (as ``stale_words.erase_all``): no page keeps them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..chunk_text import CHUNK_JOIN, chunks_with_text
from .driver import FTS5_SECURE_DELETE
from .superseded_schema import DELETE_WORDS, PURGE

if TYPE_CHECKING:
    from ..base import Tx

FIELDS = ("title", "body", "context")
_BATCH = 500
Words = tuple[str | None, ...]
Changed = Callable[[list[Any]], list[tuple[int, Words, Words]]]
"""Of rows read (id, title, body, context), those given other words: each id with its old
words and its new ones."""


def respell(tx: Tx, glob: str, changed: Changed) -> None:
    """Give the index new words for every chunk and stale chunk ``changed`` finds, among those
    with a text where ``glob`` (an SQL condition on ``{0}``, a text) holds."""
    from . import stale_words
    from .chunk_spans import INDEXED, INSERT_WORDS

    held = f"{INDEXED.format(chunk='c')} AND {stale_words.NOT_LISTED.format(chunk='c.id')}"
    texts_of = ("c.title", "c.context", "coalesce(c.kept_text, q.cut_from, i.content)")
    with_forms = " OR ".join(glob.format(column) for column in texts_of)
    condition = " OR ".join(glob.format(field) for field in FIELDS)
    # A secure delete rewrites the pages of each row's words (8.3 s of 9.7 for 5,000 notes
    # of fullwidth and halfwidth text): past a few rows, each is marked deleted instead and
    # one merge of the index drops the old words with their markers, as erase_all does.
    many = tx.scalar(
        f"SELECT (SELECT count(*) FROM chunks c {CHUNK_JOIN} /* every tenant */"
        f" WHERE ({with_forms}) AND {held}) + (SELECT count(*) FROM {stale_words.TABLE}"
        f" /* every tenant */ WHERE {condition})"
    )
    merged = FTS5_SECURE_DELETE and int(many) > stale_words.ERASE_ONE_BY_ONE
    if FTS5_SECURE_DELETE and _secure_delete(tx) != (0 if merged else 1):
        # Set here, not left to the open's settings, which are written after the steps: a
        # file last written by a library without it holds none, and each row's old words
        # would stay in the index's pages, marked deleted, after its note is forgotten.
        # Only where it differs: each setting is a write of the index's structure, and a
        # new store (fresh.py) must be the same bytes as an old one stepped to it.
        tx.execute(stale_words.SECURE_DELETE, (0 if merged else 1,))
    last = 0
    while rows := chunks_with_text(
        tx,
        f"c.id > ? AND ({with_forms}) AND {held} ORDER BY c.id LIMIT ?",
        (last, _BATCH),
        every_tenant=True,
    ):
        last = int(rows[-1]["id"])
        found = changed(rows)
        tx.executemany(
            f"{DELETE_WORDS} VALUES ('delete', ?, ?, ?, ?)",
            [(chunk_id, *old) for chunk_id, old, _ in found],
        )
        tx.executemany(INSERT_WORDS, [(chunk_id, *new) for chunk_id, _, new in found])
    stale = changed(
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


def _secure_delete(tx: Tx) -> int | None:
    value = tx.scalar("SELECT v FROM chunk_fts_config WHERE k = 'secure-delete'")
    return None if value is None else int(value)
