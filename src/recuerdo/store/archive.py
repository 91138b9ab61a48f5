"""Whole-memory backup and restore: one portable archive of every table a memory keeps.

The archive is gzip-compressed JSON Lines:

* a header: ``{"format": "recuerdo-backup", "version": 1, "schema": [step names], "tables":
  {table: rows}, "sequences": {table: next id floor}, "created_at": ...}``;
* one line per row: ``{"t": table, "r": {column: value}}``; bytes are ``{"$b": base64}``;
* a trailer: ``{"end": true, "rows": n}`` (an archive cut short is refused, never half read).

Tables are listed by the backend (what its schema holds, less the indexes it derives, such as
the full-text tables), so an archive holds the memory whole: entries, rules, plans, notes with
every revision, conversations, knowledge with its history, links, settings, mutes, sessions,
code, messaging, the audit. Rows are portable SQL values, so an archive written by one backend
restores into another whose schema has the same steps.

A restore writes into a new store brought to exactly the archive's steps, loads the rows parent
tables first, carries the id sequences over (no id is ever given out twice), then applies the
steps the archive is older than.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any, Protocol

from ..errors import InvalidInput, StoreTooNew
from .base import Tx

DERIVED = frozenset({"retrieval_audit_items"})
"""Tables an archive written before decision 0192 may hold that every backend now derives from
other rows, as it does its full-text indexes: no archive holds them, a restore skips their
rows, and the backend makes them again where its schema keeps them (``after_restore``). The
rows saying which items each audit record returned are its ``returned`` list again; a SQLite
store at step m051 and later finds them through a full-text index instead."""
FORMAT = "recuerdo-backup"
VERSION = 1
BATCH = 2000
Progress = Callable[[int, int], None]
"""Told (rows done, rows in all) as the work goes."""


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[str, ...]
    parents: tuple[str, ...] = ()
    """Tables this one's foreign keys point at (loaded first)."""
    order_by: str = ""


@dataclass
class Header:
    schema: list[str]
    tables: dict[str, int]
    sequences: dict[str, int] = field(default_factory=dict)
    created_at: str = ""
    memory: str = ""


class Describes(Protocol):
    """What a backend tells the archive about its store."""

    def tables(self, tx: Tx) -> list[Table]: ...

    def sequences(self, tx: Tx) -> dict[str, int]: ...

    def set_sequences(self, tx: Tx, values: dict[str, int]) -> None: ...

    def after_restore(self, tx: Tx) -> None: ...


def _encode(value: Any) -> Any:
    if isinstance(value, bytes | memoryview):
        return {"$b": base64.b64encode(bytes(value)).decode("ascii")}
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"$b"}:
        return base64.b64decode(value["$b"])
    return value


def ordered(tables: list[Table]) -> list[Table]:
    """Parents before children (a table's foreign keys point at tables already loaded)."""
    by_name = {table.name: table for table in tables}
    done: list[Table] = []
    seen: set[str] = set()

    def visit(table: Table, path: frozenset[str]) -> None:
        if table.name in seen:
            return
        for parent in table.parents:
            if parent in by_name and parent not in path and parent != table.name:
                visit(by_name[parent], path | {table.name})
        seen.add(table.name)
        done.append(table)

    for table in tables:
        visit(table, frozenset())
    return done


