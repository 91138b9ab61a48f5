"""The results of the messaging verbs, as types: the doors publish them (OpenAPI 200 responses,
MCP ``outputSchema``), and each forbids keys it does not declare.

Ids (messages, conversations) and page cursors are decimal strings: send them back unchanged.
A message's ``from`` and ``to`` are addresses; ``bytes`` is its body's size in UTF-8. (Types
with a ``from`` key are written in the functional form, ``from`` being a Python keyword.)
"""

from __future__ import annotations

from typing import Literal, NotRequired

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict

from ..core.results import Redactions

FORBID = ConfigDict(extra="forbid")

Kind = Literal["user", "agent"]
State = Literal["answered", "nothing_stored"]


@with_config(FORBID)
class AddressBinding(TypedDict):
    address: str
    kind: Kind
    principal: str
    bound: Literal["new", "already"]
    """``already``: this caller had bound it before (nothing changed)."""
    bound_at: str


@with_config(FORBID)
class OwnAddress(TypedDict):
    address: str
    kind: Kind
    bound_at: str


@with_config(FORBID)
class Addresses(TypedDict):
    principal: str
    addresses: list[OwnAddress]
    """Oldest first: the first one sends unless another is named."""
    domains: list[str]
    """The domains an address may be bound in, here."""


SentMessage = TypedDict(
    "SentMessage",
    {
        "id": str,
        "conversation_id": str,
        "scope": str,
        "from": str,
        "to": list[str],
        "subject": str,
        "bytes": int,
        "sent_at": str,
        "reply_to": str | None,
        "new_conversation": bool,
        "joined": list[str],
        "members": int,
        "passages": int,
        "redacted": NotRequired[Redactions],
    },
)
"""``joined``: the addresses that became members with this message (all of them for a new
conversation; a reply's recipients who were not members yet)."""
with_config(FORBID)(SentMessage)


InboxEntry = TypedDict(
    "InboxEntry",
    {
        "conversation_id": str,
        "scope": str,
        "members": int,
        "messages": int,
        "unread": int,
        "last_message_id": str | None,
        "last_message_at": str | None,
        "from": str | None,
        "subject": str | None,
        "preview": str,
        "truncated": bool,
    },
)
"""One conversation of an inbox: ``unread`` counts the messages of others after the caller's
cursor; ``preview`` is the start of the newest message (``truncated`` when it holds more)."""
with_config(FORBID)(InboxEntry)


@with_config(FORBID)
class Inbox(TypedDict):
    state: State
    principal: str
    addresses: list[str]
    conversations: list[InboxEntry]
    count: int
    next: str | None
    """Pass as ``after`` for the next page (conversations with older activity); null at the end."""


ThreadMessage = TypedDict(
    "ThreadMessage",
    {
        "id": str,
        "from": str,
        "subject": str,
        "preview": str,
        "truncated": bool,
        "bytes": int,
        "chars": int,
        "sent_at": str,
        "reply_to": str | None,
        "unread": bool,
    },
)
"""``unread``: it was unread by the caller before this page was read. Its recipients are in
``read_message``; the thread lists the conversation's members."""
with_config(FORBID)(ThreadMessage)


@with_config(FORBID)
class Thread(TypedDict):
    conversation_id: str
    scope: str
    members: list[str]
    messages: list[ThreadMessage]
    count: int
    next: str | None
    """Pass as ``after`` for the next (newer) messages; null when this page reached the end."""
    read_upto: str | None
    """The caller's cursor after this read: the newest message read."""
    unread: int
    """Messages of others still unread after this page."""


Message = TypedDict(
    "Message",
    {
        "id": str,
        "conversation_id": str,
        "scope": str,
        "from": str,
        "to": list[str],
        "subject": str,
        "body": str,
        "bytes": int,
        "chars": int,
        "sent_at": str,
        "reply_to": str | None,
    },
)
with_config(FORBID)(Message)


@with_config(FORBID)
class ForgottenConversation(TypedDict):
    conversation_id: str
    already_forgotten: bool
    scope: str | None
    messages_removed: int
    members_removed: int


# -- export records (graph/results.py puts them in the export's record union) -----------------


@with_config(FORBID)
class AddressRecord(TypedDict):
    record: Literal["address"]
    key: str
    address: str
    kind: str
    principal: str
    bound_at: str


@with_config(FORBID)
class MemberRecord(TypedDict):
    address: str
    joined_at: str


@with_config(FORBID)
class ConversationRecord(TypedDict):
    record: Literal["conversation"]
    key: str
    started_by: str
    started_at: str
    members: list[MemberRecord]


@with_config(FORBID)
class SendKeyRecord(TypedDict):
    """A message's ``send_message`` idempotency key, its sender's (decision 0109): the digest of
    what the send asked for and the reply a retry is answered with, as first sent."""

    key: str
    asked: str
    reply: SentMessage
    created_at: str


MailRecord = TypedDict(
    "MailRecord",
    {
        "record": Literal["mail"],
        "key": str,
        "conversation": str,
        "from": str,
        "principal": str,
        "to": list[str],
        "subject": str,
        "body": str,
        "sent_at": str,
        "reply_to": int | None,
        "send_key": NotRequired[SendKeyRecord | None],
    },
)
"""``reply_to``: the position in its conversation of the message it answers (0 is the first).
``send_key``: the idempotency key it was sent with (decision 0131); an export made before keys
travelled has none."""
with_config(FORBID)(MailRecord)


@with_config(FORBID)
class ReadCursor(TypedDict):
    principal: str
    read: int
    """How many of the conversation's messages this member has read."""


@with_config(FORBID)
class CursorRecord(TypedDict):
    record: Literal["cursor"]
    key: str
    conversation: str
    cursors: list[ReadCursor]
