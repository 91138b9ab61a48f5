"""The step ``m051_audit_found_index``: on SQLite, which records returned an item is found
through a full-text index of their lists of ids, not a row per item.

A forget drops the audit records that returned a forgotten item (decisions 0005, 0064). Each
record kept a row for every item it returned (``retrieval_audit_items``, keyed by the item's
id), so a recall of 200 entries wrote 200 rows, each at its own item's place in the key: the
flush that wrote a second's records touched pages all over the table, the more the larger it
grew. Under reads that never pause those writes were what kept recall's p95 over 5 ms, and the
log grew by about 10 KB a recall (``docs/decisions/0192-audit-found-index.md``).

Since the step a record's ``returned`` list (JSON, ids only) is indexed by FTS5 with the ASCII
tokenizer, each id a token, as external content of ``retrieval_audit``: the index is written a
segment at a commit and merged in the background of later writes, a log-structured index that
appends instead of touching every page. It keeps no positions (``detail=none``) and no row
lengths: only which records hold each id. Triggers keep it with the table:

* a record written is indexed (nothing for one that returned nothing);
* a record emptied by a forget (``audit_sweep.EMPTY`` writes ``returned = '[]'``) leaves what
  the index answers at once;
* a record deleted (the sweep, the retention's prune) leaves it too.

A row leaves FTS5's answers at once, but its ids stay in the pages that held them (under a
mark that they are deleted) until the segments holding them are merged. With ``secure-delete``
FTS5 rewrites those pages at the delete instead: 200 ids a record cost about 5 ms a record
emptied, in the forget, under the write lock (a forget of an item that 1,000 records returned:
5 s). So this index is kept without it, and once the sweep has deleted every emptied record it
merges the index into one segment (:func:`expunge`; 78 ms at 1.5 million ids), which drops
the ids of every deleted row. A forgotten item's id thus leaves the file at the upkeep's sweep,
as the emptied record's who-when-where does (decision 0069), not at the forget. ``compact``
merges the index too.

PostgreSQL keeps the rows of ``retrieval_audit_items``: its step does nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .base import Tx, groups, marks
from .migrations import has_step
from .sqlite import audit_found as sqlite_found

STEP = "m051_audit_found_index"
TABLE = sqlite_found.TABLE
_PER_STATEMENT = 500  # ids a statement


def m051_audit_found_index(tx: Tx) -> None:
    """The step, on both stores (registered in each later_steps.py): SQLite's index; nothing on
    PostgreSQL."""
    if tx.dialect == "sqlite":
        sqlite_found.index_records(tx)


def in_index(tx: Tx) -> bool:
    """Whether the records' ids are found through the full-text index (SQLite since the step);
    else through the rows of ``retrieval_audit_items``, which the flush writes and a forget
    deletes."""
    return tx.dialect == "sqlite" and has_step(tx, STEP)


def write_rows(tx: Tx, tenant: str, audit_id: int, items: Sequence[int]) -> None:
    """The rows saying the record ``audit_id`` returned ``items``, where the records are found
    by rows (:func:`in_index` is false; the caller asks once a flush); on SQLite since the step
    the record's insert trigger indexes its ids instead."""
    if items:
        tx.executemany(
            "INSERT INTO retrieval_audit_items (tenant, item_id, audit_id)"
            " VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            [(tenant, item, audit_id) for item in sorted(set(items))],
        )


def drop_rows(tx: Tx, tenant: str, items: Sequence[int]) -> None:
    """Delete the rows that say a record returned one of the forgotten ``items`` (their records
    were emptied; the rows of the other items they returned wait for the sweep). Where the ids
    are indexed there are no such rows: an emptied record left the index with all of its ids."""
    if in_index(tx):
        return
    for part in groups(items, _PER_STATEMENT):
        tx.execute(
            f"DELETE FROM retrieval_audit_items WHERE tenant = ? AND item_id IN ({marks(part)})",
            (tenant, *part),
        )


def returned_any(tx: Tx, tenant: str, items: Sequence[int]) -> tuple[str, tuple[Any, ...]]:
    """The condition on ``retrieval_audit`` (with its parameters) of the records of ``tenant``
    that returned one of ``items``."""
    if in_index(tx):
        return sqlite_found.returned_any(items)
    return (
        "id IN (SELECT audit_id FROM retrieval_audit_items WHERE tenant = ?"
        f" AND item_id IN ({marks(items)}))",
        (tenant, *items),
    )


def expunge(tx: Tx) -> None:
    """Merge the index into one segment, which leaves out the ids of every row deleted from it
    (what a forget emptied), where the index is the records' (:func:`in_index`)."""
    if in_index(tx):
        sqlite_found.expunge(tx)


def delete_scope(tx: Tx, tenant: str, scope: str) -> None:
    """Delete the records of ``tenant`` filed under ``scope`` (a forget of the whole scope).
    Deleted, not emptied, they leave no record for the sweep, whose merge is what takes the ids
    they held out of the index's pages: the index is merged here (:func:`expunge`)."""
    if tx.execute("DELETE FROM retrieval_audit WHERE tenant = ? AND scope = ?", (tenant, scope)):
        expunge(tx)
