"""The typed results of the retrieval verbs (what the doors publish as their schemas)."""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict

MeaningState = Literal["armed", "not_armed", "queued", "failed"]


@with_config(ConfigDict(extra="forbid"))
class IndexStatus(TypedDict):
    chunks: int
    items_waiting: int
    model: str | None
    meaning: MeaningState
    chunks_waiting_for_vectors: NotRequired[int]
    embedded_percent: NotRequired[float]
    backend: NotRequired[dict[str, Any]]


@with_config(ConfigDict(extra="forbid"))
class EntryCount(TypedDict):
    category: str
    source: str
    count: int


@with_config(ConfigDict(extra="forbid"))
class NoteCount(TypedDict):
    axis: Literal["user", "project"] | None
    scope: str
    kind: str
    count: int
    needs_review: int
    muted: int


@with_config(ConfigDict(extra="forbid"))
class Overview(TypedDict):
    items: dict[str, int]
    chars: int
    deleted_notes: int
    entries: list[EntryCount]
    notes: list[NoteCount]
    plans: int
    rules: int
