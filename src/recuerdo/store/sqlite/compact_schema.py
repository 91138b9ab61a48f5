"""The compaction step (migration ``m018_compact_store``; ``docs/decisions/0023-store-size.md``).

* The entries' trigram index keeps which entries hold a trigram, not where (``detail=none``)
  and no per-row token counts (``columnsize=0``: it never ranks): it was three times the size
  of the text it indexes. Without positions FTS5 cannot test a phrase, so a substring search
  asks for the needle's trigrams together and checks each candidate's text, as it already did
  for the rows above the index's mark (``search.TrigramSubstrings``).
* Text hashes are kept as 128-bit prefixes (``store/hashes.py``).

The index is made again empty and its mark set back to 0: the upkeep worker fills it off the
write path, and searches scan the rows above the mark meanwhile, so no entry is missed.
"""

from __future__ import annotations

from ..base import Tx
from ..hashes import shorten_hashes

ENTRY_TRIGRAMS = (
    "CREATE VIRTUAL TABLE entry_trigrams USING fts5 (content, content='items',"
    " content_rowid='id', tokenize='trigram', detail='none', columnsize=0)"
)


def m018_compact_store(tx: Tx) -> None:
    """The body of ``m018_compact_store`` on SQLite."""
    # The delete and update triggers on items name the table, not its layout: they stay.
    tx.execute("DROP TABLE entry_trigrams")
    tx.execute(ENTRY_TRIGRAMS)
    tx.execute("UPDATE index_marks SET upto = 0 WHERE name = 'entry_trigrams'")
    shorten_hashes(tx)
