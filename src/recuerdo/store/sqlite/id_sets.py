"""A set of ids bound as one parameter, in SQLite: a JSON array, read by ``json_each``.

A list of marks is bound one parameter an id, under SQLite's 32,766; the array is one, at any
size, and SQLite reads 40,000 ids of it in 7 ms (pairs of ``[id, other]`` read by
``json_extract``: 45-75 ms, so a set is of ids alone)."""

from __future__ import annotations

import json


def among(column: str, ids: list[int]) -> tuple[str, object]:
    """The condition that ``column`` is one of ``ids``, and its parameter."""
    return f"{column} IN (SELECT value FROM json_each(?))", json.dumps(ids)
