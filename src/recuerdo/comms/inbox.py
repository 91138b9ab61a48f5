"""Reading: a principal's inbox (its conversations, most recent activity first) and a thread.

Each member principal has one row per conversation (``comms_inboxes``): the newest message's id
orders the inbox, and ``read_upto`` is its unread cursor, the newest message it has read in a
thread. Unread counts are the messages of others after that cursor, counted from the messages
themselves, so they stay right whatever was erased. Pages are cut by cursors (``after``) that
are decimal strings: an inbox page continues below the last conversation's activity, a thread
page after its last message.
"""

from __future__ import annotations

import json
from typing import Any

from ..core.exact import shown
from ..core.items import MAIL
from ..core.text import MAX_ID, whole_number
from ..errors import ConversationNotFound, InvalidInput, NotAMember, PageCursorInvalid
from ..store.base import Row, Tx, rows_by_id
from .addresses import own
from .mail import check_id, check_scope, is_member
from .model import Inbox, InboxEntry, Thread, ThreadMessage

DEFAULT_LIMIT = 50
MAX_LIMIT = 4096
INBOX_PREVIEW = 200
DEFAULT_PREVIEW = 500
MAX_PREVIEW = 16_384
_MAILS = (
    "FROM items i WHERE i.tenant = v.tenant AND i.session = v.conversation_id"
    f" AND i.item_type = '{MAIL}'"
)


def check_limit(limit: object, field: str = "limit", high: int = MAX_LIMIT, low: int = 1) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not low <= limit <= high:
        raise InvalidInput(f"{field} must be an integer from {low} to {high}, got {shown(limit)}")
    return limit


def check_cursor(after: object) -> int | None:
    if after is None or after == "":
        return None
    if isinstance(after, int) and not isinstance(after, bool) and 0 <= after <= MAX_ID:
        return after
    number = whole_number(after) if isinstance(after, str) else None
    if number is not None:
        return number
    raise PageCursorInvalid(f"after {after!r} is not a cursor a page gave out (a decimal string)")


def check_inbox_cursor(after: object) -> tuple[int, int] | None:
    """An inbox page's cursor: the last conversation's activity and its id (``12.3``). The
    activity alone (``12``, as earlier pages gave out) still reads: below it."""
    if isinstance(after, str) and after.count(".") == 1:
        activity, _, conversation_id = after.partition(".")
        parts = whole_number(activity), whole_number(conversation_id)
        if parts[0] is not None and parts[1] is not None:
            return parts[0], parts[1]
        raise PageCursorInvalid(f"after {after!r} is not a cursor an inbox page gave out")
    below = check_cursor(after)
    return None if below is None else (below, 0)


def conversation(
    tx: Tx, tenant: str, viewer: str, conversation_id: object, scope: object = None
) -> Row:
    """The conversation, if the viewer is one of its members (and it is kept in ``scope``)."""
    key = str(check_id(conversation_id, "conversation"))
    kept_to = check_scope(scope)
    row = tx.one(
        "SELECT id, scope, started_by, started_at FROM comms_conversations"
        " WHERE tenant = ? AND id = ?",
        (tenant, key),
    )
    if row is None:
        raise ConversationNotFound(f"no conversation with id {key}")
    # Membership first: a non-member asking in one scope and then another learnt where the
    # conversation is kept (not found in one, not a member in the other).
    if not is_member(tx, tenant, viewer, key):
        raise NotAMember(f"you are not a member of conversation {key}")
    if kept_to is not None and row["scope"] != kept_to:
        raise ConversationNotFound(f"no conversation with id {key} in scope {kept_to!r}")
    return row


def _previews(tx: Tx, tenant: str, ids: list[int], chars: int) -> dict[int, Row]:
    """id -> the message's fields and the first ``chars`` characters of its body (only those
    are read into the answer)."""
    return rows_by_id(
        tx,
        f"SELECT id, category, title, created_at, meta, substr(content, 1, {int(chars)})"
        " AS preview FROM items",
        ids,
        where="tenant = ?",
        params=(tenant,),
    )


