"""Verbs of the entries family."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import (
    ContentTooLarge,
    EmptyContent,
    InvalidBatch,
    InvalidCategory,
    InvalidTags,
)
from ..model import CATEGORIES

if TYPE_CHECKING:
    from ..verbs import VerbTable


def register(table: VerbTable) -> None:
    # -- entries ---------------------------------------------------------------------------------
    table.add(
        "remember",
        family="entries",
        mode="write",
        description="Store one short fact (an entry) under a fixed category, with optional tags. "
        "Returns the new entry's id. Credentials in the text are stored redacted.",
        docs={
            "category": f"One of: {', '.join(CATEGORIES)}.",
            "content": "The fact to keep, as plain text.",
            "tags": "Labels to find it by later (exact, case-sensitive).",
            "scope": "Optional label grouping related entries, e.g. 'project:shop'.",
        },
        enums={"category": CATEGORIES},
        errors=(InvalidCategory, InvalidTags, EmptyContent, ContentTooLarge),
        arguments=("category", "content"),
        cli_names={"tags": "tag"},
    )
    table.add(
        "remember_many",
        family="entries",
        mode="write",
        description="Store several entries in one transaction: all are stored or, if any is "
        "refused, none. Returns their ids in order.",
        docs={"entries": "A list of {category, content, tags, scope} objects."},
        errors=(InvalidBatch, ContentTooLarge),
    )
    table.add(
        "recall",
        family="entries",
        mode="read",
        description="List entries newest first, filtered by category, tags, a case-insensitive "
        "text search and writer. Every filter is optional; at most `limit` (default 200).",
        docs={
            "category": f"Only this category ({', '.join(CATEGORIES)}).",
            "tags": "Only entries with any of these tags (all of them with mode='all').",
            "search": "Only entries whose content contains this text (any case).",
            "mode": "'all' to require every tag; anything else means any tag.",
            "limit": "How many entries at most; missing, zero, negative or not a number means 200.",
            "from_": "Whose entries: 'main', an agent's name, or '*' for every writer.",
            "scope": "Only entries of this scope.",
        },
        errors=(InvalidCategory, InvalidTags),
        cli_names={"tags": "tag", "from_": "from"},
    )
    table.add(
        "forget",
        family="entries",
        mode="write",
        description="Delete one entry by id. Returns true if it existed. Ids are never reused.",
        docs={"id": "The entry's id, as returned by remember."},
        arguments=("id",),
        destructive=True,
    )
    table.add(
        "summary",
        family="entries",
        mode="read",
        description="A short human-readable overview: entry counts by category, the owner rules "
        "and recent rule violations.",
    )
