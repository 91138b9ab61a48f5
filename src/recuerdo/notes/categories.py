"""Category notes on two axes (Notarium family): one note per category, observations appended.

The ``user`` axis is the same whatever project the agent works in; the ``project`` axis is
tied to one project. The tool, not the agent, decides where memory lives: the note's scope,
key, kind and title all follow from (axis, project, category).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from datetime import timedelta
from typing import Literal, cast

from ..core.clock import now, now_iso, to_iso
from ..core.exact import shown
from ..core.items import reach
from ..core.joined import marks_a_key, redact_joined
from ..core.secrets import SecretKind, holds_redaction
from ..core.settings import note_limit_bytes
from ..core.text import checked_label, clip
from ..errors import (
    Conflict,
    ContentTooLarge,
    EmptyContent,
    InvalidInput,
    InvalidLabel,
    ItemNotFound,
)
from ..store.base import Row, Tx
from . import history, keys, scrub
from . import operations as notes
from .results import Muted, ProfileEntry, Remembered
from .text import join_blocks

KIND = notes.MEMORY_KIND
AXES = ("user", "project")
IDEMPOTENCY_WINDOW = timedelta(hours=24)
SNIPPET_CHARS = 160
_FORBIDDEN = set("[]|#\r\n")


def scope_for(axis: object, project: object) -> str:
    if axis == "user":
        return "user"
    if axis == "project":
        if project is None:
            raise InvalidInput("the project axis needs a project name (project=...)")
        return f"project:{checked_label(project, 'project')}"
    raise InvalidInput(f"axis must be one of {', '.join(AXES)}, got {shown(axis)}")


def check_category(label: object) -> str:
    if not isinstance(label, str) or not label.strip():
        raise InvalidLabel("a category label must be non-empty text, e.g. 'preferences'")
    bad = sorted(_FORBIDDEN & set(label))
    if bad:
        shown = ", ".join(repr(ch) for ch in bad)
        raise InvalidLabel(
            f"category {label!r} holds {shown}: a category is a label, not a path or a link"
        )
    if len(label) > 200:
        raise InvalidLabel("a category label has at most 200 characters")
    return " ".join(label.split())


def category_key(label: str) -> str:
    """The note key of a category. Labels that differ only in case, spacing or punctuation
    share a note; any non-ASCII character adds a hash of the whole label, so labels in other
    scripts never collapse into one another (or into an empty slug)."""
    folded = label.casefold()
    slug = re.sub(r"[^a-z0-9]+", "-", folded).strip("-")
    if folded.isascii() and slug:
        return f"{keys.CATEGORY_PREFIX}{slug}"
    digest = hashlib.sha256(folded.encode("utf-8")).hexdigest()[:16]
    return f"{keys.CATEGORY_PREFIX}{slug}-{digest}" if slug else f"{keys.CATEGORY_PREFIX}u-{digest}"


def _category_note(tx: Tx, tenant: str, scope: str, label: str) -> Row | None:
    return tx.one(
        "SELECT * FROM items WHERE tenant = ? AND scope = ? AND key = ? AND item_type = 'note'"
        " AND status <> 'deleted'",
        (tenant, scope, category_key(label)),
    )


def _reply(
    row_id: int,
    version: int,
    body: str,
    outcome: Literal["created", "appended"],
    summary_updated: bool,
    label: str,
    scope: str,
) -> Remembered:
    return {
        "note_id": row_id,
        "version_token": notes.version_token(row_id, version),
        "outcome": outcome,
        "body_bytes": len(body.encode("utf-8")),
        "body_hash": history.content_hash(body),
        "summary_updated": summary_updated,
        "category": label,
        "scope": scope,
    }


def _asked(label: str, observation: object) -> str:
    """What a ``remember_about`` asked, as its kept reply remembers it: a retry asks the same."""
    text = observation.strip() if isinstance(observation, str) else repr(observation)
    return hashlib.sha256(f"{label}\x00{text}".encode("utf-8", "surrogatepass")).hexdigest()


def _guarded(observation: object, marked: bool) -> object:
    if not isinstance(observation, str):
        return observation
    return redact_joined(observation, observation, marked).text


def _idempotent_reply(
    tx: Tx, tenant: str, principal: str, scope: str, key: str, asked: str
) -> Remembered | None:
    row = tx.one(
        "SELECT reply, created_at FROM idempotency WHERE tenant = ? AND principal = ?"
        " AND verb = 'remember_about' AND scope = ? AND key = ?",
        (tenant, principal, scope, key),
    )
    if row is None:
        return None
    if row["created_at"] < to_iso(now() - IDEMPOTENCY_WINDOW):
        tx.execute(
            "DELETE FROM idempotency WHERE tenant = ? AND principal = ?"
            " AND verb = 'remember_about' AND scope = ? AND key = ?",
            (tenant, principal, scope, key),
        )
        return None
    earlier = json.loads(row["reply"])
    # A key given again with another observation or category is no retry: answered skipped,
    # the new observation was never stored (found by a hunt over the notes). Replies kept
    # before the request was remembered with them match any.
    if earlier.pop("asked", asked) != asked:
        raise Conflict(
            f"idempotency key {key!r} was used in the last 24 hours for another observation or "
            "category: nothing was stored; use a new key for a new observation"
        )
    return cast(Remembered, {**earlier, "outcome": "skipped"})


def remember_about(
    tx: Tx,
    *,
    tenant: str,
    principal: str,
    axis: object,
    observation: object,
    category: object,
    project: object,
    summary: object,
    idempotency_key: object,
    version_token: object,
    scrubbing: bool = False,
) -> Remembered:
    """``scrubbing``: the write is an erasing one, in which an append whose redaction takes
    out a credential the note held scrubs its earlier versions too (``scrub.before_write``)."""
    scope = scope_for(axis, project)
    label = check_category(category)
    key = None if idempotency_key is None else checked_label(idempotency_key, "idempotency_key")
    if key is not None and holds_redaction(key):
        # A credential given as the key reaches here redacted, the same for every credential:
        # it names no one request (keys that differed were refused as reused), so none is
        # kept; a retry appends again rather than lose an observation.
        key = None
    # Only with a key: every other call would hash its observation for nothing. The
    # observation reaches here unredacted (the verb's ``raw``): it is hashed as the guard
    # would have passed it, so no digest of a credential is kept and a retry matches as before.
    marked = marks_a_key(summary, category, project, idempotency_key, version_token)
    asked = "" if key is None else _asked(label, _guarded(observation, marked))
    if key is not None and (earlier := _idempotent_reply(tx, tenant, principal, scope, key, asked)):
        return earlier
    text = notes.check_body(observation, "observation").strip()
    if not text:
        raise EmptyContent("observation is empty: there is nothing to remember")
    line = None if summary is None else " ".join(notes.check_body(summary, "summary").split())
    limit = note_limit_bytes(tx, tenant)
    row = _category_note(tx, tenant, scope, label)
    completed: tuple[SecretKind, ...] = ()
    if row is None and version_token is not None:
        # The token names a version of the category note: deleted since, it is refused.
        keys.refuse_if_deleted_since(
            tx, tenant, scope, category_key(label), str(version_token), "version_token"
        )
    if row is None:
        # The observation alone is the note: redacted here, as it came unredacted.
        body, completed = redact_joined(text, text, marked)
        outcome: Literal["created", "appended"] = "created"
        _check_size(body, limit)
        note_id = notes.create(
            tx,
            tenant=tenant,
            principal=principal,
            title=label,
            content=body,
            kind=KIND,
            scope=scope,
            key=category_key(label),
            summary=line,
        )
        version = 1
    else:
        notes.check_token(row, version_token)
        # Redacted as a whole: a credential the observation completes (a value after a
        # "password:" that ends the note) is in neither alone (the review of 0082).
        joined = redact_joined(join_blocks(row["content"], text), text, marked)
        body, outcome, completed = joined.text, "appended", joined.found
        _check_size(body, limit)
        row, scrubbed = scrub.before_write(tx, row, principal, completed, scrubbing)
        version, _, _ = notes.write_version(
            tx, row, principal=principal, operation="write", content=body, summary=line
        )
        scrub.after_write(tx, row, scrubbed)
        note_id = row["id"]
    reply = _reply(note_id, version, body, outcome, line is not None, label, scope)
    if completed:
        reply["redacted"] = {"observation": list(completed)}
    if key is not None:
        tx.execute(
            "INSERT INTO idempotency (tenant, principal, verb, scope, key, reply, created_at)"
            " VALUES (?, ?, 'remember_about', ?, ?, ?, ?)",
            (tenant, principal, scope, key, json.dumps({**reply, "asked": asked}), now_iso()),
        )
    return reply


def _check_size(body: str, limit: int) -> None:
    size = len(body.encode("utf-8"))
    if size > limit:
        raise ContentTooLarge(
            f"the category note would be {size} bytes; the limit is {limit} bytes (nothing was "
            "appended: edit the note to condense it, or start another category)",
            original_bytes=size,
            limit_bytes=limit,
        )


def profile(
    tx: Tx, tenant: str, axis: object, project: object, include_muted: bool
) -> list[ProfileEntry]:
    """The derived index of one axis: per category its summary (or a snippet), size in tokens,
    muted flag and modified time. Muted categories are left out unless asked for."""
    scope = scope_for(axis, project)
    reached = reach()
    if reached is not None and scope not in reached:
        return []  # an axis beyond the call's scopes has no category it may read
    muted_clause = "" if include_muted else " AND muted = 0"
    rows = tx.all(
        "SELECT id, title, content, summary, muted, updated_at FROM items WHERE tenant = ?"
        " AND scope = ? AND item_type = 'note' AND category = ? AND status <> 'deleted'"
        f"{muted_clause} ORDER BY title",
        (tenant, scope, KIND),
    )
    entries: list[ProfileEntry] = []
    for row in rows:
        text = row["content"]
        snippet = " ".join(text.split())
        if len(snippet) > SNIPPET_CHARS:
            snippet = clip(snippet, SNIPPET_CHARS - 1) + "…"
        entries.append(
            {
                "category": row["title"],
                "note_id": row["id"],
                "summary": row["summary"] or snippet,
                "from_summary": row["summary"] is not None,
                "tokens": math.ceil(len(text) / 4),
                "muted": bool(row["muted"]),
                "modified": row["updated_at"],
            }
        )
    return entries


def set_muted(
    tx: Tx,
    tenant: str,
    principal: str,
    category: object,
    axis: object,
    project: object,
    muted: bool,
) -> Muted:
    scope = scope_for(axis, project)
    label = check_category(category)
    reached = reach()
    beyond = reached is not None and scope not in reached
    row = None if beyond else _category_note(tx, tenant, scope, label)
    if row is None:
        raise ItemNotFound(f"no category {label!r} on the {axis} axis ({scope})")
    tx.execute(
        "UPDATE items SET muted = ? WHERE tenant = ? AND id = ?",
        (int(muted), row["tenant"], row["id"]),
    )
    history.journal_row(tx, row, "edit", principal)
    return {"category": label, "note_id": row["id"], "scope": scope, "muted": muted}
