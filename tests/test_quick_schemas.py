"""The MCP door publishes each outputSchema in the shape a client checks fastest
(``schemas.quick_to_check``): definitions inlined, ``X | None`` as a type list. It must accept
and refuse exactly what the schema pydantic writes does: real replies are checked as they
are, and changed every way a field can go wrong (null, another type, missing, unknown)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

import recuerdo
from recuerdo.doors import gateway, schemas
from recuerdo.doors.mcp import _reply
from recuerdo.doors.profiles import PROFILES, profile
from recuerdo.security.tokens import LOCAL

CALLS = [
    ("search", {"query": "painting sunset", "limit": 5}),
    ("recall", {"search": "painting"}),
    ("get", {"id": 1}),
    ("index_status", {}),
    ("list_notes", {}),
    ("review", {}),
]


def _variants(value: Any) -> Iterator[Any]:
    """``value`` with one thing changed, at every place in it."""
    if isinstance(value, dict):
        for key in list(value):
            for change in (None, 7, "x", [], {}):
                yield {**value, key: change}
            yield {k: v for k, v in value.items() if k != key}
            for inner in _variants(value[key]):
                yield {**value, key: inner}
        yield {**value, "unknown_field": 1}
    elif isinstance(value, list) and value:
        for inner in _variants(value[0]):
            yield [inner, *copy.deepcopy(value[1:])]
        yield [*value, 7]


@pytest.fixture
def replies(tmp_path: Path) -> dict[str, Any]:
    with recuerdo.open("quick", base_dir=tmp_path, embedder="none") as memory:
        memory.save(title="Melanie", content="Melanie finished a painting of a sunset.")
        memory.save(title="Caroline", content="Caroline went to a support group.")
        memory.remember("preference", "Prefers painting outdoors")
    pool = gateway.MemoryPool(tmp_path, "quick")
    tools = {entry.name: entry for entry in profile("native")}
    found = {}
    for name, arguments in CALLS:
        entry = tools[name]
        value = gateway.call(pool, LOCAL, "quick", entry, arguments)
        found[name] = _reply(value, schemas.wraps(schemas.tool_output_schema(entry)))[
            "structuredContent"
        ]
    pool.close()
    return found


@pytest.mark.parametrize(("name", "arguments"), CALLS)
def test_the_quick_schema_accepts_and_refuses_what_the_written_one_does(
    replies: dict[str, Any], name: str, arguments: dict[str, Any]
) -> None:
    entry = {e.name: e for e in profile("native")}[name]
    written = schemas.tool_output_schema(entry)
    quick = schemas.quick_to_check(written)
    assert "$defs" not in quick and '"$ref"' not in repr(quick)
    slow, fast = Draft202012Validator(written), Draft202012Validator(quick)
    reply = replies[name]
    assert slow.is_valid(reply) and fast.is_valid(reply)
    checked = refused = 0
    for variant in _variants(reply):
        assert fast.is_valid(variant) is slow.is_valid(variant), variant
        checked += 1
        refused += not slow.is_valid(variant)
    assert refused > 0 and checked > refused  # both ways were tried


@pytest.mark.parametrize("name", PROFILES)
def test_every_quick_schema_is_a_valid_object_schema(name: str) -> None:
    for entry in profile(name):
        quick = schemas.quick_to_check(schemas.tool_output_schema(entry))
        Draft202012Validator.check_schema(quick)
        assert quick["type"] == "object", entry.name


def test_a_definition_that_refers_to_itself_is_left_as_it_is() -> None:
    tree = {
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/Node"}},
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
            }
        },
    }
    assert schemas.quick_to_check(tree) is tree
