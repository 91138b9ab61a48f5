"""The step ``m022_binary_keys`` on PostgreSQL, as on SQLite (``store/hashes.py``): the text keys
become ``bytea``, the 16 bytes their 32 hex digits spell (a key that is not hex keeps its
bytes); the indexes are rebuilt with them."""

from __future__ import annotations

from ..base import Tx
from ..hashes import BINARY_KEYS


def m022_binary_keys(tx: Tx) -> None:
    """The step (registered in schema.py)."""
    for table, column in BINARY_KEYS:
        tx.execute(
            f"ALTER TABLE {table} ALTER COLUMN {column} TYPE bytea USING CASE"
            f" WHEN {column} ~ '^([0-9a-fA-F][0-9a-fA-F])*$' THEN decode({column}, 'hex')"
            f" ELSE convert_to({column}, 'UTF8') END"
        )
