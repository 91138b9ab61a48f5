"""A set of ids as one parameter of a statement, whatever its size, in either backend."""

from __future__ import annotations

from .postgres import id_sets as postgres_sets
from .sqlite import id_sets as sqlite_sets


def among(dialect: str, column: str, ids: list[int]) -> tuple[str, object]:
    """The condition that ``column`` is one of ``ids``, and its one parameter. One id is
    compared as such: the planner then reads the rows of that one key in the order of its
    index (a page of a hub's links stops at its limit)."""
    if len(ids) == 1:
        return f"{column} = ?", ids[0]
    if dialect == "postgres":
        return postgres_sets.among(column, ids)
    return sqlite_sets.among(column, ids)
