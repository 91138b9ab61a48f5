"""Which SQLite library the embedded store runs on.

``pysqlite3-binary`` bundles a current SQLite (3.51 here) whose FTS5 can remove deleted rows
from the index at once (``secure-delete``), which is what makes ``forget`` erase text from the
file; the interpreter's own ``sqlite3`` (3.40 on this machine) is the fallback, where forgetting
rebuilds the full-text indexes instead. See ``docs/decisions/0005-erasure.md``.
"""

from __future__ import annotations

try:
    from pysqlite3 import dbapi2 as sqlite3
except ImportError:  # pragma: no cover - exercised only without the bundled library
    import sqlite3

FTS5_SECURE_DELETE = sqlite3.sqlite_version_info >= (3, 42, 0)

__all__ = ["FTS5_SECURE_DELETE", "sqlite3"]
