"""Rows inserted several to a statement, the statements few and reused (both backends).

An insert of many rows, one statement a row, paid each statement's own work every row: on
SQLite 10 us an entry of a bulk load in calls alone; on PostgreSQL an executor started, and
every statement-level trigger run (the tallies, decision 0057), once a row. So the rows go in
groups of :data:`ROW_GROUPS` sizes, one statement each: three sizes, so that SQLite's
statements are ones the connection has prepared before (preparing a 99-row one cost 0.5 ms).

The rows of one ``INSERT`` are inserted in the order of its ``VALUES``, each given the next id,
so their ids ascend in that order; ``RETURNING`` lists them in no promised order: sorted, they
are the rows' ids in turn. Both engines insert a ``VALUES`` list in its order (neither
documents it as a promise), and the ids are drawn from the table's own counter, never given by
the caller. A PostgreSQL session's identity values only ever rise, whatever other sessions
draw in between.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

ROW_GROUPS = (100, 10, 1)


def grouped(sql: str, rows: Sequence[Sequence[Any]]) -> Iterator[tuple[str, list[Any]]]:
    """(statement, its parameters) for ``rows`` inserted by ``sql`` (``INSERT INTO t (...)
    VALUES (one row) RETURNING x``), a group of rows a statement."""
    head, values_at, rest = sql.partition(" VALUES ")
    values, returning_at, returning = rest.rpartition(" RETURNING ")
    if not values_at or not returning_at or not values.startswith("("):
        raise ValueError(f"not an INSERT of one row with RETURNING: {sql}")
    first = 0
    while first < len(rows):
        size = next(size for size in ROW_GROUPS if size <= len(rows) - first)
        statement = f"{head} VALUES {', '.join([values] * size)} RETURNING {returning}"
        yield statement, [value for row in rows[first : first + size] for value in row]
        first += size
