"""status: which scopes hold data, and the ontology of one scope."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ..core.items import reach, readable_mail
from ..store import tallies
from ..store.base import Tx

TOP_CLASSES = 10


def status(tx: Tx, tenant: str, scope: str | None, viewer: str | None = None) -> dict[str, Any]:
    """Counts of what ``viewer`` may read (messages count for their members only)."""
    held: defaultdict[str, dict[str, int]] = defaultdict(lambda: {"items": 0, "entities": 0})
    for row in tallies.counts(tx, tenant, "scope", "deleted = 0"):
        held[row["scope"]]["items"] += int(row["n"])
    for name, (mail, _) in readable_mail(tx, tenant, viewer).items():
        held[name]["items"] += mail
    for row in tx.all(
        "SELECT scope, count(*) AS n FROM entities WHERE tenant = ? GROUP BY scope", (tenant,)
    ):
        held[row["scope"]]["entities"] = int(row["n"])
    reached = reach()  # a token limited to scopes learns nothing of the others, not even names
    reply: dict[str, Any] = {
        "memory": "on",
        "scopes": [
            {"scope": name, **counts}
            for name, counts in sorted(held.items())
            if reached is None or name in reached
        ],
    }
    if scope is None:
        return reply
    # Counted from the live rows, never estimated: members_bound says so.
    types = [
        {**dict(r), "members_bound": "exact"}
        for r in tx.all(
            "SELECT t.type, count(*) AS members FROM entity_types t JOIN entities e ON"
            " e.id = t.entity_id WHERE e.tenant = ? AND e.scope = ? GROUP BY t.type"
            " ORDER BY members DESC, t.type",
            (tenant, scope),
        )
    ]
    relations = [
        dict(r)
        for r in tx.all(
            "SELECT relation, count(*) AS facts FROM facts WHERE tenant = ? AND scope = ?"
            " AND ended_at IS NULL GROUP BY relation ORDER BY facts DESC, relation",
            (tenant, scope),
        )
    ]
    counts = tx.one(
        "SELECT (SELECT count(*) FROM entities WHERE tenant = ? AND scope = ?) AS entities,"
        " (SELECT count(*) FROM facts WHERE tenant = ? AND scope = ? AND ended_at IS NULL)"
        " AS facts",
        (tenant, scope) * 2,
    )
    documents = tallies.counts(tx, tenant, "scope", "scope = ? AND item_type = 'document'", [scope])
    # deleted or not, as the documents of a scope were always counted
    assert counts is not None
    reply["ontology"] = {
        "scope": scope,
        "entities": counts["entities"],
        "facts": counts["facts"],
        "documents": int(documents[0]["n"]) if documents else 0,
        "entity_types": types,
        "biggest_classes": types[:TOP_CLASSES],
        "relations": relations,
        "relation_spellings": [r["relation"] for r in relations],
    }
    return reply
