"""Rows read from PostgreSQL, shaped as the SQLite store's rows are."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any


class PGRow:
    """A row read by key or by position, like ``sqlite3.Row`` (iterating gives the values)."""

    __slots__ = ("_index", "_values")

    def __init__(self, index: dict[str, int], values: Sequence[Any]) -> None:
        self._index = index
        self._values = values

    def __getitem__(self, key: int | str) -> Any:
        if isinstance(key, int):
            return self._values[key]
        return self._values[self._index[key]]

    def keys(self) -> list[str]:
        return list(self._index)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PGRow):
            return NotImplemented
        return self._index == other._index and list(self._values) == list(other._values)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PGRow({dict(zip(self._index, self._values, strict=True))!r})"


def row_factory(cursor: Any) -> Any:
    description = cursor.description
    if description is None:
        return tuple
    index = {column.name: position for position, column in enumerate(description)}

    def make(values: Sequence[Any]) -> PGRow:
        return PGRow(index, values)

    return make


def register_types(conn: Any) -> None:
    """Numbers read as Python numbers, as SQLite gives them."""
    from psycopg.adapt import Loader

    class WholeOrFraction(Loader):
        # sum() and avg() of integers are numeric in PostgreSQL: give Python numbers back, as
        # SQLite does, instead of Decimal.
        def load(self, data: Any) -> Any:
            text = bytes(data).decode()
            if "." in text or "e" in text.lower() or text in ("NaN", "Infinity", "-Infinity"):
                return float(text)
            return int(text)

    conn.adapters.register_loader("numeric", WholeOrFraction)
