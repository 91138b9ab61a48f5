"""What one tenant's memory holds, counted: the overview the memory lens shows first, and the
summary a person reads first."""

from __future__ import annotations

from ..core.clock import now_iso
from ..core.items import visible
from ..entries.operations import counts_by_category
from ..store.base import Tx
from ..work import rules as rule_ops
from .results import EntryCount, NoteCount, Overview, Summary

_LIVE = "tenant = ? AND status <> 'deleted'"
# The overview counts everything a tenant holds, so it reads every row of the tenant: the plan
# check (tests/test_query_plans.py) accepts the scans of statements carrying this mark.
_WHOLE = "/* whole memory */ "


def _axis(scope: str) -> str | None:
    if scope == "user":
        return "user"
    return "project" if scope.startswith("project:") else None


def overview(tx: Tx, tenant: str, viewer: str | None = None) -> Overview:
    """The counts of what ``viewer`` may read (messages count for their members only)."""
    members_only, params = visible("items", viewer)
    items = {
        row["item_type"]: int(row["n"])
        for row in tx.all(
            f"{_WHOLE}SELECT item_type, count(*) AS n FROM items WHERE {_LIVE}"
            f" AND {members_only} GROUP BY item_type ORDER BY item_type",
            (tenant, *params),
        )
    }
    chars = tx.scalar(
        f"{_WHOLE}SELECT coalesce(sum(length(content)), 0) FROM items WHERE {_LIVE}"
        f" AND {members_only}",
        (tenant, *params),
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


def _count(tx: Tx, sql: str, *params: object) -> int:
    """A count over everything a tenant holds of one kind (marked as such for the plan check)."""
    return int(tx.scalar(_WHOLE + sql, params) or 0)


def summary(tx: Tx, tenant: str) -> Summary:
    by_category = counts_by_category(tx, tenant)
    rule_list = rule_ops.get(tx, tenant)
    violations = rule_ops.recent_violations(tx, tenant)
    # One read of the tenant's items counts the notes, messages and documents (no index holds
    # the item type, so each count of one type read them all: summary took 73-82 ms against
    # 37-42 at 100,000 entries).
    kinds = {
        row["item_type"]: row
        for row in tx.all(
            f"{_WHOLE}SELECT item_type, count(*) AS n, sum(CASE WHEN status = 'active' AND"
            " review_at IS NOT NULL AND review_at <= ? THEN 1 ELSE 0 END) AS due,"
            " count(DISTINCT session) AS sessions"
            f" FROM items WHERE {_LIVE} AND item_type IN ('note', 'message', 'document')"
            " GROUP BY item_type",
            (now_iso(), tenant),
        )
    }

    def counted(kind: str, column: str = "n") -> int:
        row = kinds.get(kind)
        return 0 if row is None else int(row[column] or 0)

    reply: Summary = {
        "text": "",
        "entries": sum(by_category.values()),
        "entries_by_category": by_category,
        "rules": len(rule_list),
        "recent_violations": violations,
        "notes": counted("note"),
        "notes_needing_review": counted("note", "due"),
        "conversations": counted("message", "sessions"),
        "messages": counted("message"),
        "entities": _count(tx, "SELECT count(*) FROM entities WHERE tenant = ?", tenant),
        "facts": _count(
            tx, "SELECT count(*) FROM facts WHERE tenant = ? AND ended_at IS NULL", tenant
        ),
        "documents": counted("document"),
        "plans": _count(tx, "SELECT count(*) FROM plans WHERE tenant = ?", tenant),
        "plans_finished": _count(
            tx,
            "SELECT count(*) FROM plans p WHERE tenant = ? AND NOT EXISTS (SELECT 1 FROM"
            " plan_steps s WHERE s.plan_id = p.id AND s.status NOT IN ('done', 'skipped'))",
            tenant,
        ),
    }
    lines = [f"Agent Memory: {reply['entries']} entries, {reply['rules']} rules"]
    lines += [f"  {category}: {count}" for category, count in by_category.items()]
    # The other families, each on one line once it holds something (a Synsema-only memory
    # reads exactly as Synsema's summary did).
    if reply["notes"]:
        due = reply["notes_needing_review"]
        lines.append(f"Notes: {reply['notes']}" + (f" ({due} need review)" if due else ""))
    if reply["messages"]:
        lines.append(f"Conversations: {reply['conversations']} ({reply['messages']} messages)")
    if reply["entities"] or reply["documents"]:
        lines.append(
            f"Knowledge: {reply['entities']} entities, {reply['facts']} current facts, "
            f"{reply['documents']} documents"
        )
    if reply["plans"]:
        lines.append(f"Plans: {reply['plans']} ({reply['plans_finished']} finished)")
    if rule_list:
        lines.append("Rules:")
        lines += [
            f"  [{rule['level']:<6}] {rule['name']}: {rule['description']}" for rule in rule_list
        ]
    if violations:
        lines.append("Recent violations:")
        lines += [f"  {message}" for message in violations]
    reply["text"] = "\n".join(lines)
    return reply
