"""The step ``m026_tag_categories`` on PostgreSQL: the tag index carries each item's category,
as on SQLite (a listing by a category and a tag reads the tag's rows of that category instead
of looking each of the tag's items up)."""

from __future__ import annotations

from ..base import Tx


def m026_tag_categories(tx: Tx) -> None:
    """The step (registered in later_steps.py)."""
    tx.execute("ALTER TABLE item_tags ADD COLUMN category TEXT")
    tx.execute(
        "UPDATE item_tags /* every tenant */ SET category = items.category FROM items"
        " WHERE items.tenant = item_tags.tenant AND items.id = item_tags.item_id"
    )
    tx.execute("DROP INDEX item_tags_by_tag")
    tx.execute("CREATE INDEX item_tags_by_tag ON item_tags (tenant, tag, item_id, category)")
