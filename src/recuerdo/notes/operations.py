"""Notes: titled living documents with a kind, a scope, an optional key, and full history.

A save with a key updates the current note of that (tenant, scope, key) and keeps the previous
version as a revision; a stale ``expected_version`` keeps the incoming text as a conflict
revision and changes nothing else. ``expected_version=0`` says the writer read no note: a note
already at the key with other text is a conflict too (the upsert trap), never replaced.
With ``former_key`` and no note at the key, the note at the former key is the one saved, and
moves to the key (``keys.py``; a save refused as a conflict moves nothing). Soft-deleted notes
are hidden from every read.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

from ..core import projects
from ..core.clock import now, now_iso, parse_iso, to_iso
from ..core.exact import shown
from ..core.items import reach, status_of
from ..core.settings import note_limit_bytes, review_months
from ..core.text import check_tags, checked_label, checked_text
from ..errors import (
    Conflict,
    ContentTooLarge,
    EmptyContent,
    EmptyTitle,
    InvalidInput,
    ItemNotFound,
    TitleTaken,
    VersionConflict,
)
from ..index import chunks as chunk_index
from ..store import note_projects
from ..store.base import Row, Tx, any_tag
from . import history, keys, links
from .keys import by_key as by_key  # where the note readers beside this module look
from .results import Note, Saved, SaveOutcome
from .text import cap_utf8, redact_private

DEFAULT_SCOPE = "user"
DEFAULT_KIND = "manual"
MEMORY_KIND = keys.CATEGORY_KIND
"""The kind of category notes (remember_about): see categories.py."""
DUPLICATE_WINDOW = timedelta(minutes=15)
MAX_INPUT_BYTES = 5_000_000
MAX_TITLE_BYTES = 1_000
_KIND = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")


def check_kind(kind: object) -> str:
    if kind is None:
        return DEFAULT_KIND
    if not isinstance(kind, str) or not _KIND.fullmatch(kind.strip().lower()):
        raise InvalidInput(
            f"kind must be a short lower-case word such as decision or bugfix, got {shown(kind)}"
        )
    return kind.strip().lower()


def check_scope(scope: object) -> str:
    return DEFAULT_SCOPE if scope is None else checked_label(scope, "scope")


def check_title(title: object) -> str:
    if isinstance(title, str) and not title.strip():
        raise EmptyTitle("title is empty: a note needs a title (nothing was stored)")
    text = checked_text(title, "title", max_bytes=MAX_TITLE_BYTES)
    return " ".join(text.split())


def check_body(content: object, field: str = "content") -> str:
    """User text for a note body: validated, secrets and private spans redacted."""
    return redact_private(checked_text(content, field, max_bytes=MAX_INPUT_BYTES))


def version_token(item_id: int, version: int) -> str:
    return f"{item_id}:{version}"


def plus_months(moment: datetime, months: int) -> datetime:
    month_index = moment.month - 1 + months
    year, month = moment.year + month_index // 12, month_index % 12 + 1
    for day in (moment.day, 30, 29, 28):  # clamp 31 March + 1 month to 30 April
        try:
            return moment.replace(year=year, month=month, day=day)
        except ValueError:
            continue
    raise AssertionError("unreachable")


def review_date(tx: Tx, tenant: str, kind: str, since: str | None = None) -> str | None:
    months = review_months(tx, tenant).get(kind)
    if not months:
        return None
    return to_iso(plus_months(now() if since is None else parse_iso(since), months))


def note_dict(row: Row, at: str | None = None) -> Note:
    at = at or now_iso()
    return {
        "id": row["id"],
        "item_type": row["item_type"],
        "title": row["title"],
        "content": row["content"],
        "kind": row["category"],
        "scope": row["scope"],
        "key": row["key"],
        "tags": json.loads(row["tags"]),
        "source": row["source"],
        "status": status_of(row, at),
        "version": row["version"],
        "version_token": version_token(row["id"], row["version"]),
        "session": row["session"],
        "summary": row["summary"],
        "muted": bool(row["muted"]),
        "duplicates": row["duplicates"],
        "review_at": row["review_at"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
        "bytes": len(row["content"].encode("utf-8")),
    }


def _row(tx: Tx, tenant: str, item_id: int) -> Row:
    row = tx.one("SELECT * FROM items WHERE tenant = ? AND id = ?", (tenant, item_id))
    assert row is not None
    return row


def load_note(tx: Tx, tenant: str, item_id: object, *, deleted: bool = False) -> Row:
    if isinstance(item_id, bool) or not isinstance(item_id, int):
        raise InvalidInput(f"a note id is an integer, got {shown(item_id)}")
    row = tx.one(
        "SELECT * FROM items WHERE id = ? AND tenant = ? AND item_type = 'note'",
        (item_id, tenant),
    )
    reached = reach()
    if (
        row is None
        or (row["status"] == "deleted") != deleted
        or (reached is not None and row["scope"] not in reached)
    ):
        state = "deleted note" if deleted else "note"
        raise ItemNotFound(f"no {state} with id {item_id}")
    return row


def _set_tags(tx: Tx, tenant: str, item_id: int, tags: list[str], kind: str) -> None:
    """The note's rows of the tag index, each with the note's kind (the index holds it)."""
    tx.execute("DELETE FROM item_tags WHERE tenant = ? AND item_id = ?", (tenant, item_id))
    if tags:
        tx.executemany(
            "INSERT INTO item_tags (tenant, item_id, tag, category) VALUES (?, ?, ?, ?)",
            [(tenant, item_id, t, kind) for t in tags],
        )


def ensure_session(tx: Tx, tenant: str, session: str, scope: str) -> None:
    tx.execute(
        "INSERT INTO sessions (tenant, id, scope, started_at) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (tenant, id) DO NOTHING",
        (tenant, session, scope, now_iso()),
    )


def create(
    tx: Tx,
    *,
    tenant: str,
    principal: str,
    title: str,
    content: str,
    kind: str,
    scope: str,
    key: str | None = None,
    tags: list[str] | None = None,
    session: str | None = None,
    summary: str | None = None,
    at: str | None = None,
) -> int:
    """A new note; ``at``: when it was written (an import's), else now."""
    stamp = at or now_iso()
    tags = tags or []
    column, value = (", project", ", ?") if note_projects.has_column(tx) else ("", "")
    item_id = int(
        tx.scalar(
            "INSERT INTO items (tenant, scope, item_type, category, title, key, content, tags,"
            f" source, version, created_at, updated_at, session, content_hash, review_at, summary"
            f"{column}) VALUES (?, ?, 'note', ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?{value})"
            " RETURNING id",
            (
                tenant,
                scope,
                kind,
                title,
                key,
                content,
                json.dumps(tags, ensure_ascii=False),
                principal,
                stamp,
                stamp,
                session,
                None if key is not None else history.normalized_hash(content),
                review_date(tx, tenant, kind, stamp),
                summary,
                *([projects.column(tags)] if column else []),
            ),
        )
    )
    _set_tags(tx, tenant, item_id, tags, kind)
    if session is not None:
        ensure_session(tx, tenant, session, scope)
    if "[[" in content:
        links.sync_wikilinks(tx, _row(tx, tenant, item_id))
    links.resolve_pending(tx, tenant, title, item_id)
    history.record_version(
        tx,
        tenant=tenant,
        item_id=item_id,
        version=1,
        operation="write",
        principal=principal,
        title=title,
        kind=kind,
        text=content,
        before=None,
        added=len(content),
        removed=0,
        at=stamp,
    )
    history.journal(
        tx,
        tenant=tenant,
        scope=scope,
        item_id=item_id,
        item_type="note",
        operation="write",
        principal=principal,
        version=1,
        added=len(content),
        at=None if at else stamp,  # the journal tells when it happened here
    )
    return item_id


def write_version(
    tx: Tx,
    row: Row,
    *,
    principal: str,
    operation: str,
    content: str,
    title: str | None = None,
    kind: str | None = None,
    tags: list[str] | None = None,
    summary: str | None = None,
    session: str | None = None,
    at: str | None = None,
) -> tuple[int, int, int]:
    """Make ``content`` the current version of the note in ``row``; keep the revision (dated
    ``at``, an import's, else now). Returns (new version, characters added, characters
    removed)."""
    version = int(row["version"]) + 1
    added, removed = history.change_size(row["content"], content)
    new_title = row["title"] if title is None else title
    new_kind = row["category"] if kind is None else kind
    # Only columns that change are written: SQLite rewrites an index entry whenever its
    # column appears in the SET list, changed or not.
    # One clock reading for the item, its revision and its journal line (each is a strftime).
    stamp = at or now_iso()
    changes: dict[str, Any] = {"content": content, "version": version, "updated_at": stamp}
    if row["key"] is None:
        # Repeats are found by this hash only for notes without a key; a keyed note is
        # compared with its current text, and skipping the hash spares an index write.
        changes["content_hash"] = history.normalized_hash(content)
    candidates = {
        "title": new_title,
        "category": new_kind,
        "summary": summary,
        "session": session,
        "tags": None if tags is None else json.dumps(tags, ensure_ascii=False),
    }
    for column, value in candidates.items():
        if value is not None and value != row[column]:
            changes[column] = value
    if "tags" in changes and note_projects.has_column(tx):  # it follows the tags (0148)
        changes["project"] = projects.column(tags or [])
    assignments = ", ".join(f"{column} = ?" for column in changes)
    tx.execute(
        f"UPDATE items SET {assignments} WHERE tenant = ? AND id = ?",
        (*changes.values(), row["tenant"], row["id"]),
    )
    if "tags" in changes or "category" in changes:
        held = json.loads(row["tags"] or "[]") if tags is None else tags
        _set_tags(tx, row["tenant"], row["id"], held, new_kind)
    if "[[" in content or "[[" in row["content"]:
        links.sync_wikilinks(tx, _row(tx, row["tenant"], row["id"]))
    if "title" in changes:
        links.resolve_pending(tx, row["tenant"], new_title, row["id"])
    changed = content != row["content"]
    chunk_index.rechunk(tx, row["tenant"], row["id"], row["content"] if changed else None)
    history.record_version(
        tx,
        tenant=row["tenant"],
        item_id=row["id"],
        version=version,
        operation=operation,
        principal=principal,
        title=new_title,
        kind=new_kind,
        text=content,
        before=row["content"],
        added=added,
        removed=removed,
        at=stamp,
    )
    history.journal(
        tx,
        tenant=row["tenant"],
        scope=row["scope"],
        item_id=row["id"],
        item_type="note",
        operation=operation,
        principal=principal,
        version=version,
        added=added,
        removed=removed,
        at=None if at else stamp,
    )
    return version, added, removed


def check_token(row: Row, token: object) -> None:
    if token is None:
        return
    current = version_token(row["id"], row["version"])
    if token != current:
        raise VersionConflict(
            f"version token {token!r} is stale: the note is now at {current!r}; re-read it "
            "and retry (nothing was changed)",
            current_version_token=current,
            current_version=row["version"],
        )


def _duplicate_of(
    tx: Tx, tenant: str, scope: str, kind: str, title: str, content: str, mark: str | None
) -> Row | None:
    """A repeat of the note; with a project (``mark``), only one of that project: another
    project's same text is not this project's note (Engram counts repeats within a project)."""
    since = to_iso(now() - DUPLICATE_WINDOW)
    mine, params = ("", []) if mark is None else any_tag("items", [mark])
    return tx.one(
        "SELECT * FROM items WHERE tenant = ? AND scope = ? AND content_hash = ?"
        " AND item_type = 'note' AND status <> 'deleted' AND category = ? AND title = ?"
        f" AND updated_at >= ?{' AND ' if mine else ''}{mine} ORDER BY id DESC LIMIT 1",
        (tenant, scope, history.normalized_hash(content), kind, title, since, *params),
    )


def _count_duplicate(tx: Tx, row: Row) -> int:
    tx.execute(
        "UPDATE items SET duplicates = duplicates + 1 WHERE tenant = ? AND id = ?",
        (row["tenant"], row["id"]),
    )
    return int(row["duplicates"]) + 1


def _check_title_free(
    tx: Tx, tenant: str, scope: str, title: str, kind: str, current: Row | None
) -> None:
    """A document's title names it in its scope: refuse one already taken there. Category
    notes (memory) neither take a title nor are refused one."""
    if kind == MEMORY_KIND:
        return
    taken = tx.one(
        "SELECT id FROM items WHERE tenant = ? AND scope = ? AND item_type = 'note'"
        " AND status <> 'deleted' AND category <> ? AND lower(title) = lower(?) AND id <> ?"
        " LIMIT 1",
        (tenant, scope, MEMORY_KIND, title, -1 if current is None else current["id"]),
    )
    if taken is not None:
        raise TitleTaken(
            f"the title {title!r} is already used in {scope} by note {taken['id']}: choose "
            "another title, or edit that note (nothing was stored)",
            id=taken["id"],
        )


@dataclass(frozen=True)
class ConflictKept:
    """A stale ``expected_version``: the incoming text is kept as a conflict revision (written
    in the same transaction), and this is raised once that transaction is committed."""

    id: int
    current_version: int
    current_revision_id: int
    conflict_revision_id: int
    expected_version: int

    def error(self) -> Conflict:
        return Conflict(
            f"note {self.id} is at version {self.current_version}, not "
            f"{self.expected_version}: nothing was overwritten; the incoming text is kept as "
            f"conflict revision {self.conflict_revision_id} beside current revision "
            f"{self.current_revision_id} (read it with revision(id, revision_id=...))",
            **asdict(self),
        )


def keep_conflict(
    tx: Tx,
    current: Row,
    *,
    principal: str,
    title: str,
    kind: str,
    body: str,
    expected_version: int,
) -> ConflictKept:
    fields: dict[str, Any] = {"principal": principal, "title": title, "kind": kind}
    fields.update(content=body, based_on=expected_version)
    conflict_id = history.held_conflict(tx, current, fields)
    if conflict_id is None:  # the same stale write again keeps no second copy
        conflict_id = history.record_revision(
            tx, tenant=current["tenant"], item_id=current["id"], operation="conflict",
            added=0, removed=0, **fields,
        )  # fmt: skip
        history.journal_row(tx, current, "conflict", principal)
    current_revision = tx.scalar(
        "SELECT id FROM revisions WHERE tenant = ? AND item_id = ? AND version = ?",
        (current["tenant"], current["id"], current["version"]),
    )
    return ConflictKept(
        id=current["id"],
        current_version=current["version"],
        current_revision_id=int(current_revision),
        conflict_revision_id=conflict_id,
        expected_version=expected_version,
    )


def save(
    tx: Tx,
    *,
    tenant: str,
    principal: str,
    title: object,
    content: object,
    kind: object,
    scope: object,
    key: object,
    session: object,
    expected_version: object,
    tags: object,
    strict: bool,
    unique_title: bool = False,
    former_key: object = None,
    project: object = None,
) -> Saved | ConflictKept:
    """The save rules of the module docstring. A conflict is *returned* (with the conflict
    revision already written) so the caller can commit it before raising."""
    note_title = check_title(title)
    note_kind = check_kind(kind)
    note_scope = check_scope(scope)
    note_key = None if key is None else checked_label(key, "key")
    former = keys.check_former(former_key, note_key)
    moved_from: str | None = None
    note_session = None if session is None else checked_label(session, "session")
    note_tags = check_tags(tags)
    mark = projects.project_tag(project, note_scope)
    if expected_version is not None and (
        isinstance(expected_version, bool) or not isinstance(expected_version, int)
    ):
        raise InvalidInput(f"expected_version is an integer, got {shown(expected_version)}")
    body = check_body(content)
    if not body.strip():
        raise EmptyContent("content is empty: there is nothing to store")
    limit = note_limit_bytes(tx, tenant)
    capped = cap_utf8(body, limit)
    if capped.truncated and strict:
        raise ContentTooLarge(
            f"content is {capped.original_bytes} bytes; the limit is {limit} bytes "
            "(strict mode: nothing was stored)",
            original_bytes=capped.original_bytes,
            limit_bytes=limit,
        )
    body = capped.text

    def reply(row_id: int, version: int, outcome: SaveOutcome, duplicates: int) -> Saved:
        saved: Saved = {
            "id": row_id,
            "version": version,
            "outcome": outcome,
            "duplicates": duplicates,
            "version_token": version_token(row_id, version),
            "key": note_key,
            "scope": note_scope,
            "kind": note_kind,
            "truncated": capped.truncated,
            "original_bytes": capped.original_bytes,
            "stored_bytes": capped.stored_bytes,
            "limit_bytes": limit,
        }
        if moved_from is not None:
            saved["former_key"] = moved_from
        return saved

    current = None
    if note_key is not None:
        current = keys.by_key(tx, tenant, note_scope, note_key)
        if current is None and former is not None:
            current = keys.find_former(tx, tenant, note_scope, former)
    if unique_title:
        _check_title_free(tx, tenant, note_scope, note_title, note_kind, current)
    if current is not None:
        # Version 0: the writer read no note (a first write from a copy never synced). The
        # same note there (text, title, kind) is a duplicate; else a conflict (0101's review).
        same = (current["content"], current["title"], current["category"]) == (
            body,
            note_title,
            note_kind,
        )
        if expected_version not in (None, current["version"]) and not (
            expected_version == 0 and same
        ):
            return keep_conflict(
                tx,
                current,
                principal=principal,
                title=note_title,
                kind=note_kind,
                body=body,
                expected_version=expected_version,
            )
        if note_key is not None and current["key"] != note_key:  # found at the former key
            current, moved_from = keys.move(tx, current, note_key, principal), former
        if same:
            counted = _count_duplicate(tx, current)
            return reply(current["id"], current["version"], "duplicate", counted)
        version, added, removed = write_version(
            tx,
            current,
            principal=principal,
            operation="write",
            content=body,
            title=note_title,
            kind=note_kind,
            tags=projects.marked_update(note_tags, current["tags"], mark),
            session=note_session,
        )
        updated = reply(current["id"], version, "updated", current["duplicates"])
        return {**updated, "chars_added": added, "chars_removed": removed}
    # Version 0 read no note, so none can have been deleted since: the write makes one.
    if note_key is not None and expected_version:
        for held in (note_key,) if former is None else (note_key, former):
            keys.refuse_if_deleted_since(
                tx, tenant, note_scope, held, expected_version, "expected_version"
            )
    if note_key is None:
        repeat = _duplicate_of(tx, tenant, note_scope, note_kind, note_title, body, mark)
        if repeat is not None:
            counted = _count_duplicate(tx, repeat)
            return reply(repeat["id"], repeat["version"], "duplicate", counted)
    item_id = create(
        tx,
        tenant=tenant,
        principal=principal,
        title=note_title,
        content=body,
        kind=note_kind,
        scope=note_scope,
        key=note_key,
        tags=note_tags if mark is None else projects.marked(note_tags, mark),
        session=note_session,
    )
    created = reply(item_id, 1, "created", 0)
    return {**created, "chars_added": len(body), "chars_removed": 0}
