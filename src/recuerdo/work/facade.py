"""Progress plans and owner rules: one plan board and one rulebook per memory."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import (
    ContentTooLarge,
    InvalidCondition,
    InvalidRuleLevel,
    StepNotFound,
    TaskNotFound,
)
from ..facade import MemoryBase, verb
from ..model import RULE_LEVELS, Plan, PlanSummary, Rule, Step, Violation
from . import plans as plan_ops
from . import rules as rule_ops


class WorkVerbs(MemoryBase):
    @verb("write", arguments=("task",), cli_names={"steps": "step"})
    def create_progress(self, task: str, steps: Sequence[str] = ()) -> Plan:
        """Start tracking a task as ordered steps. If an unfinished plan of that name exists it is
        returned unchanged (resume it); a finished one is created afresh.

        Args:
            task: The plan's name, e.g. 'import'.
            steps: The step names, in order.
        """
        with self._write(0) as tx:
            return plan_ops.create(tx, self.tenant, task, steps)

    @verb("write", errors=(TaskNotFound, StepNotFound), arguments=("task", "step"))
    def start_step(self, task: str, step: str) -> Step:
        """Mark a step of a task in progress. Returns the step.

        Args:
            task: The plan's name, e.g. 'import'.
            step: The step's name, as given to create_progress.
        """
        with self._write(0) as tx:
            return plan_ops.move(tx, self.tenant, task, step, "in_progress")

    @verb("write", errors=(TaskNotFound, StepNotFound), arguments=("task", "step", "result"))
    def complete_step(self, task: str, step: str, result: str | None = None) -> Step:
        """Mark a step of a task done. Returns the step.

        Args:
            task: The plan's name, e.g. 'import'.
            step: The step's name, as given to create_progress.
            result: What the step produced.
        """
        with self._write(0) as tx:
            return plan_ops.move(tx, self.tenant, task, step, "done", result)

    @verb("write", errors=(TaskNotFound, StepNotFound), arguments=("task", "step", "error"))
    def fail_step(self, task: str, step: str, error: str | None = None) -> Step:
        """Mark a step of a task failed. Returns the step.

        Args:
            task: The plan's name, e.g. 'import'.
            step: The step's name, as given to create_progress.
            error: Why the step failed.
        """
        with self._write(0) as tx:
            return plan_ops.move(tx, self.tenant, task, step, "failed", error)

    @verb("write", errors=(TaskNotFound, StepNotFound), arguments=("task", "step", "reason"))
    def skip_step(self, task: str, step: str, reason: str | None = None) -> Step:
        """Mark a step of a task skipped (counts as done). Returns the step.

        Args:
            task: The plan's name, e.g. 'import'.
            step: The step's name, as given to create_progress.
            reason: Why it was skipped.
        """
        with self._write(0) as tx:
            return plan_ops.move(tx, self.tenant, task, step, "skipped", reason)

    @verb("read", arguments=("task",), guarded=("task",))
    def resume_point(self, task: str) -> str | None:
        """The step to resume a task from: the first in progress or failed, else the first pending;
        null when the task is finished or unknown.

        Args:
            task: The plan's name, e.g. 'import'.
        """
        with self._store.read() as tx:
            return plan_ops.resume_point(tx, self.tenant, task)

    @verb("read", arguments=("task",), guarded=("task",))
    def progress_percent(self, task: str) -> int:
        """Percent of a task's steps done or skipped (0 if unknown, 100 if no steps).

        Args:
            task: The plan's name, e.g. 'import'.
        """
        with self._store.read() as tx:
            return plan_ops.percent(tx, self.tenant, task)

    @verb("read", errors=(TaskNotFound,), arguments=("task",), guarded=("task",))
    def progress_display(self, task: str) -> str:
        """A task's plan as text: one line per step with its status, duration and result.

        Args:
            task: The plan's name, e.g. 'import'.
        """
        with self._store.read() as tx:
            return plan_ops.display(plan_ops.get(tx, self.tenant, task))

    @verb("read", errors=(TaskNotFound,), arguments=("task",), guarded=("task",))
    def get_progress(self, task: str) -> Plan:
        """A task's whole plan: every step with status, result, error and duration.

        Args:
            task: The plan's name, e.g. 'import'.
        """
        with self._store.read() as tx:
            return plan_ops.get(tx, self.tenant, task)

    @verb("read")
    def list_progress(self) -> list[PlanSummary]:
        """Every tracked task with its percent done and resume point."""
        with self._store.read() as tx:
            return plan_ops.list_all(tx, self.tenant)

    @verb(
        "write",
        errors=(InvalidRuleLevel, InvalidCondition, ContentTooLarge),
        arguments=("name", "level", "description"),
        enums={"level": RULE_LEVELS, "unreadable": rule_ops.UNREADABLE},
    )
    def add_rule(
        self,
        name: str,
        level: str,
        description: str,
        category: str | None = None,
        unreadable: str = "refuse",
    ) -> Rule:
        """Add or replace an owner rule. Its condition is the first 'variable op number' in the
        description (e.g. 'discount <= 0.20'), stating what must hold. A dotted variable
        ('user.age') reads a nested context; a bound such as '1,000' or '20%' cannot be read.

        Args:
            name: The rule's name; the same name replaces the rule.
            level: One of: must, should, avoid, prefer (must is a hard block).
            description: What must hold, e.g. 'discount <= 0.20'.
            category: The category it applies to; none means every category.
            unreadable: A condition that cannot be read: 'refuse' it (default), or 'store' the
                rule without a condition (the reply's unread says why).
        """
        with self._write(0) as tx:
            return rule_ops.add(tx, self.tenant, name, level, description, category, unreadable)

    # A write: each violation is kept for the summary. As a read, a read-only token wrote
    # text of its choosing into the owner's summary, unguarded (a hunt over the rules).
    @verb(
        "write",
        arguments=("category",),
        creates=False,
        fails=lambda found: any(violation["level"] == "must" for violation in found),
    )
    def check_rules(
        self, category: str | None = None, context: Mapping[str, Any] | None = None
    ) -> list[Violation]:
        """Check a context of numbers against the rules of a category (and the uncategorised ones);
        returns each violation with its level and a message.

        Args:
            category: Which rules to check; none checks all.
            context: Variable values, e.g. {"discount": 0.25}. Non-numbers are not compared.
        """
        with self._write(0) as tx:  # violations are logged for the summary
            return rule_ops.check(tx, self.tenant, category, {} if context is None else context)

    @verb("read")
    def get_rules(self, category: str | None = None) -> list[Rule]:
        """List the owner rules, all or those of one category.

        Args:
            category: Only rules of this category.
        """
        with self._store.read() as tx:
            return rule_ops.get(tx, self.tenant, category)

    @verb("write", arguments=("name",), destructive=True)
    def remove_rule(self, name: str) -> bool:
        """Remove an owner rule by name; returns true if it existed.

        Args:
            name: The rule's name.
        """
        with self._write(0) as tx:
            return rule_ops.remove(tx, self.tenant, name)
