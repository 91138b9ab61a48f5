"""The step ``m024_trigrams_newest_first`` (``docs/decisions/0044-substrings-newest-first.md``).

``recall(search=...)`` lists entries newest first and stops after its limit. FTS5 walks a
match's rows in ascending rowid order by nature; asked for descending order, it first loads
each trigram's whole list of entries (about 1 ms for a word in every one of 100,000 entries,
before the first row). So the index now keeps each entry under the negative of its id: its
ascending order is the entries' newest first, read as it goes.

* The index keeps no content table: ``content='items'`` named rows by their id, which the
  index no longer uses (it never read that table: it holds no positions and ranks nothing,
  and the triggers give it the old text to delete, as before).
* It is made again empty with its mark at 0: the upkeep worker fills it off the write path
  and searches scan the rows above the mark meanwhile, so no entry is missed (as m018 did).
"""

from __future__ import annotations

from ..base import Tx

ENTRY_TRIGRAMS = (
    "CREATE VIRTUAL TABLE entry_trigrams USING fts5 (content, content='',"
    " tokenize='trigram', detail='none', columnsize=0)"
)
_INDEXED = (
    "old.item_type = 'entry'"
    " AND old.id <= (SELECT upto FROM index_marks WHERE name = 'entry_trigrams')"
)
_DELETE = (
    "INSERT INTO entry_trigrams (entry_trigrams, rowid, content)"
    " VALUES ('delete', -old.id, old.content);"
)


def trigram_triggers(delete: str) -> tuple[str, str]:
    """The triggers that keep the index exact as indexed entries are deleted or changed;
    ``delete`` is what takes an old row out of it (m029 changed only that)."""
    return (
        f"CREATE TRIGGER entry_trigrams_delete AFTER DELETE ON items WHEN {_INDEXED}"
        f" BEGIN {delete} END",
        f"CREATE TRIGGER entry_trigrams_update AFTER UPDATE OF content ON items WHEN {_INDEXED}"
        f" BEGIN {delete}"
        " INSERT INTO entry_trigrams (rowid, content) VALUES (-new.id, new.content); END",
    )


def drop_trigram_triggers(tx: Tx) -> None:
    for trigger in ("entry_trigrams_delete", "entry_trigrams_update"):
        tx.execute(f"DROP TRIGGER {trigger}")


TRIGGERS = trigram_triggers(_DELETE)


def m024_trigrams_newest_first(tx: Tx) -> None:
    """The step on SQLite: the index, its triggers and its mark made again."""
    drop_trigram_triggers(tx)
    tx.execute("DROP TABLE entry_trigrams")
    tx.execute(ENTRY_TRIGRAMS)
    for trigger in TRIGGERS:
        tx.execute(trigger)
    tx.execute("UPDATE index_marks SET upto = 0 WHERE name = 'entry_trigrams'")
