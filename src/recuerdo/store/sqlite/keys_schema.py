"""The step ``m022_binary_keys`` on SQLite (``store/hashes.py``): the 128-bit text keys of
chunks, embeddings and notes' repeat detection, stored as 32 hex digits since m018, become the
16 bytes they spell. Each key is converted where it is (no vector is computed again); the
indexes that hold them follow. A key that is not hex (no recuerdo wrote one) keeps its bytes:
it matches no key computed since, as it matched none before."""

from __future__ import annotations

from ..base import Tx
from ..hashes import BINARY_KEYS
from .driver import sqlite3


def m022_binary_keys(tx: Tx) -> None:
    """The body of ``m022_binary_keys`` on SQLite."""
    for table, column in BINARY_KEYS:
        if sqlite3.sqlite_version_info >= (3, 41, 0):
            tx.execute(
                f"UPDATE {table} /* every tenant */"
                f" SET {column} = coalesce(unhex({column}), CAST({column} AS BLOB))"
                f" WHERE typeof({column}) = 'text'"
            )
            continue
        while rows := tx.all(  # a library without unhex(): a batch at a time
            f"SELECT rowid AS r, {column} AS k FROM {table} /* every tenant */"
            f" WHERE typeof({column}) = 'text' LIMIT 10000"
        ):
            tx.executemany(
                f"UPDATE {table} /* every tenant */ SET {column} = ? WHERE rowid = ?",
                [(_key(row["k"]), row["r"]) for row in rows],
            )


def _key(stored: str) -> bytes:
    try:
        return bytes.fromhex(stored)
    except ValueError:
        return stored.encode("utf-8")
