"""Changing a note after it is written: edits, deletion and restore, the review lifecycle."""

from __future__ import annotations

from typing import Any

from ..core import audit
from ..core.clock import now_iso
from ..core.settings import note_limit_bytes
from ..errors import Conflict, ContentTooLarge, EmptyContent
from ..store.base import Tx
from . import history
from .operations import (
    check_body,
    check_scope,
    check_token,
    load_note,
    note_dict,
    review_date,
    version_token,
    write_version,
)
from .text import apply_edit, check_edit


def delete(tx: Tx, tenant: str, principal: str, item_id: object, hard: bool) -> dict[str, Any]:
    if hard:
        row = (
            tx.one(
                "SELECT * FROM items WHERE id = ? AND tenant = ? AND item_type = 'note'",
                (item_id, tenant),
            )
            if isinstance(item_id, int) and not isinstance(item_id, bool)
            else None
        )
        if row is None:
            load_note(tx, tenant, item_id)  # raises the right error
            raise AssertionError("unreachable")
        revisions = [
            f"{r['title'] or ''} {r['content']}"
            for r in tx.all("SELECT title, content FROM revisions WHERE item_id = ?", (row["id"],))
        ]
        tx.execute("DELETE FROM items WHERE id = ?", (row["id"],))
        audit.scrub(
            tx,
            tenant,
            items=[row["id"]],
            texts=[row["key"] or ""],
            forgotten=[row["title"] or "", row["content"], *revisions],
        )
    else:
        row = load_note(tx, tenant, item_id)
        tx.execute(
            "UPDATE items SET status = 'deleted', updated_at = ? WHERE id = ?",
            (now_iso(), row["id"]),
        )
    history.journal_row(tx, row, "delete", principal, removed=len(row["content"]))
    return {"id": row["id"], "deleted": "hard" if hard else "soft"}


def restore(tx: Tx, tenant: str, principal: str, item_id: object) -> dict[str, Any]:
    row = load_note(tx, tenant, item_id, deleted=True)
    if row["key"] is not None and tx.one(
        "SELECT id FROM items WHERE tenant = ? AND scope = ? AND key = ? AND status <> 'deleted'",
        (tenant, row["scope"], row["key"]),
    ):
        raise Conflict(
            f"another note now holds key {row['key']!r} in scope {row['scope']!r}; "
            "delete or re-key it before restoring this one"
        )
    tx.execute(
        "UPDATE items SET status = 'active', updated_at = ? WHERE id = ?", (now_iso(), row["id"])
    )
    history.journal_row(tx, row, "restore", principal, added=len(row["content"]))
    return note_dict(load_note(tx, tenant, row["id"]))


def mark_reviewed(tx: Tx, tenant: str, principal: str, item_id: object) -> dict[str, Any]:
    row = load_note(tx, tenant, item_id)
    due = review_date(tx, tenant, row["category"])
    tx.execute("UPDATE items SET review_at = ? WHERE id = ?", (due, row["id"]))
    history.journal_row(tx, row, "review", principal)
    return {"id": row["id"], "review_at": due, "status": "active"}


def due_for_review(tx: Tx, tenant: str, scope: object, limit: int) -> list[dict[str, Any]]:
    stamp = now_iso()
    where = "tenant = ? AND review_at IS NOT NULL AND review_at <= ? AND status = 'active'"
    params: list[Any] = [tenant, stamp]
    if scope is not None:
        where += " AND scope = ?"
        params.append(check_scope(scope))
    rows = tx.all(
        f"SELECT * FROM items WHERE {where} ORDER BY review_at, id LIMIT ?", (*params, limit)
    )
    return [note_dict(row, stamp) for row in rows]


def edit(
    tx: Tx,
    *,
    tenant: str,
    principal: str,
    item_id: object,
    operation: object,
    content: object,
    section: object,
    find: object,
    token: object,
) -> dict[str, Any]:
    """Apply one edit operation; an edit that changes nothing writes no revision."""
    op, raw = check_edit(operation, content, section, find)
    row = load_note(tx, tenant, item_id)
    check_token(row, token)
    text = check_body(raw, "content") if raw else raw
    updated = apply_edit(
        row["content"],
        op,
        text,
        section=section if isinstance(section, str) else None,
        find=find if isinstance(find, str) else None,
    )
    base = {"id": row["id"], "operation": op}
    if updated == row["content"]:
        return {
            **base,
            "outcome": "unchanged",
            "version": row["version"],
            "version_token": version_token(row["id"], row["version"]),
            "chars_added": 0,
            "chars_removed": 0,
            "bytes": len(updated.encode("utf-8")),
        }
    if not updated.strip():
        raise EmptyContent("the edit would leave the note empty; delete the note instead")
    limit = note_limit_bytes(tx, tenant)
    size = len(updated.encode("utf-8"))
    if size > limit:
        raise ContentTooLarge(
            f"the edited note would be {size} bytes; the limit is {limit} bytes (nothing was "
            "changed)",
            original_bytes=size,
            limit_bytes=limit,
        )
    version, added, removed = write_version(
        tx, row, principal=principal, operation="edit", content=updated
    )
    return {
        **base,
        "outcome": "edited",
        "version": version,
        "version_token": version_token(row["id"], version),
        "chars_added": added,
        "chars_removed": removed,
        "bytes": size,
    }