def write(
    tx: Tx,
    backend: Describes,
    out: IO[bytes],
    *,
    schema: list[str],
    memory: str,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Write the archive of the store ``tx`` reads (one consistent snapshot) to ``out``."""
    tables = ordered(backend.tables(tx))
    counts = {t.name: int(tx.scalar(f'SELECT count(*) FROM "{t.name}"')) for t in tables}
    total = sum(counts.values())
    header = {
        "format": FORMAT,
        "version": VERSION,
        "memory": memory,
        "schema": schema,
        "tables": counts,
        "sequences": backend.sequences(tx),
        "created_at": datetime.now(UTC).isoformat(),
    }
    written = 0
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=6, mtime=0) as archive:
        archive.write(_line(header))
        for table in tables:
            listed = ", ".join(f'"{c}"' for c in table.columns)
            order = f" ORDER BY {table.order_by}" if table.order_by else ""
            for row in tx.iterate(f'SELECT {listed} FROM "{table.name}"{order}'):
                record = {c: _encode(row[c]) for c in table.columns}
                archive.write(_line({"t": table.name, "r": record}))
                written += 1
                if progress is not None and written % BATCH == 0:
                    progress(written, total)
        archive.write(_line({"end": True, "rows": written}))
    if progress is not None:
        progress(written, total)
    return {"rows": written, "tables": counts}


def _line(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def read_header(path: str | os.PathLike[str]) -> Header:
    try:
        with gzip.open(path, "rb") as archive:
            first = archive.readline()
    except FileNotFoundError as exc:
        raise InvalidInput(f"no backup at {str(path)!r}") from exc
    except (OSError, EOFError) as exc:  # not gzip (BadGzipFile), cut short, unreadable
        raise InvalidInput(f"not a readable recuerdo backup: {path} ({exc})") from exc
    return _header(first)


def _header(line: bytes) -> Header:
    try:
        value = json.loads(line)
    except ValueError as exc:
        raise InvalidInput("not a recuerdo backup: its first line is not JSON") from exc
    if not isinstance(value, dict) or value.get("format") != FORMAT:
        raise InvalidInput("not a recuerdo backup (no recuerdo-backup header)")
    if value.get("version") != VERSION:
        raise InvalidInput(
            f"a backup of format version {value.get('version')}; this reads {VERSION}"
        )
    return Header(
        schema=list(value["schema"]),
        tables=dict(value["tables"]),
        sequences=dict(value.get("sequences", {})),
        created_at=str(value.get("created_at", "")),
        memory=str(value.get("memory", "")),
    )


def check_schema(header: Header, known: list[str]) -> None:
    """The archive's steps must be a beginning of this version's (a newer archive is refused)."""
    if header.schema != known[: len(header.schema)]:
        unknown = [step for step in header.schema if step not in known]
        raise StoreTooNew(
            f"the backup was written by a newer recuerdo: its schema has "
            f"{len(header.schema)} steps"
            + (f" ({', '.join(unknown)} unknown here)" if unknown else " in another order")
            + f", this recuerdo knows {len(known)}; upgrade recuerdo to restore it",
            store_version=len(header.schema),
            supported_version=len(known),
        )


def rows(path: str | os.PathLike[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The archive's rows, checked: a cut archive (no trailer, or fewer rows) is refused."""
    seen = 0
    ended = False
    with gzip.open(path, "rb") as archive:
        _header(archive.readline())
        try:
            for line in archive:
                value = json.loads(line)
                if value.get("end"):
                    ended = True
                    if value.get("rows") != seen:
                        raise InvalidInput(
                            f"the backup says {value.get('rows')} rows but holds {seen}"
                        )
                    break
                seen += 1
                yield value["t"], {k: _decode(v) for k, v in value["r"].items()}
        except (EOFError, OSError, ValueError) as exc:
            if isinstance(exc, InvalidInput):
                raise
            raise InvalidInput(f"the backup is damaged or cut short ({exc})") from exc
    if not ended:
        raise InvalidInput("the backup is cut short: it has no end record (nothing was restored)")


def load(
    tx: Tx,
    backend: Describes,
    path: str | os.PathLike[str],
    header: Header,
    *,
    progress: Progress | None = None,
) -> int:
    """Insert every row of the archive into the (new, empty) store ``tx`` writes."""
    listed_tables = ordered(backend.tables(tx))
    tables = {t.name: t for t in listed_tables}
    for table in reversed(listed_tables):  # what the new schema seeded (index marks) gives way
        tx.execute(f'DELETE FROM "{table.name}"')
    total = sum(header.tables.values())
    pending: dict[str, list[dict[str, Any]]] = {}
    loaded = 0

    def flush(name: str) -> None:
        nonlocal loaded
        batch = pending.pop(name, [])
        if not batch:
            return
        table = tables[name]
        columns = [c for c in table.columns if c in batch[0]]
        listed = ", ".join(f'"{c}"' for c in columns)
        marks = ", ".join("?" * len(columns))
        tx.executemany(
            f'INSERT INTO "{name}" ({listed}) VALUES ({marks})',
            [tuple(row.get(c) for c in columns) for row in batch],
        )
        loaded += len(batch)
        if progress is not None:
            progress(loaded, total)

    current = None
    for name, row in rows(path):
        if name in DERIVED:
            continue
        if name not in tables:
            raise InvalidInput(f"the backup holds a table this schema does not: {name}")
        if name != current and current is not None:
            flush(current)
        current = name
        pending.setdefault(name, []).append(row)
        if len(pending[name]) >= BATCH:
            flush(name)
    if current is not None:
        flush(current)
    backend.set_sequences(tx, header.sequences)
    backend.after_restore(tx)
    return loaded


def table_names(tables: Iterable[Table]) -> list[str]:
    return [table.name for table in tables]
