"""The step ``m036_stale_words`` on SQLite: the words of superseded chunks stay in the words
index until the upkeep erases them, a few at a time (``docs/decisions/0072-stale-words.md``).

When the upkeep re-cuts an edited item, the chunks its new text no longer has leave. Their
words used to leave the index at once, without a secure delete (decision 0027): a marker that
hid them, while the words themselves stayed in older segments until a merge of the whole index
(FTS5 ``optimize``), which a forget of that item then had to run. That merge is linear in the
index: 72 ms for a hard delete of a just-edited note at 10,000 notes, against 3.7 ms for one
never edited.

Now the re-cut leaves the words indexed and copies them into ``chunk_fts_stale`` (the index is
contentless: a row leaves it only when told its words again). The chunk row goes, so no search
returns such a match: every match is joined to its chunk (:func:`held_anywhere` for the one
question that is not). Then:

* once the writes pause, the upkeep erases a few of them at a time with FTS5's secure delete
  (:func:`erase_some`), which rewrites only the pages that hold them (and in a share of the
  time when no pause comes, and at the close of a process that wrote: decision 0073);
* a forgotten item takes its own with it (the trigger ``items_stale_words``), the same way;
* a forget of a name or a passage, which may sit in any item's old chunk, erases all of them
  (:func:`erase_all`), or past :data:`ERASE_ONE_BY_ONE` of them, marks them deleted and merges
  the index once, as before.

Only a library whose FTS5 has the secure delete (3.42 or later) keeps them: with an older one
every forget merges the whole index anyway, and the re-cut deletes as it did. The step also
drops what decision 0027 listed (``chunk_fts_residue``): one merge, at the step, if any item is
listed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..base import Row, groups, marks
from ..migrations import has_step
from .driver import FTS5_SECURE_DELETE
from .superseded_schema import DELETE_WORDS, PURGE
from .unspaced_words import as_indexed

if TYPE_CHECKING:
    from ..base import Tx

STEP = "m036_stale_words"
TABLE = "chunk_fts_stale"
ERASE_BATCH = 8
"""Stale chunks erased by one transaction of the upkeep: a secure delete rewrites a page for
each of the chunk's terms (1.3-1.5 ms of CPU for a note of 300-900 characters at 10,000
notes), and the writer is the saves' too."""
ERASE_ONE_BY_ONE = 64
"""Past this many stale chunks, a forget that erases them all marks them deleted and merges
the whole index once: one by one, they would cost more than the merge."""

SECURE_DELETE = "INSERT INTO chunk_fts (chunk_fts, rank) VALUES ('secure-delete', ?)"
_PER_STATEMENT = 500
NOT_LISTED = f"NOT EXISTS (SELECT 1 FROM {TABLE} s WHERE s.id = {{chunk}})"
"""An SQL condition, ``chunk`` formatted in: that id is not a stale chunk's."""


def item_delete_trigger(words: Callable[[str], str] = lambda text: text) -> str:
    """``items_stale_words``: a deleted item erases its stale chunks' words; ``words`` wraps
    each text as the index was given it (``recuerdo_words`` since m045,
    ``recuerdo_folded_words`` since m048, ``recuerdo_unmarked_words`` since m049)."""
    listed = ", ".join(words(f"s.{column}") for column in ("title", "body", "context"))
    return f"""CREATE TRIGGER items_stale_words BEFORE DELETE ON items
    WHEN EXISTS (SELECT 1 FROM {TABLE} s WHERE s.tenant = old.tenant AND s.item_id = old.id)
    BEGIN
        {DELETE_WORDS} SELECT 'delete', s.id, {listed}
            FROM {TABLE} s WHERE s.tenant = old.tenant AND s.item_id = old.id;
        DELETE FROM {TABLE} WHERE tenant = old.tenant AND item_id = old.id;
    END"""


_HELD_ANYWHERE = "SELECT EXISTS (SELECT 1 FROM chunk_fts WHERE chunk_fts MATCH ?)"
_HELD_BY_A_CHUNK = (  # asked where the memory holds one tenant's chunks (FTS5Text.words_held)
    "SELECT EXISTS (SELECT 1 FROM chunk_fts f WHERE chunk_fts MATCH ?"
    f" AND {NOT_LISTED.format(chunk='f.rowid')}) /* every tenant */"
)


