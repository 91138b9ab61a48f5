"""The verb table: every operation of recuerdo, collected from the facade's methods.

A verb is written once: a method of a family's facade mixin, declared with ``@verb``
(:mod:`recuerdo.facade`). This module reads each such method of :class:`~recuerdo.engine.Memory`
and derives what the doors need: the typed parameters (a pydantic model from the signature), the
typed result (from the return annotation), the description and parameter docs (from the
docstring), and the family (from the package the method lives in). The CLI, HTTP and MCP doors
are generated from this table, so the Python API and every door cannot disagree.
"""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from .core.items import check_reach as check_reach  # the doors' check, in one place
from .core.text import check_text
from .engine import Memory
from .errors import (
    CapabilityNotGranted,
    InvalidInput,
    MemoryNotFound,
    RecuerdoError,
    StoreError,
    UnknownArgument,
)
from .facade import Mode, VerbSpec

# Every verb may meet these: bad arguments, a denied capability, an unreachable store.
COMMON_ERRORS: tuple[type[RecuerdoError], ...] = (InvalidInput, CapabilityNotGranted, StoreError)
# A read (or a write that makes no memory) names a memory that must exist.
READ_ERRORS: tuple[type[RecuerdoError], ...] = (MemoryNotFound,)


@dataclass(frozen=True)
class Verb:
    name: str
    family: str
    mode: Mode
    description: str
    params: type[BaseModel]
    result: Any
    errors: tuple[type[RecuerdoError], ...]
    arguments: tuple[str, ...] = ()
    """Parameters the CLI takes positionally, in order."""
    cli_names: Mapping[str, str] = field(default_factory=dict)
    """CLI option spellings that differ from the parameter name (``tags`` -> ``--tag``)."""
    destructive: bool = False
    method: str = ""
    cli_batch: str | None = None
    """A parameter the CLI accepts many times, calling the verb once for each (with progress)."""
    paths: Mapping[str, str] = field(default_factory=dict)
    """Parameters naming a local file -> the parameter carrying its bytes (base64) instead."""
    fails: Callable[[Any], bool] | None = None
    """Says of a result that the command failed (the CLI then exits 1)."""
    creates: bool = False
    """Whether a call may make the memory it names (a write, unless it only logs a check)."""
    unscoped: bool = False
    """It reaches nothing kept in a scope (see ``VerbSpec.unscoped``)."""

    def call(self, memory: Memory, arguments: Mapping[str, Any]) -> Any:
        """Validate door arguments (JSON names, e.g. ``from``) and run the verb."""
        try:
            parsed = self.params.model_validate(dict(arguments))
        except ValidationError as exc:
            unknown = [
                ".".join(str(part) for part in error["loc"])
                for error in exc.errors()
                if error["type"] == "extra_forbidden"
            ]
            if unknown:
                raise UnknownArgument(
                    f"{self.name} takes no argument {unknown[0]!r}; it takes: "
                    f"{', '.join(self.param_names(aliases=True))}",
                    argument=unknown[0],
                ) from exc
            raise InvalidInput(f"{self.name}: {_describe(exc)}") from exc
        kwargs = {name: getattr(parsed, name) for name in parsed.model_fields_set}
        return getattr(memory, self.method)(**kwargs)

    def param_names(self, *, aliases: bool = False) -> list[str]:
        """The parameters, by their Python names (or as doors spell them: ``from``)."""
        fields = self.params.model_fields
        return [(info.alias or name) if aliases else name for name, info in fields.items()]


def _describe(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)


