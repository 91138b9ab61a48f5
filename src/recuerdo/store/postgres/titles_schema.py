"""The step ``m025_note_titles`` on PostgreSQL: a note found by its title through an index, as
on SQLite (a wikilink is resolved at every save of the note that holds it; without the index
each lookup read every note of the memory)."""

from __future__ import annotations

from ..base import Tx


def m025_note_titles(tx: Tx) -> None:
    """The step (registered in schema.py)."""
    tx.execute("CREATE INDEX items_note_titles ON items (tenant, title) WHERE item_type = 'note'")
