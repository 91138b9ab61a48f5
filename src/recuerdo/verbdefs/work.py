"""Verbs of progress plans and owner rules."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ContentTooLarge, InvalidRuleLevel, StepNotFound, TaskNotFound
from ..model import RULE_LEVELS

if TYPE_CHECKING:
    from ..verbs import VerbTable


def register(table: VerbTable) -> None:

    _TASK = "The plan's name, e.g. 'import'."
    _STEP = "The step's name, as given to create_progress."

    # -- progress --------------------------------------------------------------------------------
    table.add(
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
        table.add(
            _verb,
            family="progress",
            mode="write",
            description=f"Mark a step of a task {_status}. Returns the step.",
            docs=_docs,
            errors=(TaskNotFound, StepNotFound),
            arguments=("task", "step") + ((_extra,) if _extra else ()),
        )
    table.add(
        "resume_point",
        family="progress",
        mode="read",
        description="The step to resume a task from: the first in progress or failed, else the "
        "first pending; null when the task is finished or unknown.",
        docs={"task": _TASK},
        arguments=("task",),
    )
    table.add(
        "progress_percent",
        family="progress",
        mode="read",
        description="Percent of a task's steps done or skipped (0 if unknown, 100 if no steps).",
        docs={"task": _TASK},
        arguments=("task",),
    )
    table.add(
        "progress_display",
        family="progress",
        mode="read",
        description="A task's plan as text: one line per step with its status, duration and "
        "result.",
        docs={"task": _TASK},
        errors=(TaskNotFound,),
        arguments=("task",),
    )
    table.add(
        "get_progress",
        family="progress",
        mode="read",
        description="A task's whole plan: every step with status, result, error and duration.",
        docs={"task": _TASK},
        errors=(TaskNotFound,),
        arguments=("task",),
    )
    table.add(
        "list_progress",
        family="progress",
        mode="read",
        description="Every tracked task with its percent done and resume point.",
    )

    # -- owner rules -----------------------------------------------------------------------------
    table.add(
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
    table.add(
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
    table.add(
        "get_rules",
        family="rules",
        mode="read",
        description="List the owner rules, all or those of one category.",
        docs={"category": "Only rules of this category."},
    )
    table.add(
        "remove_rule",
        family="rules",
        mode="write",
        description="Remove an owner rule by name; returns true if it existed.",
        docs={"name": "The rule's name."},
        arguments=("name",),
        destructive=True,
    )
