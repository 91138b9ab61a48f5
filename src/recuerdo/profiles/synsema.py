"""The Synsema profile: Synsema's own function names and semantics, for scripts.

::

    from recuerdo.profiles.synsema import require_memory, remember, recall

    require_memory("support-agent")          # the declaration: names the memory
    remember("learning", "API is slow on Mondays", ["api"])
    notes = recall("learning", ["api"])      # newest first

Until ``require_memory`` runs, every function raises :class:`~recuerdo.CapabilityNotGranted`
naming the exact line to add, and nothing is created on disk. One program declares one memory:
a second declaration with another name raises :class:`~recuerdo.MultipleMemoryDeclarations`.

The module-level functions act on a default :class:`Program`; tests and embedders that need
several independent programs in one process create their own :class:`Program`.
"""

from __future__ import annotations

import contextvars
import os
import sys
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..engine import Memory, check_agent_name, open_memory, sanitize_name, validate_name
from ..errors import CapabilityNotGranted, MultipleMemoryDeclarations
from ..model import Entry, Plan, Rule, Step, Violation
from ..security.caps import check_memory_allowed, inherit_in_threads, sandbox

__all__ = [
    "Program",
    "add_rule",
    "agent",
    "check_rules",
    "complete_step",
    "create_progress",
    "fail_step",
    "forget_memory",
    "get_rules",
    "memory_summary",
    "progress_display",
    "progress_percent",
    "recall",
    "remember",
    "require_memory",
    "resume_point",
    "sandbox",
    "skip_step",
    "start_step",
]


def _script_stem() -> str:
    main = sys.modules.get("__main__")
    candidate = getattr(main, "__file__", None) or (sys.argv[0] if sys.argv else "")
    stem = Path(candidate).stem if candidate and candidate not in ("-c", "-") else ""
    return sanitize_name(stem, fallback="my-memory")


def _warn_about_synsema_leftovers(name: str) -> None:
    """Synsema's ways of naming state do not carry over: say so, instead of ignoring them."""
    if os.environ.get("SYNSEMA_STATE_NAME"):
        warnings.warn(
            "SYNSEMA_STATE_NAME is ignored: the name given to require_memory() is the memory's "
            "identity (RECUERDO_STATE_DIR chooses the folder)",
            DeprecationWarning,
            stacklevel=3,
        )
    main = sys.modules.get("__main__")
    program = getattr(main, "__file__", None)
    folders = {Path.cwd(), *([Path(program).resolve().parent] if program else [])}
    for folder in sorted(folders):
        old = folder / ".synsema" / "state" / f"{name}.db"
        if old.exists():
            warnings.warn(
                f"an old Synsema state file is beside this program: {old}. recuerdo does not "
                f"read it; bring its entries, rules and plans over with: recuerdo --memory "
                f"{name} import-from synsema {old}",
                UserWarning,
                stacklevel=3,
            )


