"""The step ``m022_binary_keys`` on SQLite (``store/hashes.py``): the 128-bit text keys of
chunks, embeddings and notes' repeat detection, stored as 32 hex digits since m018, become the
16 bytes they spell. Each key is converted where it is (no vector is computed again); the
indexes that hold them follow."""

from __future__ import annotations

from ..base import Tx
from ..hashes import BINARY_KEYS
from .driver import sqlite3


def m022_binary_keys(tx: Tx) -> None:
    """The body of ``m022_binary_keys`` on SQLite."""
    for table, column in BINARY_KEYS:
        if sqlite3.sqlite_version_info >= (3, 41, 0):
            tx.execute(
                f"UPDATE {table} /* every tenant */ SET {column} = unhex({column})"
                f" WHERE typeof({column}) = 'text'"
            )
            continue
        while rows := tx.all(  # a library without unhex(): a batch at a time
            f"SELECT rowid AS r, {column} AS k FROM {table} /* every tenant */"
            f" WHERE typeof({column}) = 'text' LIMIT 10000"
        ):
            tx.executemany(
                f"UPDATE {table} /* every tenant */ SET {column} = ? WHERE rowid = ?",
                [(bytes.fromhex(row["k"]), row["r"]) for row in rows],
            )
