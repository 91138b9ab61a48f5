"""Compatibility profiles: another system's tool names and argument shapes over the same verbs.

A profile is a thin mapping: for each of its tools, the native verb it calls, its parameters
(JSON schema) and a function that renames and defaults arguments. No behaviour lives here;
verbs of families not built yet are absent, not stubs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...verbs import VERBS

Translate = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class ToolMap:
    name: str
    verb: str
    description: str
    schema: dict[str, Any]
    translate: Translate = field(default=lambda args: args)
    read_only: bool = False
    destructive: bool = False
    http_path: str | None = None
    native: bool = False
    """A native verb as it is (its arguments are checked by the verb table); a profile's tool
    is checked against its own schema first, then translated."""


def prop(kind: str, description: str, **extra: Any) -> dict[str, Any]:
    return {"type": kind, "description": description, **extra}


def schema(
    properties: dict[str, dict[str, Any]],
    required: list[str] | None = None,
) -> dict[str, Any]:
    shape: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        shape["required"] = required
    return shape


def drop_none(args: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in args.items() if value is not None}


def native() -> list[ToolMap]:
    return [
        ToolMap(
            name=verb.name,
            verb=verb.name,
            description=verb.description,
            schema=verb.params.model_json_schema(by_alias=True),
            read_only=verb.mode == "read",
            destructive=verb.destructive,
            native=True,
        )
        for verb in VERBS
    ]


def profile(name: str) -> list[ToolMap]:
    from . import engram, notarium, semurg

    tables = {
        "native": native,
        "engram": engram.tools,
        "semurg": semurg.tools,
        "notarium": notarium.tools,
    }
    if name not in tables:
        raise ValueError(f"unknown profile {name!r}; profiles: {', '.join(tables)}")
    return tables[name]()


PROFILES = ("native", "engram", "semurg", "notarium")
