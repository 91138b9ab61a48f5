"""The narrow storage protocol every backend implements.

The families (entries, plans, rules, ...) speak portable SQL through a :class:`Tx`; a backend
supplies transactions, the dialect name (for the few statements that differ, such as the
substring index) and its migrations. Keeping the surface this small is what lets a PostgreSQL
store, or a fake, stand in for the embedded SQLite one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

Row = Mapping[str, Any]
Params = Sequence[Any]


class Tx(Protocol):
    """One open transaction. Statements use ``?`` placeholders."""

    def execute(self, sql: str, params: Params = ()) -> int:
        """Run a statement; return the number of rows it changed."""

    def executemany(self, sql: str, rows: Sequence[Params]) -> int:
        """Run one statement for each parameter row; return the rows changed."""

    def one(self, sql: str, params: Params = ()) -> Row | None:
        """The first row of a query, or ``None``."""

    def all(self, sql: str, params: Params = ()) -> list[Row]:
        """Every row of a query."""

    def scalar(self, sql: str, params: Params = ()) -> Any:
        """The first column of the first row, or ``None``."""

    def iterate(self, sql: str, params: Params = ()) -> Iterator[Row]:
        """Rows one at a time, for large reads."""


class Store(Protocol):
    """A memory's durable state: one per declared name."""

    dialect: str
    """``"sqlite"`` or ``"postgres"``: which SQL variant the few non-portable statements use."""

    location: str
    """Where the state lives (a file path, ``:memory:`` or a connection URL without secrets)."""

    def read(self) -> AbstractContextManager[Tx]:
        """A consistent snapshot for reading."""

    def write(self) -> AbstractContextManager[Tx]:
        """A write transaction: committed (durably) when the block exits normally, rolled back
        when it raises. Nested calls in one thread join the outer transaction."""

    def checkpoint(self) -> None:
        """Fold the write-ahead log into the main file and truncate it (after a forget, so
        no old page image keeps forgotten words)."""

    def close(self) -> None:
        """Release connections; the state stays on disk."""


_IDS_PER_QUERY = 10_000  # bound parameters, well under SQLite's limit


def rows_by_id(
    tx: Tx, select: str, ids: Iterable[int], *, where: str = "", params: Params = ()
) -> dict[int, Row]:
    """``{id: row}`` for ``select`` (``SELECT ... FROM table``, whose rows have an ``id``)
    restricted to ``ids`` and to the extra condition ``where`` (with ``params``)."""
    wanted = sorted(set(ids))
    found: dict[int, Row] = {}
    for first in range(0, len(wanted), _IDS_PER_QUERY):
        part = wanted[first : first + _IDS_PER_QUERY]
        marks = ",".join("?" * len(part))
        condition = f" AND ({where})" if where else ""
        for row in tx.all(f"{select} WHERE id IN ({marks}){condition}", [*part, *params]):
            found[row["id"]] = row
    return found
