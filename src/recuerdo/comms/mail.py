"""Messages: each one stored once, as an item of its conversation, searchable by its members.

A message is an item of type ``mail`` whatever the number of its recipients: its ``session`` is
the conversation's id, ``source`` the sending principal, ``category`` the sender's address,
``title`` the subject and ``content`` the body, exactly as sent. Its passages are cut and
indexed when it is stored (like a document's: large bodies are many passages) and linked to the
known entities they name, so members find it by search, context and ``about``.

A new message (no ``reply_to``) starts a conversation whose members are the sender and the
recipients; a reply joins the conversation of the message it answers, and recipients who were
not members yet join it (they then read its earlier messages too, as people added to a thread
do). Every refusal comes before the first write: nothing is sent.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from ..core.clock import now_iso
from ..core.exact import shown
from ..core.items import MAIL, reach
from ..core.secrets import least_sent_bytes
from ..core.text import MAX_ID, checked_label, whole_number
from ..errors import (
    BodyTooLarge,
    EmptyContent,
    InvalidInput,
    MessageNotFound,
    NotAMember,
    RecipientsTooMany,
    SubjectTooLong,
)
from ..index.chunk import Span, chunk_spans
from ..index.chunks import insert_chunks
from ..store.base import Row, Tx
from . import addresses, send_keys
from .model import Message, SentMessage

MAX_RECIPIENTS = 4096
MAX_SUBJECT_BYTES = 1024
MAX_BODY_BYTES = 16 * 1024 * 1024
DEFAULT_SCOPE = "user"
SENTENCE_CUT_CHARS = 1 << 20
WINDOW_CHARS = 1000

Link = Callable[[Tx, str, str, Sequence[tuple[int, str]]], object]
"""Link passages ``(chunk id, text)`` of a scope to the known entities they name: the knowledge
family provides it (``(tx, tenant, scope, passages)``)."""


def check_id(value: object, what: str) -> int:
    """A message or conversation id: a decimal string (or an integer)."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_ID:
        return value
    number = whole_number(value.strip()) if isinstance(value, str) else None
    if number is not None:
        return number
    raise InvalidInput(f"a {what} id is a decimal string, got {shown(value)}")


def _text(value: object, field: str) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be text, got {type(value).__name__}")
    if "\x00" in value:
        raise InvalidInput(f"{field} contains a NUL character, which cannot be stored as text")
    return value


def _size(value: str, field: str) -> int:
    try:
        return len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"{field} is not valid Unicode text (lone surrogate)") from exc


def check_recipients(to: object) -> list[str]:
    """Recipients in order, each once, in their stored form."""
    given = [to] if isinstance(to, str) else to
    if not isinstance(given, Sequence) or not given:
        raise InvalidInput("to names at least one recipient address")
    if len(given) > MAX_RECIPIENTS:
        raise RecipientsTooMany(
            f"{len(given)} recipients; a message goes to at most {MAX_RECIPIENTS} "
            "(nothing was sent)",
            limit=MAX_RECIPIENTS,
        )
    return list(dict.fromkeys(addresses.check_address(a) for a in given))


def check_sizes(subject: object, body: object, *, stored: bool = False) -> None:
    """The subject's and the body's limits, on what the sender sent: the verb checks them before
    the secret guard rewrites the text (a 1,017-byte subject was refused as 1,026 bytes, its
    redaction markers being longer than what they replaced). ``stored``: the texts are as the
    guard stored them (an imported message, exported redacted), each marker counted as the one
    byte it replaced at least: a message sent within the limits is imported again. Text of
    another type is left to :func:`check_message`."""
    if isinstance(subject, str) and _sent_size(subject, "subject", stored) > MAX_SUBJECT_BYTES:
        raise SubjectTooLong(
            f"the subject is {_size(subject, 'subject')} bytes; the limit is"
            f" {MAX_SUBJECT_BYTES} (nothing was sent)",
            limit=MAX_SUBJECT_BYTES,
        )
    if isinstance(body, str) and _sent_size(body, "body", stored) > MAX_BODY_BYTES:
        size = _size(body, "body")
        raise BodyTooLarge(
            f"the body is {size} bytes; the limit is {MAX_BODY_BYTES} (16 MiB; nothing was sent)",
            limit=MAX_BODY_BYTES,
        )


