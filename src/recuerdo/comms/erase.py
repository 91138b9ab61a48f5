"""Forgetting conversations, for real: the same erasure as every other forget.

A conversation's messages are deleted (their passages, full-text entries, mentions and links go
with them; ``secure_delete`` zeroes the freed bytes), then the conversation, its members and
every member's cursor; vectors no passage carries any more are deleted, the full-text index
drops the deleted words at once, and the retrieval audit records that returned the messages (or
asked for words only they held) go too. The caller folds and truncates the WAL after the commit
(``Store.reclaim``), so no file of the store keeps a copy. See docs/decisions/0005-erasure.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core import audit
from ..core.items import MAIL
from ..errors import ConversationNotFound, NotAMember
from ..store.base import Tx
from .mail import check_id, check_scope, is_member
from .model import ForgottenConversation
from .transfer import cursor_key


@dataclass
class Erased:
    messages: int = 0
    members: int = 0
    items: list[int] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    """Subjects and bodies gone: the audit drops the queries that asked for their words."""


def _erase(tx: Tx, tenant: str, conversation_id: str, erased: Erased) -> None:
    """Delete one conversation and its messages, adding what went to ``erased``."""
    head = tx.one(
        "SELECT scope, import_key FROM comms_conversations WHERE tenant = ? AND id = ?",
        (tenant, conversation_id),
    )
    if head is None:
        return
    rows = tx.all(
        f"SELECT id, title, content, {tx.json_text('meta', 'import_key')} AS import_key"
        f" FROM items WHERE tenant = ? AND session = ? AND item_type = '{MAIL}'",
        (tenant, conversation_id),
    )
    # Records imported into this conversation are forgotten too: importing them again must
    # store them again, not answer "already imported".
    keys = [row["import_key"] for row in rows if row["import_key"]]
    if head["import_key"]:
        keys += [head["import_key"], cursor_key(head["import_key"])]
    tx.executemany(
        "DELETE FROM import_keys WHERE tenant = ? AND scope = ? AND key = ?",
        [(tenant, head["scope"], key) for key in keys],
    )
    erased.messages += tx.execute(
        f"DELETE FROM items WHERE tenant = ? AND session = ? AND item_type = '{MAIL}'",
        (tenant, conversation_id),
    )
    erased.members += tx.execute(
        "DELETE FROM comms_members WHERE tenant = ? AND conversation_id = ?",
        (tenant, conversation_id),
    )
    tx.execute(
        "DELETE FROM comms_conversations WHERE tenant = ? AND id = ?", (tenant, conversation_id)
    )  # the members' cursors go with it
    erased.items += [int(row["id"]) for row in rows]
    erased.text += [f"{row['title'] or ''} {row['content']}" for row in rows]


def forget_conversation(
    tx: Tx, tenant: str, viewer: str, conversation_id: object, kept_to: object = None
) -> ForgottenConversation:
    key = str(check_id(conversation_id, "conversation"))
    wanted = check_scope(kept_to)
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
    if wanted is not None and scope != wanted:  # told to members only (as inbox.conversation)
        raise ConversationNotFound(f"no conversation with id {key} in scope {wanted!r}")
    erased = Erased()
    _erase(tx, tenant, key, erased)
    # Its vectors, and the words left in index pages, go at the end of the erasing write.
    audit.scrub(tx, tenant, items=erased.items, forgotten=erased.text)
    return {
        "conversation_id": key,
        "already_forgotten": False,
        "scope": scope,
        "messages_removed": erased.messages,
        "members_removed": erased.members,
    }


def forget_scope(tx: Tx, tenant: str, scope: str, member: str | None = None) -> int:
    """Every conversation of a scope (``forget_knowledge(all=True)``, which scrubs the audit
    and erases the index remains once for the whole forget), or with ``member`` (a caller that
    is not the owner) those it is a member of; how many."""
    joined, params = "", [tenant, scope]
    if member is not None:
        joined = (
            " AND EXISTS (SELECT 1 FROM comms_inboxes v WHERE v.tenant = c.tenant"
            " AND v.conversation_id = c.id AND v.principal = ?)"
        )
        params.append(member)
    ids = [
        row["id"]
        for row in tx.all(
            f"SELECT c.id FROM comms_conversations c WHERE c.tenant = ? AND c.scope = ?{joined}",
            params,
        )
    ]
    erased = Erased()
    for conversation_id in ids:
        _erase(tx, tenant, conversation_id, erased)
    return len(ids)