def inbox(
    tx: Tx, tenant: str, viewer: str, after: object, limit: object, scope: object = None
) -> Inbox:
    # Conversations with no message yet (imported empty) share an activity of 0: the id breaks
    # the tie, or a page ending among them skipped the rest.
    below = check_inbox_cursor(after)
    count = check_limit(limit)
    kept_to = check_scope(scope)
    activity, after_id = below if below is not None else (2**62, 0)
    by_id = "CAST(v.conversation_id AS INTEGER)"
    rows = tx.all(
        "SELECT v.conversation_id, v.last_id, c.scope,"
        " (SELECT count(*) FROM comms_members m WHERE m.tenant = v.tenant"
        " AND m.conversation_id = v.conversation_id) AS members,"
        f" (SELECT count(*) {_MAILS}) AS messages,"
        f" (SELECT count(*) {_MAILS} AND i.id > v.read_upto AND i.source <> v.principal)"
        " AS unread,"
        f" (SELECT max(i.id) {_MAILS}) AS newest"
        " FROM comms_inboxes v JOIN comms_conversations c"
        " ON c.tenant = v.tenant AND c.id = v.conversation_id"
        " WHERE v.tenant = ? AND v.principal = ?"
        # A range on the activity index, less the conversations of the cursor's activity at or
        # above its id (an OR of the two read every row before the cursor: the review's).
        f" AND v.last_id <= ? AND NOT (v.last_id = ? AND {by_id} >= ?)"
        + ("" if kept_to is None else " AND c.scope = ?")
        + f" ORDER BY v.last_id DESC, {by_id} DESC LIMIT ?",
        (
            tenant,
            viewer,
            activity,
            activity,
            after_id,
            *(() if kept_to is None else (kept_to,)),
            count + 1,
        ),
    )
    more = len(rows) > count
    rows = rows[:count]
    newest = _previews(
        tx, tenant, [int(r["newest"]) for r in rows if r["newest"] is not None], INBOX_PREVIEW
    )
    entries: list[InboxEntry] = []
    for row in rows:
        last = newest.get(row["newest"]) if row["newest"] is not None else None
        meta: dict[str, Any] = {} if last is None else json.loads(last["meta"])
        preview = "" if last is None else last["preview"]
        entries.append(
            {
                "conversation_id": row["conversation_id"],
                "scope": row["scope"],
                "members": int(row["members"]),
                "messages": int(row["messages"]),
                "unread": int(row["unread"]),
                "last_message_id": None if last is None else str(last["id"]),
                "last_message_at": None if last is None else last["created_at"],
                "from": None if last is None else last["category"],
                "subject": None if last is None else (last["title"] or ""),
                "preview": preview,
                "truncated": len(preview) < int(meta.get("chars", len(preview))),
            }
        )
    return {
        "state": "answered" if entries else "nothing_stored",
        "principal": viewer,
        "addresses": [a["address"] for a in own(tx, tenant, viewer)],
        "conversations": entries,
        "count": len(entries),
        "next": f"{rows[-1]['last_id']}.{rows[-1]['conversation_id']}" if more else None,
    }


def thread(
    tx: Tx,
    tenant: str,
    viewer: str,
    conversation_id: object,
    after: object,
    limit: object,
    preview_chars: object,
    scope: object = None,
) -> tuple[Thread, int]:
    """One page of a thread, oldest first, and where the viewer's cursor must move to (0: it
    stays). ``unread`` flags are as they were before this read; ``read_upto`` and the count
    of ``unread`` messages left are as they are once the caller has moved the cursor."""
    head = conversation(tx, tenant, viewer, conversation_id, scope)
    start = check_cursor(after) or 0
    count = check_limit(limit)
    chars = check_limit(preview_chars, "preview_chars", MAX_PREVIEW, 20)
    key = head["id"]
    cursor = int(
        tx.scalar(
            "SELECT read_upto FROM comms_inboxes WHERE tenant = ? AND principal = ?"
            " AND conversation_id = ?",
            (tenant, viewer, key),
        )
    )
    number = "CAST({} AS INTEGER)"
    rows = tx.all(
        f"SELECT id, category, title, source, created_at, substr(content, 1, {chars}) AS preview,"
        " length(content) AS chars,"  # the body is read whole for its preview anyway
        f" {number.format(tx.json_text('meta', 'bytes'))} AS bytes,"
        f" {number.format(tx.json_text('meta', 'reply_to'))} AS reply_to"
        f" FROM items WHERE tenant = ? AND session = ? AND item_type = '{MAIL}'"
        " AND id > ? ORDER BY id LIMIT ?",
        (tenant, key, start, count + 1),
    )
    more = len(rows) > count
    rows = rows[:count]
    # A thousand messages a page: the fields come out of SQL ready, one dict each.
    messages: list[ThreadMessage] = [
        {
            "id": str(row["id"]),
            "from": row["category"],
            "subject": row["title"] or "",
            "preview": row["preview"],
            "truncated": row["chars"] > chars,
            "bytes": row["bytes"],
            "chars": row["chars"],
            "sent_at": row["created_at"],
            "reply_to": None if row["reply_to"] is None else str(row["reply_to"]),
            "unread": row["id"] > cursor and row["source"] != viewer,
        }
        for row in rows
    ]
    read_upto = max([cursor, *(int(m["id"]) for m in messages)])
    unread = int(
        tx.scalar(
            f"SELECT count(*) FROM items WHERE tenant = ? AND session = ? AND item_type = '{MAIL}'"
            " AND id > ? AND source <> ?",
            (tenant, key, read_upto, viewer),
        )
    )
    members = [
        r["address"]
        for r in tx.all(
            "SELECT address FROM comms_members WHERE tenant = ? AND conversation_id = ?"
            " ORDER BY joined_at, address",
            (tenant, key),
        )
    ]
    page: Thread = {
        "conversation_id": key,
        "scope": head["scope"],
        "members": members,
        "messages": messages,
        "count": len(messages),
        "next": messages[-1]["id"] if more else None,
        "read_upto": str(read_upto) if read_upto else None,
        "unread": unread,
    }
    return page, read_upto if read_upto > cursor else 0


def advance(tx: Tx, tenant: str, viewer: str, conversation_id: str, upto: int) -> int:
    """Move the viewer's unread cursor forward to ``upto`` (never back); rows changed."""
    return tx.execute(
        "UPDATE comms_inboxes SET read_upto = ? WHERE tenant = ? AND principal = ?"
        " AND conversation_id = ? AND read_upto < ?",
        (upto, tenant, viewer, conversation_id, upto),
    )