def _sent_size(text: str, field: str, stored: bool) -> int:
    size = _size(text, field)  # refuses a lone surrogate, which least_sent_bytes cannot encode
    return least_sent_bytes(text) if stored else size


def check_message(subject: object, body: object, *, sized: bool = False) -> tuple[str, str, int]:
    """(subject, body, body bytes), both kept exactly as given. Unless ``sized`` (checked on
    what was sent, :func:`check_sizes`), they are texts as stored (an import's), within the
    limits as :func:`check_sizes` reads stored text."""
    title = _text("" if subject is None else subject, "subject")
    text = _text(body, "body")
    if not sized:
        check_sizes(title, text, stored=True)
    if not text.strip():
        raise EmptyContent("the body is empty: there is nothing to send")
    return title, text, _size(text, "body")


def passages_of(body: str) -> list[Span]:
    """The passages a body is cut into: at sentence ends as documents are, up to 1 MiB; past
    that, windows of about a thousand characters ended at a line break or a space (the sentence
    chunker reads about a MiB a second, and a 16 MiB body must be stored within a request)."""
    if len(body) <= SENTENCE_CUT_CHARS:
        return chunk_spans(body)
    spans: list[Span] = []
    start = 0
    while start < len(body):
        end = min(start + WINDOW_CHARS, len(body))
        if end < len(body):
            cut = max(body.rfind("\n", start, end), body.rfind(" ", start, end))
            if cut > start + WINDOW_CHARS // 2:
                end = cut + 1
        if body[start:end].strip():
            spans.append(Span(start, end))
        start = end
    return spans


def mail_row(tx: Tx, tenant: str, message_id: object) -> Row:
    """A message of the tenant by id, or ``message_not_found``."""
    number = check_id(message_id, "message")
    row = tx.one(
        f"SELECT * FROM items WHERE id = ? AND tenant = ? AND item_type = '{MAIL}'"
        " AND status <> 'deleted'",
        (number, tenant),
    )
    if row is None:
        raise MessageNotFound(f"no message with id {number}")
    return row


def is_member(tx: Tx, tenant: str, principal: str, conversation_id: str) -> bool:
    return bool(
        tx.scalar(
            "SELECT 1 FROM comms_inboxes WHERE tenant = ? AND principal = ?"
            " AND conversation_id = ?",
            (tenant, principal, conversation_id),
        )
    )


def check_scope(scope: object) -> str | None:
    """The scope a call is kept to, or None for every scope."""
    return None if scope is None else checked_label(scope, "scope")


def readable(tx: Tx, tenant: str, viewer: str, message_id: object, scope: object = None) -> Row:
    """A message the viewer may read (kept in ``scope`` when one is named), or
    ``message_not_found`` / ``not_a_member``."""
    row = mail_row(tx, tenant, message_id)
    reached = reach()  # a caller confined to scopes: a reply's refusal named the other one
    kept_to = check_scope(scope)
    where = "" if scope is None else f" in scope {scope!r}"
    if reached is not None and row["scope"] not in reached:
        raise MessageNotFound(f"no message with id {row['id']}{where}")
    # Membership before the scope asked for: a non-member learnt where the message is kept.
    if not is_member(tx, tenant, viewer, row["session"]):
        raise NotAMember(
            f"message {row['id']} belongs to conversation {row['session']}, "
            "which you are not a member of"
        )
    if kept_to is not None and row["scope"] != kept_to:
        raise MessageNotFound(f"no message with id {row['id']}{where}")
    return row


def _meta(row: Row) -> dict[str, Any]:
    meta: dict[str, Any] = json.loads(row["meta"])
    return meta


