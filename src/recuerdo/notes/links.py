"""Links between items: explicit ones, and ``[[wikilinks]]`` written in note text."""

from __future__ import annotations

import re

from ..core.clock import now_iso
from ..core.exact import shown
from ..core.items import visible
from ..core.text import checked_label
from ..errors import InvalidInput, ItemNotFound
from ..store.base import Row, Tx
from .results import Linked

_WIKILINK = re.compile(r"\[\[([^\[\]|\n]{1,200})(?:\|[^\[\]\n]*)?\]\]")


def _live_item(tx: Tx, tenant: str, item_id: object, viewer: str | None) -> Row:
    if isinstance(item_id, bool) or not isinstance(item_id, int):
        raise InvalidInput(f"an item id is an integer, got {shown(item_id)}")
    members_only, params = visible("i", viewer)
    row = tx.one(
        "SELECT i.id, i.scope FROM items i WHERE i.id = ? AND i.tenant = ?"
        f" AND i.status <> 'deleted' AND {members_only}",
        (item_id, tenant, *params),
    )
    if row is None:
        raise ItemNotFound(f"no item with id {item_id}")
    return row


def link(
    tx: Tx, tenant: str, from_id: object, to_id: object, kind: object, *, viewer: str | None
) -> Linked:
    """Link two items the viewer may read (a message only by its conversation's members)."""
    source = _live_item(tx, tenant, from_id, viewer)
    target = _live_item(tx, tenant, to_id, viewer)
    if source["id"] == target["id"]:
        raise InvalidInput("an item cannot link to itself")
    label = checked_label(kind, "type", max_chars=64)
    created = tx.execute(
        "INSERT INTO links (tenant, from_id, to_id, type, origin, created_at) VALUES"
        " (?, ?, ?, ?, 'explicit', ?) ON CONFLICT (tenant, from_id, to_id, type) DO NOTHING",
        (tenant, source["id"], target["id"], label, now_iso()),
    )
    return {
        "from_id": source["id"],
        "to_id": target["id"],
        "type": label,
        "outcome": "created" if created else "exists",
    }


def _link_title(text: str) -> str:
    return " ".join(text.split())


def sync_wikilinks(tx: Tx, row: Row) -> None:
    """Make the note's wikilinks match its text: ``[[Title]]`` links to the note of that title
    (in the same scope if there is one, else in any scope of the tenant). A title no note has
    yet is kept pending, and linked when a note of that title appears (:func:`resolve_pending`),
    so the order in which notes are written does not matter."""
    titles = {_link_title(match.group(1)) for match in _WIKILINK.finditer(row["content"])}
    titles.discard("")
    tenant = row["tenant"]
    tx.execute(
        "DELETE FROM links WHERE tenant = ? AND from_id = ? AND origin = 'wikilink'",
        (tenant, row["id"]),
    )
    tx.execute(
        "DELETE FROM wikilinks_pending WHERE tenant = ? AND from_id = ?", (tenant, row["id"])
    )
    for title in sorted(titles):
        target = tx.one(
            "SELECT id FROM items WHERE tenant = ? AND item_type = 'note' AND title = ?"
            " AND status <> 'deleted' AND id <> ? ORDER BY (scope = ?) DESC, id DESC LIMIT 1",
            (row["tenant"], title, row["id"], row["scope"]),
        )
        if target is None:
            tx.execute(
                "INSERT INTO wikilinks_pending (tenant, title, from_id) VALUES (?, ?, ?)"
                " ON CONFLICT DO NOTHING",
                (row["tenant"], title, row["id"]),
            )
            continue
        tx.execute(
            "INSERT INTO links (tenant, from_id, to_id, type, origin, created_at) VALUES"
            " (?, ?, ?, 'wikilink', 'wikilink', ?)"
            " ON CONFLICT (tenant, from_id, to_id, type) DO NOTHING",
            (tenant, row["id"], target["id"], now_iso()),
        )


def resolve_pending(tx: Tx, tenant: str, title: str | None, item_id: int) -> None:
    """A note titled ``title`` now exists: the wikilinks that waited for that title link to it."""
    if not title:
        return
    waiting = tx.all(
        "SELECT from_id FROM wikilinks_pending WHERE tenant = ? AND title = ? AND from_id <> ?",
        (tenant, title, item_id),
    )
    if not waiting:
        return
    stamp = now_iso()
    tx.executemany(
        "INSERT INTO links (tenant, from_id, to_id, type, origin, created_at) VALUES"
        " (?, ?, ?, 'wikilink', 'wikilink', ?) ON CONFLICT (tenant, from_id, to_id, type)"
        " DO NOTHING",
        [(tenant, row["from_id"], item_id, stamp) for row in waiting],
    )
    tx.execute(
        "DELETE FROM wikilinks_pending WHERE tenant = ? AND title = ? AND from_id <> ?",
        (tenant, title, item_id),
    )