class Program:
    """The declared memory of one program, and the agent (if any) code is running as."""

    def __init__(self, *, base_dir: str | os.PathLike[str] | None = None) -> None:
        self._base_dir = base_dir
        self._name: str | None = None
        self._memory: Memory | None = None
        self._agent: contextvars.ContextVar[str | None] = contextvars.ContextVar(
            f"synsema_agent_{id(self)}", default=None
        )
        inherit_in_threads(self._agent)  # a thread started inside agent(...) acts as it

    @property
    def declared_name(self) -> str | None:
        return self._name

    def require_memory(self, name: str, *, in_memory: bool = False) -> Memory:
        """Declare this program's memory. The same name again is fine; another name is not."""
        validate_name(name)
        if self._name is not None:
            if name != self._name:
                raise MultipleMemoryDeclarations(
                    f"Multiple memory declarations: this program already declared "
                    f"require_memory({self._name!r}); it cannot also declare {name!r}"
                )
            assert self._memory is not None
            return self._memory
        check_memory_allowed(name)
        _warn_about_synsema_leftovers(name)
        self._memory = open_memory(name, base_dir=self._base_dir, in_memory=in_memory)
        self._name = name
        return self._memory

    def release(self) -> None:
        """Close the declared memory (the program may then declare again)."""
        if self._memory is not None:
            self._memory.close()
        self._memory = None
        self._name = None

    @contextmanager
    def agent(self, name: str) -> Iterator[None]:
        """Run a block as agent ``name``: its writes carry that source, its recalls read its
        own entries by default. A name that is no agent's own (``main``, ``*``) is refused here,
        where the block names it."""
        token = self._agent.set(check_agent_name(name))
        try:
            yield
        finally:
            self._agent.reset(token)

    def _current(self) -> Memory:
        if self._memory is None:
            raise CapabilityNotGranted(
                "Capability not granted: memory. Declare the memory first by adding this line "
                f'at the top of the program: require_memory("{_script_stem()}")'
            )
        check_memory_allowed(self._memory.name)
        agent_name = self._agent.get()
        return self._memory.agent(agent_name) if agent_name else self._memory

    # -- the family, with Synsema's names ---------------------------------------------------

    def remember(self, category: str, content: str, tags: Sequence[str] = ()) -> int:
        return self._current().remember(category, content, tags)

    def recall(
        self,
        category: str | None = None,
        tags: Sequence[str] | str | None = None,
        search: str | None = None,
        mode: str | None = None,
        limit: int | str | None = None,
        from_: str | None = None,
        **named: Any,
    ) -> list[Entry]:
        # Synsema spells the writer filter `from`, a Python keyword: accept it by name.
        if "from" in named:
            from_ = named.pop("from")
        if named:
            raise TypeError(f"recall() got unexpected arguments: {sorted(named)}")
        return self._current().recall(category, tags, search, mode, limit, from_)

    def forget_memory(self, entry_id: int) -> bool:
        return self._current().forget(entry_id)

    def memory_summary(self, *, echo: bool = True) -> str:
        text = self._current().summary()["text"]
        if echo:
            print(text)
        return text

    def create_progress(self, task: str, steps: Sequence[str] = ()) -> Plan:
        return self._current().create_progress(task, steps)

    def start_step(self, task: str, step: str) -> Step:
        return self._current().start_step(task, step)

    def complete_step(self, task: str, step: str, result: str | None = None) -> Step:
        return self._current().complete_step(task, step, result)

    def fail_step(self, task: str, step: str, error: str | None = None) -> Step:
        return self._current().fail_step(task, step, error)

    def skip_step(self, task: str, step: str, reason: str | None = None) -> Step:
        return self._current().skip_step(task, step, reason)

    def resume_point(self, task: str) -> str | None:
        return self._current().resume_point(task)

    def progress_percent(self, task: str) -> int:
        return self._current().progress_percent(task)

    def progress_display(self, task: str) -> str:
        return self._current().progress_display(task)

    def add_rule(
        self, name: str, level: str, description: str, category: str | None = None
    ) -> Rule:
        # Synsema takes any description (an unparseable condition is never a violation): a
        # program adding a rule whose bound cannot be read runs on, told so by a warning.
        rule = self._current().add_rule(name, level, description, category, unreadable="store")
        if "unread" in rule:
            warnings.warn(
                f"rule {name!r} has no condition: {rule['unread']}", UserWarning, stacklevel=2
            )
        return rule

    def check_rules(self, category: str | None, context: Mapping[str, Any]) -> list[Violation]:
        return self._current().check_rules(category, context)

    def get_rules(self, category: str | None = None) -> list[Rule]:
        return self._current().get_rules(category)


_program = Program()

require_memory = _program.require_memory
agent = _program.agent
remember = _program.remember
recall = _program.recall
forget_memory = _program.forget_memory
memory_summary = _program.memory_summary
create_progress = _program.create_progress
start_step = _program.start_step
complete_step = _program.complete_step
fail_step = _program.fail_step
skip_step = _program.skip_step
resume_point = _program.resume_point
progress_percent = _program.progress_percent
progress_display = _program.progress_display
add_rule = _program.add_rule
check_rules = _program.check_rules
get_rules = _program.get_rules
