"""Progress plans and owner rules: one plan board and one rulebook per memory."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .. import plans as plan_ops
from .. import rules as rule_ops
from ..model import Plan, PlanSummary, Rule, Step, Violation
from .base import MemoryBase, guarded


class WorkVerbs(MemoryBase):
    @guarded
    def create_progress(self, task: str, steps: Sequence[str] = ()) -> Plan:
        """Create a plan of ordered steps. An unfinished plan of that name is kept as it is
        (so a restarted program resumes it); a finished one is created afresh."""
        with self._store.write() as tx:
            return plan_ops.create(tx, self.tenant, task, steps)

    @guarded
    def start_step(self, task: str, step: str) -> Step:
        """Mark a step in progress."""
        with self._store.write() as tx:
            return plan_ops.move(tx, self.tenant, task, step, "in_progress")

    @guarded
    def complete_step(self, task: str, step: str, result: str | None = None) -> Step:
        """Mark a step done, with an optional result."""
        with self._store.write() as tx:
            return plan_ops.move(tx, self.tenant, task, step, "done", result)

    @guarded
    def fail_step(self, task: str, step: str, error: str | None = None) -> Step:
        """Mark a step failed, with an optional error; it is where the plan resumes."""
        with self._store.write() as tx:
            return plan_ops.move(tx, self.tenant, task, step, "failed", error)

    @guarded
    def skip_step(self, task: str, step: str, reason: str | None = None) -> Step:
        """Mark a step skipped (it counts as done)."""
        with self._store.write() as tx:
            return plan_ops.move(tx, self.tenant, task, step, "skipped", reason)

    @guarded
    def resume_point(self, task: str) -> str | None:
        """The step to resume from: the first in progress or failed, else the first pending,
        else none (the task is finished or unknown)."""
        with self._store.read() as tx:
            return plan_ops.resume_point(tx, self.tenant, task)

    @guarded
    def progress_percent(self, task: str) -> int:
        """Percent of steps done or skipped: 0 for an unknown task, 100 for one with no steps."""
        with self._store.read() as tx:
            return plan_ops.percent(tx, self.tenant, task)

    @guarded
    def progress_display(self, task: str) -> str:
        """The plan as text: ``Task: sync (33%)`` then one line per step."""
        with self._store.read() as tx:
            return plan_ops.display(plan_ops.get(tx, self.tenant, task))

    @guarded
    def get_progress(self, task: str) -> Plan:
        """The whole plan with every step's status, result, error and duration."""
        with self._store.read() as tx:
            return plan_ops.get(tx, self.tenant, task)

    @guarded
    def list_progress(self) -> list[PlanSummary]:
        """Every plan, most recently changed first."""
        with self._store.read() as tx:
            return plan_ops.list_all(tx, self.tenant)

    @guarded
    def add_rule(
        self, name: str, level: str, description: str, category: str | None = None
    ) -> Rule:
        """Add or replace (by name) an owner rule; its condition is read from the description,
        e.g. ``discount <= 0.20``."""
        with self._store.write() as tx:
            return rule_ops.add(tx, self.tenant, name, level, description, category)

    @guarded
    def check_rules(
        self, category: str | None = None, context: Mapping[str, Any] | None = None
    ) -> list[Violation]:
        """The rules of ``category`` (and uncategorised ones) that ``context`` violates."""
        with self._store.write() as tx:  # violations are logged for the summary
            return rule_ops.check(tx, self.tenant, category, {} if context is None else context)

    @guarded
    def get_rules(self, category: str | None = None) -> list[Rule]:
        """The rules, all or those of one category."""
        with self._store.read() as tx:
            return rule_ops.get(tx, self.tenant, category)

    @guarded
    def remove_rule(self, name: str) -> bool:
        """Remove a rule by name; ``True`` if it existed."""
        with self._store.write() as tx:
            return rule_ops.remove(tx, self.tenant, name)
