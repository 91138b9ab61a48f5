"""The step ``m018_compact_store`` on PostgreSQL: text hashes become 128-bit prefixes, as on
SQLite (``store/hashes.py``). The trigram index here is pg_trgm's GIN, which keeps no
positions: nothing else shrinks in this step (decision 0023)."""

from __future__ import annotations

from ..base import Tx
from ..hashes import shorten_hashes


def m018_compact_store(tx: Tx) -> None:
    """The step (registered in schema.py)."""
    shorten_hashes(tx)


def m024_trigrams_newest_first(tx: Tx) -> None:
    """Nothing to do on PostgreSQL: a newest-first listing reads the pg_trgm matches through the
    items' own ids, and the SQLite step's reason (FTS5's descending walk) does not apply."""