def message(row: Row) -> Message:
    meta = _meta(row)
    reply_to = meta.get("reply_to")
    return {
        "id": str(row["id"]),
        "conversation_id": row["session"],
        "scope": row["scope"],
        "from": row["category"],
        "to": list(meta.get("to", [])),
        "subject": row["title"] or "",
        "body": row["content"],
        "bytes": int(meta.get("bytes", 0)),
        "chars": int(meta.get("chars", len(row["content"]))),
        "sent_at": row["created_at"],
        "reply_to": None if reply_to is None else str(reply_to),
    }


def next_conversation_id(tx: Tx, tenant: str) -> str:
    return str(
        tx.scalar(
            "INSERT INTO comms_counters (tenant, conversations) VALUES (?, 1)"
            " ON CONFLICT (tenant) DO UPDATE SET conversations = comms_counters.conversations + 1"
            " RETURNING conversations",
            (tenant,),
        )
    )


def start_conversation(
    tx: Tx, tenant: str, scope: str, started_by: str, at: str, import_key: str | None = None
) -> str:
    conversation_id = next_conversation_id(tx, tenant)
    tx.execute(
        "INSERT INTO comms_conversations (tenant, id, scope, started_by, started_at, import_key)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (tenant, conversation_id, scope, started_by, at, import_key),
    )
    return conversation_id


def add_members(
    tx: Tx, tenant: str, conversation_id: str, members: dict[str, str], at: str
) -> list[str]:
    """Make ``members`` (address -> principal) members; the addresses that were not yet."""
    present = {
        row["address"]
        for row in tx.all(
            "SELECT address FROM comms_members WHERE tenant = ? AND conversation_id = ?",
            (tenant, conversation_id),
        )
    }
    joined = [address for address in members if address not in present]
    tx.executemany(
        "INSERT INTO comms_members (tenant, conversation_id, address, joined_at)"
        " VALUES (?, ?, ?, ?)",
        [(tenant, conversation_id, address, at) for address in joined],
    )
    tx.executemany(
        "INSERT INTO comms_inboxes (tenant, principal, conversation_id, last_id, read_upto)"
        " VALUES (?, ?, ?, 0, 0) ON CONFLICT (tenant, principal, conversation_id) DO NOTHING",
        [(tenant, principal, conversation_id) for principal in sorted(set(members.values()))],
    )
    return joined


def store(
    tx: Tx,
    *,
    tenant: str,
    scope: str,
    conversation_id: str,
    principal: str,
    sender: str,
    to: list[str],
    subject: str,
    body: str,
    size: int,
    reply_to: int | None,
    at: str,
    link: Link | None,
    import_key: str | None = None,
    spans: list[Span] | None = None,
) -> tuple[int, int]:
    """Store one message of a conversation whose members are in place; (its id, passages).
    ``spans``: its body's passages, when they were cut before the write."""
    meta: dict[str, Any] = {"to": to, "reply_to": reply_to, "bytes": size, "chars": len(body)}
    if import_key is not None:
        meta["import_key"] = import_key
    item_id = int(
        tx.scalar(
            "INSERT INTO items (tenant, scope, item_type, category, title, content, source,"
            " session, occurred_at, meta, created_at, updated_at)"
            f" VALUES (?, ?, '{MAIL}', ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (
                tenant,
                scope,
                sender,
                subject,
                body,
                principal,
                conversation_id,
                at,
                json.dumps(meta, ensure_ascii=False),
                at,
                at,
            ),
        )
    )
    if spans is None:
        spans = passages_of(body)
    chunk_ids = insert_chunks(tx, tenant, item_id, body, spans, title=subject)
    if link is not None:
        link(
            tx,
            tenant,
            scope,
            [(c, body[s.start : s.end]) for c, s in zip(chunk_ids, spans, strict=True)],
        )
    tx.execute(
        "UPDATE comms_inboxes SET last_id = ? WHERE tenant = ? AND conversation_id = ?"
        " AND last_id < ?",
        (item_id, tenant, conversation_id, item_id),
    )
    tx.execute(
        "INSERT INTO journal (tenant, scope, item_id, item_type, operation, principal, version,"
        f" chars_added, created_at) VALUES (?, ?, ?, '{MAIL}', 'write', ?, 1, ?, ?)",
        (tenant, scope, item_id, principal, len(body), at),
    )
    return item_id, len(chunk_ids)


