"""A note's records in an export (``graph/transfer.py`` pages and reads them): every version,
and the conflict revisions kept beside it (text that came with a stale version: both versions
are kept, and an export that dropped one lost it).

An import keeps the dates the record gives (each revision's, the review date): a note and its
revisions dated at the import read as written that day, and a second export of the copy keyed
each record anew (decision 0116). A record without dates (an export of an older version, or
written by hand) is dated at the import, as before; a date after the import is read as the
import (decision 0117)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import Any, get_args

from ..core.clock import now_iso, parse_time
from ..core.text import check_tags, checked_label
from ..errors import RecuerdoError
from ..store import journal_moves
from ..store.base import Row, Tx, marks
from . import history
from . import operations as notes
from .results import JournalOperation


def record_key(*parts: Any) -> str:
    """An exported record's stable key: an import skips a record whose key it has read."""
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:32]


def export_records(tx: Tx, rows: list[Row]) -> list[dict[str, Any]]:
    if not rows:
        return []
    tenant, ids = rows[0]["tenant"], [row["id"] for row in rows]
    histories = history.versions_of(tx, tenant, ids)
    conflicts = _conflicts_of(tx, tenant, ids)
    first_keys = _first_keys(tx, tenant, ids)
    records = []
    for row in rows:
        texts, versions = histories.get(row["id"], ({}, []))
        # A moved note is keyed by the key it had first, as its export before the move was:
        # a copy that read that export knows the record, and reads no second note.
        named = first_keys.get(row["id"]) or row["key"] or row["title"]
        records.append(
            {
                "record": "note",
                "key": record_key("note", named, row["created_at"]),
                "title": row["title"],
                "kind": row["category"],
                "note_key": row["key"],
                "tags": json.loads(row["tags"]),
                "created_at": row["created_at"],
                "review_at": row["review_at"],
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


def _first_keys(tx: Tx, tenant: str, ids: list[int]) -> dict[int, str]:
    """The key each moved note of ``ids`` had before its first move the journal names (a move
    recorded before step m047 names none: that note is keyed by its key now, as before).
    Found by the notes' ids (``journal_moved_items``; a note keeps its scope), not by the
    scope: that read every move line of the scope, for each page of an export."""
    if not journal_moves.has_keys(tx):
        return {}
    found: dict[int, str] = {}
    for line in tx.all(
        "SELECT item_id, from_key FROM journal WHERE tenant = ? AND operation = 'move'"
        f" AND item_id IN ({marks(ids)}) AND from_key IS NOT NULL ORDER BY id",
        (tenant, *ids),
    ):
        found.setdefault(int(line["item_id"]), line["from_key"])
    return found


def _moved_from(tx: Tx, tenant: str, scope: str, key: str, created: set[str | None]) -> Row | None:
    """The note of ``scope`` moved away from ``key`` that the record is of (decision 0159): a
    record of an export written before the move names that key, and found by it alone it made
    a second note. The note is known by its creation (``created``: when the record says the
    note, and its first version, were written; copies keep the dates, 0116), not by the key
    alone: another note's record naming that key makes its own note, as before."""
    moved = tx.all(
        "SELECT i.* FROM journal j JOIN items i ON i.tenant = j.tenant AND i.id = j.item_id"
        " WHERE j.tenant = ? AND j.scope = ? AND j.operation = 'move' AND j.from_key = ?"
        " AND i.scope = ? AND i.item_type = 'note' AND i.status <> 'deleted' ORDER BY j.id DESC",
        (tenant, scope, key, scope),
    )
    return next((row for row in moved if row["created_at"] in created), None)


def _conflicts_of(tx: Tx, tenant: str, ids: list[int]) -> dict[int, list[dict[str, Any]]]:
    """The conflict revisions of notes (text that came with a stale version and was kept beside
    the note): an export that left them out lost the version a writer's save did not replace."""
    found: dict[int, list[dict[str, Any]]] = {}
    for r in tx.all(
        "SELECT item_id, based_on, title, kind, content, principal, created_at FROM revisions"
        f" WHERE tenant = ? AND item_id IN ({marks(ids)}) AND operation = 'conflict'"
        " AND version IS NULL ORDER BY id",
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


VERSION_OPERATIONS = frozenset(get_args(JournalOperation)) - {"conflict", "delete", "move", "scrub"}
"""What a version of a note may record (``conflict`` and ``delete`` make no version; ``move``
and ``scrub`` are journal lines only)."""


@dataclass(frozen=True)
class _Text:
    title: str | None
    kind: str | None
    content: str
    principal: str | None
    operation: str  # a version's (``conflict`` for a conflict)
    based_on: int | None = None
    at: str = ""
    """When it was written, as the record says (undated: at the import)."""


@dataclass(frozen=True)
class _Checked:
    key: str | None
    created: str | None  # the note's creation as the record gives it (compared, not stored)
    review_at: str | None
    tags: list[str]
    versions: list[_Text]
    conflicts: list[_Text]


def import_record(
    tx: Tx,
    tenant: str,
    principal: str,
    scope: str,
    record: dict[str, Any],
    *,
    moves: bool,
) -> str | None:
    """``moves``: whether the journal keeps the keys of moves (step m047), asked once by the
    import of many records (``journal_moves.has_keys``), not once a record."""
    note = _checked_note(record)
    first, last = note.versions[0], note.versions[-1]
    dated = {note.created, first.at}  # when the record says its note was created
    held = None if note.key is None else notes.by_key(tx, tenant, scope, note.key)
    moved = None
    # The note at the key, unless it is not the record's (created another time) and the
    # record's note was moved away from the key since: a note saved at the key after the move
    # took the moved note's record as its conflict (review of 0159).
    if note.key is not None and moves and (held is None or held["created_at"] not in dated):
        moved = _moved_from(tx, tenant, scope, note.key, dated)
    if held is not None and moved is None:
        where = f"note key {note.key!r} is held here by note {held['id']}"
        return _kept_beside(tx, held, principal, last, note.conflicts, where)
    if moved is not None:
        where = f"note {moved['id']} here was moved from note key {note.key!r} to {moved['key']!r}"
        return _kept_beside(tx, moved, principal, last, note.conflicts, where)
    item_id = notes.create(
        tx,
        tenant=tenant,
        principal=first.principal or principal,
        title=first.title or "",
        content=first.content,
        kind=first.kind or "manual",
        scope=scope,
        key=note.key,
        tags=note.tags,
        at=first.at,
    )
    if note.review_at is not None:
        tx.execute(
            "UPDATE items SET review_at = ? WHERE tenant = ? AND id = ?",
            (note.review_at, tenant, item_id),
        )
    for version in note.versions[1:]:
        row = tx.one("SELECT * FROM items WHERE tenant = ? AND id = ?", (tenant, item_id))
        assert row is not None
        notes.write_version(
            tx,
            row,
            principal=version.principal or principal,
            operation=version.operation,
            content=version.content,
            title=version.title,
            kind=version.kind,
            at=version.at,
        )
    for conflict in note.conflicts:
        _keep(tx, tenant, item_id, conflict, principal, conflict.based_on)
    created = {"tenant": tenant, "scope": scope, "id": item_id, "item_type": "note"}
    history.journal_row(tx, created, "import", principal, version=len(note.versions))
    return None


def _keep(
    tx: Tx, tenant: str, item_id: int, text: _Text, principal: str, based_on: int | None
) -> int:
    return history.record_revision(
        tx,
        tenant=tenant,
        item_id=item_id,
        operation="conflict",
        principal=text.principal or principal,
        title=text.title,
        kind=text.kind,
        content=text.content,
        added=0,
        removed=0,
        based_on=based_on,
        at=text.at,
    )


def _kept_beside(
    tx: Tx, held: Row, principal: str, last: _Text, conflicts: list[_Text], where: str
) -> str:
    """Another note holds the record's key here (or was moved away from it): the record's
    text, and the conflicts it carries, are kept beside that note as its conflict revisions,
    never written over it (the
    insert failed on the key's unique index, with no error code, and the whole call with it:
    found by a hunt over the notes). The record's conflicts were based on versions of its own
    note, not of this one: they are kept without a version. A text the note already holds (as
    its current text or a conflict) is not kept again: a copy imported back (A to B to A)
    doubled every conflict."""
    held_texts = {
        (row["title"], row["kind"], row["content"])
        for row in tx.all(
            "SELECT title, kind, content FROM revisions WHERE tenant = ? AND item_id = ?"
            " AND operation = 'conflict' AND version IS NULL",
            (held["tenant"], held["id"]),
        )
    }
    held_texts.add((held["title"], held["category"], held["content"]))
    kept = []
    for text, based_on in [(last, held["version"]), *((c, None) for c in conflicts)]:
        spelled = (text.title or held["title"], text.kind or held["category"], text.content)
        if spelled in held_texts:
            continue
        held_texts.add(spelled)
        as_kept = replace(text, title=spelled[0], kind=spelled[1])  # as compared next time
        kept.append(_keep(tx, held["tenant"], held["id"], as_kept, principal, based_on))
    if not kept:
        return f"{where}, which holds every text of the record already"
    history.journal_row(tx, held, "conflict", principal)
    named = ", ".join(str(revision) for revision in kept)
    plural = "s" if len(kept) > 1 else ""
    return (
        f"{where}: {len(kept)} text{plural} of the record kept as its conflict"
        f" revision{plural} {named}, nothing was overwritten"
    )


def _checked_note(record: dict[str, Any]) -> _Checked:
    """A note record checked whole, and read as the note verbs read their arguments, before
    anything is written: a record found malformed half-way left a note behind while the reply
    called it skipped (and a retry imported it twice); text a save refuses (a NUL, an empty
    key, an object where a text goes) reached the store, where it failed the whole call."""
    try:
        key = record.get("note_key")
        revisions, conflicts = record["revisions"], record.get("conflicts") or []
        if not isinstance(revisions, list) or not revisions:
            raise ValueError("revisions is a non-empty list")
        if not isinstance(conflicts, list):
            raise ValueError("conflicts is a list")
        # One reading of the clock: the import's time, that of every undated text and the
        # latest a text may be dated (decision 0117).
        now = now_iso()
        versions = [_text(revision, now, version=True) for revision in revisions]
        _in_order(versions)
        if versions[0].title is None:  # the note's title, as the record names it
            versions[0] = replace(versions[0], title=notes.check_title(record.get("title")))
        if versions[0].kind is None and record.get("kind") is not None:  # and its kind
            versions[0] = replace(versions[0], kind=notes.check_kind(record["kind"]))
        review_at = record.get("review_at")
        return _Checked(
            key=None if key is None else checked_label(key, "note_key"),
            created=record["created_at"] if isinstance(record.get("created_at"), str) else None,
            review_at=None if review_at is None else parse_time(review_at, "review_at"),
            tags=check_tags(record.get("tags")),
            versions=versions,
            conflicts=[_text(conflict, now, version=False) for conflict in conflicts],
        )
    except RecuerdoError as error:
        raise ValueError(error.detail) from error


def _text(revision: object, now: str, *, version: bool) -> _Text:
    """A version or conflict of a record, read as the note verbs read their arguments; its
    date no later than ``now`` (a clock ahead of this one, or a made-up date, would put it
    first in every "newest" list for good, and a review counted from past 9999 failed the
    whole import)."""
    if not isinstance(revision, dict):
        raise ValueError("each revision and conflict is an object")
    title, kind, principal = (revision.get(name) for name in ("title", "kind", "principal"))
    operation = (revision.get("operation") or "import") if version else "conflict"
    if version and (not isinstance(operation, str) or operation not in VERSION_OPERATIONS):
        raise ValueError(f"a version's operation is one of {', '.join(sorted(VERSION_OPERATIONS))}")
    based_on = None if version else revision.get("based_on")
    if based_on is not None and (isinstance(based_on, bool) or not isinstance(based_on, int)):
        # Any version number: a save keeps the one it was sent, even one the note never had.
        raise ValueError("a conflict's based_on is a version number")
    return _Text(
        title=None if title is None else notes.check_title(title),
        kind=None if kind is None else notes.check_kind(kind),
        content=notes.check_body(revision.get("content")),
        principal=None if principal is None else checked_label(principal, "principal"),
        operation=operation,
        based_on=based_on,
        at=now
        if revision.get("created_at") is None
        else min(parse_time(revision["created_at"], "created_at"), now),
    )


def _in_order(versions: list[_Text]) -> None:
    """A later version written earlier than the one before it would make the note's history
    read backwards (and its creation come after its last change). An undated version is
    dated at the import: a dated one after it is backwards too."""
    dated = [(number, v.at) for number, v in enumerate(versions, 1)]
    for (_, earlier), (number, later) in pairwise(dated):
        if later < earlier:
            raise ValueError(f"version {number} is dated earlier than the one before it")
