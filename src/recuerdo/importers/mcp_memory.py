"""The JSON Lines file of the reference MCP memory server (``@modelcontextprotocol/server-memory``).

Each line is ``{"type": "entity", "name", "entityType", "observations": [...]}`` or
``{"type": "relation", "from", "to", "relationType"}``. Everything goes into knowledge, in one
scope (``user`` unless told otherwise):

- an entity becomes an entity of that type;
- each of its observations becomes a passage ``<name>: <observation>`` that mentions it (so
  ``about(name)`` cites it), one per remember_knowledge call, so an observation added to the
  file later is added alone and the others are recognised as already stored;
- a relation becomes a fact ``from -relationType-> to``.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ImportSourceInvalid
from .common import Outcome, Tally, chunks, remember, remember_relations

if TYPE_CHECKING:
    from ..engine import Memory

KIND = "mcp-memory"
DEFAULT_ORIGIN = "mcp-memory"
DEFAULT_SCOPE = "user"
RELATIONS_PER_CALL = 1000


def load(path: Path) -> list[tuple[int, Any]]:
    """(line number, record) for every non-blank line; the file is refused whole when a line
    is not JSON (then it is not the server's file)."""
    if not path.is_file():
        raise ImportSourceInvalid(
            f"{str(path)!r} is a folder: give the server's memory file (MEMORY_FILE_PATH, "
            "memory.jsonl by default)"
        )
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise ImportSourceInvalid(f"{str(path)!r} is not UTF-8 text: {exc}") from exc
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            records.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise ImportSourceInvalid(
                f"{str(path)!r} line {number} is not JSON ({exc.msg}): not an MCP memory file"
            ) from exc
        except RecursionError as exc:  # JSON nested deeper than Python's parser goes
            raise ImportSourceInvalid(
                f"{str(path)!r} line {number} is JSON nested too deep to read: not an MCP "
                "memory file"
            ) from exc
    if records and not any(
        isinstance(record, dict) and record.get("type") in ("entity", "relation")
        for _, record in records
    ):
        raise ImportSourceInvalid(
            f"{str(path)!r} holds no entity or relation line: not an MCP memory file"
        )
    return records


def run(memory: Memory, path: Path, *, origin: str | None, scope: str | None) -> Tally:
    records = load(path)
    label = origin or DEFAULT_ORIGIN
    where = scope or DEFAULT_SCOPE
    tally = Tally(KIND, str(path), label, memory.name)
    tally.expect("entities", "observations", "relations")
    writer = memory.agent(f"import:{KIND}")
    relations: list[tuple[str, dict[str, Any]]] = []
    for number, record in records:
        kind = record.get("type") if isinstance(record, dict) else None
        if kind == "entity":
            _entity(writer, tally, number, record, label, where)
        elif kind == "relation":
            relation = _relation(tally, number, record)
            if relation is not None:
                relations.append((f"line {number}", relation))
        else:
            tally.skip("lines", f"line {number}", f"not an entity or a relation (type {kind!r})")
    for batch in chunks(relations, RELATIONS_PER_CALL):
        remember_relations(writer, tally, "relations", batch, source=label, scope=where)
    tally.kept_as("entities.observations", "passages '<name>: <observation>' mentioning it")
    tally.kept_as("relations.relationType", "the fact's type, lower-case with _ for spaces")
    return tally


def _entity(
    writer: Memory, tally: Tally, number: int, record: dict[str, Any], origin: str, scope: str
) -> None:
    name = record.get("name")
    ref = f"line {number}"
    if not isinstance(name, str) or not name.strip():
        tally.skip("entities", ref, "an entity needs a name")
        return
    observations = record.get("observations") or []
    if not isinstance(observations, list):
        observations = [observations]
    entity: dict[str, Any] = {"name": name}
    kind = record.get("entityType")
    if isinstance(kind, str) and kind.strip():
        entity["type"] = kind

    def write() -> Outcome:
        reply = writer.remember_knowledge(facts={"entities": [entity]}, source=origin, scope=scope)
        if reply["outcome"] == "already":
            return "unchanged"
        return "imported" if reply["entities_created"] else "updated"

    tally.attempt("entities", f"{ref} ({name})", write)
    for index, observation in enumerate(observations):
        where = f"{ref} ({name}) observation {index + 1}"
        if not isinstance(observation, str) or not observation.strip():
            tally.skip("observations", where, "an observation is non-empty text")
            continue
        passage = {"text": f"{name}: {observation}", "mentions": [name]}
        tally.attempt(
            "observations",
            where,
            partial(remember, writer, passages=[passage], source=origin, scope=scope),
        )


def _relation(tally: Tally, number: int, record: dict[str, Any]) -> dict[str, Any] | None:
    ends = [record.get("from"), record.get("to"), record.get("relationType")]
    if not all(isinstance(end, str) and end.strip() for end in ends):
        tally.skip("relations", f"line {number}", "a relation needs from, to and relationType")
        return None
    return {"source": ends[0], "target": ends[1], "type": ends[2]}
