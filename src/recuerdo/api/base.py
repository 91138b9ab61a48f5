"""What every family's verbs rely on: the store, the caller's identity, the sandbox guard."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import ParamSpec, TypeVar

from ..errors import CapabilityNotGranted
from ..retrieval.audit import AuditLog
from ..security import caps
from ..store.base import Store, Tx
from ..upkeep import Upkeep

P = ParamSpec("P")
R = TypeVar("R")


def guarded(method: Callable[P, R]) -> Callable[P, R]:
    """Refuse every verb inside :func:`recuerdo.sandbox`."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        if caps.in_sandbox():
            raise CapabilityNotGranted(
                "Capability not granted: memory (code inside sandbox() may not reach memory)"
            )
        return method(*args, **kwargs)

    return wrapper


class MemoryBase:
    _store: Store
    _upkeep: Upkeep
    _audit: AuditLog
    name: str
    tenant: str
    source: str
    is_agent: bool

    @property
    def principal(self) -> str:
        """Who the journal names for this handle's changes (the writer)."""
        return self.source

    @contextlib.contextmanager
    def _write(self, rows: int = 1) -> Iterator[Tx]:
        """A write transaction that adds or changes about ``rows`` items: once it commits, the
        upkeep worker is told there is indexing to do (nothing is told if it fails)."""
        with self._store.write() as tx:
            yield tx
        self._upkeep.poke(rows)
