"""Importers: bring another memory system's memory into a recuerdo memory.

``import_from(memory, kind, source)`` reads ``source`` (a file or folder on this machine) and
writes what it holds through the memory's own verbs, so every write is checked, redacted,
journaled and indexed like any other. It returns a report: per kind of record, how many were
read, imported, updated, already there (unchanged) and skipped, each skip with its reason, and
where fields with no home of their own were kept. Importing the same source again writes
nothing twice.

Reading local files is an owner's act: importers are a library call and a CLI command
(``recuerdo import-from``), never a verb of the network doors.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InvalidInput, UnknownImportKind
from . import engram, markdown, mcp_memory, synsema
from .common import Counts, FieldNote, ImportReport, Skipped, existing_path

if TYPE_CHECKING:
    from ..engine import Memory

__all__ = ["KINDS", "Counts", "FieldNote", "ImportReport", "Skipped", "import_from"]

KINDS = ("synsema", "engram", "markdown", "mcp-memory")


def import_from(
    memory: Memory,
    kind: str,
    source: str | Path,
    *,
    scope: str | None = None,
    origin: str | None = None,
) -> ImportReport:
    """Import ``source`` of the given ``kind`` (one of :data:`KINDS`) into ``memory``.

    ``scope`` places what has no scope of its own (Synsema entries and decisions, knowledge and
    notes from mcp-memory and Markdown); Engram observations keep their own projects.
    ``origin`` names the source, to tell two sources of one kind apart (it goes into the keys,
    tags and source labels that let a re-import find what it wrote); by default the Synsema
    memory's name, the Markdown folder's name, or the kind.
    """
    if kind not in KINDS:
        raise UnknownImportKind(f"unknown import kind {kind!r}: one of {', '.join(KINDS)}")
    for name, value in (("scope", scope), ("origin", origin)):
        if value is not None and (not value.strip() or "\n" in value or len(value) > 100):
            raise InvalidInput(f"{name} must be a one-line label of at most 100 characters")
    path = existing_path(source)
    if kind == "engram":
        if scope is not None:
            raise InvalidInput(
                "engram observations keep their own projects and scopes: import without scope"
            )
        tally = engram.run(memory, path, origin=origin)
    elif kind == "mcp-memory":
        tally = mcp_memory.run(memory, path, origin=origin, scope=scope)
    elif kind == "markdown":
        tally = markdown.run(memory, path, origin=origin, scope=scope)
    else:
        tally = synsema.run(memory, path, origin=origin, scope=scope)
    return tally.report()
