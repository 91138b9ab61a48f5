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
from collections.abc import Iterator
from contextlib import contextmanager

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


@contextmanager
def sandbox() -> Iterator[None]:
    """Run a block with the memory capability denied."""
    token = _sandboxed.set(True)
    try:
        yield
    finally:
        _sandboxed.reset(token)
