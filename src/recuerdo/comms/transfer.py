"""Messaging records of a scope's export, and their import (``graph/transfer.py`` pages them).

Records, in this order: ``address`` (the caller's addresses and those of the members of its
conversations, each with its principal and kind),
``conversation`` (its members), ``mail`` (each message whole, with its conversation's key and,
for a reply, the position of the message it answers) and ``cursor`` (each member principal's
unread cursor, as how many messages of the conversation it has read). An export shows what its
caller may read: only the conversations the caller is a member of, and their messages. What is
kept beside a message for one member (the idempotency key its sender gave, how far each member
has read) goes in the owner's export whole and in anyone else's for the caller alone: a token
holder reads no other member's through any verb (decision 0158). Imported
conversations get new ids; pages must be imported in order (a message needs its conversation).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

from ..core.clock import now_iso
from ..core.items import MAIL, visible
from ..core.text import checked_label
from ..errors import RecuerdoError
from ..store.base import Row, Tx
from . import addresses, mail, send_keys

PHASES = ("address", "conversation", "mail", "cursor")
MAX_PAGE_BYTES = 16 * 2**20
"""A page of mail holds at most this many bytes of bodies (or one larger message), so any page
fits one import request."""

Importer = Callable[[Tx, str, str, str, dict[str, Any]], str | None]


def _key(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:32]


def conversation_key(row: Row) -> str:
    """Stable across exports; an imported conversation keeps the key it came with."""
    return str(row["import_key"] or _key("conversation", row["id"], row["started_at"]))


def cursor_key(conversation: str) -> str:
    return _key("cursor", conversation)


def _conversations(
    tx: Tx, tenant: str, scope: str, viewer: str | None, after: int, limit: int
) -> list[Row]:
    """The scope's conversations the viewer is a member of, in id order."""
    return tx.all(
        "SELECT c.* FROM comms_conversations c JOIN comms_inboxes v ON v.tenant = c.tenant"
        " AND v.conversation_id = c.id AND v.principal = ? WHERE c.tenant = ? AND c.scope = ?"
        " AND CAST(c.id AS INTEGER) > ? ORDER BY CAST(c.id AS INTEGER) LIMIT ?",
        (viewer, tenant, scope, after, limit),
    )


def _members(tx: Tx, tenant: str, conversation_id: str) -> list[dict[str, Any]]:
    return [
        {"address": r["address"], "joined_at": r["joined_at"]}
        for r in tx.all(
            "SELECT address, joined_at FROM comms_members WHERE tenant = ? AND conversation_id = ?"
            " ORDER BY joined_at, address",
            (tenant, conversation_id),
        )
    ]


def _mails_before(tx: Tx, tenant: str, conversation_id: str, item_id: int) -> int:
    return int(
        tx.scalar(
            f"SELECT count(*) FROM items WHERE tenant = ? AND session = ? AND item_type = '{MAIL}'"
            " AND id < ?",
            (tenant, conversation_id, item_id),
        )
    )


def _nth_mail(tx: Tx, tenant: str, conversation_id: str, position: int) -> int | None:
    found = tx.scalar(
        f"SELECT id FROM items WHERE tenant = ? AND session = ? AND item_type = '{MAIL}'"
        " ORDER BY id LIMIT 1 OFFSET ?",
        (tenant, conversation_id, position),
    )
    return None if found is None else int(found)


