"""The verb table: every operation of recuerdo, defined once.

A :class:`Verb` names a :class:`~recuerdo.engine.Memory` method and adds what the doors need:
read or write, a description written for a model choosing a tool, the errors it may raise, and
how the CLI spells its parameters. Typed parameters (a pydantic model) and the typed result are
derived from the method's signature, so the Python API and every door cannot disagree.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from .engine import Memory
from .errors import (
    CapabilityNotGranted,
    InvalidInput,
    RecuerdoError,
    StoreError,
)

Mode = Literal["read", "write"]
# Every verb may meet these: bad arguments, a denied capability, an unreachable store.
COMMON_ERRORS: tuple[type[RecuerdoError], ...] = (InvalidInput, CapabilityNotGranted, StoreError)


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

    def call(self, memory: Memory, arguments: Mapping[str, Any]) -> Any:
        """Validate door arguments (JSON names, e.g. ``from``) and run the verb."""
        try:
            parsed = self.params.model_validate(dict(arguments))
        except ValidationError as exc:
            raise InvalidInput(f"{self.name}: {_describe(exc)}") from exc
        kwargs = {name: getattr(parsed, name) for name in parsed.model_fields_set}
        return getattr(memory, self.method)(**kwargs)

    def param_names(self) -> list[str]:
        return list(self.params.model_fields)


def _describe(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)


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
    config = ConfigDict(extra="forbid", populate_by_name=True, arbitrary_types_allowed=True)
    model = create_model(title, __config__=config, **fields)
    return model, hints.get("return")


class VerbTable:
    def __init__(self) -> None:
        self._verbs: dict[str, Verb] = {}

    def add(
        self,
        name: str,
        *,
        family: str,
        mode: Mode,
        description: str,
        docs: Mapping[str, str] | None = None,
        errors: tuple[type[RecuerdoError], ...] = (),
        arguments: tuple[str, ...] = (),
        cli_names: Mapping[str, str] | None = None,
        enums: Mapping[str, tuple[str, ...]] | None = None,
        destructive: bool = False,
        method: str | None = None,
        cli_batch: str | None = None,
    ) -> None:
        if name in self._verbs:
            raise ValueError(f"verb {name!r} is defined twice")
        target = getattr(Memory, method or name)
        params, result = _params_model(name, target, docs or {}, enums or {})
        missing = [arg for arg in arguments if arg not in params.model_fields]
        if missing:
            raise ValueError(f"verb {name!r}: CLI arguments {missing} are not parameters")
        self._verbs[name] = Verb(
            name=name,
            family=family,
            mode=mode,
            description=description,
            params=params,
            result=result,
            errors=COMMON_ERRORS + errors,
            arguments=arguments,
            cli_names=dict(cli_names or {}),
            destructive=destructive,
            method=method or name,
            cli_batch=cli_batch,
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


VERBS = VerbTable()


def _register_families() -> None:
    from .verbdefs import code, entries, knowledge, notes, retrieval, work

    for family in (entries, work, notes, retrieval, knowledge, code):
        family.register(VERBS)


_register_families()
