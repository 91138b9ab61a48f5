"""Browsing notes as their owner does: every note listed (soft-deleted ones too, to restore
them), the links of a note both ways, and the conflict revisions kept beside it.

The verbs live here, in their own mixin of the notes family, with their typed results.
"""

from __future__ import annotations

from ..core.clock import now_iso
from ..core.exact import shown
from ..core.items import status_of, visible
from ..errors import InvalidInput, ItemNotFound
from ..facade import MemoryBase, verb
from ..store.base import Row, Tx
from .operations import check_kind, check_scope, load_note
from .results import ConflictRevision, LinkedItem, NoteLinks, NoteList, NoteListing

LIST_STATUSES = ("active", "needs_review", "deleted")
SORTS = ("modified", "created", "title")
_ORDER = {"modified": "updated_at DESC, id DESC", "created": "created_at DESC, id DESC"}


def _listing(row: Row, at: str) -> NoteListing:
    return {
        "id": row["id"],
        "title": row["title"] or "",
        "kind": row["category"] or "",
        "scope": row["scope"],
        "key": row["key"],
        "source": row["source"],
        "status": status_of(row, at),
        "muted": bool(row["muted"]),
        "version": row["version"],
        "chars": len(row["content"]),
        "review_at": row["review_at"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    }


def list_notes(
    tx: Tx,
    tenant: str,
    *,
    scope: object,
    kind: object,
    status: object,
    sort: object,
    limit: object,
) -> NoteList:
    if status is not None and status not in LIST_STATUSES:
        raise InvalidInput(f"status must be one of {', '.join(LIST_STATUSES)}, got {shown(status)}")
    if sort not in SORTS:
        raise InvalidInput(f"sort must be one of {', '.join(SORTS)}, got {shown(sort)}")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
        raise InvalidInput(f"limit must be an integer from 1 to 1000, got {shown(limit)}")
    at = now_iso()
    where = ["tenant = ?", "item_type = 'note'"]
    params: list[object] = [tenant]
    if status == "deleted":
        where.append("status = 'deleted'")
    elif status == "needs_review":
        where.append("status = 'active' AND review_at IS NOT NULL AND review_at <= ?")
        params.append(at)
    elif status == "active":
        where.append("status = 'active' AND (review_at IS NULL OR review_at > ?)")
        params.append(at)
    else:
        where.append("status <> 'deleted'")
    if scope is not None:
        where.append("scope = ?")
        params.append(check_scope(scope))
    if kind is not None:
        where.append("category = ?")
        params.append(check_kind(kind))
    order = _ORDER.get(str(sort), "title, id")
    rows = tx.all(
        f"SELECT * FROM items WHERE {' AND '.join(where)} ORDER BY {order} LIMIT ?",
        [*params, limit + 1],
    )
    listed = [_listing(row, at) for row in rows[:limit]]
    return {"notes": listed, "count": len(listed), "more": len(rows) > limit}


def _linked(row: Row) -> LinkedItem:
    return {
        "id": row["id"],
        "title": row["title"],
        "item_type": row["item_type"],
        "type": row["type"],
        "origin": row["origin"],
    }


def note_links(tx: Tx, tenant: str, item_id: object, viewer: str) -> NoteLinks:
    """A note's links, to and from the items ``viewer`` may read: a message linked to a note
    showed its subject to anyone who read the note (a hunt over the messages)."""
    row = load_note(tx, tenant, item_id)
    members_only, shown = visible("i", viewer)
    live = f"i.tenant = ? AND i.status <> 'deleted' AND {members_only}"
    outgoing = tx.all(
        "SELECT i.id, i.title, i.item_type, l.type, l.origin FROM links l JOIN items i"
        f" ON i.tenant = l.tenant AND i.id = l.to_id WHERE l.tenant = ? AND l.from_id = ?"
        f" AND {live} ORDER BY i.id, l.type",
        (tenant, row["id"], tenant, *shown),
    )
    incoming = tx.all(
        "SELECT i.id, i.title, i.item_type, l.type, l.origin FROM links l JOIN items i"
        f" ON i.tenant = l.tenant AND i.id = l.from_id WHERE l.tenant = ? AND l.to_id = ?"
        f" AND {live} ORDER BY i.id, l.type",
        (tenant, row["id"], tenant, *shown),
    )
    return {
        "id": row["id"],
        "outgoing": [_linked(r) for r in outgoing],
        "incoming": [_linked(r) for r in incoming],
    }


def conflict_revisions(tx: Tx, tenant: str, item_id: object) -> list[ConflictRevision]:
    row = load_note(tx, tenant, item_id)
    rows = tx.all(
        "SELECT id, based_on, principal, created_at, title, kind, content FROM revisions"
        " WHERE tenant = ? AND item_id = ? AND operation = 'conflict' ORDER BY id",
        (tenant, row["id"]),
    )
    return [
        {
            "revision_id": r["id"],
            "based_on": r["based_on"],
            "principal": r["principal"],
            "created_at": r["created_at"],
            "title": r["title"],
            "kind": r["kind"],
            "content": r["content"],
        }
        for r in rows
    ]


class NoteBrowsingVerbs(MemoryBase):
    @verb("read", enums={"status": LIST_STATUSES, "sort": SORTS})
    def list_notes(
        self,
        scope: str | None = None,
        kind: str | None = None,
        status: str | None = None,
        sort: str = "modified",
        limit: int = 100,
    ) -> NoteList:
        """List notes as their owner browses them, newest change first (or by creation or title):
        title, kind, scope, writer, state (needs_review when past its review date), muted flag,
        version and size. status='deleted' lists soft-deleted notes, which restore brings back.

        Args:
            scope: Only this scope, e.g. 'user' or 'project:shop'.
            kind: Only this kind.
            status: Only notes in this state: active, needs_review or deleted.
            sort: 'modified' (default), 'created' or 'title'.
            limit: At most this many (1-1000, default 100); more says whether others exist.
        """
        with self._store.read() as tx:
            return list_notes(
                tx, self.tenant, scope=scope, kind=kind, status=status, sort=sort, limit=limit
            )

    @verb("read", errors=(ItemNotFound,), arguments=("id",), keeps_to_scope=True)
    def links(self, id: int, *, scope: str | None = None) -> NoteLinks:
        """The links of a note both ways: the items it links to and the items linking to it, each
        with the link's type and origin (explicit, or a [[wikilink]] in the text).

        Args:
            id: The note's id.
            scope: Only an item kept in this scope (else not found); a token limited to
                scopes names one of them.
        """
        with self._store.read() as tx:
            return note_links(tx, self.tenant, id, self.principal)

    @verb("read", errors=(ItemNotFound,), arguments=("id",), keeps_to_scope=True)
    def conflicts(self, id: int, *, scope: str | None = None) -> list[ConflictRevision]:
        """The conflict revisions of a note, whole: text that arrived with a stale version and was
        kept beside the current one instead of overwriting it, with who sent it and when.

        Args:
            id: The note's id.
            scope: Only an item kept in this scope (else not found); a token limited to
                scopes names one of them.
        """
        with self._store.read() as tx:
            return conflict_revisions(tx, self.tenant, id)
