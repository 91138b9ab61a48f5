"""How reading a Markdown file back finds its note (:func:`.markdown.apply`): by id, by key,
or, for a file naming none, by the keyless note an earlier import made of it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..store.base import Row, Tx, marks
from . import history
from . import operations as notes

if TYPE_CHECKING:
    from .markdown import Incoming


def find(tx: Tx, tenant: str, note: Incoming, moved: Moved) -> Row | None:
    if note.trusted and note.id is not None:
        row = tx.one(
            "SELECT * FROM items WHERE id = ? AND tenant = ? AND item_type = 'note'"
            " AND status <> 'deleted'",
            (note.id, tenant),
        )
        if (
            row is not None
            and row["scope"] == note.scope
            and (row["key"] == note.key or moved(note.scope, row["id"]))
        ):
            return row
    if note.key is not None:
        return notes.by_key(tx, tenant, note.scope, note.key)
    return None


class Moved:
    """The notes of a scope moved to another key (a save's ``former_key``, decision 0138): a
    file written before holds the key the note had, and found by that key it made a second
    note. Read once per scope, and only when a file's key is not its note's: one journal read
    per file was quadratic in a folder of moved notes."""

    def __init__(self, tx: Tx, tenant: str) -> None:
        self._tx, self._tenant = tx, tenant
        self._scopes: dict[str, set[int]] = {}

    def __call__(self, scope: str, item_id: int) -> bool:
        if scope not in self._scopes:
            self._scopes[scope] = {
                int(row["item_id"])
                for row in self._tx.all(
                    "SELECT item_id FROM journal WHERE tenant = ? AND scope = ?"
                    " AND operation = 'move'",
                    (self._tenant, scope),
                )
            }
        return item_id in self._scopes[scope]


def deleted_since(tx: Tx, tenant: str, note: Incoming) -> int | None:
    """The id of the note this memory wrote the file from, when that note is deleted and no
    other holds its key: reading the file made a new note with the key, undoing the deletion
    unseen (decision 0084)."""
    if not note.trusted or note.id is None:
        return None
    found = tx.one(
        "SELECT id, scope, key FROM items WHERE id = ? AND tenant = ? AND item_type = 'note'"
        " AND status = 'deleted'",
        (note.id, tenant),
    )
    if found is None or (found["scope"], found["key"]) != (note.scope, note.key):
        return None
    return int(found["id"])


class Unnamed:
    """Keyless notes holding a batch's texts: an import stopped before the files' front
    matter made them, and made again each was a second note (decision 0140)."""

    def __init__(self, tx: Tx, tenant: str, files: Sequence[Incoming]) -> None:
        self._tx, self._tenant = tx, tenant
        self._notes: dict[tuple[str, str, str], list[int]] = {}
        asked: dict[str, set[bytes]] = {}
        for file in filter(_names_none, files):
            asked.setdefault(file.scope, set()).add(history.normalized_hash(file.content))
        for scope, hashes in asked.items():  # a scope a query: the index leads with it
            ordered = sorted(hashes)
            for part in (ordered[first : first + 500] for first in range(0, len(ordered), 500)):
                for row in tx.all(
                    "SELECT id, title, category FROM items WHERE tenant = ? AND scope = ?"
                    f" AND content_hash IN ({marks(part)}) AND item_type = 'note'"
                    " AND status <> 'deleted' AND key IS NULL ORDER BY id",
                    (tenant, scope, *part),
                ):
                    found = (scope, row["title"], row["category"])
                    self._notes.setdefault(found, []).append(int(row["id"]))

    def __call__(self, note: Incoming) -> Row | None:
        if not _names_none(note):  # found by its key or id, not here (none of its rows read)
            return None
        for item_id in self._notes.get((note.scope, note.title, note.kind), []):
            # Read as it is now: a file read before in the batch may have changed it.
            row = self._tx.one(
                "SELECT * FROM items WHERE id = ? AND tenant = ?", (item_id, self._tenant)
            )
            if row is not None and row["status"] != "deleted" and same(row, note):
                return row
        return None


def _names_none(note: Incoming) -> bool:  # by key, or by an id of this memory's
    return note.key is None and not (note.trusted and note.id is not None)


def same(row: Row, note: Incoming) -> bool:
    return (row["content"], row["title"], row["category"], json.loads(row["tags"])) == (
        note.content,
        note.title,
        note.kind,
        note.tags,
    )
