"""Forgetting conversations, for real: the same erasure as every other forget.

A conversation's messages are deleted (their passages, full-text entries, mentions and links go
with them; ``secure_delete`` zeroes the freed bytes), then the conversation, its members and
every member's cursor; vectors no passage carries any more are deleted and the full-text index
drops the deleted words at once. The caller folds and truncates the WAL after the commit
(``Store.reclaim``), so no file of the store keeps a copy. See docs/decisions/0005-erasure.md.
"""

from __future__ import annotations

from ..core.items import MAIL
from ..errors import ConversationNotFound, NotAMember
from ..index.vectors import collect_orphans
from ..store.base import Tx
from .mail import check_id, is_member
from .model import ForgottenConversation
from .transfer import cursor_key


def _erase(tx: Tx, tenant: str, conversation_id: str) -> tuple[int, int]:
    """Delete one conversation and its messages; (messages, members) removed."""
    head = tx.one(
        "SELECT scope, import_key FROM comms_conversations WHERE tenant = ? AND id = ?",
        (tenant, conversation_id),
    )
    if head is None:
        return 0, 0
    # Records imported into this conversation are forgotten too: importing them again must
    # store them again, not answer "already imported".
    keys = [
        row["key"]
        for row in tx.all(
            f"SELECT {tx.json_text('meta', 'import_key')} AS key FROM items WHERE tenant = ?"
            f" AND session = ? AND item_type = '{MAIL}'",
            (tenant, conversation_id),
        )
        if row["key"]
    ]
    if head["import_key"]:
        keys += [head["import_key"], cursor_key(head["import_key"])]
    tx.executemany(
        "DELETE FROM import_keys WHERE tenant = ? AND scope = ? AND key = ?",
        [(tenant, head["scope"], key) for key in keys],
    )
    messages = tx.execute(
        f"DELETE FROM items WHERE tenant = ? AND session = ? AND item_type = '{MAIL}'",
        (tenant, conversation_id),
    )
    members = tx.execute(
        "DELETE FROM comms_members WHERE tenant = ? AND conversation_id = ?",
        (tenant, conversation_id),
    )
    tx.execute(
        "DELETE FROM comms_conversations WHERE tenant = ? AND id = ?", (tenant, conversation_id)
    )  # the members' cursors go with it
    return messages, members


def erase_index_remains(tx: Tx) -> None:
    """Vectors of vanished text, and the deleted words still in the full-text index's pages."""
    collect_orphans(tx)
    tx.purge_deleted_text()


def forget_conversation(
    tx: Tx, tenant: str, viewer: str, conversation_id: object
) -> ForgottenConversation:
    key = str(check_id(conversation_id, "conversation"))
    scope = tx.scalar(
        "SELECT scope FROM comms_conversations WHERE tenant = ? AND id = ?", (tenant, key)
    )
    if scope is None:
        issued = tx.scalar("SELECT conversations FROM comms_counters WHERE tenant = ?", (tenant,))
        if issued is None or int(key) > int(issued) or int(key) == 0:
            raise ConversationNotFound(f"no conversation with id {key}")
        return {
            "conversation_id": key,
            "already_forgotten": True,
            "scope": None,
            "messages_removed": 0,
            "members_removed": 0,
        }
    if not is_member(tx, tenant, viewer, key):
        raise NotAMember(f"only a member forgets conversation {key}, and you are not one")
    messages, members = _erase(tx, tenant, key)
    erase_index_remains(tx)
    return {
        "conversation_id": key,
        "already_forgotten": False,
        "scope": scope,
        "messages_removed": messages,
        "members_removed": members,
    }


def forget_scope(tx: Tx, tenant: str, scope: str) -> int:
    """Every conversation of a scope (``forget_knowledge(all=True)``); how many. The caller
    erases the index remains once for the whole forget."""
    ids = [
        row["id"]
        for row in tx.all(
            "SELECT id FROM comms_conversations WHERE tenant = ? AND scope = ?", (tenant, scope)
        )
    ]
    for conversation_id in ids:
        _erase(tx, tenant, conversation_id)
    return len(ids)
