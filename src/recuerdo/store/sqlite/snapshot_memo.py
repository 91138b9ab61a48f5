"""Answers about the file that hold for as long as it is unchanged: the word counts a search
probes (docs/decisions/0053-word-counts-per-snapshot.md).

A word search first asks the full-text index how far each query word reaches (in RANK_AT
chunks or more? in half of them?), and to answer it reads the word's matches up to that count:
50,000 rows, 2.3 ms of a 6-10 ms search at 100,000 chunks, for a project's name found in every
one of them. Such words come back query after query, and between two writes the answer cannot
change. So each reader connection keeps the answers it computed, under the file's
``PRAGMA data_version``: SQLite changes it when another connection has committed, and reading
it inside a read transaction settles that transaction's snapshot, so the version and the
answers read after it always describe the same file. Reader connections never write; a write
transaction's reads (which see its uncommitted rows) keep no answers.
"""

from __future__ import annotations

from typing import Any

from .driver import sqlite3

MAX_ANSWERS = 4096
"""Answers kept per reader connection before they are dropped all at once: each is a few
hundred bytes at most (a query's words and a number), and a memory's vocabulary of broad words
is far smaller."""


class SnapshotMemo:
    """The answers one reader connection computed from the file's current version."""

    __slots__ = ("_answers", "_version")

    def __init__(self) -> None:
        self._answers: dict[Any, Any] = {}
        self._version: int | None = None

    def answers(self, conn: sqlite3.Connection) -> dict[Any, Any]:
        """The answers that hold for ``conn``'s read transaction (open): emptied when another
        connection committed since they were computed."""
        version = int(conn.execute("PRAGMA data_version").fetchone()[0])
        if version != self._version or len(self._answers) >= MAX_ANSWERS:
            self._answers = {}
            self._version = version
        return self._answers
