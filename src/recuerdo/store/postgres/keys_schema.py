"""The step ``m022_binary_keys`` on PostgreSQL, as on SQLite (``store/hashes.py``): the text keys
become ``bytea``, the 16 bytes their 32 hex digits spell; the indexes are rebuilt with them."""

from __future__ import annotations

from ..base import Tx
from ..hashes import BINARY_KEYS


def m022_binary_keys(tx: Tx) -> None:
    """The step (registered in schema.py)."""
    for table, column in BINARY_KEYS:
        tx.execute(
            f"ALTER TABLE {table} ALTER COLUMN {column} TYPE bytea USING decode({column}, 'hex')"
        )
