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
from typing import cast

from ..core.secrets import holds_redaction
from ..core.text import checked_label
from ..errors import IdempotencyKeyReused, InvalidInput
from ..store.base import Tx
from .model import SentMessage


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
