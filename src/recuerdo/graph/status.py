"""status: which scopes hold data, and the ontology of one scope."""

from __future__ import annotations

from typing import Any

from ..store.base import Tx

TOP_CLASSES = 10


def status(tx: Tx, tenant: str, scope: str | None) -> dict[str, Any]:
    scopes = [
        dict(r)
        for r in tx.all(
            "SELECT scope, count(*) AS items FROM items WHERE tenant = ? AND status <> 'deleted'"
            " GROUP BY scope UNION ALL SELECT scope, 0 FROM entities WHERE tenant = ?"
            " GROUP BY scope ORDER BY scope",
            (tenant, tenant),
        )
    ]
    merged: dict[str, int] = {}
    for row in scopes:
        merged[row["scope"]] = merged.get(row["scope"], 0) + row["items"]
    reply: dict[str, Any] = {
        "memory": "on",
        "scopes": [{"scope": name, "items": count} for name, count in sorted(merged.items())],
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
        " AS facts, (SELECT count(*) FROM items WHERE tenant = ? AND scope = ?"
        " AND item_type = 'document') AS documents",
        (tenant, scope) * 3,
    )
    assert counts is not None
    reply["ontology"] = {
        "scope": scope,
        "entities": counts["entities"],
        "facts": counts["facts"],
        "documents": counts["documents"],
        "entity_types": types,
        "biggest_classes": types[:TOP_CLASSES],
        "relations": relations,
        "relation_spellings": [r["relation"] for r in relations],
    }
    return reply
