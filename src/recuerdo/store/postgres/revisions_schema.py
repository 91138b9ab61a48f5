"""The step ``m019_revision_deltas`` on PostgreSQL: the text of earlier versions becomes
reverse deltas (the layout is in ``store/revision_deltas.py``). PostgreSQL can make
``content`` nullable in place; each version row is then rewritten once (its old copy is a dead
tuple until the next vacuum)."""

from __future__ import annotations

from ..base import Tx
from ..revision_deltas import converted

_BATCH = 2000


def m019_revision_deltas(tx: Tx) -> None:
    """The step (registered in schema.py)."""
    tx.execute("ALTER TABLE revisions ALTER COLUMN content DROP NOT NULL")
    tx.execute("ALTER TABLE revisions ADD COLUMN previous BYTEA")
    update = (
        "UPDATE revisions SET content = CASE WHEN ? = 1 THEN content END, previous = ?"
        " WHERE tenant = ? AND id = ?"
    )
    batch: list[tuple[int, bytes | None, str, int]] = []
    for tenant, revision_id, kept, previous in converted(tx):
        batch.append((int(kept), previous, tenant, revision_id))
        if len(batch) >= _BATCH:
            tx.executemany(update, batch)
            batch = []
    tx.executemany(update, batch)
