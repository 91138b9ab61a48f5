"""Notarium agent-memory files: one category of observations per file.

Notarium keeps an agent's memory as ordinary notes of the class ``agent-memory``, one note per
category on the user axis or a project's axis; each observation is appended to its category's
note, separated by a blank line. Such a file is imported through ``remember_about`` on the same
axis and category, one observation (block of text between blank lines) at a time; an
observation the category note already holds is not appended again. A block is compared as a
write stores it (credentials and ``<private>`` spans redacted): the note never holds the raw
block, and comparing that appended it again on every import. Front matter read: ``category``
(else the title), ``axis`` (``user`` or ``project``; ``project`` when a project is named),
``project``, ``summary`` and ``muted``.
"""

from __future__ import annotations

import re
from functools import partial
from typing import TYPE_CHECKING, Any

from ..engine import stored_text
from ..errors import CapabilityNotGranted, RecuerdoError, StoreError
from .common import Outcome, Tally, one_line

if TYPE_CHECKING:
    from ..engine import Memory

CLASSES = ("agent-memory",)
READ_FIELDS = {"class", "category", "title", "axis", "project", "summary", "muted"}
_BLANK = re.compile(r"\n\s*\n")


def blocks(body: str) -> list[str]:
    """The observations of a category note: its blocks of text between blank lines."""
    return [block.strip() for block in _BLANK.split(body.strip()) if block.strip()]


def import_category(
    writer: Memory, tally: Tally, relative: str, front: dict[str, Any], body: str
) -> None:
    category = one_line(str(front.get("category") or front.get("title") or ""))
    project = front.get("project")
    project_name = one_line(str(project)) if project not in (None, "") else None
    axis = str(front.get("axis") or ("project" if project_name else "user")).strip().lower()
    summary = front.get("summary")
    summary_line = one_line(str(summary)) if summary not in (None, "") else None
    if not category or axis not in ("user", "project") or (axis == "project" and not project_name):
        tally.skip(
            "categories",
            relative,
            "an agent-memory file needs a category, and a project on the project axis",
        )
        return
    on_project = project_name if axis == "project" else None
    unkept = sorted(set(front) - READ_FIELDS)
    if unkept:
        tally.not_kept(
            f"agent-memory {', '.join(unkept)}",
            "a category note is found by its axis and category, and stamps its own times",
        )
    try:
        existing = _existing(writer, category, axis=axis, project=on_project)
    except (StoreError, CapabilityNotGranted):
        raise
    except RecuerdoError:  # a label the profile refuses is refused, and reported, by the writes
        existing = None
    held = set(blocks(existing["content"])) if existing else set()
    added = 0
    # The body is read as a write stores it before it is cut into blocks: a <private> span
    # across a blank line was cut in two halves that neither held whole, and the category
    # note joined them back readable (the review of 0102).
    for index, block in enumerate(blocks(stored_text(body))):
        ref = f"{relative} observation {index + 1}"
        if block in held:  # read as stored already (above)
            tally.add("category_observations", "unchanged")
            continue

        def write(block: str = block) -> Outcome:
            writer.remember_about(
                axis,
                block,
                category=category,
                project=on_project,
                summary=summary_line,
            )
            return "imported"

        before = len(tally.skipped)
        tally.attempt("category_observations", ref, write)
        if len(tally.skipped) == before:
            added += 1
            held.add(block)
    outcome: Outcome = "unchanged" if not added else ("updated" if existing else "imported")
    tally.add("categories", outcome)
    if front.get("muted") is True:
        if existing and existing["muted"]:
            tally.add("mutes", "unchanged")
        else:
            tally.attempt("mutes", relative, partial(_mute, writer, category, axis, on_project))


def _mute(writer: Memory, category: str, axis: str, project: str | None) -> Outcome:
    writer.mute(category, axis=axis, project=project)
    return "imported"


def _existing(
    writer: Memory, category: str, *, axis: str, project: str | None
) -> dict[str, Any] | None:
    """The category's note as the profile names it (muted ones included), whole."""
    for entry in writer.profile(axis, project=project, include_muted=True):
        if entry["category"].casefold() == category.casefold():
            note = writer.get(entry["note_id"])
            return {"content": note["content"], "muted": bool(entry["muted"])}
    return None
