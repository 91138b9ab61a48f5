"""Conversation verbs: the turns of a conversation, stored in order and searchable."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import InvalidBatch
from ..facade import MemoryBase, verb
from . import transcripts
from .results import AddedMessages


class CommsVerbs(MemoryBase):
    @verb("write", errors=(InvalidBatch,), arguments=("conversation",))
    def add_messages(
        self, conversation: str, messages: Sequence[dict[str, Any]], *, scope: str | None = None
    ) -> AddedMessages:
        """Store the turns of a conversation in order, in one transaction; each message is {speaker,
        text, date (ISO 8601), ref (your id for the turn)}.

        Args:
            conversation: The conversation's id.
            messages: The turns, oldest first.
            scope: Scope of the turns (default 'conversation:<id>').
        """
        with self._write(len(messages)) as tx:
            reply = transcripts.add(
                tx,
                tenant=self.tenant,
                principal=self.principal,
                conversation=conversation,
                messages=messages,
                scope=scope,
            )
        return reply
