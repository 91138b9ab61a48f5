"""What one tenant's memory holds, counted: the overview the memory lens shows first."""

from __future__ import annotations

from ..core.clock import now_iso
from ..store.base import Tx
from .results import EntryCount, NoteCount, Overview

_LIVE = "tenant = ? AND status <> 'deleted'"


def _axis(scope: str) -> str | None:
    if scope == "user":
        return "user"
    return "project" if scope.startswith("project:") else None


def overview(tx: Tx, tenant: str) -> Overview:
    items = {
        row["item_type"]: int(row["n"])
        for row in tx.all(
            f"SELECT item_type, count(*) AS n FROM items WHERE {_LIVE} GROUP BY item_type"
            " ORDER BY item_type",
            (tenant,),
        )
    }
    chars = tx.scalar(
        f"SELECT coalesce(sum(length(content)), 0) FROM items WHERE {_LIVE}", (tenant,)
    )
    entries: list[EntryCount] = [
        {"category": row["category"], "source": row["source"], "count": int(row["n"])}
        for row in tx.all(
            f"SELECT category, source, count(*) AS n FROM items WHERE {_LIVE}"
            " AND item_type = 'entry' GROUP BY category, source ORDER BY category, source",
            (tenant,),
        )
    ]
    notes: list[NoteCount] = [
        {
            "axis": _axis(row["scope"]),  # type: ignore[typeddict-item]
            "scope": row["scope"],
            "kind": row["category"],
            "count": int(row["n"]),
            "needs_review": int(row["due"]),
            "muted": int(row["muted"]),
        }
        for row in tx.all(
            "SELECT scope, category, count(*) AS n, sum(CASE WHEN review_at IS NOT NULL AND"
            " review_at <= ? AND status = 'active' THEN 1 ELSE 0 END) AS due,"
            " sum(CASE WHEN muted <> 0 THEN 1 ELSE 0 END) AS muted FROM items"
            f" WHERE {_LIVE} AND item_type = 'note' GROUP BY scope, category"
            " ORDER BY scope, category",
            (now_iso(), tenant),
        )
    ]
    deleted = tx.scalar(
        "SELECT count(*) FROM items WHERE tenant = ? AND status = 'deleted' AND item_type = 'note'",
        (tenant,),
    )
    plans = tx.scalar("SELECT count(*) FROM plans WHERE tenant = ?", (tenant,))
    rules = tx.scalar("SELECT count(*) FROM rules WHERE tenant = ?", (tenant,))
    return {
        "items": items,
        "chars": int(chars),
        "deleted_notes": int(deleted),
        "entries": entries,
        "notes": notes,
        "plans": int(plans),
        "rules": int(rules),
    }
