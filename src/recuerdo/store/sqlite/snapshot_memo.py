"""Answers about the words index that hold for as long as it is unchanged: the word counts a
search probes (docs/decisions/0053-word-counts-per-snapshot.md).

A word search first asks the full-text index how far each query word reaches (in RANK_AT
chunks or more? in half of them?), and to answer it reads the word's matches up to that count:
50,000 rows, 2.3 ms of a 6-10 ms search at 100,000 chunks, for a project's name found in every
one of them. Such words come back query after query, and between two changes of the index the
answer cannot change.

So each reader connection keeps the answers it computed, with the file's
``PRAGMA data_version`` and the index's two bookkeeping records:
- **The version.** SQLite changes it on a connection when another connection has committed.
  Reader connections never write, so every change to the file is another connection's. Reading
  it inside a read transaction settles that transaction's snapshot, so the version and the
  answers read after it always describe the same file.
- **The records.** Most commits leave the words index alone (the audit of each search, an
  entry not indexed yet). When the version has moved, FTS5's averages record (``id = 1``: the
  rows and tokens it holds, moved by every row added or deleted) and structure record
  (``id = 10``: its segments, moved by every segment written or merged) are read in the same
  snapshot. The answers stay while both are byte for byte as they were, and the schema's
  version too (an index dropped and made again restarts its records).

An index emptied with FTS5's ``delete-all`` and filled again in the same commit could leave
both records as they were: nothing does that to a file with readers (the migrations that
rebuild it run before any read, restore and recover write a new file).

A write transaction's reads (which see its own uncommitted rows) and an in-memory store's keep
no answers.
"""

from __future__ import annotations

from typing import Any

from .driver import sqlite3

MAX_ANSWERS = 4096
"""Answers kept per reader connection before they are dropped all at once (checked when a
read transaction first asks): each holds a query's words (a query is cut to 2,000 characters)
and a number, and a memory's vocabulary of broad words is far smaller."""

_RECORDS = (
    "SELECT 0, CAST(schema_version AS BLOB) FROM pragma_schema_version"
    " UNION ALL SELECT id, block FROM chunk_fts_data WHERE id IN (1, 10) ORDER BY 1"
)


class SnapshotMemo:
    """The answers one reader connection computed from the words index as it is now."""

    __slots__ = ("_answers", "_records", "_version")

    def __init__(self) -> None:
        self._answers: dict[Any, Any] = {}
        self._version: int | None = None
        self._records: tuple[tuple[int, bytes], ...] | None = None

    def answers(self, conn: sqlite3.Connection) -> dict[Any, Any]:
        """The answers that hold for ``conn``'s read transaction (open): emptied when the
        words index changed since they were computed."""
        version = int(conn.execute("PRAGMA data_version").fetchone()[0])
        if version != self._version:
            records = tuple((int(row[0]), bytes(row[1])) for row in conn.execute(_RECORDS))
            if records != self._records:
                self._answers = {}
                self._records = records
            self._version = version
        if len(self._answers) >= MAX_ANSWERS:
            self._answers = {}
        return self._answers
