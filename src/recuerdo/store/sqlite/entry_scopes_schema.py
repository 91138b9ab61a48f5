"""The step ``m028_entry_scopes``: entries are listed by scope through an index.

``recall(scope=X)`` lists the entries of one scope newest first. No index held the scope of
entries, so the listing walked every entry of the memory newest first (``items_entries``),
reading each one's row to test its scope, until it had its limit and the 1,000 it counts past
it (``more``): a scope holding few of 100,000 entries was a walk of all of them
(docs/decisions/0050-entry-scopes.md has the figures). The index holds entries only, in
scope order and newest first within a scope, so a listing reads its rows and stops.

An entry's scope is set when it is written and never changed, so updates do not touch the
index. Every backend takes the step: SQLite's index ends with the row id implicitly,
PostgreSQL's names it (as ``items_by_category`` does on each).
"""

from __future__ import annotations

from ..base import Tx

ENTRY_SCOPES = "CREATE INDEX items_entry_scopes ON items ({columns}) WHERE item_type = 'entry'"


def m028_entry_scopes(tx: Tx) -> None:
    """The step, on both stores (registered in each later_steps.py)."""
    columns = "tenant, scope" if tx.dialect == "sqlite" else "tenant, scope, id"
    tx.execute(ENTRY_SCOPES.format(columns=columns))
