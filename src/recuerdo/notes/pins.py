"""Pins and named context sets: what a session starts with, chosen by hand.

A pinned item (a note or an entry) comes first in ``recent`` (and Engram's ``mem_context``),
within the size limit, flagged ``pinned``. Pins and sets are the tenant's, but a message in
one is shown only to the members of its conversation, as everywhere (``core.items.visible``):
they showed any message to anyone who named its id (a hunt over the messages). A context set
is a named, ordered list of items that ``recent`` and ``context`` load on request
(``context_set_name``). Forgetting an item takes its pin and its places in sets with it (the
tables cascade from ``items``); a soft-deleted note keeps its pin but is shown nowhere until it
is restored.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core import projects
from ..core.clock import now_iso
from ..core.exact import shown
from ..core.items import visible
from ..core.text import checked_label
from ..errors import ContextSetNotFound, InvalidInput, ItemNotFound
from ..facade import MemoryBase, verb
from ..store.base import Row, Tx
from .results import ContextSet, ContextSetInfo, Pinned, PinnedItem, Unpinned

MAX_SET_ITEMS = 200
MAX_PINS = 200


def _id(value: object, field: str = "id") -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{field} is an item id (an integer), got {shown(value)}")
    return value


def _live(tx: Tx, tenant: str, item_id: object, viewer: str) -> Row:
    checked = _id(item_id)
    members_only, shown = visible("i", viewer)
    row = tx.one(
        "SELECT i.id, i.scope FROM items i WHERE i.id = ? AND i.tenant = ?"
        f" AND i.status <> 'deleted' AND {members_only}",
        (checked, tenant, *shown),
    )
    if row is None:
        raise ItemNotFound(f"no item with id {checked} (nothing was changed)")
    return row


def pin(tx: Tx, tenant: str, item_id: object, viewer: str) -> Pinned:
    row = _live(tx, tenant, item_id, viewer)
    current = tx.scalar(
        "SELECT pinned_at FROM pins WHERE tenant = ? AND item_id = ?", (tenant, row["id"])
    )
    if current is not None:
        return {"id": row["id"], "outcome": "already_pinned", "pinned_at": str(current)}
    if int(tx.scalar("SELECT count(*) FROM pins WHERE tenant = ?", (tenant,))) >= MAX_PINS:
        raise InvalidInput(f"at most {MAX_PINS} items can be pinned: unpin one first")
    stamp = now_iso()
    tx.execute(
        "INSERT INTO pins (tenant, item_id, pinned_at) VALUES (?, ?, ?)", (tenant, row["id"], stamp)
    )
    return {"id": row["id"], "outcome": "pinned", "pinned_at": stamp}


def unpin(tx: Tx, tenant: str, item_id: object, viewer: str) -> Unpinned:
    checked = _id(item_id)
    members_only, shown = visible("i", viewer)
    hidden = tx.one(
        f"SELECT 1 FROM items i WHERE i.id = ? AND i.tenant = ? AND NOT {members_only}",
        (checked, tenant, *shown),
    )
    if hidden is not None:  # a message of another conversation: as unknown as to pin it
        raise ItemNotFound(f"no item with id {checked} (nothing was changed)")
    gone = tx.execute("DELETE FROM pins WHERE tenant = ? AND item_id = ?", (tenant, checked))
    return {"id": checked, "outcome": "unpinned" if gone else "not_pinned"}


def pinned_rows(
    tx: Tx,
    tenant: str,
    viewer: str,
    scopes: Sequence[str] | None = None,
    project_tag: str | None = None,
) -> list[Row]:
    """The live pinned items ``viewer`` may read (of ``scopes``; not recorded as another
    project's than ``project_tag``'s, when given), oldest pin first."""
    members_only, shown = visible("i", viewer)
    where, params = f" AND {members_only}", [tenant, tenant, *shown]
    if scopes is not None:
        marks = ", ".join("?" * len(scopes))
        where, params = f"{where} AND i.scope IN ({marks})", [*params, *scopes]
    if project_tag is not None:
        mine, more = projects.mine_or_none("i", project_tag)
        where, params = f"{where} AND {mine}", [*params, *more]
    # The pins drive (CROSS JOIN fixes SQLite's join order): an empty pins table keeps its
    # stated million rows while items has its real count, and the planner then walked every
    # item to find none pinned (26 ms for each `recent` at 100,000 entries).
    return tx.all(
        "SELECT i.*, p.pinned_at FROM pins p CROSS JOIN items i"
        " WHERE i.tenant = p.tenant AND i.id = p.item_id"
        f" AND p.tenant = ? AND i.tenant = ? AND i.status <> 'deleted'{where}"
        " ORDER BY p.pinned_at, p.item_id",
        params,
    )


def _title(row: Row) -> str:
    return str(row["title"] or f"{row['category']} {row['item_type']}")


def pins(tx: Tx, tenant: str, viewer: str) -> list[PinnedItem]:
    return [
        {
            "id": row["id"],
            "item_type": row["item_type"],
            "title": _title(row),
            "kind": row["category"] or "",
            "scope": row["scope"],
            "pinned_at": row["pinned_at"],
        }
        for row in pinned_rows(tx, tenant, viewer)
    ]


def set_name(name: object) -> str:
    return checked_label(name, "name", max_chars=100)


def save_set(tx: Tx, tenant: str, name: object, ids: object, viewer: str) -> ContextSet:
    label = set_name(name)
    if isinstance(ids, str | bytes) or not isinstance(ids, Sequence):
        raise InvalidInput("ids is a list of item ids")
    wanted = list(dict.fromkeys(_id(value, "every id") for value in ids))
    if len(wanted) > MAX_SET_ITEMS:
        raise InvalidInput(f"a context set holds at most {MAX_SET_ITEMS} items")
    for item_id in wanted:
        _live(tx, tenant, item_id, viewer)  # all or nothing: an unknown id changes nothing
    existed = tx.execute("DELETE FROM context_sets WHERE tenant = ? AND name = ?", (tenant, label))
    stamp = now_iso()
    tx.executemany(
        "INSERT INTO context_sets (tenant, name, position, item_id, updated_at)"
        " VALUES (?, ?, ?, ?, ?)",
        [(tenant, label, position, item_id, stamp) for position, item_id in enumerate(wanted)],
    )
    if not wanted:
        return {"name": label, "ids": [], "outcome": "deleted" if existed else "absent"}
    return {"name": label, "ids": wanted, "outcome": "replaced" if existed else "created"}


def context_sets(tx: Tx, tenant: str, viewer: str) -> list[ContextSetInfo]:
    found: dict[str, ContextSetInfo] = {}
    members_only, shown = visible("i", viewer)
    for row in tx.all(
        "SELECT s.name, s.item_id, s.updated_at FROM context_sets s JOIN items i"
        " ON i.tenant = s.tenant AND i.id = s.item_id"
        f" WHERE s.tenant = ? AND {members_only} ORDER BY s.name, s.position",
        (tenant, *shown),
    ):
        entry = found.setdefault(
            row["name"], {"name": row["name"], "ids": [], "updated_at": row["updated_at"]}
        )
        entry["ids"].append(row["item_id"])
    return list(found.values())


def set_rows(tx: Tx, tenant: str, name: object, viewer: str) -> list[Row]:
    """The live items of a context set ``viewer`` may read, in its order; an unknown set is
    refused."""
    label = set_name(name)
    members_only, shown = visible("i", viewer)
    rows = tx.all(
        "SELECT i.* FROM context_sets s JOIN items i ON i.id = s.item_id"
        " WHERE s.tenant = ? AND s.name = ? AND i.tenant = ? AND i.status <> 'deleted'"
        f" AND {members_only} ORDER BY s.position",
        (tenant, label, tenant, *shown),
    )
    if not rows and not tx.one(
        "SELECT 1 FROM context_sets WHERE tenant = ? AND name = ? LIMIT 1", (tenant, label)
    ):
        raise ContextSetNotFound(
            f"no context set named {label!r}: make one with context_set(name, ids)"
        )
    return rows


class PinVerbs(MemoryBase):
    @verb("write", errors=(ItemNotFound,), arguments=("id",))
    def pin(self, id: int) -> Pinned:
        """Pin an item (a note or an entry): it comes first in the context a session starts
        with (recent), within the size limit, flagged pinned.

        Args:
            id: The item's id.
        """
        with self._write(0) as tx:
            return pin(tx, self.tenant, id, self.principal)

    @verb("write", errors=(ItemNotFound,), arguments=("id",))
    def unpin(self, id: int) -> Unpinned:
        """Unpin an item (not_pinned when it was not pinned).

        Args:
            id: The item's id.
        """
        with self._write(0) as tx:
            return unpin(tx, self.tenant, id, self.principal)

    @verb("read")
    def pins(self) -> list[PinnedItem]:
        """The pinned items, oldest pin first: id, type, title, kind, scope and when pinned."""
        with self._store.read() as tx:
            return pins(tx, self.tenant, self.principal)

    @verb("write", errors=(ItemNotFound,), arguments=("name", "ids"))
    def context_set(self, name: str, ids: list[int]) -> ContextSet:
        """Save a named context set: an ordered list of items that recent and context load first
        when given its name (context_set_name). Saving a name again replaces its list; an empty
        list deletes it.

        Args:
            name: The set's name, e.g. 'release-checklist'.
            ids: The items, in the order they are shown (at most 200).
        """
        with self._write(0) as tx:
            return save_set(tx, self.tenant, name, ids, self.principal)

    @verb("read")
    def context_sets(self) -> list[ContextSetInfo]:
        """The named context sets: each name with its item ids in order."""
        with self._store.read() as tx:
            return context_sets(tx, self.tenant, self.principal)
