"""The step ``m019_revision_deltas`` on SQLite: the text of earlier versions becomes reverse
deltas (the layout is in ``store/revision_deltas.py``), kept apart so that schema.py stays
small.

``content`` must become nullable, which SQLite cannot alter: the table is made again, with
each version row's delta worked out first into a temporary table and the rows then copied in
id order (pages filled densely, not left half empty by rows shrunk in place).
"""

from __future__ import annotations

from ..base import Tx
from ..revision_deltas import converted

_BATCH = 2000
_COPIED = (
    "id, tenant, item_id, version, based_on, operation, principal, title, kind, chars_added,"
    " chars_removed, content_hash, created_at"
)


def m019_revision_deltas(tx: Tx) -> None:
    """The step (registered in schema.py)."""
    tx.execute(
        """
        CREATE TABLE revisions_reversed (
            id INTEGER PRIMARY KEY,
            tenant TEXT NOT NULL,
            item_id INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE,
            version INTEGER,
            based_on INTEGER,
            operation TEXT NOT NULL,
            principal TEXT NOT NULL,
            title TEXT,
            kind TEXT,
            content TEXT,
            previous BLOB,
            chars_added INTEGER NOT NULL,
            chars_removed INTEGER NOT NULL,
            content_hash TEXT NOT NULL,
            created_at TEXT NOT NULL
        )
        """
    )
    tx.execute(
        "CREATE TEMP TABLE revision_previous"
        " (id INTEGER PRIMARY KEY, kept INTEGER NOT NULL, previous BLOB)"
    )
    batch: list[tuple[int, int, bytes | None]] = []
    insert = "INSERT INTO temp.revision_previous (id, kept, previous) VALUES (?, ?, ?)"
    for _tenant, revision_id, kept, previous in converted(tx):
        batch.append((revision_id, int(kept), previous))
        if len(batch) >= _BATCH:
            tx.executemany(insert, batch)
            batch = []
    tx.executemany(insert, batch)
    copied = ", ".join(f"r.{column.strip()}" for column in _COPIED.split(","))
    tx.execute(
        f"INSERT INTO revisions_reversed ({_COPIED}, content, previous)"
        f" SELECT {copied}, CASE WHEN p.kept = 0 THEN NULL ELSE r.content END, p.previous"
        " FROM revisions r /* every tenant */ LEFT JOIN temp.revision_previous p ON p.id = r.id"
        " ORDER BY r.id"
    )
    tx.execute("DROP TABLE temp.revision_previous")
    tx.execute("DROP TABLE revisions")
    tx.execute("ALTER TABLE revisions_reversed RENAME TO revisions")
    tx.execute("CREATE UNIQUE INDEX revisions_by_version ON revisions (tenant, item_id, version)")