def held_anywhere(tx: Tx) -> str:
    """The query whether any chunk holds a word (one MATCH parameter): the one question asked
    of the index alone, not joined to the chunks."""
    return _HELD_BY_A_CHUNK if has_step(tx, STEP) else _HELD_ANYWHERE


def m036_stale_words(tx: Tx) -> None:
    """The body of ``m036_stale_words`` on SQLite."""
    tx.execute(
        f"CREATE TABLE {TABLE} (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL,"
        " item_id INTEGER NOT NULL, title TEXT, body TEXT, context TEXT)"
    )
    tx.execute(f"CREATE INDEX {TABLE}_item ON {TABLE} (tenant, item_id)")
    from .chunk_spans import chunk_delete_trigger  # which imports this module

    tx.execute("DROP TRIGGER chunk_fts_delete")
    tx.execute(chunk_delete_trigger(also=NOT_LISTED.format(chunk="old.id")))  # a stale one stays
    tx.execute(item_delete_trigger())
    if FTS5_SECURE_DELETE and tx.scalar(
        "SELECT 1 FROM chunk_fts_residue /* every tenant */ LIMIT 1"
    ):
        tx.execute(PURGE)
        tx.execute("DELETE FROM chunk_fts_residue /* every tenant */")


def kept(tx: Tx) -> bool:
    """Whether the re-cut keeps superseded chunks' words as stale (a store opened at an older
    schema, a restore's before it takes the later steps, deletes them from the index at once,
    as a library without the secure delete does)."""
    return FTS5_SECURE_DELETE and has_step(tx, STEP)


def keep(tx: Tx, words: list[tuple[str, int, int, object, object, object]]) -> None:
    """Superseded chunks ``(tenant, item_id, id, title, body, context)`` keep their words in the
    index, listed here, before their rows are deleted (the delete trigger then leaves them)."""
    tx.executemany(
        f"INSERT INTO {TABLE} (tenant, item_id, id, title, body, context)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        words,
    )


def waiting(tx: Tx) -> bool:
    """Whether any stale chunk's words wait to be erased."""
    return has_step(tx, STEP) and bool(
        tx.scalar(f"SELECT 1 FROM {TABLE} /* every tenant */ LIMIT 1")
    )


def erase_some(tx: Tx, limit: int = ERASE_BATCH) -> tuple[int, bool]:
    """Erase the words of up to ``limit`` stale chunks, oldest first (the upkeep); how many,
    and whether more wait."""
    rows = tx.all(
        f"SELECT id, title, body, context FROM {TABLE} /* every tenant */ ORDER BY id LIMIT ?",
        (limit + 1,),
    )
    _erase(tx, rows[:limit])
    return min(len(rows), limit), len(rows) > limit


def erase_all(tx: Tx) -> bool:
    """Erase the words of every stale chunk (a forget of a name or a passage, which any item's
    old chunk may hold), one merge of the index past :data:`ERASE_ONE_BY_ONE` of them; whether
    it merged."""
    if not has_step(tx, STEP):
        return False
    rows = tx.all(f"SELECT id, title, body, context FROM {TABLE} /* every tenant */")
    if len(rows) <= ERASE_ONE_BY_ONE or not FTS5_SECURE_DELETE:
        _erase(tx, rows)
        return False
    # Marked deleted (a marker each, written with the next segment), then dropped with their
    # markers by the one merge of every segment.
    tx.execute(SECURE_DELETE, (0,))
    _erase(tx, rows)
    tx.execute(SECURE_DELETE, (1,))
    tx.execute(PURGE)
    return True


def _erase(tx: Tx, rows: list[Row]) -> None:
    tx.executemany(
        f"{DELETE_WORDS} VALUES ('delete', ?, ?, ?, ?)",
        [(r["id"], *as_indexed(tx, (r["title"], r["body"], r["context"]))) for r in rows],
    )
    for part in groups([int(r["id"]) for r in rows], _PER_STATEMENT):
        tx.execute(f"DELETE FROM {TABLE} /* every tenant */ WHERE id IN ({marks(part)})", part)
