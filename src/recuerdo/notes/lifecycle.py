"""Changing a note after it is written: edits, deletion and restore, the review lifecycle."""

from __future__ import annotations

from typing import Any

from ..core import audit
from ..core.clock import now_iso
from ..core.items import reach
from ..core.joined import marks_a_key, redact_joined
from ..core.secrets import SecretKind
from ..core.settings import note_limit_bytes
from ..errors import (
    Conflict,
    ContentTooLarge,
    EmptyContent,
    ItemNotFound,
    OperationContentMismatch,
)
from ..store.base import Row, Tx
from . import history, scrub, traces
from .operations import (
    check_body,
    check_scope,
    check_title,
    check_token,
    load_note,
    note_dict,
    review_date,
    version_token,
    write_version,
)
from .results import Deleted, Edited, Note, Reviewed
from .text import apply_edit, check_edit


def _mark(tx: Tx, row: Row, operation: str, principal: str) -> None:
    """A deletion or restore in the note's history, beside its versions (no version number of
    its own): the text it took away or brought back, and who did it."""
    size = len(row["content"])
    history.record_revision(
        tx,
        tenant=row["tenant"],
        item_id=row["id"],
        operation=operation,
        principal=principal,
        title=row["title"],
        kind=row["category"],
        content=row["content"],
        added=size if operation == "restore" else 0,
        removed=size if operation == "delete" else 0,
        based_on=row["version"],
    )


def delete(tx: Tx, tenant: str, principal: str, item_id: object, hard: bool) -> Deleted:
    if hard:
        row = (
            tx.one(
                "SELECT * FROM items WHERE id = ? AND tenant = ? AND item_type = 'note'",
                (item_id, tenant),
            )
            if isinstance(item_id, int) and not isinstance(item_id, bool)
            else None
        )
        reached = reach()
        if row is None or (reached is not None and row["scope"] not in reached):
            load_note(tx, tenant, item_id)  # raises the right error
            raise AssertionError("unreachable")
        revisions = [
            f"{title or ''} {text}" for title, text in history.revision_texts(tx, tenant, row["id"])
        ]
        traces.erase(tx, tenant, [row])  # before the revisions go: it reads them
        tx.execute("DELETE FROM items WHERE tenant = ? AND id = ?", (tenant, row["id"]))
        audit.scrub(
            tx,
            tenant,
            items=[row["id"]],
            texts=[row["key"] or ""],
            forgotten=[row["title"] or "", row["content"], *revisions, *traces.words_of(row)],
        )
    else:
        row = load_note(tx, tenant, item_id)
        tx.execute(
            "UPDATE items SET status = 'deleted', updated_at = ? WHERE tenant = ? AND id = ?",
            (now_iso(), tenant, row["id"]),
        )
        _mark(tx, row, "delete", principal)
    history.journal_row(tx, row, "delete", principal, removed=len(row["content"]))
    return {"id": row["id"], "deleted": "hard" if hard else "soft"}


def restore(tx: Tx, tenant: str, principal: str, item_id: object) -> Note:
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
        "UPDATE items SET status = 'active', updated_at = ? WHERE tenant = ? AND id = ?",
        (now_iso(), tenant, row["id"]),
    )
    _mark(tx, row, "restore", principal)
    history.journal_row(tx, row, "restore", principal, added=len(row["content"]))
    return note_dict(load_note(tx, tenant, row["id"]))


def mark_reviewed(
    tx: Tx, tenant: str, principal: str, item_id: object, scope: object = None
) -> Reviewed:
    row = load_note(tx, tenant, item_id)
    if scope is not None and row["scope"] != check_scope(scope):
        raise ItemNotFound(f"no note with id {row['id']} in scope {scope!r}")
    due = review_date(tx, tenant, row["category"])
    tx.execute(
        "UPDATE items SET review_at = ? WHERE tenant = ? AND id = ?",
        (due, row["tenant"], row["id"]),
    )
    history.journal_row(tx, row, "review", principal)
    return {"id": row["id"], "review_at": due, "status": "active"}


def due_for_review(tx: Tx, tenant: str, scope: object, limit: int) -> list[Note]:
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


def _text_edit(
    operation: object, content: object, section: object, find: object, retitle: bool
) -> tuple[str, str] | None:
    """(operation, content) of the text edit asked for, or None for a rename alone."""
    if operation is None and content is None and retitle:
        if section is not None or find is not None:
            raise OperationContentMismatch("section and find belong to an edit operation")
        return None
    if operation is None:
        raise OperationContentMismatch(
            "an edit needs its operation and its content together (operation=..., "
            "content=...), or a new title"
        )
    return check_edit(operation, content, section, find)


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
    title: object = None,
    scrubbing: bool = False,
) -> Edited:
    """Apply one edit operation, a new title, or both in one revision; an edit that changes
    nothing writes no revision. When its redaction takes out a credential the stored text held,
    the note's earlier versions are scrubbed of it too (decision 0150): only with
    ``scrubbing`` (the caller's write is an erasing one), else :class:`scrub.ScrubOwed`."""
    new_title = None if title is None else check_title(title)
    text_edit = _text_edit(operation, content, section, find, new_title is not None)
    row = load_note(tx, tenant, item_id)
    check_token(row, token)
    op: str | None = None
    updated = row["content"]
    text = ""
    if text_edit is not None:
        op, raw = text_edit
        text = check_body(raw, "content") if raw else raw
        updated = apply_edit(
            row["content"],
            op,
            text,
            section=section if isinstance(section, str) else None,
            find=find if isinstance(find, str) else None,
        )
    # The note's text as a whole, when the edit changed it: a credential the edit completes (a
    # value appended after "password =", a key's END marker under its body lines) is in neither
    # the note nor the edit's text alone (the review of 0082). The content reaches here
    # unredacted (the verb's ``raw``): what is stored is what the guard stores for the whole
    # text, and whatever it finds in the content alone wherever the edit kept it (decision 0141).
    completed: tuple[SecretKind, ...] = ()
    if text_edit is not None:
        marked = marks_a_key(title, section, find, token)
        updated, completed = redact_joined(updated, text, marked)
    renamed = new_title is not None and new_title != row["title"]
    if updated == row["content"] and not renamed:
        return {
            "id": row["id"],
            "operation": op,
            "outcome": "unchanged",
            "version": row["version"],
            "version_token": version_token(row["id"], row["version"]),
            "chars_added": 0,
            "chars_removed": 0,
            "bytes": len(updated.encode("utf-8")),
            "title": row["title"],
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
    row, scrubbed = scrub.before_write(tx, row, principal, completed, scrubbing)
    version, added, removed = write_version(
        tx,
        row,
        principal=principal,
        operation="edit",
        content=updated,
        title=new_title if renamed else None,
    )
    edited: Edited = {
        "id": row["id"],
        "operation": op,
        "outcome": "edited",
        "version": version,
        "version_token": version_token(row["id"], version),
        "chars_added": added,
        "chars_removed": removed,
        "bytes": size,
        "title": new_title if renamed else row["title"],
    }
    if completed:
        edited["redacted"] = {"content": list(completed)}
    scrub.after_write(tx, row, scrubbed)
    return edited
