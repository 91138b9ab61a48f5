"""The step ``m042_send_keys``: the idempotency keys of ``send_message``.

A client that retries a send after a timeout names the same key; the send it retries is found
here, by (tenant, sending principal, key), and its reply is answered again instead of a second
message (docs/decisions/0109-send-message-idempotency-keys.md). ``asked`` is a digest of what
that send asked for, so the same key given with another message is refused. ``reply`` holds the
first send's reply (the subject and recipients included): the row goes with its message through
``ON DELETE CASCADE``, so every erasure of the message (a forgotten conversation, a forgotten
scope) takes the key and its copy of the subject with it. The cascade's columns lead an index
(decision 0063).
"""

from __future__ import annotations

from .base import Tx

STEP = "m042_send_keys"


def m042_send_keys(tx: Tx) -> None:
    """The step, on both stores (registered in each later_steps.py)."""
    if tx.dialect == "postgres":
        message = "message_id BIGINT NOT NULL"
        cascade = (
            ", FOREIGN KEY (tenant, message_id) REFERENCES items (tenant, id) ON DELETE CASCADE"
        )
    else:
        message = "message_id INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE"
        cascade = ""
    tx.execute(
        "CREATE TABLE comms_send_keys (tenant TEXT NOT NULL, principal TEXT NOT NULL,"
        f" key TEXT NOT NULL, {message}, asked TEXT NOT NULL, reply TEXT NOT NULL,"
        f" created_at TEXT NOT NULL, PRIMARY KEY (tenant, principal, key){cascade})"
    )
    tx.execute("CREATE INDEX comms_send_keys_by_message ON comms_send_keys (tenant, message_id)")
    if tx.dialect == "postgres":
        from .postgres.ddl import tenant_policies

        tenant_policies(tx)  # row-level security on the new tenant table
