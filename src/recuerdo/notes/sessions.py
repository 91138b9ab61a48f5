"""Sessions, timelines and recent context (Engram family).

A session groups the notes saved during one working session; its summary becomes a note so
that ``recent`` (the context an agent reads when it starts) shows it beside the latest notes.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, cast

from ..core import projects
from ..core.clock import now_iso
from ..core.items import reach, status_of
from ..core.text import checked_label, clip
from ..errors import CapabilityNotGranted, InvalidInput, ItemNotFound
from ..store.base import Row, Tx
from . import operations as notes
from . import pins as pin_ops
from .results import Brief, Recent, Session, SessionEnded, Timeline
from .text import cap_utf8

SUMMARY_KIND = "session_summary"
DEFAULT_RECENT_BYTES = 16_384
MAX_RECENT_BYTES = 65_536
MAX_NEIGHBOURS = 50
MAX_RECENT_SCOPES = 20
_PAGE = 64
_FIRST_ARM_PAGE = 16


def start(tx: Tx, tenant: str, session: object, project: object, directory: object) -> Session:
    session_id = checked_label(session, "session")
    scope = "user" if project is None else f"project:{checked_label(project, 'project')}"
    folder = None if directory is None else checked_label(directory, "directory", max_chars=4096)
    stamp = now_iso()
    # Started again (a resumed session): it keeps its scope unless a project is named (one
    # start without it moved the session to 'user', and its summary then became a second note
    # there). An ended one stays ended: the reply says so (the Engram importer reads it).
    tx.execute(
        "INSERT INTO sessions (tenant, id, scope, directory, started_at) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (tenant, id) DO UPDATE SET scope = coalesce(?, sessions.scope),"
        " directory = coalesce(excluded.directory, sessions.directory)",
        (tenant, session_id, scope, folder, stamp, None if project is None else scope),
    )
    return _session(tx, tenant, session_id)


def check_reach(tx: Tx, tenant: str, session: object) -> None:
    """Refuse a call confined to scopes (a token limited to them) that files a note under a
    session kept in another scope: the note was its own scope's, but the owner's timeline of
    that session showed it among the session's notes (0123 kept what the token reads, not
    where it files). A session not yet started is the note's to start, in the note's scope."""
    scopes = reach()
    if scopes is None or session is None:
        return
    session_id = checked_label(session, "session")
    kept_in = tx.scalar(
        "SELECT scope FROM sessions WHERE tenant = ? AND id = ?", (tenant, session_id)
    )
    if kept_in is not None and kept_in not in scopes:
        # The session's scope is not named: it is no more the token's to read than its notes.
        raise CapabilityNotGranted(
            f"Capability not granted: this token is limited to scopes {', '.join(scopes)};"
            f" the session {session_id!r} is not kept in one of them (name a session of its"
            " own)"
        )


def _session(tx: Tx, tenant: str, session_id: str) -> Session:
    row = tx.one("SELECT * FROM sessions WHERE tenant = ? AND id = ?", (tenant, session_id))
    if row is None:
        raise ItemNotFound(f"no session {session_id!r}")
    return {
        "session": row["id"],
        "scope": row["scope"],
        "directory": row["directory"],
        "started_at": row["started_at"],
        "ended_at": row["ended_at"],
        "summary": row["summary"],
    }


def end(tx: Tx, tenant: str, principal: str, session: object, summary: object) -> SessionEnded:
    session_id = checked_label(session, "session")
    current = _session(tx, tenant, session_id)
    text = None if summary is None else notes.check_body(summary, "summary").strip() or None
    truncated = False
    if text is None:  # the summary note it has, if any (a summary given saves its own below)
        note_id = _summary_note(tx, tenant, session_id, current["scope"])
    else:
        reply = notes.save(
            tx,
            tenant=tenant,
            principal=principal,
            title=f"Session {session_id} summary",
            content=text,
            kind=SUMMARY_KIND,
            scope=current["scope"],
            key=_summary_key(session_id),
            session=session_id,
            expected_version=None,
            tags=None,
            strict=False,
        )
        assert not isinstance(reply, notes.ConflictKept)  # no expected version: no conflict
        note_id, truncated = reply["id"], reply["truncated"]
        # The session keeps the summary as its note holds it: a summary over the note size
        # limit was kept whole here, cut in the note, and so outlived the note's erasure
        # (traces.erase takes the session's summary when the note holds, or held, it).
        text = tx.scalar("SELECT content FROM items WHERE tenant = ? AND id = ?", (tenant, note_id))
    # Ended again (a retried call, or a summary sent after the end): the session ended when
    # it was first ended, and the summary note it has is answered (the reply said none).
    tx.execute(
        "UPDATE sessions SET ended_at = coalesce(ended_at, ?), summary = coalesce(?, summary)"
        " WHERE tenant = ? AND id = ?",
        (now_iso(), text, tenant, session_id),
    )
    # A cast: mypy asks a ** of a type with a key that is NotRequired (``redacted``, which
    # the verb adds) to name it.
    return cast(
        SessionEnded,
        {
            **_session(tx, tenant, session_id),
            "summary_note_id": note_id,
            "truncated": truncated,
        },
    )


def _summary_note(tx: Tx, tenant: str, session_id: str, scope: str) -> int | None:
    found = tx.scalar(
        "SELECT id FROM items WHERE tenant = ? AND scope = ? AND key = ? AND item_type = 'note'"
        " AND status <> 'deleted' ORDER BY id DESC LIMIT 1",
        (tenant, scope, _summary_key(session_id)),
    )
    return None if found is None else int(found)


def _summary_key(session_id: str) -> str:
    return f"session/{session_id}/summary"


def _brief(row: Row, at: str) -> Brief:
    return {
        "id": row["id"],
        "title": row["title"],
        "kind": row["category"],
        "created_at": row["created_at"],
        "status": status_of(row, at),
    }


def _count(value: object, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_NEIGHBOURS:
        raise InvalidInput(f"{field} must be an integer from 0 to {MAX_NEIGHBOURS}")
    return value


def timeline(tx: Tx, tenant: str, item_id: object, before: object, after: object) -> Timeline:
    row = notes.load_note(tx, tenant, item_id)
    wanted_before, wanted_after = _count(before, "before"), _count(after, "after")
    at = now_iso()
    if row["session"] is None:
        return {
            "id": row["id"],
            "session": None,
            "before": [],
            "item": _brief(row, at),
            "after": [],
        }
    common = (
        "SELECT * FROM items WHERE tenant = ? AND session = ? AND item_type = 'note'"
        " AND status <> 'deleted'"
    )
    earlier = tx.all(
        f"{common} AND (created_at < ? OR (created_at = ? AND id < ?))"
        " ORDER BY created_at DESC, id DESC LIMIT ?",
        (tenant, row["session"], row["created_at"], row["created_at"], row["id"], wanted_before),
    )
    later = tx.all(
        f"{common} AND (created_at > ? OR (created_at = ? AND id > ?))"
        " ORDER BY created_at, id LIMIT ?",
        (tenant, row["session"], row["created_at"], row["created_at"], row["id"], wanted_after),
    )
    return {
        "id": row["id"],
        "session": row["session"],
        "before": [_brief(r, at) for r in reversed(earlier)],
        "item": _brief(row, at),
        "after": [_brief(r, at) for r in later],
    }


def _block(row: Row, at: str, flag: str = "") -> str:
    status = status_of(row, at)
    flags = [f for f in (status if status != "active" else "", flag) if f]
    shown = "".join(f", {f}" for f in flags)
    title = row["title"] or f"{row['category']} {row['item_type']}"
    return (
        f"## {title} [{row['category']}] ({row['scope']}, updated "
        f"{row['updated_at']}, #{row['id']}{shown})\n{row['content']}"
    )


def _latest(
    tx: Tx, where: str, params: Sequence[object], arms: Sequence[tuple[str, list[Any]]] = ()
) -> Iterator[Row]:
    """The notes of ``where``, newest first; with ``arms``, those of any arm (arms keep
    different notes), each arm read in order from its own range of an index and the arms
    merged here, a page at a time. One query of the arms (UNION ALL or OR) was sorted whole on
    PostgreSQL 15, which merges no ordered ranges of a set operation: a project's every note
    read for the newest few."""
    if len(arms) < 2:
        yield from _pages(tx, *(_arm(where, params, arms[0]) if arms else (where, params)))
        return
    # Each arm's first page is a share of one page: the merged text fills its size limit
    # with about a page of notes, mostly of one arm, and a whole page of each arm read four
    # times the rows of one scope's read (decision 0172).
    first = max(_FIRST_ARM_PAGE, _PAGE // len(arms))
    yield from heapq.merge(
        *(_pages(tx, *_arm(where, params, arm), first=first) for arm in arms),
        key=lambda row: (row["updated_at"], row["id"]),
        reverse=True,
    )


def _arm(
    where: str, params: Sequence[object], arm: tuple[str, list[Any]]
) -> tuple[str, list[object]]:
    return f"{where} AND {arm[0]}", [*params, *arm[1]]


def _pages(tx: Tx, where: str, params: Sequence[object], first: int = _PAGE) -> Iterator[Row]:
    offset, size = 0, first
    while True:
        rows = tx.all(
            f"SELECT * FROM items WHERE {where} ORDER BY updated_at DESC, id DESC LIMIT ? OFFSET ?",
            (*params, size, offset),
        )
        yield from rows
        if len(rows) < size:
            return
        offset, size = offset + size, _PAGE


def _scopes(scope: object) -> list[str] | None:
    """The scopes ``recent`` reads: one label, or a non-empty list of them (in order, each
    once); None reads every scope."""
    if scope is None:
        return None
    given = [scope] if isinstance(scope, str) else scope
    if not isinstance(given, list | tuple) or not given:
        raise InvalidInput("scope must be a label or a non-empty list of labels")
    # Each a label: ``check_scope`` reads None as the default scope, a list's None included.
    chosen = list(dict.fromkeys(checked_label(one, "scope") for one in given))
    if len(chosen) > MAX_RECENT_SCOPES:
        raise InvalidInput(f"recent reads at most {MAX_RECENT_SCOPES} scopes at once")
    return chosen


def _scope_arms(scopes: Sequence[str], mark: str | None) -> list[tuple[str, list[Any]]]:
    """One ordered range of an index per scope (three for ``user`` read with a project:
    ``projects.arms``), for ``_latest`` to merge: each is read newest first a page at a time,
    so two scopes cost two short reads, not every note of both sorted (decision 0172)."""
    arms: list[tuple[str, list[Any]]] = []
    for one in scopes:
        if mark is not None and one == projects.USER_SCOPE:
            arms.extend(
                (f"scope = ? AND {arm}", [one, *more]) for arm, more in projects.arms("items", mark)
            )
        else:  # another scope is its own project's: the project filter keeps all of it
            arms.append(("scope = ?", [one]))
    return arms


def recent(
    tx: Tx,
    tenant: str,
    scope: object,
    max_bytes: object,
    context_set_name: object = None,
    *,
    viewer: str,
    project: object = None,
) -> Recent:
    """The pinned items, then the items of the named context set, then the latest notes and
    session summaries of a scope, of several (merged, newest first) or of all, as one text of
    at most ``max_bytes`` bytes of UTF-8, cut on a character boundary and flagged when cut."""
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise InvalidInput(f"max_bytes must be a positive integer (at most {MAX_RECENT_BYTES})")
    limit = min(max_bytes, MAX_RECENT_BYTES)
    where, params = (
        "tenant = ? AND item_type = 'note' AND status <> 'deleted' AND muted = 0",
        [tenant],
    )
    chosen = _scopes(scope)
    mark = projects.read_tag(project)
    arms: list[tuple[str, list[Any]]] = []
    if chosen is not None:
        arms = _scope_arms(chosen, mark)
    elif mark is not None:
        mine, more = projects.mine_or_none("items", mark)
        where += f" AND {mine}"
        params.extend(more)
    pinned = pin_ops.pinned_rows(tx, tenant, viewer, chosen, mark)
    in_set = (
        [] if context_set_name is None else pin_ops.set_rows(tx, tenant, context_set_name, viewer)
    )
    at = now_iso()
    blocks: list[str] = []
    ids: list[int] = []
    taken: set[int] = set()  # a pinned note or one of the set comes once, where it first comes
    flagged: dict[str, list[int]] = {"pinned": [], "set": []}
    used = 0
    truncated = False
    sources: list[tuple[str, Iterable[Row]]] = [
        ("pinned", pinned),
        ("set", in_set),
        ("", _latest(tx, where, params, arms)),
    ]
    for flag, rows in sources:
        for row in rows:
            if row["id"] in taken:
                continue
            label = "pinned" if flag == "pinned" else f"in set {context_set_name}" if flag else ""
            block = _block(row, at, label)
            cost = len(block.encode("utf-8")) + (2 if blocks else 0)
            if used + cost > limit:
                room = limit - used - (2 if blocks else 0)
                if room > 0:
                    kept = cap_utf8(block, room).text  # whole code points, then whole characters
                    blocks.append(clip(block, len(kept)))
                    ids.append(row["id"])
                    taken.add(row["id"])
                    if flag:
                        flagged[flag].append(row["id"])
                truncated = True
                break
            blocks.append(block)
            ids.append(row["id"])
            taken.add(row["id"])
            if flag:
                flagged[flag].append(row["id"])
            used += cost
        if truncated:
            break
    text = "\n\n".join(blocks)
    reply: Recent = {
        "text": text,
        "truncated": truncated,
        "returned_bytes": len(text.encode("utf-8")),
        "limit_bytes": limit,
        "requested_bytes": max_bytes,
        "ids": ids,
        "pinned": flagged["pinned"],
        "state": "answered" if ids else "nothing_stored",
    }
    if context_set_name is not None:
        reply["context_set"] = pin_ops.set_name(context_set_name)
        reply["from_set"] = flagged["set"]
    return reply