def export_page(
    tx: Tx,
    tenant: str,
    scope: str,
    viewer: str | None,
    phase: str,
    last: str,
    limit: int,
    *,
    owner: bool,
) -> tuple[list[dict[str, Any]], str, bool]:
    """(records, the cursor's new position in the phase, whether the phase is done). Not the
    ``owner``'s: the keys and cursors are the viewer's own only."""
    own = None if owner else viewer
    if phase == "address":
        # The addresses the export needs: the viewer's own and those of the members of its
        # conversations in the scope. Every address of the tenant, with its principal, went
        # to any caller, a token limited to one scope too, while ``addresses`` shows a caller
        # its own only (a hunt over what a caller may reach).
        known = (
            ""
            if viewer is None
            else " AND (a.principal = ? OR a.address IN (SELECT m.address FROM comms_inboxes v"
            " JOIN comms_conversations c ON c.tenant = v.tenant AND c.id = v.conversation_id"
            " AND c.scope = ? JOIN comms_members m ON m.tenant = v.tenant"
            " AND m.conversation_id = v.conversation_id WHERE v.tenant = ? AND v.principal = ?))"
        )
        rows = tx.all(
            f"SELECT a.* FROM comms_addresses a WHERE a.tenant = ? AND a.address > ?{known}"
            " ORDER BY a.address LIMIT ?",
            (tenant, last, *(() if viewer is None else (viewer, scope, tenant, viewer)), limit),
        )
        records = [
            {
                "record": "address",
                "key": _key("address", r["address"]),
                "address": r["address"],
                "kind": r["kind"],
                "principal": r["principal"],
                "bound_at": r["bound_at"],
            }
            for r in rows
        ]
        return records, rows[-1]["address"] if rows else last, len(rows) < limit
    if phase in ("conversation", "cursor"):
        rows = _conversations(tx, tenant, scope, viewer, int(last or 0), limit)
        if phase == "conversation":
            records = [_conversation(tx, tenant, row) for row in rows]
        else:
            records = [_cursors(tx, tenant, row, own) for row in rows]
        return records, rows[-1]["id"] if rows else last, len(rows) < limit
    return _mail_page(tx, tenant, scope, viewer, int(last or 0), limit, own)


def _conversation(tx: Tx, tenant: str, row: Row) -> dict[str, Any]:
    return {
        "record": "conversation",
        "key": conversation_key(row),
        "started_by": row["started_by"],
        "started_at": row["started_at"],
        "members": _members(tx, tenant, row["id"]),
    }


def _cursors(tx: Tx, tenant: str, row: Row, own: str | None) -> dict[str, Any]:
    """Each member's cursor, or ``own``'s alone (a thread shows its reader its own only)."""
    only = "" if own is None else " AND v.principal = ?"
    readers = tx.all(
        "SELECT v.principal, (SELECT count(*) FROM items i WHERE i.tenant = v.tenant"
        f" AND i.session = v.conversation_id AND i.item_type = '{MAIL}' AND i.id <= v.read_upto)"
        f" AS read FROM comms_inboxes v WHERE v.tenant = ? AND v.conversation_id = ?{only}"
        " ORDER BY v.principal",
        (tenant, row["id"], *(() if own is None else (own,))),
    )
    key = conversation_key(row)
    return {
        "record": "cursor",
        "key": cursor_key(key),
        "conversation": key,
        "cursors": [{"principal": r["principal"], "read": int(r["read"])} for r in readers],
    }


def _mail_page(
    tx: Tx, tenant: str, scope: str, viewer: str | None, after: int, limit: int, own: str | None
) -> tuple[list[dict[str, Any]], str, bool]:
    members_only, params = visible("i", viewer)
    heads: dict[str, str] = {}
    records: list[dict[str, Any]] = []
    ids: list[int] = []
    last, size = after, 0
    for row in tx.iterate(
        f"SELECT i.* FROM items i WHERE i.tenant = ? AND i.scope = ? AND i.item_type = '{MAIL}'"
        f" AND i.id > ? AND {members_only} ORDER BY i.id LIMIT ?",
        (tenant, scope, after, *params, limit),
    ):
        if records and size + int(json.loads(row["meta"]).get("bytes", 0)) > MAX_PAGE_BYTES:
            return _with_keys(tx, tenant, records, ids, own), str(last), False
        if row["session"] not in heads:
            head = tx.one(
                "SELECT * FROM comms_conversations WHERE tenant = ? AND id = ?",
                (tenant, row["session"]),
            )
            heads[row["session"]] = "" if head is None else conversation_key(head)
        shown = mail.message(row)
        reply_to = shown["reply_to"]
        body = shown["body"]
        records.append(
            {
                "record": "mail",
                "key": _key(
                    "mail",
                    heads[row["session"]],
                    shown["sent_at"],
                    shown["from"],
                    hashlib.sha256(body.encode()).hexdigest(),
                ),
                "conversation": heads[row["session"]],
                "from": shown["from"],
                "principal": row["source"],
                "to": shown["to"],
                "subject": shown["subject"],
                "body": body,
                "sent_at": shown["sent_at"],
                "reply_to": None
                if reply_to is None
                else _mails_before(tx, tenant, row["session"], int(reply_to)),
            }
        )
        last, size = int(row["id"]), size + shown["bytes"]
        ids.append(last)
    return _with_keys(tx, tenant, records, ids, own), str(last), len(records) < limit


