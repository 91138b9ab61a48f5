"""SQLite's side of ``store/audit_found.py``: the full-text index of the ids each audit record
returned, kept by triggers, and the searches and merge of it (decision 0192)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..base import Tx

TABLE = "retrieval_audit_fts"
"""Named as the full-text tables are, so that ``recover`` copies none of its shadow tables."""

_INDEX = f"""CREATE VIRTUAL TABLE {TABLE} USING fts5 (returned, content='retrieval_audit',
    content_rowid='id', tokenize='ascii', detail='none', columnsize=0)"""
_FORGET_OLD = (
    f"INSERT INTO {TABLE} ({TABLE}, rowid, returned)"
    " SELECT 'delete', old.id, old.returned WHERE old.returned <> '[]'"
)
_INDEX_NEW = (
    f"INSERT INTO {TABLE} (rowid, returned) SELECT new.id, new.returned WHERE new.returned <> '[]'"
)
# FTS5 takes a row out only when given exactly the text it indexed, which the record's own
# column holds until the update trigger changes both. A record that returned nothing has no
# row in the index.
TRIGGERS = (
    f"CREATE TRIGGER {TABLE}_insert AFTER INSERT ON retrieval_audit BEGIN {_INDEX_NEW}; END",
    f"CREATE TRIGGER {TABLE}_delete AFTER DELETE ON retrieval_audit BEGIN {_FORGET_OLD}; END",
    f"CREATE TRIGGER {TABLE}_update AFTER UPDATE OF returned ON retrieval_audit"
    f" BEGIN {_FORGET_OLD}; {_INDEX_NEW}; END",
)


def index_records(tx: Tx) -> None:
    """The step's work: the index, its triggers and every record's ids indexed, then the rows
    per item dropped."""
    tx.execute(_INDEX)
    for trigger in TRIGGERS:
        tx.execute(trigger)
    # Nothing to read in a new store, whose index is then as FTS5 makes an empty one.
    if tx.scalar("SELECT 1 FROM retrieval_audit /* every tenant */ LIMIT 1") is not None:
        tx.execute(f"INSERT INTO {TABLE} ({TABLE}) VALUES ('rebuild')")
    tx.execute("DROP TABLE retrieval_audit_items")


def returned_any(items: Sequence[int]) -> tuple[str, tuple[Any, ...]]:
    """The condition on ``retrieval_audit`` of the records that returned one of ``items`` (an
    item's id is its tenant's alone: the caller's tenant condition is enough)."""
    # Each id a quoted term: a bare number is a term too, but quoting says so.
    wanted = " OR ".join(f'"{int(item)}"' for item in items)
    return f"id IN (SELECT rowid FROM {TABLE} WHERE {TABLE} MATCH ?)", (wanted,)


def expunge(tx: Tx) -> None:
    """Merge the index into one segment, which leaves out the ids of every row deleted from it."""
    tx.execute(f"INSERT INTO {TABLE} ({TABLE}) VALUES ('optimize')")
