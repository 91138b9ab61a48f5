"""The :class:`Memory` facade: the only object the doors (CLI, MCP, HTTP, profiles) use.

A memory is opened by name with :func:`open_memory` (``recuerdo.open``). Its methods are the
verbs of :mod:`recuerdo.verbs`; each call is one transaction, committed durably before it
returns. ``memory.agent(name)`` is a view that writes under the agent's name and reads its own
entries by default, as agents sharing one memory expect.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ParamSpec, TypeVar

from . import entries as entry_ops
from . import plans as plan_ops
from . import rules as rule_ops
from .declare import prepare_state_dir, state_path, validate_name
from .errors import CapabilityNotGranted, InvalidInput
from .model import Entry, EntryIn, Plan, PlanSummary, Rule, Step, Violation
from .security import caps
from .store.base import Store
from .store.sqlite import SQLiteStore
from .text import checked_label
from .upkeep import Upkeep

P = ParamSpec("P")
R = TypeVar("R")

LOCAL_TENANT = "local"
MAIN_SOURCE = "main"


def _guarded(method: Callable[P, R]) -> Callable[P, R]:
    """Refuse every verb inside :func:`recuerdo.sandbox`."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        if caps.in_sandbox():
            raise CapabilityNotGranted(
                "Capability not granted: memory (code inside sandbox() may not reach memory)"
            )
        return method(*args, **kwargs)

    return wrapper


