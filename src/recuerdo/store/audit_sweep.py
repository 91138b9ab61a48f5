"""The step ``m035_audit_sweep``: a forget empties the audit records it drops, and the upkeep
deletes them later.

A forget drops the audit records that returned a forgotten item, or that asked for one of its
words (decisions 0005, 0064). Each record keeps a row for every item it returned, up to 200
(``retrieval_audit_items``), keyed by the item's id so that a forget finds an item's records
by the key. Deleting a record deleted those rows through the cascade, each at its own item's
place in the key: the rows of a few records lie on hundreds of pages, and an erasing forget
writes every page it touched to the log and folds them into the file before it answers. After
2,100 searches over 100,000 entries, forgetting one of the newest entries (returned by 7
records) wrote 701 pages instead of 109, and took 27 ms instead of 8
(``docs/decisions/0069-audit-sweep.md``).

So a forget now keeps the record row and empties it: no query, no filters, no returned ids,
``scrubbed = 1``; it deletes the record's words (``retrieval_audit_words``: digests of what was
asked, which a dictionary could reverse) and the forgotten items' own rows. What stays until
the sweep names nothing that was forgotten: who asked, when, in which scope, and on PostgreSQL
the rows of the other items the record returned (on SQLite since m051 the ids are found through
a full-text index: an emptied record leaves its answers at once, and its pages when the sweep
merges it, ``audit_found.py``). Reads never show an emptied record, and the upkeep
(``core/audit.AuditLog.sweep``, with :func:`sweep`) deletes them, cascade included, a batch at
a time, in a quiet moment.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from . import audit_found
from .audit_words import TABLE as WORDS
from .base import Tx, groups, marks
from .migrations import has_step
from .scope import EVERY_TENANT_STATEMENT

STEP = "m035_audit_sweep"
LIVE = "scrubbed = 0"
"""The condition of a record a read may show (not emptied by a forget)."""
SWEEP_BATCH = 500
"""Emptied records deleted by one round of the upkeep: the cascade of each touches up to 200
pages."""
_PER_STATEMENT = 500
EMPTY = "UPDATE retrieval_audit SET query = NULL, filters = '{}', returned = '[]', scrubbed = 1"
"""What a forget does to a record it drops (:func:`drop` adds which records)."""


def m035_audit_sweep(tx: Tx) -> None:
    """The step, on both stores (registered in each later_steps.py). The column has a constant
    default, so neither database writes the table again to add it."""
    tx.execute("ALTER TABLE retrieval_audit ADD COLUMN scrubbed INTEGER NOT NULL DEFAULT 0")
    # Partial: it holds only the records waiting for the sweep, none most of the time.
    tx.execute(
        "CREATE INDEX retrieval_audit_scrubbed ON retrieval_audit (tenant, id) WHERE scrubbed = 1"
    )


def applied(tx: Tx) -> bool:
    """Whether the store empties dropped records: not at a schema from before the step (a
    store opened at an older schema, which a restore does before it takes the later steps);
    there a forget deletes them, as before."""
    return has_step(tx, STEP)


def drop(
    tx: Tx,
    tenant: str,
    condition: str,
    params: Sequence[Any],
    *,
    emptying: bool,
    within: Sequence[str] | None = None,
) -> int:
    """Drop the records of ``tenant`` that meet ``condition`` (SQL over ``retrieval_audit``
    with ``params``); how many. ``emptying`` (:func:`applied`, asked once by the caller): they
    are emptied; at an older schema they are deleted. ``within``: only the records whose every
    scope is one of these (:func:`within_reach`; None: every record)."""
    if within is not None:
        reached = within_reach(tx, tenant, condition, params, within, live=emptying)
        return sum(
            drop(tx, tenant, f"id IN ({marks(part)})", part, emptying=emptying)
            for part in groups(reached, _PER_STATEMENT)
        )
    if not emptying:
        return tx.execute(
            f"DELETE FROM retrieval_audit WHERE tenant = ? AND ({condition})", (tenant, *params)
        )
    emptied = [
        row["id"]
        for row in tx.all(
            f"{EMPTY} WHERE tenant = ? AND {LIVE} AND ({condition}) RETURNING id",
            (tenant, *params),
        )
    ]
    for part in groups(emptied, _PER_STATEMENT):
        tx.execute(
            f"DELETE FROM {WORDS} WHERE tenant = ? AND audit_id IN ({marks(part)})",
            (tenant, *part),
        )
    return len(emptied)


def within_reach(
    tx: Tx,
    tenant: str,
    condition: str,
    params: Sequence[Any],
    within: Sequence[str],
    *,
    live: bool,
) -> list[int]:
    """The ids of ``tenant``'s records (not emptied, when ``live``) that meet ``condition``
    and whose every scope is one of ``within``: the searches a caller confined to those scopes
    could have made or read (``core/audit.read`` shows it no other). Its forget drops no other
    record for quoting what it forgot (decision 0139)."""
    if not within:
        return []
    rows = tx.all(
        f"SELECT id, scope, filters FROM retrieval_audit WHERE tenant = ?"
        f"{f' AND {LIVE}' if live else ''} AND scope IN ({marks(within)}) AND ({condition})",
        (tenant, *within, *params),
    )
    allowed = set(within)
    return [row["id"] for row in rows if set(scopes_of(row["scope"], row["filters"])) <= allowed]


def scopes_of(scope: str | None, filters: str | None) -> list[str | None]:
    """The scopes a record's read named: its filters' ``scopes`` (a search over several is
    filed under its first), else its own. Filters that are no JSON object (a damaged file's,
    recovered) name none beyond the record's own scope."""
    try:
        named = json.loads(filters).get("scopes") if filters else None
    except (ValueError, AttributeError, RecursionError):
        named = None
    if isinstance(named, list) and all(isinstance(s, str) for s in named):
        return [*named, scope]
    return [scope]


def waiting(tx: Tx) -> bool:
    """Whether any tenant's emptied record waits for :func:`sweep`."""
    return applied(tx) and (
        tx.scalar(
            f"SELECT 1 FROM retrieval_audit {EVERY_TENANT_STATEMENT} WHERE scrubbed = 1 LIMIT 1"
        )
        is not None
    )


def sweep(tx: Tx, limit: int = SWEEP_BATCH) -> int:
    """Delete up to ``limit`` emptied records of every tenant, with the rows that cascade from
    them; how many."""
    emptied = tx.all(
        f"SELECT tenant, id FROM retrieval_audit {EVERY_TENANT_STATEMENT}"
        " WHERE scrubbed = 1 LIMIT ?",
        (limit,),
    )
    by_tenant: dict[str, list[int]] = {}
    for row in emptied:
        by_tenant.setdefault(row["tenant"], []).append(row["id"])
    for tenant, ids in by_tenant.items():
        tx.execute(
            f"DELETE FROM retrieval_audit WHERE tenant = ? AND id IN ({marks(ids)})",
            (tenant, *ids),
        )
    # The last batch: the ids the emptied records held leave the full-text index's pages.
    if emptied and not waiting(tx):
        audit_found.expunge(tx)
    return len(emptied)
