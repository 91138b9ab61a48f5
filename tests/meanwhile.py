"""A write from another thread while a verb does its pure work: whether it was done before that
work ended, i.e. whether the verb did the work before it locked the memory for writing
(decision 0140)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import recuerdo

WAIT_SECONDS = 5
"""How long the other write may take: far more than it needs when nothing holds it back."""


class WritesMeanwhile:
    """Wraps ``work``: its first call starts a tiny write in another thread and waits for it;
    ``during`` says whether that write was done before the work went on."""

    def __init__(self, memory: recuerdo.Memory, work: Callable[..., Any]) -> None:
        self.memory, self.work = memory, work
        self.during: list[bool] = []
        self.written: list[int] = []
        self.writers: list[threading.Thread] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not self.writers:
            writer = threading.Thread(
                target=lambda: self.written.append(
                    self.memory.remember("context", "written meanwhile")
                )
            )
            self.writers.append(writer)
            writer.start()
            writer.join(timeout=WAIT_SECONDS)
            self.during.append(bool(self.written))
        return self.work(*args, **kwargs)

    def finish(self) -> None:
        for writer in self.writers:
            writer.join(timeout=60)