def _with_keys(
    tx: Tx, tenant: str, records: list[dict[str, Any]], ids: list[int], own: str | None
) -> list[dict[str, Any]]:
    """Each mail record with the idempotency key its message was sent with, or None: an import
    lost them, and a retried send then sent again in the memory read in (decision 0131). With
    ``own``, only the keys it sent with: another sender's key, its digest and the reply it was
    given are that sender's, which a retry of its own alone would show (decision 0158)."""
    keys = send_keys.of_messages(tx, tenant, ids, own)
    for record, item_id in zip(records, ids, strict=True):
        record["send_key"] = keys.get(item_id)
    return records


def _imported(tx: Tx, tenant: str, scope: str, key: object) -> str:
    found = tx.scalar(
        "SELECT id FROM comms_conversations WHERE tenant = ? AND scope = ? AND import_key = ?",
        (tenant, scope, str(key)),
    )
    if found is None:
        raise ValueError("its conversation was not imported into this scope (import in order)")
    return str(found)


def _moment(value: object, field: str) -> str:
    """A record's time: an ISO 8601 text (now when none is given). Anything else reached the
    store, which refused it (an object, a list) and failed the whole call (HTTP 500), or kept
    it as a time (the hunt over the messages)."""
    if value is None or value == "":
        return now_iso()
    if not isinstance(value, str):
        raise ValueError(f"{field} is an ISO 8601 time")
    try:
        datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{field} is an ISO 8601 time, not {value[:40]!r}") from None
    return value


