"""The shapes of records and results, shared by the engine and every door.

Results are plain dicts (what scripts and agents consume); these ``TypedDict`` classes name their
keys for type checkers and give the doors their JSON schemas.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal, NotRequired

from pydantic import ConfigDict, GetCoreSchemaHandler, with_config
from pydantic_core import CoreSchema
from typing_extensions import TypedDict

from .core import exact as exact  # the doors write and read exact decimals with it
from .core.results import Redactions as Redactions  # the doors' reply types name it
from .core.text import whole_number as whole_number  # the doors read numbers with it

CATEGORIES: tuple[str, ...] = ("preference", "rule", "learning", "decision", "context")
RULE_LEVELS: tuple[str, ...] = ("must", "should", "avoid", "prefer")
STEP_STATUSES: tuple[str, ...] = ("pending", "in_progress", "done", "failed", "skipped")

StepStatus = Literal["pending", "in_progress", "done", "failed", "skipped"]


@with_config(ConfigDict(extra="forbid"))
class EntryIn(TypedDict):
    """One entry of a ``remember_many`` batch."""

    category: str
    content: str
    tags: NotRequired[list[str]]
    scope: NotRequired[str]


@with_config(ConfigDict(extra="forbid"))
class Entry(TypedDict):
    id: int
    category: str
    content: str
    source: str
    tags: list[str]
    scope: str
    created_at: str
    updated_at: str


class EntryList(list[Entry]):
    """Entries newest first, as a plain list; ``more`` counts the matching entries beyond the
    limit (the doors say it: a cut is never silent)."""

    more: int = 0

    def __init__(self, entries: Iterable[Entry] = (), more: int = 0) -> None:
        super().__init__(entries)
        self.more = more

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return handler(list[Entry])  # as JSON it is the list; doors carry `more` beside it


@with_config(ConfigDict(extra="forbid"))
class Step(TypedDict):
    name: str
    status: StepStatus
    result: str | None
    error: str | None
    started_at: str | None
    finished_at: str | None
    duration_ms: int


@with_config(ConfigDict(extra="forbid"))
class Plan(TypedDict):
    task: str
    percent: int
    resume_point: str | None
    steps: list[Step]
    created_at: str
    updated_at: str


@with_config(ConfigDict(extra="forbid"))
class PlanSummary(TypedDict):
    task: str
    percent: int
    resume_point: str | None
    steps: int
    updated_at: str


@with_config(ConfigDict(extra="forbid"))
class Rule(TypedDict):
    name: str
    level: str
    description: str
    category: str | None
    condition: str | None
    unread: NotRequired[str]
    """Why the description's condition was not read (``add_rule(unreadable="store")``): the
    rule is kept with no condition, and no context violates it."""


@with_config(ConfigDict(extra="forbid"))
class Violation(TypedDict):
    rule: str
    level: str
    message: str


JSONDict = dict[str, Any]
