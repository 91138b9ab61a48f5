"""The retrieval audit: what each principal searched or recalled, and whether it found
anything. Records are buffered in memory and written by the upkeep worker, so reads never
take the write lock; ``flush`` writes them at once (close and the ``audit`` verb call it)."""

from __future__ import annotations

import json
import threading
from typing import Any

from ..core.clock import now_iso
from ..store.base import Store, Tx, rows_by_id
from .items import MAIL, visible
from .secrets import redact


class AuditLog:
    def __init__(self) -> None:
        self._pending: list[tuple[Any, ...]] = []
        self._lock = threading.Lock()

    def record(
        self,
        *,
        tenant: str,
        principal: str,
        verb: str,
        query: str | None,
        filters: dict[str, Any],
        returned: list[int],
    ) -> None:
        # Queries are written to disk too: a credential pasted into one is kept only redacted.
        row = (
            tenant,
            principal,
            verb,
            filters.get("scope"),
            None if query is None else redact(query).text,
            redact(json.dumps(filters, default=str)).text,
            json.dumps(returned),
            int(bool(returned)),
            now_iso(),
        )
        with self._lock:
            self._pending.append(row)

    def __len__(self) -> int:
        return len(self._pending)

    def flush(self, store: Store) -> int:
        """Write the buffered records. The lock is held until they are committed, so a reader
        that flushes first always sees every record taken before it."""
        with self._lock:
            if not self._pending:
                return 0
            with store.write() as tx:
                tx.executemany(
                    "INSERT INTO retrieval_audit (tenant, principal, verb, scope, query, filters,"
                    " returned, found, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    self._pending,
                )
            written, self._pending = len(self._pending), []
            return written


def read(
    tx: Tx,
    tenant: str,
    *,
    viewer: str | None,
    scope: str | None,
    since: str | None,
    principal: str | None,
    limit: int,
) -> list[dict[str, Any]]:
    """The records, newest first. Ids of messages ``viewer`` may not read are left out of
    ``returned`` (someone else's search may have found them)."""
    where, params = ["tenant = ?"], [tenant]
    if scope is not None:
        where.append("scope = ?")
        params.append(scope)
    if since is not None:
        where.append("created_at >= ?")
        params.append(since)
    if principal is not None:
        where.append("principal = ?")
        params.append(principal)
    rows = tx.all(
        f"SELECT * FROM retrieval_audit WHERE {' AND '.join(where)} ORDER BY id DESC LIMIT ?",
        (*params, limit),
    )
    returned = {row["id"]: json.loads(row["returned"]) for row in rows}
    hidden = _hidden(tx, tenant, viewer, {i for ids in returned.values() for i in ids})
    return [
        {
            "id": row["id"],
            "principal": row["principal"],
            "verb": row["verb"],
            "scope": row["scope"],
            "query": row["query"],
            "filters": json.loads(row["filters"]),
            "returned": [i for i in returned[row["id"]] if i not in hidden],
            "found": bool(row["found"]),
            "created_at": row["created_at"],
        }
        for row in rows
    ]


def _hidden(tx: Tx, tenant: str, viewer: str | None, ids: set[int]) -> set[int]:
    """Which of ``ids`` are messages ``viewer`` may not read."""
    if not ids:
        return set()
    members_only, params = visible("i", viewer)
    found = rows_by_id(
        tx,
        "SELECT i.id FROM items i",
        [i for i in ids if isinstance(i, int)],
        where=f"i.tenant = ? AND i.item_type = '{MAIL}' AND NOT {members_only}",
        params=[tenant, *params],
    )
    return set(found)