def _count(value: object, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 2**53:
        raise ValueError(f"{field} is a whole number from 0")
    return value


def _checked(check: Callable[..., Any], *args: Any) -> Any:
    """Run a check; a refusal makes the record malformed (skipped), not the import."""
    try:
        return check(*args)
    except RecuerdoError as error:
        raise ValueError(error.detail) from error


def import_address(tx: Tx, tenant: str, principal: str, scope: str, record: dict[str, Any]) -> None:
    address = _checked(addresses.check_address, record["address"])
    kind = _checked(addresses.check_kind, record.get("kind", "agent"))
    owner = _checked(checked_label, record.get("principal") or principal, "principal")
    held = addresses.owners(tx, tenant, [address]).get(address)
    if held is not None and held != owner:
        raise ValueError(f"{address} is bound to another principal here")
    if held is None:
        tx.execute(
            "INSERT INTO comms_addresses (tenant, address, principal, kind, bound_at)"
            " VALUES (?, ?, ?, ?, ?)",
            (tenant, address, owner, kind, _moment(record.get("bound_at"), "bound_at")),
        )


def import_conversation(
    tx: Tx, tenant: str, principal: str, scope: str, record: dict[str, Any]
) -> None:
    members: dict[str, Any] = {}
    if not isinstance(record["members"], list):
        raise ValueError("members is a list")
    for member in record["members"]:
        given = member["address"]
        joined = member.get("joined_at")
        members[_checked(addresses.check_address, given)] = (
            None if joined is None else _moment(joined, "joined_at")
        )
    started_by = _checked(addresses.check_address, record["started_by"])
    at = _moment(record.get("started_at"), "started_at")
    conversation_id = mail.start_conversation(tx, tenant, scope, started_by, at, record["key"])
    tx.executemany(
        "INSERT INTO comms_members (tenant, conversation_id, address, joined_at)"
        " VALUES (?, ?, ?, ?)",
        [(tenant, conversation_id, a, joined or at) for a, joined in members.items()],
    )
    # Each address's holder here reads the conversation; one no one holds stays a member,
    # without an inbox.
    owners = addresses.owners(tx, tenant, list(members))
    tx.executemany(
        "INSERT INTO comms_inboxes (tenant, principal, conversation_id, last_id, read_upto)"
        " VALUES (?, ?, ?, 0, 0) ON CONFLICT (tenant, principal, conversation_id) DO NOTHING",
        [(tenant, owner, conversation_id) for owner in sorted(set(owners.values()))],
    )


def import_mail(
    tx: Tx,
    tenant: str,
    principal: str,
    scope: str,
    record: dict[str, Any],
    link: mail.Link | None,
) -> str | None:
    conversation_id = _imported(tx, tenant, scope, record["conversation"])
    given_key = record.get("send_key")
    dropped_key: str | None = None
    try:
        send_key = None if given_key is None else send_keys.checked_record(given_key)
    except ValueError as error:
        # Only the retry key is unreadable (an export's newer reply shape, an edited file):
        # the message is imported without it, and the import says so. Skipping the message
        # lost what the key only guards against sending twice.
        send_key, dropped_key = None, str(error)
    sender = _checked(addresses.check_address, record["from"])
    to = _checked(mail.check_recipients, record["to"])
    subject, body, size = _checked(mail.check_message, record["subject"], record["body"])
    owner = addresses.owners(tx, tenant, [sender]).get(sender) or _checked(
        checked_label, record.get("principal") or principal, "principal"
    )
    position = record.get("reply_to")
    reply_to = (
        None
        if position is None
        else _nth_mail(tx, tenant, conversation_id, _count(position, "reply_to"))
    )
    sent_at = _moment(record.get("sent_at"), "sent_at")
    item_id, passages = mail.store(
        tx,
        tenant=tenant,
        scope=scope,
        conversation_id=conversation_id,
        principal=owner,
        sender=sender,
        to=to,
        subject=subject,
        body=body,
        size=size,
        reply_to=reply_to,
        at=sent_at,
        link=link,
        import_key=str(record["key"]),
    )
    if dropped_key is not None:
        return f"the message was imported (id {item_id}) without its idempotency key: {dropped_key}"
    if send_key is None:
        return None
    # The first send's reply, naming the message as it is stored here: a retry is answered
    # with this memory's ids, not the source's, and with what the stored message is (a reply
    # edited in the export file told a retry its message said, or went to, what none did).
    where = {
        "id": str(item_id),
        "conversation_id": conversation_id,
        "scope": scope,
        "reply_to": None if reply_to is None else str(reply_to),
        "from": sender,
        "to": to,
        "subject": subject,
        "bytes": size,
        "sent_at": sent_at,
        "passages": passages,
    }
    return send_keys.keep_imported(tx, tenant, owner, send_key, where)


def import_cursor(tx: Tx, tenant: str, principal: str, scope: str, record: dict[str, Any]) -> None:
    conversation_id = _imported(tx, tenant, scope, record["conversation"])
    if not isinstance(record["cursors"], list):
        raise ValueError("cursors is a list")
    # All checked before any is applied: a bad one after a good one left the good one applied,
    # with the record reported skipped (the hunt over the messages).
    cursors = [
        (_checked(checked_label, cursor["principal"], "principal"), _count(cursor["read"], "read"))
        for cursor in record["cursors"]
    ]
    for reader, read in cursors:
        upto = _nth_mail(tx, tenant, conversation_id, read - 1) if read > 0 else None
        if upto is not None:
            tx.execute(
                "UPDATE comms_inboxes SET read_upto = ? WHERE tenant = ? AND principal = ?"
                " AND conversation_id = ? AND read_upto < ?",
                (upto, tenant, reader, conversation_id, upto),
            )


def importers(link: mail.Link | None) -> dict[str, Importer]:
    def mail_with_links(
        tx: Tx, tenant: str, principal: str, scope: str, record: dict[str, Any]
    ) -> str | None:
        return import_mail(tx, tenant, principal, scope, record, link)

    return {
        "address": import_address,
        "conversation": import_conversation,
        "mail": mail_with_links,
        "cursor": import_cursor,
    }
