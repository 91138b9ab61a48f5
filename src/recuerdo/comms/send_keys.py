"""Idempotency keys of ``send_message``: a retried send answers the send it retries.

A client that sent a message and lost the reply (a timeout, a dropped connection) cannot tell
whether it was stored; sending again without a key stores it twice. With ``idempotency_key``
the first send keeps its reply under (tenant, sending principal, key), with a digest of what it
asked for; a send naming that key again answers that reply and stores nothing, and one naming
it with another message is refused (``idempotency_key_reused``). The row goes with its message
(``ON DELETE CASCADE``, store/send_keys.py): once the message is forgotten, the key sends
anew. Decision 0109.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, cast

from pydantic import TypeAdapter

from ..core.clock import parse_time
from ..core.secrets import holds_redaction
from ..core.text import checked_label
from ..errors import IdempotencyKeyReused, InvalidInput
from ..store.base import Tx, marks
from .model import SendKeyRecord, SentMessage

_DIGEST = re.compile(r"[0-9a-f]{64}")
_REPLY = TypeAdapter(SentMessage)


def check_key(value: object) -> str | None:
    """The key as kept, or None when no key was given."""
    if value is None:
        return None
    key = checked_label(value, "idempotency_key")
    if holds_redaction(key):
        # The secret guard replaced a credential in it: two keys that held different ones read
        # the same now, and a retry of one would answer the other's send.
        raise InvalidInput(
            "idempotency_key holds what reads as a credential, which is never kept: use a key "
            "of your own making, such as a UUID (nothing was sent)"
        )
    return key


def asked(request: list[object]) -> str:
    """A digest of what a send asks for, given in the forms it is checked into (mail.send): a
    retry spelling an address in other case, or a reply's id as a number, asks the same."""
    return hashlib.sha256(json.dumps(request, ensure_ascii=False).encode()).hexdigest()


def sent_before(tx: Tx, tenant: str, principal: str, key: str, digest: str) -> SentMessage | None:
    """The reply of the send this key was first given with, or None for a new key."""
    row = tx.one(
        "SELECT asked, reply FROM comms_send_keys WHERE tenant = ? AND principal = ? AND key = ?",
        (tenant, principal, key),
    )
    if row is None:
        return None
    if row["asked"] != digest:
        raise IdempotencyKeyReused(
            f"idempotency key {key!r} was given before with another message: nothing was sent "
            "(a retry repeats its message; a new message takes a new key)"
        )
    return cast(SentMessage, json.loads(row["reply"]))


def keep(
    tx: Tx, tenant: str, principal: str, key: str, digest: str, reply: SentMessage, at: str
) -> None:
    """Keep a send's reply under its key, beside its message."""
    tx.execute(
        "INSERT INTO comms_send_keys (tenant, principal, key, message_id, asked, reply,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (tenant, principal, key, int(reply["id"]), digest, json.dumps(reply), at),
    )


# -- export and import (comms/transfer.py): a key travels with its message, decision 0131 -----


def of_messages(
    tx: Tx, tenant: str, message_ids: list[int], sender: str | None = None
) -> dict[int, SendKeyRecord]:
    """The key each of these messages was sent with, by message id (those sent without one are
    not in it); with ``sender``, only those that principal sent with."""
    found: dict[int, SendKeyRecord] = {}
    only = "" if sender is None else " AND principal = ?"
    for first in range(0, len(message_ids), 500):
        part = message_ids[first : first + 500]
        for row in tx.all(
            "SELECT message_id, key, asked, reply, created_at FROM comms_send_keys"
            f" WHERE tenant = ? AND message_id IN ({marks(part)}){only}",
            (tenant, *part, *(() if sender is None else (sender,))),
        ):
            found[int(row["message_id"])] = {
                "key": row["key"],
                "asked": row["asked"],
                "reply": json.loads(row["reply"]),
                "created_at": row["created_at"],
            }
    return found


def checked_record(given: object) -> SendKeyRecord:
    """A mail record's ``send_key``, checked whole before its message is stored (a bad one makes
    the record malformed: ``ValueError``)."""
    if not isinstance(given, dict) or set(given) != {"key", "asked", "reply", "created_at"}:
        raise ValueError("send_key is {key, asked, reply, created_at}")
    if given["key"] is None:  # check_key's "no key given": here a NULL the store refused
        raise ValueError("send_key.key is the idempotency key, not null")
    try:
        key = check_key(given["key"])
        created_at = parse_time(given["created_at"], "send_key.created_at")
    except InvalidInput as error:
        raise ValueError(f"send_key: {error.detail}") from error
    asked = given["asked"]
    if not isinstance(asked, str) or not _DIGEST.fullmatch(asked):
        raise ValueError("send_key.asked is a SHA-256 digest in hex")
    # The reply is what a retry is answered: held to the shape send_message answers.
    reply = _REPLY.validate_python(given["reply"], strict=True)
    return {"key": cast(str, key), "asked": asked, "reply": reply, "created_at": created_at}


def keep_imported(
    tx: Tx, tenant: str, principal: str, record: SendKeyRecord, where: dict[str, Any]
) -> str | None:
    """Keep an imported message's key for its sender here, its reply naming the message as it
    is stored here (``where``: its id, conversation, scope, the id it answers, and what it is:
    from, to, subject, size, time and passages). None when
    kept; why not when the sender's key already answers another message here: that one is
    kept (a retry of the send made here must still answer it), and the import says so."""
    held = tx.scalar(
        "SELECT message_id FROM comms_send_keys WHERE tenant = ? AND principal = ? AND key = ?",
        (tenant, principal, record["key"]),
    )
    if held is not None:
        return (
            f"the message was imported (id {where['id']}) without its idempotency key"
            f" {record['key']!r}: {principal}'s key answers message {held} here already, and a"
            " retry with it still answers that one"
        )
    reply = cast(SentMessage, {**record["reply"], **where})
    keep(tx, tenant, principal, record["key"], record["asked"], reply, record["created_at"])
    return None
