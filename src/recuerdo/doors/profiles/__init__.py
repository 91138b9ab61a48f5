"""Compatibility profiles: another system's tool names and argument shapes over the same verbs.

A profile is a thin mapping: for each of its tools, the native verb it calls, its parameters
(JSON schema), a function that renames and defaults arguments and, when the profile shows
replies in its own shape, a ``present`` step with the type (or schema) of what it presents. No
behaviour lives here; verbs of families not built yet are absent, not stubs. A profile module's
``INSTRUCTIONS`` are added to the MCP server's instructions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...verbs import VERBS

if TYPE_CHECKING:
    from ...engine import Memory

Translate = Callable[[dict[str, Any]], dict[str, Any]]
Present = Callable[[Any, "Memory"], Any]
"""A verb's reply, and the memory (view) that gave it -> the reply as the profile shows it."""


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
    present: Present | None = None
    """Reshapes the verb's reply for this profile (the gateway applies it); None: as it is."""
    reply_schema: Callable[[], dict[str, Any]] | None = None
    """The JSON schema of the reply as ``present`` shows it (None: the verb's typed result)."""
    output: Any = None
    """The type of the reply as ``present`` shows it (a TypedDict declared beside the tool
    map), when it is not the verb's result type and no ``reply_schema`` is given."""
    scopes_of_its_own: Callable[[dict[str, Any]], bool] | None = None
    """Whether, for these arguments, the list of scopes ``translate`` gives is the tool's own
    reading of a call that named no scope (Engram's project named alone reads the project's
    scope and ``user``). A token limited to scopes then reads those of the list it reaches,
    and the reply names the others (``scopes_out_of_reach``): it is not refused for scopes it
    never asked for (decision 0173). None: every scope given is the caller's, checked whole."""

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
