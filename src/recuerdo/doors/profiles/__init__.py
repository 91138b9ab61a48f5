"""Compatibility profiles: another system's tool names and argument shapes over the same verbs.

A profile is a thin mapping: for each of its tools, the native verb it calls, its parameters
(JSON schema), a function that renames and defaults arguments and, when the system's replies
differ from ours, one that reshapes the reply (with the reply's type, published as the tool's
output schema). No behaviour lives here; verbs of families not built yet are absent, not stubs.
A profile module's ``INSTRUCTIONS`` are added to the MCP server's instructions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...verbs import VERBS

Translate = Callable[[dict[str, Any]], dict[str, Any]]
Reshape = Callable[[Any], Any]


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
    reply: Reshape | None = None
    """Reshapes the verb's result into this tool's reply."""
    output: Any = None
    """The reply's type when ``reply`` changes it beyond the verb's result type (a TypedDict
    declared beside the tool map); by default the verb's."""

    @property
    def result(self) -> Any:
        """The type of this tool's reply (published as its output schema)."""
        return self.output if self.output is not None else VERBS[self.verb].result


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


def instructions(name: str) -> str:
    """What a profile adds to the server's instructions (its extensions), or nothing."""
    from . import engram, notarium, semurg

    modules = {"engram": engram, "semurg": semurg, "notarium": notarium}
    return str(getattr(modules.get(name), "INSTRUCTIONS", ""))


PROFILES = ("native", "engram", "semurg", "notarium")
