"""Statements sent to PostgreSQL: the families' ``?`` marks as the server's own ``$1, $2, ...``,
the parameters as the families give them, and the driver's errors as recuerdo's
(``docs/decisions/0058-postgres-numbered-marks.md``).

psycopg's own placeholders (``%s``) are rewritten for the server by psycopg at every call, and
it keeps the rewrite of a statement only while it has at most 50 parameters and 4,096 bytes.
A batch's inserts (100 rows a statement, ``store/row_groups.py``) and a long ``IN`` list are
above that: a bulk load spent most of its client time in that rewrite. So the families'
statements are numbered here, once per text (:func:`numbered`), checked against their
parameters, and run on psycopg's raw cursor, which sends them as they are.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ...errors import InvalidInput, StorageFull, StoreError
from .. import row_groups
from ..base import Params

_LITERAL_OR_MARK = re.compile(r"'(?:[^']|'')*'|\?")
_INT64 = 2**63


@functools.lru_cache(maxsize=8192)
def numbered(sql: str) -> tuple[str, int]:
    """A family statement with PostgreSQL's numbered marks, and how many: the n-th ``?``
    outside a ``'...'`` literal becomes ``$n``; every other character stays as it is (a ``?``
    in a comment or a quoted name is a mark too, as it always was)."""
    count = 0

    def swap(match: re.Match[str]) -> str:
        nonlocal count
        if match.group(0) != "?":
            return match.group(0)
        count += 1
        return f"${count}"

    return _LITERAL_OR_MARK.sub(swap, sql), count


def _sendable(sql: str, params: Sequence[Any]) -> str:
    """The numbered text, once the parameters are checked against its marks: the server
    refuses too few, but takes too many when they carry a type (psycopg's own rewrite, which
    raw statements skip, refused both)."""
    text, marks = numbered(sql)
    _check(marks, params)
    return text


def _check(marks: int, params: Sequence[Any]) -> None:
    if len(params) != marks:
        import psycopg

        raise psycopg.ProgrammingError(
            f"the statement has {marks} marks but {len(params)} parameters were given"
        )


def adapted(params: Params) -> list[Any]:
    """The parameters as the schema stores them."""
    # SQLite has no booleans: the families store flags as 0/1, and so does this schema. An
    # integer beyond 64 bits is refused as SQLite refuses it (PostgreSQL would compare it as
    # numeric and answer "no such row").
    values = []
    for value in params:
        if isinstance(value, bool):
            value = int(value)
        elif isinstance(value, int) and not -_INT64 <= value < _INT64:
            raise OverflowError(value)
        values.append(value)
    return values


def cursor(conn: Any) -> Any:
    """A cursor that sends a statement's text as it is (its marks are the server's own)."""
    import psycopg

    return psycopg.RawCursor(conn)


def run_many(conn: Any, sql: str, rows: Sequence[Params]) -> int:
    """``sql`` run once for each row of parameters (psycopg pipelines them): the rows
    changed."""
    values = [adapted(row) for row in rows]
    if not values:
        return 0
    text, marks = numbered(sql)  # once: the statement is the same for every row
    for row in values:
        _check(marks, row)
    with cursor(conn) as running:
        running.executemany(text, values)
        return int(running.rowcount)


def run(conn: Any, sql: str, params: Params) -> Any:
    """``sql`` (``?`` marks) run on ``conn``: the cursor, to read its rows."""
    values = adapted(params)
    return cursor(conn).execute(_sendable(sql, values), values)


def returning_ids(conn: Any, sql: str, rows: Sequence[Sequence[Any]]) -> list[int]:
    """:meth:`Tx.insert_returning_ids` on PostgreSQL: the rows in groups, a statement each
    (``store/row_groups.py``), all sent in one pipeline (one round trip to the server, not one
    a group), each returning its rows' ids, sorted into the rows' order."""
    if not rows:
        return []  # a pipeline's end is a round trip, even with nothing in it
    ids: list[int] = []
    with translated():
        sent = []
        with conn.pipeline():
            for statement, flat in row_groups.grouped(sql, [adapted(row) for row in rows]):
                sent.append(cursor(conn).execute(_sendable(statement, flat), flat))
        for done in sent:
            ids += sorted(int(row[0]) for row in done.fetchall())
            done.close()
    return ids


@contextmanager
def translated() -> Iterator[None]:
    """The driver's errors raised as recuerdo's (``convert``), and too large integers too."""
    import psycopg

    try:
        yield
    except OverflowError as exc:
        raise InvalidInput("a number is out of range (at most 64 bits)") from exc
    except psycopg.Error as exc:
        error = convert(exc)
        if error is exc:
            raise
        raise error from exc


WRITE_WAIT_MS = 30_000
"""How long a write waits for a lock before it is refused as busy: SQLite's busy timeout
(``sqlite/files.BUSY_TIMEOUT_MS``), so both backends give up alike."""


def convert(exc: Exception) -> Exception:
    """The named error for a database error (an integrity error stays itself: it is a bug)."""
    import psycopg
    from psycopg import errors

    if isinstance(exc, psycopg.IntegrityError):
        return exc
    if isinstance(exc, errors.DiskFull | errors.OutOfMemory):
        return StorageFull(
            "the database has no room: nothing was written, and the memory is as it was before "
            "this call. Free some space and try again."
        )
    if isinstance(exc, errors.NumericValueOutOfRange):
        return InvalidInput("a number is out of range (at most 64 bits)")
    if isinstance(exc, errors.LockNotAvailable):
        return StoreError(
            f"the memory is busy: another writer held it for {WRITE_WAIT_MS // 1000} s (it may"
            " have stopped mid-write); nothing was written, try again"
        )
    if isinstance(exc, errors.SerializationFailure | errors.DeadlockDetected):
        return StoreError(f"the memory is busy (the database asked to try again): {exc}")
    if isinstance(exc, psycopg.OperationalError):
        return StoreError(f"the database is unreachable: {exc}")
    return StoreError(f"the database refused the operation: {exc}")
