"""Conversation verbs: transcripts of conversations (``add_messages``), and messaging between
agents and people: addresses, messages, inboxes, threads and unread cursors.

Who calls is the handle's principal: ``main`` in process, an agent through ``Memory.agent``, a
token's principal on a server. A message is read only by its conversation's members, through
these verbs and through every other read (search, context, about, export, get, ...).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.settings import check_mail_domain
from ..errors import (
    AddressInvalid,
    AddressNotBound,
    AddressTaken,
    AddressUnknown,
    BodyTooLarge,
    ConversationNotFound,
    DomainNotOurs,
    EmptyContent,
    IdempotencyKeyReused,
    InvalidBatch,
    KindInvalid,
    MessageNotFound,
    NotAMember,
    PageCursorInvalid,
    RecipientsTooMany,
    SubjectTooLong,
)
from ..facade import MemoryBase, verb
from . import addresses as address_ops
from . import erase, mail, transcripts
from . import inbox as inbox_ops
from .model import (
    AddressBinding,
    Addresses,
    ForgottenConversation,
    Inbox,
    Message,
    SentMessage,
    Thread,
)
from .results import AddedMessages


@dataclass
class MailDomains:
    """The domains a server serves addresses in (``serve --mail-domain``), for tenants that set
    none of their own."""

    served: list[str] = field(default_factory=list)


_READ_ERRORS = (NotAMember, ConversationNotFound, PageCursorInvalid, MessageNotFound)


class CommsVerbs(MemoryBase):
    _mail: MailDomains

    def serve_mail(self, domains: Sequence[str]) -> None:
        """Serve addresses in these domains (a server's ``--mail-domain``) for every tenant
        that has not set its own with ``configure(mail_domains=...)``."""
        self._mail.served[:] = list(dict.fromkeys(check_mail_domain(d) for d in domains))

    @verb("write", errors=(InvalidBatch,), arguments=("conversation",))
    def add_messages(
        self, conversation: str, messages: Sequence[dict[str, Any]], *, scope: str | None = None
    ) -> AddedMessages:
        """Store the turns of a conversation in order, in one transaction; each message is {speaker,
        text, date (ISO 8601), ref (your id for the turn)}. A turn whose ref the conversation
        holds already is not stored again (a retried call stores nothing twice): its id is
        answered, and counted in already.

        Args:
            conversation: The conversation's id.
            messages: The turns, oldest first.
            scope: Scope of the turns (default 'conversation:<id>').
        """
        # Checked before the write: nothing in a turn depends on what is stored.
        prepared = transcripts.prepare(conversation, messages, scope)
        with self._write(len(prepared.turns)) as tx:
            reply = transcripts.add(
                tx, tenant=self.tenant, principal=self.principal, prepared=prepared
            )
        return reply

    @verb(
        "write",
        errors=(AddressInvalid, DomainNotOurs, AddressTaken, KindInvalid),
        arguments=("address",),
        enums={"kind": address_ops.KINDS},
        unscoped=True,
    )
    def bind_address(self, address: str, kind: str = "agent") -> AddressBinding:
        """Bind an address (name@domain) to you, the caller, so others can message you there.
        Binding it again answers bound: already. The domain must be one of this memory's
        (see addresses); an address bound to someone else is refused.

        Args:
            address: name@domain: ASCII letters, digits and . - _ +, exactly one @ (kept in
                lower case).
            kind: 'agent' (default) or 'user' (a person).
        """
        with self._write(0) as tx:
            return address_ops.bind(
                tx,
                tenant=self.tenant,
                principal=self.principal,
                address=address,
                kind=kind,
                served=self._mail.served,
            )

    @verb("read", unscoped=True)
    def addresses(self) -> Addresses:
        """Your addresses (the first one sends unless you name another) and the domains an
        address may be bound in here.
        """
        with self._store.read() as tx:
            return {
                "principal": self.principal,
                "addresses": address_ops.own(tx, self.tenant, self.principal),
                "domains": address_ops.domains(tx, self.tenant, self._mail.served),
            }

    @verb(
        "write",
        errors=(
            AddressInvalid,
            AddressUnknown,
            AddressNotBound,
            RecipientsTooMany,
            SubjectTooLong,
            BodyTooLarge,
            EmptyContent,
            MessageNotFound,
            NotAMember,
            IdempotencyKeyReused,
        ),
        arguments=("subject", "body"),
        sent=lambda given: mail.check_sizes(given.get("subject"), given.get("body")),
    )
    def send_message(
        self,
        to: Sequence[str],
        subject: str,
        body: str,
        reply_to: int | str | None = None,
        *,
        from_: str | None = None,
        scope: str | None = None,
        idempotency_key: str | None = None,
    ) -> SentMessage:
        """Send a message to addresses. It is stored once, in a conversation whose members are
        you and the recipients; with reply_to it joins the conversation of the message it
        answers (recipients not yet in it join it and can read it all). Members read it in
        their inbox and thread, and find it with search, context and about; nobody else sees
        it. If any recipient is unknown, nothing is sent and every unknown one is named.

        Args:
            to: Recipient addresses (1 to 4096).
            subject: The subject (at most 1024 bytes; may be empty).
            body: The text, kept exactly as sent (at most 16 MiB).
            reply_to: The id of the message this answers.
            from_: Which of your addresses sends (default: your first one in the conversation,
                else your first).
            scope: The scope a new conversation is kept in (default 'user'); a reply stays in
                its conversation's.
            idempotency_key: Your key for this send (such as a UUID): sending again with it
                answers the first send and sends nothing; with another message it is refused.
        """
        # Checked and cut into passages before the write: a long body held every writer back.
        sent = mail.outgoing(to, subject, body, reply_to, from_, scope, idempotency_key)
        with self._write() as tx:
            return mail.send(
                tx,
                tenant=self.tenant,
                principal=self.principal,
                sent=sent,
                reply_to=reply_to,
                sender=from_,
                scope=scope,
                link=self._link_passages,
            )

    @verb("read", errors=(PageCursorInvalid,))
    def inbox(
        self,
        after: str | None = None,
        limit: int = inbox_ops.DEFAULT_LIMIT,
        *,
        scope: str | None = None,
    ) -> Inbox:
        """Your conversations, the most recently active first: for each its member count, the
        time, sender and start of its newest message, how many messages it holds and how many
        of others' you have not read yet.

        Args:
            after: The next cursor of the previous page.
            limit: Conversations per page (1-4096, default 50).
            scope: Only the conversations kept in this scope (a token limited to scopes names
                one of them).
        """
        with self._store.read() as tx:
            return inbox_ops.inbox(tx, self.tenant, self.principal, after, limit, scope)

    @verb("read", errors=_READ_ERRORS, arguments=("conversation_id",))
    def thread(
        self,
        conversation_id: int | str,
        after: str | None = None,
        limit: int = inbox_ops.DEFAULT_LIMIT,
        preview_chars: int = inbox_ops.DEFAULT_PREVIEW,
        *,
        scope: str | None = None,
    ) -> Thread:
        """The messages of one of your conversations, oldest first, as previews (truncated says
        a message holds more: read_message returns it whole) with each one's size. Reading a
        page moves your unread cursor past it; nobody else's moves.

        Args:
            conversation_id: The conversation's id.
            after: The next cursor of the previous page (default: from the first message).
            limit: Messages per page (1-4096, default 50).
            preview_chars: Preview length in characters (20-16384, default 500).
            scope: The scope the conversation must be kept in (else conversation_not_found).
        """
        with self._store.read() as tx:
            page, moves = inbox_ops.thread(
                tx, self.tenant, self.principal, conversation_id, after, limit, preview_chars, scope
            )
        if moves:  # a write only when the cursor moves: re-reading a page takes no lock
            with self._write(0) as tx:
                inbox_ops.advance(tx, self.tenant, self.principal, page["conversation_id"], moves)
        return page

    @verb("read", errors=(MessageNotFound, NotAMember), arguments=("message_id",))
    def read_message(self, message_id: int | str, *, scope: str | None = None) -> Message:
        """One of your messages whole: its body exactly as sent, sender, recipients, subject,
        size, time and the message it answers. It does not move your unread cursor (thread
        does).

        Args:
            message_id: The message's id.
            scope: The scope the message must be kept in (else message_not_found).
        """
        with self._store.read() as tx:
            return mail.message(mail.readable(tx, self.tenant, self.principal, message_id, scope))

    @verb(
        "write",
        errors=(ConversationNotFound, NotAMember),
        arguments=("conversation_id",),
        destructive=True,
    )
    def forget_conversation(
        self, conversation_id: int | str, *, scope: str | None = None
    ) -> ForgottenConversation:
        """Forget one of your conversations for everyone, for real: its messages, members and
        cursors are erased from the store's files. Forgetting it again answers
        already_forgotten; forget_knowledge with all=true forgets a scope's conversations.

        Args:
            conversation_id: The conversation's id.
            scope: The scope the conversation must be kept in (else conversation_not_found:
                nothing is erased).
        """
        with self._erasing_write(superseded=True) as tx:
            reply = erase.forget_conversation(
                tx, self.tenant, self.principal, conversation_id, scope
            )
        if not reply["already_forgotten"]:
            self._store.reclaim()  # the WAL still holds the old pages: fold and truncate it
        return reply