class Memory:
    """One declared memory, as seen by one writer (``main`` or an agent)."""

    def __init__(
        self,
        store: Store,
        *,
        name: str,
        tenant: str = LOCAL_TENANT,
        source: str = MAIN_SOURCE,
        is_agent: bool = False,
        owns_store: bool = True,
        upkeep: Upkeep | None = None,
    ) -> None:
        self._store = store
        self._upkeep = upkeep or Upkeep(store, [entry_ops.index_backlog], entry_ops.unindexed)
        self.name = name
        self.tenant = tenant
        self.source = source
        self.is_agent = is_agent
        self._owns_store = owns_store

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def location(self) -> str:
        """Where the state lives: the database file, or ``:memory:``."""
        return self._store.location

    def agent(self, name: str) -> Memory:
        """A view of this memory for agent ``name``: it writes entries with ``source=name``
        and its ``recall`` reads the agent's own entries unless ``from_`` says otherwise."""
        agent_name = checked_label(name, "agent name", max_chars=100)
        if agent_name == entry_ops.ALL_SOURCES:
            raise InvalidInput("'*' means every writer and cannot name an agent")
        return Memory(
            self._store,
            name=self.name,
            tenant=self.tenant,
            source=agent_name,
            is_agent=True,
            owns_store=False,
            upkeep=self._upkeep,
        )

    def for_tenant(self, tenant: str) -> Memory:
        """A view of this memory for another tenant (the doors use it for token holders)."""
        return Memory(
            self._store,
            name=self.name,
            tenant=checked_label(tenant, "tenant", max_chars=200),
            source=self.source,
            is_agent=self.is_agent,
            owns_store=False,
            upkeep=self._upkeep,
        )

    def close(self) -> None:
        """Finish pending index upkeep and release the store (views leave it open)."""
        if self._owns_store:
            try:
                self._upkeep.stop(drain=True)
            finally:
                self._store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        who = f" agent={self.source!r}" if self.is_agent else ""
        return f"<recuerdo.Memory {self.name!r}{who} at {self.location}>"

    # -- entries ---------------------------------------------------------------------------

    @_guarded
    def remember(
        self, category: str, content: str, tags: Sequence[str] = (), *, scope: str | None = None
    ) -> int:
        """Store one entry; return its id (never reused)."""
        prepared = entry_ops.prepare(category, content, tags, scope)
        with self._store.write() as tx:
            [entry_id] = entry_ops.insert(tx, self.tenant, self.source, [prepared])
        self._upkeep.poke()
        return entry_id

    @_guarded
    def remember_many(self, entries: Sequence[EntryIn]) -> list[int]:
        """Store a batch of entries in one transaction: all of them, or none."""
        prepared = entry_ops.prepare_batch(entries)
        with self._store.write() as tx:
            ids = entry_ops.insert(tx, self.tenant, self.source, prepared)
        self._upkeep.poke(len(ids))
        return ids

    @_guarded
    def recall(
        self,
        category: str | None = None,
        tags: Sequence[str] | str | None = None,
        search: str | None = None,
        mode: str | None = None,
        limit: int | str | None = None,
        from_: str | None = None,
        *,
        scope: str | None = None,
    ) -> list[Entry]:
        """Entries newest first, filtered by category, tags (any, or all with ``mode="all"``),
        a case-insensitive substring ``search``, writer (``from_``: ``"main"``, an agent's name
        or ``"*"``) and scope. At most ``limit`` (default 200) are returned."""
        if from_ is None:
            source = self.source if self.is_agent else None
        elif from_ == entry_ops.ALL_SOURCES:
            source = None
        else:
            source = checked_label(from_, "from", max_chars=100)
        with self._store.read() as tx:
            return entry_ops.recall(
                tx,
                self.tenant,
                category=category,
                tags=tags,
                search=search,
                mode=mode,
                limit=limit,
                source=source,
                scope=scope,
            )

    @_guarded
    def forget(self, id: int) -> bool:
        """Remove an entry; ``True`` if it existed. Its id is never given out again."""
        with self._store.write() as tx:
            return entry_ops.forget(tx, self.tenant, id)

    @_guarded
    def summary(self) -> str:
        """A human summary: entries by category, the rules, and recent rule violations."""
        with self._store.read() as tx:
            counts = entry_ops.counts_by_category(tx, self.tenant)
            rule_list = rule_ops.get(tx, self.tenant)
            violations = rule_ops.recent_violations(tx, self.tenant)
        lines = [f"Agent Memory: {sum(counts.values())} entries, {len(rule_list)} rules"]
        lines += [f"  {category}: {count}" for category, count in counts.items()]
        if rule_list:
            lines.append("Rules:")
            lines += [
                f"  [{rule['level']:<6}] {rule['name']}: {rule['description']}"
                for rule in rule_list
            ]
        if violations:
            lines.append("Recent violations:")
            lines += [f"  {message}" for message in violations]
        return "\n".join(lines)

    # -- progress --------------------------------------------------------------------------

    @_guarded
    def create_progress(self, task: str, steps: Sequence[str] = ()) -> Plan:
        """Create a plan of ordered steps. An unfinished plan of that name is kept as it is
        (so a restarted program resumes it); a finished one is created afresh."""
        with self._store.write() as tx:
            return plan_ops.create(tx, self.tenant, task, steps)

    @_guarded
    def start_step(self, task: str, step: str) -> Step:
        """Mark a step in progress."""
        with self._store.write() as tx:
            return plan_ops.move(tx, self.tenant, task, step, "in_progress")

    @_guarded
    def complete_step(self, task: str, step: str, result: str | None = None) -> Step:
        """Mark a step done, with an optional result."""
        with self._store.write() as tx:
            return plan_ops.move(tx, self.tenant, task, step, "done", result)

    @_guarded
    def fail_step(self, task: str, step: str, error: str | None = None) -> Step:
        """Mark a step failed, with an optional error; it is where the plan resumes."""
        with self._store.write() as tx:
            return plan_ops.move(tx, self.tenant, task, step, "failed", error)

    @_guarded
    def skip_step(self, task: str, step: str, reason: str | None = None) -> Step:
        """Mark a step skipped (it counts as done)."""
        with self._store.write() as tx:
            return plan_ops.move(tx, self.tenant, task, step, "skipped", reason)

    @_guarded
    def resume_point(self, task: str) -> str | None:
        """The step to resume from: the first in progress or failed, else the first pending,
        else none (the task is finished or unknown)."""
        with self._store.read() as tx:
            return plan_ops.resume_point(tx, self.tenant, task)

    @_guarded
    def progress_percent(self, task: str) -> int:
        """Percent of steps done or skipped: 0 for an unknown task, 100 for one with no steps."""
        with self._store.read() as tx:
            return plan_ops.percent(tx, self.tenant, task)

    @_guarded
    def progress_display(self, task: str) -> str:
        """The plan as text: ``Task: sync (33%)`` then one line per step."""
        with self._store.read() as tx:
            return plan_ops.display(plan_ops.get(tx, self.tenant, task))

    @_guarded
    def get_progress(self, task: str) -> Plan:
        """The whole plan with every step's status, result, error and duration."""
        with self._store.read() as tx:
            return plan_ops.get(tx, self.tenant, task)

    @_guarded
    def list_progress(self) -> list[PlanSummary]:
        """Every plan, most recently changed first."""
        with self._store.read() as tx:
            return plan_ops.list_all(tx, self.tenant)

    # -- owner rules -----------------------------------------------------------------------

    @_guarded
    def add_rule(
        self, name: str, level: str, description: str, category: str | None = None
    ) -> Rule:
        """Add or replace (by name) an owner rule; its condition is read from the description,
        e.g. ``discount <= 0.20``."""
        with self._store.write() as tx:
            return rule_ops.add(tx, self.tenant, name, level, description, category)

    @_guarded
    def check_rules(
        self, category: str | None = None, context: Mapping[str, Any] | None = None
    ) -> list[Violation]:
        """The rules of ``category`` (and uncategorised ones) that ``context`` violates."""
        with self._store.write() as tx:  # violations are logged for the summary
            return rule_ops.check(tx, self.tenant, category, {} if context is None else context)

    @_guarded
    def get_rules(self, category: str | None = None) -> list[Rule]:
        """The rules, all or those of one category."""
        with self._store.read() as tx:
            return rule_ops.get(tx, self.tenant, category)

    @_guarded
    def remove_rule(self, name: str) -> bool:
        """Remove a rule by name; ``True`` if it existed."""
        with self._store.write() as tx:
            return rule_ops.remove(tx, self.tenant, name)


def open_memory(
    name: str,
    *,
    base_dir: str | os.PathLike[str] | None = None,
    in_memory: bool = False,
) -> Memory:
    """Open (creating on first use) the memory declared as ``name``.

    State lives at ``<base>/.recuerdo/state/<name>.db`` where ``<base>`` is ``base_dir``, else
    ``$RECUERDO_STATE_DIR``, else the current directory. ``in_memory=True`` keeps it in RAM for
    this process only. The name and the host ceiling (``RECUERDO_CAPS``) are checked before
    anything is created.
    """
    validate_name(name)
    caps.check_memory_allowed(name)
    if in_memory:
        return Memory(SQLiteStore(None), name=name)
    path = state_path(name, base_dir)
    prepare_state_dir(path)
    memory = Memory(SQLiteStore(str(path)), name=name)
    if memory._upkeep.backlog():
        memory._upkeep.poke()  # a process that ended early left rows to index
    return memory
