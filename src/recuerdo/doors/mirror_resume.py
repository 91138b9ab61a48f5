"""What ``recuerdo mirror resume`` makes of the two copies of a document: which side holds what,
and the next open task (kept apart from the mirror's sync commands, which it does not touch)."""

from __future__ import annotations

import difflib
import re
from typing import Any

from . import render

_TASK = re.compile(r"^\s*[-*]\s*\[ \]\s*(.+)$", re.MULTILINE)


def _next_task(text: str) -> str | None:
    found = _TASK.search(text)
    return found.group(1).strip() if found else None


def reconcile(local: str | None, memory: str | None) -> dict[str, Any]:
    if local is None and memory is None:
        return {"state": "missing", "detail": "neither a local file nor a memory copy: nothing "
                "to resume (reported, not assumed)", "next_task": None}  # fmt: skip
    if local is None or memory is None:
        where = "memory" if local is None else "the local file"
        text = memory if local is None else local
        return {"state": "one_side", "detail": f"only {where} holds the document",
                "next_task": _next_task(text or "")}  # fmt: skip
    if local == memory:
        return {"state": "in_sync", "next_task": _next_task(local)}
    diff = list(difflib.unified_diff(memory.splitlines(), local.splitlines(), lineterm="", n=0))[
        2:
    ]  # past the two file header lines
    return {
        "state": "differs",
        "lines_only_in_local": [line[1:] for line in diff if line.startswith("+")],
        "lines_only_in_memory": [line[1:] for line in diff if line.startswith("-")],
        "next_task": _next_task(local),
    }


def resume_text(report: dict[str, Any]) -> str:
    parts = []
    for step, value in report.items():
        parts.append(f"## {step[2:].replace('_', ' ')}")
        parts.append(value if isinstance(value, str) else render.to_json(value))
    return "\n".join(parts)
