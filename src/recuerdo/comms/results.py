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
    count: int
    redacted: NotRequired[Redactions]