_ARG_LINE = re.compile(r"^(\w+):\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """(description, {parameter: doc}) from a docstring: the text before ``Args:``, its
    paragraphs' lines joined; then one ``name: text`` entry a parameter, continued on deeper
    indented lines."""
    text = inspect.cleandoc(doc or "")
    head, _, args = text.partition("\nArgs:\n")
    paragraphs = [" ".join(part.split()) for part in re.split(r"\n\s*\n", head.strip())]
    description = "\n\n".join(p for p in paragraphs if p)
    docs: dict[str, str] = {}
    current: str | None = None
    for line in args.splitlines():
        entry = line.startswith("    ") and not line.startswith("     ")
        found = _ARG_LINE.match(line.strip()) if entry else None
        if found:
            current = found.group(1)
            docs[current] = found.group(2).strip()
        elif current is not None and line.strip():
            docs[current] += " " + line.strip()
    return description, docs


def _params_model(
    verb_name: str, method: Any, docs: Mapping[str, str], enums: Mapping[str, tuple[str, ...]]
) -> tuple[type[BaseModel], Any]:
    hints = get_type_hints(method)
    fields: dict[str, Any] = {}
    for name, parameter in inspect.signature(method).parameters.items():
        if name == "self":
            continue
        alias = name.rstrip("_") if name.endswith("_") else None
        extra: dict[str, Any] | None = {"enum": list(enums[name])} if name in enums else None
        default = ... if parameter.default is inspect.Parameter.empty else parameter.default
        fields[name] = (
            hints[name],
            Field(default, alias=alias, description=docs.get(name), json_schema_extra=extra),
        )
    title = "".join(part.capitalize() for part in verb_name.split("_")) + "Params"
    # Strict: a door's JSON is taken as it is typed (true is not the id 1, "5" is not 5).
    config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
        arbitrary_types_allowed=True,
        strict=True,
        # Built at first validation: every process (each CLI call) imports all 81 verbs and
        # uses one or two, and building them all cost about half of the verb table's import.
        defer_build=True,
    )
    model = create_model(title, __config__=config, **fields)
    return model, hints.get("return")


def _family(method: Any) -> str:
    """A facade module may name its family (``FAMILY``); else its package names it."""
    module = sys.modules[method.__module__]
    return str(getattr(module, "FAMILY", method.__module__.split(".")[-2]))


def check_door_text(arguments: Mapping[str, Any]) -> None:
    """What every door checks first: no argument holds text a store cannot keep."""
    check_text(arguments)


class VerbTable:
    def __init__(self) -> None:
        self._verbs: dict[str, Verb] = {}

    def add_method(self, method_name: str, method: Any, spec: VerbSpec) -> None:
        name = spec.name or method_name
        creates = spec.mode == "write" and spec.creates
        if name in self._verbs:
            raise ValueError(f"verb {name!r} is defined twice")
        description, docs = parse_docstring(method.__doc__)
        if not description:
            raise ValueError(f"verb {name!r} has no description (its method's docstring)")
        params, result = _params_model(name, inspect.unwrap(method), docs, spec.enums)
        undocumented = [p for p in params.model_fields if p not in docs]
        if undocumented:
            raise ValueError(f"verb {name!r}: parameters {undocumented} are not documented")
        missing = [arg for arg in spec.arguments if arg not in params.model_fields]
        if missing:
            raise ValueError(f"verb {name!r}: CLI arguments {missing} are not parameters")
        if spec.unscoped and "scope" in params.model_fields:
            raise ValueError(f"verb {name!r} takes a scope, so it reaches what scopes keep")
        self._verbs[name] = Verb(
            name=name,
            family=_family(method),
            mode=spec.mode,
            description=description,
            params=params,
            result=result,
            errors=COMMON_ERRORS + (() if creates else READ_ERRORS) + spec.errors,
            arguments=spec.arguments,
            cli_names=dict(spec.cli_names),
            destructive=spec.destructive,
            method=method_name,
            cli_batch=spec.cli_batch,
            paths=dict(spec.paths),
            fails=spec.fails,
            creates=creates,
            unscoped=spec.unscoped,
        )

    def __getitem__(self, name: str) -> Verb:
        return self._verbs[name]

    def __contains__(self, name: object) -> bool:
        return name in self._verbs

    def __iter__(self) -> Iterator[Verb]:
        return iter(self._verbs.values())

    def __len__(self) -> int:
        return len(self._verbs)

    def names(self) -> list[str]:
        return list(self._verbs)


def collect(cls: type) -> VerbTable:
    """Every ``@verb`` method of ``cls``, in the order of its mixins and their definitions."""
    table = VerbTable()
    for base in cls.__mro__:  # cls first, then its mixins in order
        for method_name, member in vars(base).items():
            spec = getattr(member, "__verb__", None)
            if isinstance(spec, VerbSpec) and (spec.name or method_name) not in table:
                table.add_method(method_name, member, spec)
    return table


VERBS = collect(Memory)
