"""The step ``m020_superseded_chunks`` on PostgreSQL: nothing to do. A chunk's words are a
column of its row, so deleting a superseded chunk deletes its words; SQLite's step lists the
items whose superseded words may stay in its full-text index (``docs/decisions/0027``)."""

from __future__ import annotations

from ..base import Tx


def m020_superseded_chunks(tx: Tx) -> None:
    """The step (registered in schema.py)."""
