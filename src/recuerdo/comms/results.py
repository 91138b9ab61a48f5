"""Typed results of the conversation verbs."""

from __future__ import annotations

from typing import NotRequired

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict

from ..core.results import Redactions


@with_config(ConfigDict(extra="forbid"))
class AddedMessages(TypedDict):
    conversation: str
    scope: str
    ids: list[int]
    """Each turn's id, in the order given (a turn stored already: the id it has)."""
    count: int
    """Turns stored by this call."""
    already: int
    """Turns whose ref the conversation held already: not stored again."""
    redacted: NotRequired[Redactions]
