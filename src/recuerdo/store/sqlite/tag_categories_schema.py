"""The step ``m026_tag_categories``: the tag index carries each item's category.

``recall(category=C, tags=[T])`` lists the entries carrying tag T, then keeps those of
category C. The tag index gave the ids of T's entries (3,400 of 100,000 entries under one of
60 tags), and each id was then looked up in the category index: 2.3 ms of the listing's 3.6
(decision 0047). With the category beside each tag row, the tag index alone tells which of
them are of category C, read in one range.

The category is the last column of the index, so a listing by tags alone still reads its ids
in order, as before (a column in front of the ids made those listings a quarter slower). An
item's category is written with its tags, and a note whose kind changes has its tag rows
rewritten (``notes/operations.py``). A tag row without a category (written by a server of an
earlier version still running on the same PostgreSQL memory) is read as "any category": a
listing checks the item's own category as well (``store/base.py::tagged_ids``).
"""

from __future__ import annotations

from ..base import Tx

TAG_INDEX = "CREATE INDEX item_tags_by_tag ON item_tags (tenant, tag, item_id, category)"
# Also run by ``recover``: rows copied from a store older than the step come without it.
FILL_CATEGORIES = (
    "UPDATE item_tags /* every tenant */ SET category = (SELECT items.category FROM items"
    " WHERE items.tenant = item_tags.tenant AND items.id = item_tags.item_id)"
    " WHERE category IS NULL"
)


def m026_tag_categories(tx: Tx) -> None:
    """The step, on both stores (registered in each later_steps.py: the SQL is portable)."""
    tx.execute("ALTER TABLE item_tags ADD COLUMN category TEXT")
    tx.execute(FILL_CATEGORIES)
    tx.execute("DROP INDEX item_tags_by_tag")
    tx.execute(TAG_INDEX)
