"""The full-text indexes' own settings, which FTS5 keeps in each index's ``_config`` table.

They are set when a store is opened, not by a migration: secure-delete depends on the SQLite
library opening the file, not on the schema, and a new store's one-pass schema (``fresh.py``)
does not replay what FTS5 keeps for itself. A setting applies to what the index writes from
then on; ``compact`` writes the rest again (``SQLiteStore.compact``).
"""

from __future__ import annotations

from ..base import Tx, marks
from .driver import FTS5_SECURE_DELETE

FULL_TEXT_INDEXES = ("chunk_fts", "entry_trigrams", "retrieval_audit_fts")
"""The words index of every item's chunks, the trigram index of the entries, and the index of
the ids each audit record returned (``store/audit_found.py``)."""
TRIGRAM_PAGE_BYTES = 500
"""The trigram index's leaf size (FTS5 ``pgsz``, 4,050 by default), so that a forget's cost
stops growing with the memory (``docs/decisions/0067-small-trigram-pages.md``)."""


def configure_full_text(tx: Tx) -> None:
    """Each index's settings, written where the file does not hold them already. A store at a
    step before an index exists (an old file opened at its own steps, by ``recover`` or a
    restore) has nothing to set for it."""
    configs = [f"{table}_config" for table in FULL_TEXT_INDEXES]
    present = {
        str(row["name"])
        for row in tx.all(
            f"SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ({marks(configs)})",
            configs,
        )
    }
    for table in FULL_TEXT_INDEXES:
        if f"{table}_config" not in present:
            continue
        held = {
            str(row["k"]): row["v"]
            for row in tx.all(
                f"SELECT k, v FROM {table}_config WHERE k IN ('secure-delete', 'pgsz')"
            )
        }
        for key, value in _full_text_settings(table).items():
            if held.get(key) != value:
                tx.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('{key}', {value})")


def _full_text_settings(table: str) -> dict[str, int]:
    # secure-delete: a row deleted from a full-text index leaves the index's pages at once (so
    # a forgotten word leaves the file). Before 3.42 there is no such setting: forgets merge.
    settings = {"secure-delete": 1} if FTS5_SECURE_DELETE else {}
    if table == "retrieval_audit_fts":
        # Ids, no text; a delete rewrote every page of each of a record's 200 ids at the forget
        # that emptied it (5 ms a record). Its ids leave when the sweep merges the index
        # (``audit_found.expunge``, decision 0192).
        return {"secure-delete": 0} if FTS5_SECURE_DELETE else {}
    if table == "entry_trigrams":
        # A delete reads each of its trigrams' lists entry by entry up to its row, in every
        # segment, wherever a list spans too few pages for FTS5 to index them (it does from
        # four pages on): smaller pages bound that walk (0067). The words index keeps FTS5's
        # size: no gain was measured there.
        settings["pgsz"] = TRIGRAM_PAGE_BYTES
    return settings
