"""Human-readable rendering of verb results for the CLI (``--json`` prints them as they are)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..model import exact

CELL_LIMIT = 80


def to_json(value: Any) -> str:
    return exact.dumps(value, ensure_ascii=False, indent=2)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, list | tuple):
        return ", ".join(_cell(item) for item in value)
    if isinstance(value, Mapping):
        return exact.dumps(value, ensure_ascii=False)
    return str(value).replace("\n", " ")


def table(rows: Sequence[Mapping[str, Any]]) -> str:
    """Rows as aligned columns; over-long cells are cut with '…' and the cut is announced."""
    columns: list[str] = []
    for row in rows:
        columns.extend(key for key in row if key not in columns)
    cut = False
    grid = [columns]
    for row in rows:
        cells = []
        for column in columns:
            text = _cell(row.get(column))
            if len(text) > CELL_LIMIT:
                text, cut = text[: CELL_LIMIT - 1] + "…", True
            cells.append(text)
        grid.append(cells)
    widths = [max(len(line[i]) for line in grid) for i in range(len(columns))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in grid
    ]
    if cut:
        lines.append(f"(cells cut at {CELL_LIMIT} characters; --json shows everything)")
    return "\n".join(lines)


def human(value: Any) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    if isinstance(value, Mapping):
        return _mapping(value)
    if isinstance(value, Sequence):
        if not value:
            return "(no results)"
        if all(isinstance(item, Mapping) for item in value):
            return table(value)
        return "\n".join(_cell(item) for item in value)
    return str(value)


def _mapping(value: Mapping[str, Any]) -> str:
    lines = []
    nested = []
    blocks = []
    for key, item in value.items():
        if isinstance(item, list) and item and all(isinstance(x, Mapping) for x in item):
            nested.append((key, item))
        elif isinstance(item, str) and "\n" in item:
            blocks.append((key, item))  # text for a person keeps its lines (summary's text)
        else:
            lines.append(f"{key}: {_cell(item)}")
    for key, rows in nested:
        lines.append(f"{key}:")
        lines.extend("  " + line for line in table(rows).splitlines())
    for key, text in blocks:
        lines.append(f"{key}:")
        lines.extend("  " + line for line in text.splitlines())
    return "\n".join(lines)
