"""Keyed notes found by what a write names: a note deleted since the version the writer read,
and a note still under the key it had before its writer's naming changed (``former_key``).

A key scheme can change under notes already written: the Engram profile keyed a personal
observation by its topic key alone, and now keys it by project and topic key (decision 0138).
A save naming the note's former key finds it there and moves it to the new key, so the next
save updates it rather than making a second note beside it, and a later save naming the same
former key for another key finds nothing and makes its own note.
"""

from __future__ import annotations

from ..core.text import checked_label
from ..errors import Conflict, InvalidInput
from ..store.base import Row, Tx
from . import history

CATEGORY_KIND = "memory"
"""The kind of category notes (``operations.MEMORY_KIND``; this module is below it)."""
CATEGORY_PREFIX = "memory/"
"""How every category note's key starts (``categories.category_key``)."""


def by_key(tx: Tx, tenant: str, scope: str, key: str) -> Row | None:
    """The current note of a topic key in a scope (none when the key is free)."""
    return tx.one(
        "SELECT * FROM items WHERE tenant = ? AND scope = ? AND key = ?"
        " AND item_type = 'note' AND status <> 'deleted'",
        (tenant, scope, key),
    )


def check_former(former_key: object, key: str | None) -> str | None:
    """The former key to look under, or None (none given, or the same as ``key``)."""
    if former_key is None:
        return None
    if key is None:
        raise InvalidInput("former_key needs key: it names where the note was before key")
    former = checked_label(former_key, "former_key")
    return None if former == key else former


def find_former(tx: Tx, tenant: str, scope: str, former_key: str) -> Row | None:
    """The current note at ``former_key`` in ``scope`` (the caller found no note at its key),
    or None. It is moved only once the save is known to go through (:func:`move`): a save
    refused as a conflict leaves it where it was. A category note is refused: its key is its
    label's (``remember_about`` finds it there), so moved it would be lost to its category."""
    row = by_key(tx, tenant, scope, former_key)
    if (
        row is not None
        and row["category"] == CATEGORY_KIND
        and former_key.startswith(CATEGORY_PREFIX)
    ):
        raise InvalidInput(
            f"former_key {former_key!r} holds category note {row['id']} (remember_about): a "
            "category note stays at its category's key; nothing was stored"
        )
    return row


def move(tx: Tx, row: Row, key: str, principal: str) -> Row:
    """The note in ``row`` moved to ``key``, its version and revisions kept: the note is the
    same, only where it is found changes. A journal line ``move`` says so, with the key it
    came from and the one it goes to, so the owner sees why and since when the note answers
    to another key (a repeat moved writes no version to show it)."""
    tx.execute(
        "UPDATE items SET key = ? WHERE tenant = ? AND id = ?", (key, row["tenant"], row["id"])
    )
    history.journal_row(tx, row, "move", principal, moved=(row["key"], key))
    moved = tx.one("SELECT * FROM items WHERE tenant = ? AND id = ?", (row["tenant"], row["id"]))
    assert moved is not None  # the row was just updated within this transaction
    return moved


def refuse_if_deleted_since(
    tx: Tx, tenant: str, scope: str, key: str, based_on: int | str, without: str
) -> None:
    """A write based on a version of a keyed note (``based_on``: a version number, or a
    version token) that was deleted since is refused, nothing stored: it made a new note with
    the key, undoing the deletion unseen (and the deleted note could then not be restored).
    A key no note ever held, or held by a note erased since (no trace is left to tell), makes
    a new note as before. The text is not kept beside the deleted note: no verb reads a
    deleted note's revisions. ``without``: the argument to leave out to make a new note."""
    deleted = tx.one(
        "SELECT id, version FROM items WHERE tenant = ? AND scope = ? AND key = ?"
        " AND item_type = 'note' AND status = 'deleted' ORDER BY id DESC LIMIT 1",
        (tenant, scope, key),
    )
    if deleted is None:
        return
    token = isinstance(based_on, str)
    raise Conflict(
        f"{'version token' if token else 'version'} {based_on} of note {deleted['id']} (key "
        f"{key!r}) was expected, but the note was deleted at version {deleted['version']}: "
        f"nothing was stored. Restore it and write again, or leave out {without} to make a "
        "new note",
        id=deleted["id"],
        deleted_version=deleted["version"],
        **({"version_token": based_on} if token else {"expected_version": based_on}),
    )
