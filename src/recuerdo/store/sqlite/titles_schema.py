"""The step ``m025_titles_and_journal``: two lookups that read a whole memory get indexes.

Both were found by the plan test under the statistics of a grown store
(``tests/test_query_plans.py``):

* **A note by its title.** A wikilink (``[[Title]]``) is resolved at every save of the note that
  holds it, by looking the title up among the memory's notes. No index held titles, so each
  lookup walked every note of the memory (through ``items_recent``), reading each one's row.
  The new index holds notes only, and a note's update leaves it untouched unless the title
  changes (SQLite writes only the indexes of the columns an update sets).
* **The journal, newest first.** Listed without a scope, the journal's rows of the tenant were
  all read through ``journal_by_scope`` and sorted, to keep the newest few. An index on the
  tenant alone keeps them in id order (SQLite appends the rowid), so the listing walks it
  backwards and stops at its limit. It costs a page write more per journaled change.

PostgreSQL gets the first (its journal's primary key is already ``(tenant, id)``).
"""

from __future__ import annotations

from ..base import Tx

NOTE_TITLES = "CREATE INDEX items_note_titles ON items (tenant, title) WHERE item_type = 'note'"
JOURNAL_NEWEST = "CREATE INDEX journal_by_tenant ON journal (tenant)"


def m025_titles_and_journal(tx: Tx) -> None:
    """The step (registered in schema.py)."""
    tx.execute(NOTE_TITLES)
    tx.execute(JOURNAL_NEWEST)
