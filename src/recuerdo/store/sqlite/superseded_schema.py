"""The step ``m020_superseded_chunks`` on SQLite (``docs/decisions/0027-superseded-chunks.md``).

Since ``m036_stale_words`` (``stale_words.py``, decision 0072) the re-cut lists nothing here:
a superseded chunk's words stay indexed, unseen, until they are erased one chunk at a time.
The list and its trigger stay for a store whose step ran under a library that could not merge
what was listed. What follows is how it worked until then.

When the upkeep re-cuts an edited item, the chunks its new text no longer has leave the
full-text index without ``secure-delete`` (:meth:`SQLiteTx.delete_superseded_chunks`): a
secure delete rewrites an index page for every term of the old chunk, about ten times the cost
of the rest of the re-cut. Their words then stay in the index's older segments until those are
merged, as they stay in the item's revision history until a forget. ``chunk_fts_residue``
names the items whose words may so remain.

Forgetting must still erase them. Deleting such an item's row (what every erasure of an item
does: an entry's forget, a hard delete, ``forget_knowledge``, a conversation's erasure) merges
the whole index into one segment (FTS5 ``optimize``), which drops every deleted entry, and
clears the list. ``purge_deleted_text(superseded=True)`` (``forget_knowledge``, a
conversation's erasure) does the same while any item is listed: a forgotten passage or name
may also be in another item's superseded chunk. Other forgets do not ask: the merge costs a
rewrite of the whole index (``docs/decisions/0071``).
"""

from __future__ import annotations

from ..base import Tx

PURGE = "INSERT INTO chunk_fts (chunk_fts) VALUES ('optimize')"
DELETE_WORDS = "INSERT INTO chunk_fts (chunk_fts, rowid, title, body, context)"
"""Tells the contentless words index a row's words, to take them out (``VALUES ('delete', id,
title, body, context)`` or a SELECT of those): it holds no text to read them from."""


def m020_superseded_chunks(tx: Tx) -> None:
    """The body of ``m020_superseded_chunks`` on SQLite."""
    # No foreign key: the row must outlive its item, for the trigger below to see it.
    tx.execute(
        "CREATE TABLE chunk_fts_residue (tenant TEXT NOT NULL, item_id INTEGER NOT NULL,"
        " PRIMARY KEY (tenant, item_id)) WITHOUT ROWID"
    )
    tx.execute(
        "CREATE TRIGGER chunk_fts_residue_purge AFTER DELETE ON items WHEN EXISTS"
        " (SELECT 1 FROM chunk_fts_residue r WHERE r.tenant = old.tenant AND r.item_id = old.id)"
        f" BEGIN {PURGE}; DELETE FROM chunk_fts_residue; END"
    )