class Outgoing(NamedTuple):
    """A send as checked before its write (:func:`outgoing`)."""

    recipients: list[str]
    subject: str
    body: str
    size: int
    key: str | None
    digest: str
    spans: list[Span]
    kept_to: str | None  # the scope asked, when the key's digest checked it


def outgoing(
    to: object,
    subject: object,
    body: object,
    reply_to: object,
    sender: object,
    scope: object,
    idempotency_key: object,
) -> Outgoing:
    """Check a send and cut its body into passages before its write: nothing here depends on
    what is stored, and cutting a MiB took a second while every other writer waited (decision
    0140). The refusals come in the order they always did, before anything is read."""
    recipients = check_recipients(to)
    title, text, size = check_message(subject, body, sized=True)
    key = send_keys.check_key(idempotency_key)
    digest = ""
    # The scope asked, checked once, where it was always first checked (a refusal of a call
    # with two bad arguments names the same one): in the key's digest, else once the
    # recipients are known (in :func:`send`).
    kept_to: str | None = None
    if key is not None:
        digest = send_keys.asked(
            [
                recipients,
                title,
                text,
                None if reply_to is None else check_id(reply_to, "message"),
                None if sender is None else addresses.check_address(sender),
                (kept_to := check_scope(scope)),
            ]
        )
    return Outgoing(recipients, title, text, size, key, digest, passages_of(text), kept_to)


def send(
    tx: Tx,
    *,
    tenant: str,
    principal: str,
    sent: Outgoing,
    reply_to: object,
    sender: object,
    scope: object,
    link: Link | None,
) -> SentMessage:
    recipients, title, text, size, key, digest, spans, kept_to = sent
    if key is not None:  # looked up before anything else is: a retry is answered as it was
        earlier = send_keys.sent_before(tx, tenant, principal, key, digest)
        if earlier is not None:
            return earlier
    answered: Row | None = None
    members_before: list[str] = []
    if reply_to is not None:
        answered = readable(tx, tenant, principal, reply_to)
        members_before = [
            row["address"]
            for row in tx.all(
                "SELECT address FROM comms_members WHERE tenant = ? AND conversation_id = ?",
                (tenant, answered["session"]),
            )
        ]
    origin = addresses.sender(tx, tenant, principal, sender, members_before)
    owners = addresses.resolve(tx, tenant, recipients)
    owners[origin] = principal
    at = now_iso()
    if key is None:
        kept_to = check_scope(scope)
    if answered is None:
        label = kept_to or DEFAULT_SCOPE
        conversation_id = start_conversation(tx, tenant, label, origin, at)
    else:
        label, conversation_id = answered["scope"], answered["session"]
        if kept_to is not None and kept_to != label:
            raise InvalidInput(
                f"a reply stays in its conversation's scope {label!r}, not {scope!r}"
            )
    members = {origin: principal, **{a: owners[a] for a in recipients}}
    joined = add_members(tx, tenant, conversation_id, members, at)
    item_id, passages = store(
        tx,
        tenant=tenant,
        scope=label,
        conversation_id=conversation_id,
        principal=principal,
        sender=origin,
        to=recipients,
        subject=title,
        body=text,
        size=size,
        reply_to=None if answered is None else int(answered["id"]),
        at=at,
        link=link,
        spans=spans,
    )
    reply: SentMessage = {
        "id": str(item_id),
        "conversation_id": conversation_id,
        "scope": label,
        "from": origin,
        "to": recipients,
        "subject": title,
        "bytes": size,
        "sent_at": at,
        "reply_to": None if answered is None else str(answered["id"]),
        "new_conversation": answered is None,
        "joined": joined,
        "members": len(members_before) + len(joined),
        "passages": passages,
    }
    if key is not None:
        send_keys.keep(tx, tenant, principal, key, digest, reply, at)
    return reply
