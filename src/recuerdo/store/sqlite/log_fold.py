"""Folding the write-ahead log back into the file after a forget (decision 0156).

A forget's text stays in the ``-wal`` file until a checkpoint copies the pages that replaced it
into the file and truncates the log. A reader in another thread or process that holds a
snapshot holds the log too. Each try of the checkpoint once waited for it as long as a writer
waits for the lock (``busy_timeout``, 30 s), fifty times over: a forget beside a long export
in another process answered after up to 25 minutes, and then raised, although its write was
committed. Now each try waits ``TRY_MS`` and all of them ``PATIENCE`` seconds; past that the
fold is owed, said by ``index_status`` (``backend.erasure_owed``) and the store's ``check``
(``wal_fold_owed``), warned of once by the forget, and done by the upkeep's next pause, the
next forget, or the close.
"""

from __future__ import annotations

import threading
import time
from typing import Any

TRY_MS = 100
PATIENCE = 10.0


def fold_truncating(writer: Any, lock: Any, busy_timeout_ms: int, patience: float) -> bool:
    """Checkpoint and truncate the log through ``writer``: True once done, False when readers
    held it for ``patience`` seconds. Each try lowers the writer's busy wait inside ``lock``
    and restores it there, so no write of another thread ever runs with the shorter wait."""
    deadline = time.monotonic() + patience
    while True:
        with lock:
            writer.execute(f"PRAGMA busy_timeout = {TRY_MS}")
            try:
                busy = writer.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            finally:
                writer.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")
        if not busy:
            return True
        if time.monotonic() >= deadline:
            return False
        threading.Event().wait(0.02)


def fold_once(shared: Any, busy_timeout_ms: int) -> bool:
    """One try of :func:`fold_truncating` through a store's shared writer and its lock: what
    the upkeep's pauses and a store at rest do, never waiting past one ``TRY_MS``."""
    return fold_truncating(shared.writer, shared.lock, busy_timeout_ms, 0.0)
