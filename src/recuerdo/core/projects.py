"""The project a note of the user's own scope is about (decision 0148).

A project's notes live in its scope ``project:<name>``: the scope says the project. The user's
notes share ``user`` whatever project they were written for, so there the project is recorded
as the tag ``project:<name>`` (at most one such tag; a save with a project replaces it). A note
of ``user`` with no such tag is of no project: it was written before projects were recorded,
or by a writer that names none. A read with a project leaves out the notes of ``user`` recorded
as another project's, and keeps those of no project (whose they are cannot be told, and they
are the user's own: hiding them would leave them out of every project's reads).

The tag is the record; the column ``items.project`` repeats it for the reads' index (0148's
review, ``store/note_projects.py``): no index finds a missing tag.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..errors import InvalidInput
from ..store.note_projects import NONE, PREFIX, SEVERAL
from .text import MAX_TAG_CHARS, check_tags

USER_SCOPE = "user"
_UNTAGGABLE = set("\r\n")  # what a tag may not hold besides NUL (core/text.check_tags)


def project_tag(project: object, scope: str) -> str | None:
    """The tag recording ``project`` on a note of ``scope``; None without a project. A name
    no tag can hold (too long, several lines) is named by a digest (``project:~`` and
    12 hex digits of its SHA-256), not refused: a project's name is the caller's text, trimmed
    (Engram's for the profile and the importer, which key such a personal observation:
    decision 0138). ``~`` starts no name a tag holds, so no name reads as another's digest."""
    if project is None:
        return None
    if not isinstance(project, str) or not project.strip():
        raise InvalidInput("project must be a non-empty text label")
    if "\x00" in project:  # as a read's door refuses it (no stored text holds one)
        raise InvalidInput("project contains a NUL character")
    name = project.strip()
    if scope != USER_SCOPE:
        raise InvalidInput(
            f"project records the project of a note of the scope {USER_SCOPE!r}; a note of"
            f" {scope!r} has its scope for its project"
        )
    tag = PREFIX + name
    if len(tag) <= MAX_TAG_CHARS and not name.startswith("~") and not _UNTAGGABLE & set(name):
        return tag
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{PREFIX}~{digest}"


def read_tag(project: object) -> str | None:
    """The tag a read with ``project`` keeps notes of ``user`` by (None: no project)."""
    return None if project is None else project_tag(project, USER_SCOPE)


def marked(tags: list[str], tag: str) -> list[str]:
    """``tags`` recording the project ``tag`` instead of any they recorded (checked again:
    the project's tag is one more, past the most a note may have)."""
    return check_tags([held for held in tags if not held.startswith(PREFIX)] + [tag])


def marked_update(given: list[str], held: str | None, tag: str | None) -> list[str] | None:
    """The tags an update writes: those given (None keeps the note's), recording ``tag``'s
    project when there is one; the note's own tags (``held``, JSON) when none are given."""
    if tag is None:
        return given or None
    return marked(given or list(json.loads(held or "[]")), tag)


def column(tags: list[str]) -> str:
    """What the column ``items.project`` holds for a note of ``tags`` (decision 0148, its
    section on the index): its project tag, ``NONE`` when it has none, ``SEVERAL`` when it
    has more than one (a save with a project writes one; free tags may write several)."""
    held = [tag for tag in tags if tag.startswith(PREFIX)]
    return NONE if not held else held[0] if len(held) == 1 else SEVERAL


def _tagged(alias: str) -> str:
    """The condition that the item ``alias`` holds the tag given as its parameter: read for a
    note of several project tags (``SEVERAL``), whose column names none of them."""
    return (
        "EXISTS (SELECT 1 FROM item_tags t"
        f" WHERE t.tenant = {alias}.tenant AND t.item_id = {alias}.id AND t.tag = ?)"
    )


def mine_or_none(alias: str, tag: str) -> tuple[str, list[Any]]:
    """The condition that the item ``alias`` is not a note of ``user`` recorded as another
    project's: it is of another scope, recorded as ``tag``'s project, or recorded as none.
    Read from the indexed column ``project``: no index finds a missing tag (0148's review)."""
    return (
        f"({alias}.scope <> ? OR {alias}.project IN (?, ?)"
        f" OR ({alias}.project = ? AND {_tagged(alias)}))",
        [USER_SCOPE, NONE, tag, SEVERAL, tag],
    )


def arms(alias: str, tag: str) -> list[tuple[str, list[Any]]]:
    """The notes of ``user`` a read with ``tag``'s project keeps, as conditions each one range
    of the index ``items_note_projects``, newest first: ``recent`` of ``user`` reads each and
    merges them, instead of walking every note of ``user`` for the few it keeps."""
    return [
        (f"{alias}.project = ?", [NONE]),
        (f"{alias}.project = ?", [tag]),
        (f"{alias}.project = ? AND {_tagged(alias)}", [SEVERAL, tag]),
    ]
