"""Capability ceilings for the memory family.

The host sets a ceiling with ``RECUERDO_CAPS`` (comma- or space-separated capabilities):
``memory`` allows every name, ``memory=shop-*`` only names matching the pattern (fnmatch, may be
repeated). A ceiling that does not mention ``memory`` denies the family. No variable means no
ceiling. Code inside :func:`sandbox` may not reach memory at all.
"""

from __future__ import annotations

import contextvars
import fnmatch
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import CapabilityNotGranted

CAPS_ENV = "RECUERDO_CAPS"
_sandboxed: contextvars.ContextVar[bool] = contextvars.ContextVar("recuerdo_sandbox", default=False)


def memory_patterns(ceiling: str | None) -> list[str] | None:
    """The name patterns a ceiling allows; ``None`` when there is no ceiling."""
    if ceiling is None:
        return None
    patterns: list[str] = []
    for cap in ceiling.replace(",", " ").split():
        kind, _, value = cap.partition("=")
        if kind.strip() == "memory":
            patterns.append(value.strip() or "*")
    return patterns


def check_memory_allowed(name: str, ceiling: str | None = None) -> None:
    """Raise :class:`CapabilityNotGranted` unless the host ceiling and context allow ``name``."""
    if _sandboxed.get():
        raise CapabilityNotGranted(
            f"Capability not granted: memory (code inside sandbox() may not reach memory {name!r})"
        )
    if ceiling is None:
        ceiling = os.environ.get(CAPS_ENV)
    patterns = memory_patterns(ceiling)
    if patterns is None:
        return
    if not any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns):
        allowed = ", ".join(patterns) if patterns else "no memory at all"
        raise CapabilityNotGranted(
            f"Capability not granted: memory {name!r} is outside the host ceiling "
            f"{CAPS_ENV}={ceiling!r} (allowed: {allowed})"
        )


def in_sandbox() -> bool:
    return _sandboxed.get()


# -- threads started inside a block inherit it ----------------------------------------------
#
# A new thread starts with an empty context: code inside ``with sandbox():`` (or a Synsema
# ``agent(...)`` block) that starts a thread would have the thread escape the block. So the
# context variables registered here travel with every thread started while one of them is set:
# ``threading.Thread.start`` is wrapped once (only recuerdo's variables are carried; a thread
# started where none is set runs exactly as before).

_inherited: list[contextvars.ContextVar[Any]] = [_sandboxed]
_inherited_lock = threading.Lock()
_original_start = threading.Thread.start


def inherit_in_threads(variable: contextvars.ContextVar[Any]) -> None:
    """Make threads started while ``variable`` is set start with the same value."""
    with _inherited_lock:
        if variable not in _inherited:
            _inherited.append(variable)


def _start(self: threading.Thread) -> None:
    carried = [(var, var.get()) for var in list(_inherited) if var.get() != _default(var)]
    if carried:
        run = self.run

        def run_inside() -> None:
            for var, value in carried:
                var.set(value)
            run()

        self.run = run_inside  # type: ignore[method-assign]
    _original_start(self)


def _default(variable: contextvars.ContextVar[Any]) -> Any:
    return contextvars.Context().run(variable.get)


threading.Thread.start = _start  # type: ignore[method-assign]


@contextmanager
def sandbox() -> Iterator[None]:
    """Run a block with the memory capability denied."""
    token = _sandboxed.set(True)
    try:
        yield
    finally:
        _sandboxed.reset(token)
