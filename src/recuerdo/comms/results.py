"""Typed results of the conversation verbs."""

from __future__ import annotations

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict


@with_config(ConfigDict(extra="forbid"))
class AddedMessages(TypedDict):
    conversation: str
    scope: str
    ids: list[int]
    count: int
