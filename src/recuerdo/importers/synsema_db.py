"""Reading a Synsema state file (``.synsema/state/<name>.db``, SQLite) as it is.

This reads another program's SQLite file, not a recuerdo store, so it asks SQLite itself what
the file holds (its table list and each table's columns) instead of assuming a schema: an
importer maps the tables and columns it recognises and reports the rest. The file is opened
read-only and never written.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ImportSourceInvalid

_MAGIC = b"SQLite format 3\x00"


@dataclass
class Table:
    name: str
    columns: list[str]
    rows: list[dict[str, Any]]


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def read_tables(path: Path) -> dict[str, Table]:
    """Every table of the file (by lower-case name), rows in the order they were written."""
    if not path.is_file():
        raise ImportSourceInvalid(
            f"{str(path)!r} is a folder: give the state file, .synsema/state/<name>.db"
        )
    with path.open("rb") as handle:
        if handle.read(len(_MAGIC)) != _MAGIC:
            raise ImportSourceInvalid(f"{str(path)!r} is not an SQLite file: not a Synsema state")
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise ImportSourceInvalid(f"{str(path)!r} cannot be opened read-only: {exc}") from exc
    connection.row_factory = sqlite3.Row
    try:
        names = [
            row["name"]
            for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'"
                " AND name NOT LIKE 'sqlite_%' ORDER BY name"
            )
        ]
        tables = {}
        for name in names:
            info = connection.execute(f"PRAGMA table_info({_quoted(name)})")
            columns = [row["name"] for row in info]
            tables[name.lower()] = Table(name, columns, _rows(connection, name))
    except sqlite3.Error as exc:
        raise ImportSourceInvalid(f"{str(path)!r} cannot be read as SQLite: {exc}") from exc
    finally:
        connection.close()
    return tables


def _rows(connection: sqlite3.Connection, name: str) -> list[dict[str, Any]]:
    try:
        cursor = connection.execute(f"SELECT * FROM {_quoted(name)} ORDER BY rowid")
    except sqlite3.OperationalError:  # a WITHOUT ROWID table has no write order to keep
        cursor = connection.execute(f"SELECT * FROM {_quoted(name)}")
    return [dict(row) for row in cursor]
