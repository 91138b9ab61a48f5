"""The verb table: every operation of recuerdo, defined once.

A :class:`Verb` names a :class:`~recuerdo.engine.Memory` method and adds what the doors need:
read or write, a description written for a model choosing a tool, the errors it may raise, and
how the CLI spells its parameters. Typed parameters (a pydantic model) and the typed result are
derived from the method's signature, so the Python API and every door cannot disagree.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from .engine import Memory
from .errors import (
    CapabilityNotGranted,
    ContentTooLarge,
    EmptyContent,
    InvalidBatch,
    InvalidCategory,
    InvalidInput,
    InvalidRuleLevel,
    InvalidTags,
    RecuerdoError,
    StepNotFound,
    StoreError,
    TaskNotFound,
)
from .model import CATEGORIES, RULE_LEVELS

Mode = Literal["read", "write"]
# Every verb may meet these: bad arguments, a denied capability, an unreachable store.
COMMON_ERRORS: tuple[type[RecuerdoError], ...] = (InvalidInput, CapabilityNotGranted, StoreError)


@dataclass(frozen=True)
class Verb:
    name: str
    family: str
    mode: Mode
    description: str
    params: type[BaseModel]
    result: Any
    errors: tuple[type[RecuerdoError], ...]
    arguments: tuple[str, ...] = ()
    """Parameters the CLI takes positionally, in order."""
    cli_names: Mapping[str, str] = field(default_factory=dict)
    """CLI option spellings that differ from the parameter name (``tags`` -> ``--tag``)."""
    destructive: bool = False
    method: str = ""

    def call(self, memory: Memory, arguments: Mapping[str, Any]) -> Any:
        """Validate door arguments (JSON names, e.g. ``from``) and run the verb."""
        try:
            parsed = self.params.model_validate(dict(arguments))
        except ValidationError as exc:
            raise InvalidInput(f"{self.name}: {_describe(exc)}") from exc
        kwargs = {name: getattr(parsed, name) for name in parsed.model_fields_set}
        return getattr(memory, self.method)(**kwargs)

    def param_names(self) -> list[str]:
        return list(self.params.model_fields)


def _describe(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)


def _params_model(
    verb_name: str, method: Any, docs: Mapping[str, str], enums: Mapping[str, tuple[str, ...]]
) -> tuple[type[BaseModel], Any]:
    hints = get_type_hints(method)
    fields: dict[str, Any] = {}
    for name, parameter in inspect.signature(method).parameters.items():
        if name == "self":
            continue
        alias = name.rstrip("_") if name.endswith("_") else None
        extra: dict[str, Any] | None = {"enum": list(enums[name])} if name in enums else None
        default = ... if parameter.default is inspect.Parameter.empty else parameter.default
        fields[name] = (
            hints[name],
            Field(default, alias=alias, description=docs.get(name), json_schema_extra=extra),
        )
    title = "".join(part.capitalize() for part in verb_name.split("_")) + "Params"
    config = ConfigDict(extra="forbid", populate_by_name=True, arbitrary_types_allowed=True)
    model = create_model(title, __config__=config, **fields)
    return model, hints.get("return")


class VerbTable:
    def __init__(self) -> None:
        self._verbs: dict[str, Verb] = {}

    def add(
        self,
        name: str,
        *,
        family: str,
        mode: Mode,
        description: str,
        docs: Mapping[str, str] | None = None,
        errors: tuple[type[RecuerdoError], ...] = (),
        arguments: tuple[str, ...] = (),
        cli_names: Mapping[str, str] | None = None,
        enums: Mapping[str, tuple[str, ...]] | None = None,
        destructive: bool = False,
        method: str | None = None,
    ) -> None:
        if name in self._verbs:
            raise ValueError(f"verb {name!r} is defined twice")
        target = getattr(Memory, method or name)
        params, result = _params_model(name, target, docs or {}, enums or {})
        missing = [arg for arg in arguments if arg not in params.model_fields]
        if missing:
            raise ValueError(f"verb {name!r}: CLI arguments {missing} are not parameters")
        self._verbs[name] = Verb(
            name=name,
            family=family,
            mode=mode,
            description=description,
            params=params,
            result=result,
            errors=COMMON_ERRORS + errors,
            arguments=arguments,
            cli_names=dict(cli_names or {}),
            destructive=destructive,
            method=method or name,
        )

    def __getitem__(self, name: str) -> Verb:
        return self._verbs[name]

    def __contains__(self, name: object) -> bool:
        return name in self._verbs

    def __iter__(self) -> Iterator[Verb]:
        return iter(self._verbs.values())

    def __len__(self) -> int:
        return len(self._verbs)

    def names(self) -> list[str]:
        return list(self._verbs)


VERBS = VerbTable()

_TASK = "The plan's name, e.g. 'import'."
_STEP = "The step's name, as given to create_progress."

# -- entries ---------------------------------------------------------------------------------
VERBS.add(
    "remember",
    family="entries",
    mode="write",
    description="Store one short fact (an entry) under a fixed category, with optional tags. "
    "Returns the new entry's id. Credentials in the text are stored redacted.",
    docs={
        "category": f"One of: {', '.join(CATEGORIES)}.",
        "content": "The fact to keep, as plain text.",
        "tags": "Labels to find it by later (exact, case-sensitive).",
        "scope": "Optional label grouping related entries, e.g. 'project:shop'.",
    },
    enums={"category": CATEGORIES},
    errors=(InvalidCategory, InvalidTags, EmptyContent, ContentTooLarge),
    arguments=("category", "content"),
    cli_names={"tags": "tag"},
)
VERBS.add(
    "remember_many",
    family="entries",
    mode="write",
    description="Store several entries in one transaction: all are stored or, if any is "
    "refused, none. Returns their ids in order.",
    docs={"entries": "A list of {category, content, tags, scope} objects."},
    errors=(InvalidBatch, ContentTooLarge),
)
VERBS.add(
    "recall",
    family="entries",
    mode="read",
    description="List entries newest first, filtered by category, tags, a case-insensitive "
    "text search and writer. Every filter is optional; at most `limit` (default 200).",
    docs={
        "category": f"Only this category ({', '.join(CATEGORIES)}).",
        "tags": "Only entries with any of these tags (all of them with mode='all').",
        "search": "Only entries whose content contains this text (any case).",
        "mode": "'all' to require every tag; anything else means any tag.",
        "limit": "How many entries at most; missing, zero, negative or not a number means 200.",
        "from_": "Whose entries: 'main', an agent's name, or '*' for every writer.",
        "scope": "Only entries of this scope.",
    },
    errors=(InvalidCategory, InvalidTags),
    cli_names={"tags": "tag", "from_": "from"},
)
VERBS.add(
    "forget",
    family="entries",
    mode="write",
    description="Delete one entry by id. Returns true if it existed. Ids are never reused.",
    docs={"id": "The entry's id, as returned by remember."},
    arguments=("id",),
    destructive=True,
)
VERBS.add(
    "summary",
    family="entries",
    mode="read",
    description="A short human-readable overview: entry counts by category, the owner rules "
    "and recent rule violations.",
)

# -- progress --------------------------------------------------------------------------------
VERBS.add(
    "create_progress",
    family="progress",
    mode="write",
    description="Start tracking a task as ordered steps. If an unfinished plan of that name "
    "exists it is returned unchanged (resume it); a finished one is created afresh.",
    docs={"task": _TASK, "steps": "The step names, in order."},
    arguments=("task",),
    cli_names={"steps": "step"},
)
for _verb, _status, _extra, _what in (
    ("start_step", "in progress", None, None),
    ("complete_step", "done", "result", "What the step produced."),
    ("fail_step", "failed", "error", "Why the step failed."),
    ("skip_step", "skipped (counts as done)", "reason", "Why it was skipped."),
):
    _docs = {"task": _TASK, "step": _STEP}
    if _extra and _what:
        _docs[_extra] = _what
    VERBS.add(
        _verb,
        family="progress",
        mode="write",
        description=f"Mark a step of a task {_status}. Returns the step.",
        docs=_docs,
        errors=(TaskNotFound, StepNotFound),
        arguments=("task", "step") + ((_extra,) if _extra else ()),
    )
VERBS.add(
    "resume_point",
    family="progress",
    mode="read",
    description="The step to resume a task from: the first in progress or failed, else the "
    "first pending; null when the task is finished or unknown.",
    docs={"task": _TASK},
    arguments=("task",),
)
VERBS.add(
    "progress_percent",
    family="progress",
    mode="read",
    description="Percent of a task's steps done or skipped (0 if unknown, 100 if no steps).",
    docs={"task": _TASK},
    arguments=("task",),
)
VERBS.add(
    "progress_display",
    family="progress",
    mode="read",
    description="A task's plan as text: one line per step with its status, duration and result.",
    docs={"task": _TASK},
    errors=(TaskNotFound,),
    arguments=("task",),
)
VERBS.add(
    "get_progress",
    family="progress",
    mode="read",
    description="A task's whole plan: every step with status, result, error and duration.",
    docs={"task": _TASK},
    errors=(TaskNotFound,),
    arguments=("task",),
)
VERBS.add(
    "list_progress",
    family="progress",
    mode="read",
    description="Every tracked task with its percent done and resume point.",
)

# -- owner rules -----------------------------------------------------------------------------
VERBS.add(
    "add_rule",
    family="rules",
    mode="write",
    description="Add or replace an owner rule. Its condition is the first 'variable op number' "
    "in the description (e.g. 'discount <= 0.20'), stating what must hold.",
    docs={
        "name": "The rule's name; the same name replaces the rule.",
        "level": f"One of: {', '.join(RULE_LEVELS)} (must is a hard block).",
        "description": "What must hold, e.g. 'discount <= 0.20'.",
        "category": "The category it applies to; none means every category.",
    },
    enums={"level": RULE_LEVELS},
    errors=(InvalidRuleLevel, ContentTooLarge),
    arguments=("name", "level", "description"),
)
VERBS.add(
    "check_rules",
    family="rules",
    mode="read",
    description="Check a context of numbers against the rules of a category (and the "
    "uncategorised ones); returns each violation with its level and a message.",
    docs={
        "category": "Which rules to check; none checks all.",
        "context": 'Variable values, e.g. {"discount": 0.25}. Non-numbers are not compared.',
    },
    arguments=("category",),
)
VERBS.add(
    "get_rules",
    family="rules",
    mode="read",
    description="List the owner rules, all or those of one category.",
    docs={"category": "Only rules of this category."},
)
VERBS.add(
    "remove_rule",
    family="rules",
    mode="write",
    description="Remove an owner rule by name; returns true if it existed.",
    docs={"name": "The rule's name."},
    arguments=("name",),
    destructive=True,
)
