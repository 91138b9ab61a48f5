"""The step ``m025_note_titles``: a note is found by its title through an index.

A wikilink (``[[Title]]``) is resolved at every save of the note that holds it, by looking the
title up among the memory's notes. No index held titles, so each lookup walked every note of
the memory (through ``items_recent``), reading each one's row; the plan test found it under the
statistics of a grown store (``tests/test_query_plans.py``). The index holds notes only, and a
note's update leaves it untouched unless the title changes (SQLite writes only the indexes of
the columns an update sets): a keyed update pays nothing for it, a new note one page.
"""

from __future__ import annotations

from ..base import Tx

NOTE_TITLES = "CREATE INDEX items_note_titles ON items (tenant, title) WHERE item_type = 'note'"


def m025_note_titles(tx: Tx) -> None:
    """The step, on both stores (registered in each later_steps.py: the SQL is portable)."""
    tx.execute(NOTE_TITLES)
