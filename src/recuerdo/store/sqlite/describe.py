"""What a SQLite memory holds, as the backup archive sees it (``store/archive.py``)."""

from __future__ import annotations

from typing import Any

from .. import tallies
from ..archive import DERIVED, Table
from ..base import FORGOTTEN_MARKS, OWED_MARKS, STATISTICS_OWED, Tx
from .folded_trigrams_schema import empty_entry_trigrams

# Kept by the migration runner, or derived: the full-text tables (virtual tables and their
# shadow tables) are rebuilt by the store from the rows they index.
_NOT_ARCHIVED = {
    "_migrations",
    "sqlite_sequence",
    "sqlite_stat1",
    "sqlite_stat4",
    tallies.TABLE,  # counted again as the restore inserts the items
    *DERIVED,  # made again from the audit records (after_restore), or indexed since m051
}
_AUDIT_ITEMS = (
    "INSERT INTO retrieval_audit_items (tenant, item_id, audit_id)"
    " SELECT a.tenant, CAST(j.value AS INTEGER), a.id FROM retrieval_audit a /* every tenant */,"
    " json_each(a.returned) j WHERE true ON CONFLICT DO NOTHING"
)


class SQLiteArchive:
    def tables(self, tx: Tx) -> list[Table]:
        rows = tx.all("SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY rowid")
        virtual = [r["name"] for r in rows if str(r["sql"]).upper().startswith("CREATE VIRTUAL")]
        tables = []
        for row in rows:
            name = row["name"]
            if name in _NOT_ARCHIVED or name in virtual:
                continue
            # A virtual table's own tables, and those kept beside an index under its name
            # (entry_trigrams_folds): derived, made again after a restore.
            if any(name.startswith(f"{v}_") for v in virtual):
                continue
            info = tx.all(f'PRAGMA table_info("{name}")')
            columns = tuple(col["name"] for col in info)
            parents = tuple(
                sorted({fk["table"] for fk in tx.all(f'PRAGMA foreign_key_list("{name}")')})
            )
            without_rowid = "WITHOUT ROWID" in str(row["sql"]).upper()
            keys = [col["name"] for col in sorted(info, key=lambda c: c["pk"]) if col["pk"]]
            order_by = ", ".join(f'"{k}"' for k in keys) if without_rowid else "rowid"
            tables.append(Table(name, columns, parents, order_by))
        return tables

    def sequences(self, tx: Tx) -> dict[str, int]:
        return {r["name"]: int(r["seq"]) for r in tx.all("SELECT name, seq FROM sqlite_sequence")}

    def set_sequences(self, tx: Tx, values: dict[str, int]) -> None:
        for name, seq in values.items():
            changed = tx.execute(
                "UPDATE sqlite_sequence SET seq = ? WHERE name = ? AND seq < ?", (seq, name, seq)
            )
            if (
                not changed
                and tx.scalar("SELECT 1 FROM sqlite_sequence WHERE name = ?", (name,)) is None
            ):
                tx.execute("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", (name, seq))

    def after_restore(self, tx: Tx) -> None:
        # The trigram index of entries is not in the archive: it fills again off the write path.
        empty_entry_trigrams(tx)
        # Restored at a step before m051: which items each audit record returned, a row each.
        if tx.scalar(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'retrieval_audit_items'"
        ):
            tx.execute(_AUDIT_ITEMS)
        # A PostgreSQL memory's maintenance marks (a VACUUM or a rebuild it owed) mean nothing
        # here: this file's indexes hold only the rows restored.
        tx.execute(FORGOTTEN_MARKS, (*OWED_MARKS, STATISTICS_OWED))
        # The words index: filled by the chunks' insert trigger in a schema before m021; since
        # then it holds no text and is filled from the chunks' spans (chunk_spans.py).
        if not any(c["name"] == "body" for c in tx.all("PRAGMA table_info(chunks)")):
            from .chunk_spans import index_all

            index_all(tx)


def copy_file(source: Any, target: str) -> None:
    """A consistent copy of a live store (SQLite's online backup: readers and writers go on)."""
    from .driver import sqlite3

    destination = sqlite3.connect(target)
    try:
        source.backup(destination)
    finally:
        destination.close()
