"""Verbs of the notes family."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import (
    Conflict,
    ContentTooLarge,
    EditRefused,
    EmptyContent,
    EmptyTitle,
    FindAmbiguous,
    FindNotFound,
    InvalidLabel,
    InvalidOperation,
    ItemNotFound,
    OperationContentMismatch,
    SectionAmbiguous,
    SectionNotFound,
    VersionConflict,
)
from ..note_text import OPERATIONS

if TYPE_CHECKING:
    from ..verbs import VerbTable


def register(table: VerbTable) -> None:
    # -- notes -----------------------------------------------------------------------------------
    _ID = "The note's id."
    _SCOPE = "'user' or 'project:<name>' (default 'user')."
    table.add(
        "save",
        family="notes",
        mode="write",
        description="Save a titled note. With a key, update the current note of that key in the "
        "scope (earlier text is kept as a revision); an exact repeat within 15 minutes is counted, "
        "not stored again. Over-long content is cut and reported (truncated), or refused in strict "
        "mode.",
        docs={
            "title": "A short, specific title.",
            "content": "The whole note (markdown welcome). <private>...</private> is redacted.",
            "kind": "decision, architecture, bugfix, pattern, config, discovery, learning, "
            "preference, manual, ...",
            "scope": _SCOPE,
            "key": "A topic key (see suggest_key): saving the same key again updates that note.",
            "session": "The working session this note belongs to.",
            "expected_version": "The version you last read; if the note has moved on, nothing is "
            "overwritten and a conflict is reported.",
            "tags": "Labels for the note.",
            "strict": "Refuse over-long content instead of cutting it.",
        },
        errors=(EmptyTitle, EmptyContent, ContentTooLarge, Conflict),
        arguments=("title", "content"),
        cli_names={"tags": "tag"},
    )
    table.add(
        "get",
        family="notes",
        mode="read",
        description="Read one item (note or entry) whole by id: search results are previews, get "
        "is the full text.",
        docs={"id": "The item's id."},
        errors=(ItemNotFound,),
        arguments=("id",),
    )
    table.add(
        "history",
        family="notes",
        mode="read",
        description="List a note's revisions: version, time, principal, operation, characters "
        "added and removed, content hash.",
        docs={"id": _ID},
        errors=(ItemNotFound,),
        arguments=("id",),
    )
    table.add(
        "revision",
        family="notes",
        mode="read",
        description="Read one earlier version of a note, whole.",
        docs={"id": _ID, "version": "The version number (from history)."},
        errors=(ItemNotFound,),
        arguments=("id", "version"),
    )
    table.add(
        "timeline",
        family="notes",
        mode="read",
        description="The notes saved just before and after a note in the same session.",
        docs={
            "id": _ID,
            "before": "How many earlier notes (0-50).",
            "after": "How many later notes (0-50).",
        },
        errors=(ItemNotFound,),
        arguments=("id",),
    )
    table.add(
        "edit",
        family="notes",
        mode="write",
        description="Edit a note in place: append, prepend, replace (whole note), replace_section "
        "(by heading) or find_replace (unique text; empty content deletes it). An edit that "
        "changes nothing writes no revision.",
        docs={
            "id": _ID,
            "operation": f"One of: {', '.join(OPERATIONS)}.",
            "content": "The new text (empty only with find_replace, to delete).",
            "section": "The heading whose section replace_section rewrites.",
            "find": "The exact text find_replace replaces; it must occur once.",
            "version_token": "The token you last read; a stale one is refused (version_conflict).",
        },
        enums={"operation": OPERATIONS},
        errors=(
            ItemNotFound,
            InvalidOperation,
            OperationContentMismatch,
            EditRefused,
            SectionNotFound,
            SectionAmbiguous,
            FindNotFound,
            FindAmbiguous,
            VersionConflict,
            ContentTooLarge,
        ),
        arguments=("id", "operation", "content"),
    )
    table.add(
        "delete",
        family="notes",
        mode="write",
        description="Delete a note: soft by default (hidden from every read, restorable), or hard "
        "(removed with all its revisions).",
        docs={"id": _ID, "hard": "Remove for good, with every revision."},
        errors=(ItemNotFound,),
        arguments=("id",),
        destructive=True,
    )
    table.add(
        "restore",
        family="notes",
        mode="write",
        description="Bring back a soft-deleted note.",
        docs={"id": _ID},
        errors=(ItemNotFound, Conflict),
        arguments=("id",),
    )
    table.add(
        "remember_about",
        family="notes",
        mode="write",
        description="Remember an observation about the user (the same in every project) or about "
        "a project: it is appended to that category's note, created on first use. Search first and "
        "reuse an existing category rather than inventing a synonym.",
        docs={
            "axis": "'user' or 'project'.",
            "observation": "The fact to append.",
            "category": "A label such as 'preferences' (no [ ] | # or line breaks).",
            "project": "The project, for the project axis.",
            "summary": "A one-line summary of the whole category (kept when omitted).",
            "idempotency_key": "Retries with the same key within 24 h are skipped.",
            "version_token": "The token you last read; a stale one is refused.",
        },
        enums={"axis": ("user", "project")},
        errors=(InvalidLabel, EmptyContent, ContentTooLarge, VersionConflict),
        arguments=("axis", "observation"),
    )
    table.add(
        "profile",
        family="notes",
        mode="read",
        description="The categories of an axis: per category its summary (or a 160-character "
        "snippet), token estimate, muted flag and modified time.",
        docs={
            "axis": "'user' or 'project'.",
            "project": "The project, for the project axis.",
            "include_muted": "Also list muted categories.",
        },
        enums={"axis": ("user", "project")},
        arguments=("axis",),
    )
    for _verb, _muted in (("mute", True), ("unmute", False)):
        table.add(
            _verb,
            family="notes",
            mode="write",
            description="Keep a category out of context and the profile (search still finds it)."
            if _muted
            else "Bring a muted category back into context and the profile.",
            docs={
                "category": "The category label.",
                "axis": "'user' or 'project'.",
                "project": "The project, for the project axis.",
            },
            enums={"axis": ("user", "project")},
            errors=(ItemNotFound, InvalidLabel),
            arguments=("category",),
        )
    table.add(
        "review",
        family="notes",
        mode="write",
        description="List notes past their review date (stale context to re-check, not trusted "
        "facts), or mark one reviewed.",
        docs={
            "action": "'list' or 'mark_reviewed'.",
            "id": "The note, for mark_reviewed.",
            "scope": "Only this scope.",
            "limit": "At most this many (1-1000).",
        },
        enums={"action": ("list", "mark_reviewed")},
        errors=(ItemNotFound,),
        arguments=("action",),
    )
    table.add(
        "mark_reviewed",
        family="notes",
        mode="write",
        description="Confirm a note is still true: its review date moves forward by its kind's "
        "interval. Nothing else ever moves it.",
        docs={"id": _ID},
        errors=(ItemNotFound,),
        arguments=("id",),
    )
    table.add(
        "capture_passive",
        family="notes",
        mode="write",
        description="Save the items of the last 'Key Learnings' section of a text (numbered, else "
        "bulleted; at least 20 characters and 4 words) as passive notes, skipping ones already "
        "known.",
        docs={
            "text": "The text to read (an agent's final answer, say).",
            "scope": _SCOPE,
            "session": "The session to file them under.",
            "source": "Who wrote the text.",
        },
        arguments=("text",),
    )
    table.add(
        "suggest_key",
        family="notes",
        mode="read",
        description="Suggest a stable family/slug topic key for a note, to update it later.",
        docs={
            "kind": "The note's kind.",
            "title": "The note's title.",
            "content": "The note's content (used when the title gives no words).",
        },
        arguments=("kind", "title"),
    )
    table.add(
        "session_start",
        family="notes",
        mode="write",
        description="Open a working session (notes saved with it form its timeline).",
        docs={
            "id": "The session id.",
            "project": "The project it works on.",
            "directory": "The working directory.",
        },
        arguments=("id",),
    )
    table.add(
        "session_end",
        family="notes",
        mode="write",
        description="Close a session; its summary is saved as a note that recent context shows.",
        docs={"id": "The session id.", "summary": "What happened in the session."},
        errors=(ItemNotFound,),
        arguments=("id",),
    )
    table.add(
        "recent",
        family="notes",
        mode="read",
        description="The latest notes and session summaries as one text for a session start, at "
        "most max_bytes of UTF-8, flagged truncated when cut.",
        docs={"scope": "Only this scope.", "max_bytes": "Size limit (default 16384, cap 65536)."},
    )
    table.add(
        "journal",
        family="notes",
        mode="read",
        description="The revision journal: every change to any item, newest first, with its "
        "operation, principal and characters added and removed.",
        docs={
            "scope": "Only this scope.",
            "since": "Only changes at or after this ISO 8601 time.",
            "principal": "Only changes by this writer.",
            "limit": "At most this many (1-1000).",
        },
    )
    table.add(
        "configure",
        family="notes",
        mode="write",
        description="Read or change this memory's settings: the review interval per note kind and "
        "the note size limit.",
        docs={
            "review_months": 'Months per kind, e.g. {"decision": 6}; null removes a kind\'s '
            "review date.",
            "note_limit_bytes": "The note size limit in bytes.",
        },
    )
