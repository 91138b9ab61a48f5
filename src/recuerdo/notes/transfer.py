"""A note's records in an export (``graph/transfer.py`` pages and reads them): every version,
and the conflict revisions kept beside it (text that came with a stale version: both versions
are kept, and an export that dropped one lost it)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..store.base import Row, Tx
from . import history
from . import operations as notes


def record_key(*parts: Any) -> str:
    """An exported record's stable key: an import skips a record whose key it has read."""
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:32]


def export_records(tx: Tx, rows: list[Row]) -> list[dict[str, Any]]:
    if not rows:
        return []
    tenant, ids = rows[0]["tenant"], [row["id"] for row in rows]
    histories = history.versions_of(tx, tenant, ids)
    conflicts = _conflicts_of(tx, tenant, ids)
    records = []
    for row in rows:
        texts, versions = histories.get(row["id"], ({}, []))
        records.append(
            {
                "record": "note",
                "key": record_key("note", row["key"] or row["title"], row["created_at"]),
                "title": row["title"],
                "kind": row["category"],
                "note_key": row["key"],
                "tags": json.loads(row["tags"]),
                "created_at": row["created_at"],
                "revisions": [
                    {
                        "version": r["version"],
                        "title": r["title"],
                        "kind": r["kind"],
                        "content": texts[r["version"]],
                        "operation": r["operation"],
                        "principal": r["principal"],
                        "created_at": r["created_at"],
                    }
                    for r in versions
                ],
                "conflicts": conflicts.get(row["id"], []),
            }
        )
    return records


def _conflicts_of(tx: Tx, tenant: str, ids: list[int]) -> dict[int, list[dict[str, Any]]]:
    """The conflict revisions of notes (text that came with a stale version and was kept beside
    the note): an export that left them out lost the version a writer's save did not replace."""
    marks = ", ".join("?" * len(ids))
    found: dict[int, list[dict[str, Any]]] = {}
    for r in tx.all(
        "SELECT item_id, based_on, title, kind, content, principal, created_at FROM revisions"
        f" WHERE tenant = ? AND item_id IN ({marks}) AND operation = 'conflict' ORDER BY id",
        (tenant, *ids),
    ):
        found.setdefault(r["item_id"], []).append(
            {
                "based_on": r["based_on"],
                "title": r["title"],
                "kind": r["kind"],
                "content": r["content"],
                "principal": r["principal"],
                "created_at": r["created_at"],
            }
        )
    return found


def import_record(
    tx: Tx, tenant: str, principal: str, scope: str, record: dict[str, Any]
) -> str | None:
    revisions, conflicts = _checked_note(record)
    first, last = revisions[0], revisions[-1]
    key = record.get("note_key")
    held = None if key is None else notes.by_key(tx, tenant, scope, key)
    if held is not None:
        return _kept_beside(tx, held, principal, last, conflicts)
    item_id = notes.create(
        tx,
        tenant=tenant,
        principal=first.get("principal") or principal,
        title=first["title"],
        content=first["content"],
        kind=first.get("kind") or "manual",
        scope=scope,
        key=key,
        tags=list(record.get("tags") or []),
    )
    for revision in revisions[1:]:
        row = tx.one("SELECT * FROM items WHERE tenant = ? AND id = ?", (tenant, item_id))
        assert row is not None
        notes.write_version(
            tx,
            row,
            principal=revision.get("principal") or principal,
            operation=revision.get("operation") or "import",
            content=revision["content"],
            title=revision["title"],
            kind=revision.get("kind"),
        )
    for conflict in conflicts:
        history.record_revision(
            tx,
            tenant=tenant,
            item_id=item_id,
            operation="conflict",
            principal=conflict.get("principal") or principal,
            title=conflict.get("title"),
            kind=conflict.get("kind"),
            content=conflict["content"],
            added=0,
            removed=0,
            based_on=conflict.get("based_on"),
        )
    history.journal(
        tx,
        tenant=tenant,
        scope=scope,
        item_id=item_id,
        item_type="note",
        operation="import",
        principal=principal,
        version=len(revisions),
    )
    return None


def _kept_beside(
    tx: Tx, held: Row, principal: str, last: dict[str, Any], conflicts: list[Any]
) -> str:
    """Another note holds the record's key here: the record's text, and the conflicts it
    carries, are kept beside that note as its conflict revisions, never written over it (the
    insert failed on the key's unique index, with no error code, and the whole call with it:
    found by a hunt over the notes). The record's conflicts were based on versions of its own
    note, not of this one: they are kept without a version."""
    same = (held["title"], held["content"]) == (last["title"], last["content"])
    texts = [] if same else [(last, held["version"])]
    texts += [(conflict, None) for conflict in conflicts]
    kept = [
        history.record_revision(
            tx,
            tenant=held["tenant"],
            item_id=held["id"],
            operation="conflict",
            principal=text.get("principal") or principal,
            title=text.get("title"),
            kind=text.get("kind") or held["category"],
            content=text["content"],
            added=0,
            removed=0,
            based_on=based_on,
        )
        for text, based_on in texts
    ]
    where = f"note key {held['key']!r} is held here by note {held['id']}"
    if not kept:
        return f"{where}, with the same text"
    named = ", ".join(str(revision) for revision in kept)
    history.journal_row(tx, held, "conflict", principal)
    plural = "s" if len(kept) > 1 else ""
    return (
        f"{where}: the record's text{plural} kept as its conflict revision{plural} {named},"
        " nothing was overwritten"
    )


def _checked_note(record: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    """A note record's revisions and conflicts, their shapes checked before anything is
    written: a record found malformed half-way left a note behind while the reply called it
    skipped (and a retry imported it twice)."""
    revisions, conflicts = record["revisions"], record.get("conflicts") or []
    if not isinstance(revisions, list) or not revisions:
        raise ValueError("revisions is a non-empty list")
    if not isinstance(conflicts, list):
        raise ValueError("conflicts is a list")
    for revision in (*revisions, *conflicts):
        if not isinstance(revision, dict) or not isinstance(revision.get("content"), str):
            raise ValueError("each revision and conflict is an object with a text content")
        for name in ("title", "kind", "principal"):
            if not isinstance(revision.get(name), str | None):
                raise ValueError(f"a revision's {name} is a text")
    versions = len(revisions)
    for conflict in conflicts:
        based_on = conflict.get("based_on")
        if based_on is not None and (
            isinstance(based_on, bool)
            or not isinstance(based_on, int)
            or not 0 < based_on <= versions
        ):
            raise ValueError(f"a conflict's based_on is a version of the note (1-{versions})")
    return revisions, conflicts
