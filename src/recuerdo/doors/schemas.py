"""JSON schemas of the verbs, for the doors that publish them: the parameters (OpenAPI request
bodies, MCP ``inputSchema``) and the typed results (OpenAPI 200 responses, MCP
``outputSchema``).

Both come from the verb table (the method's signature and return annotation), never written by
hand. Models a schema refers to are hoisted into one shared set of definitions (OpenAPI
``components.schemas``), so a name means one shape everywhere.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

from pydantic import TypeAdapter

from ..verbs import Verb

_REF = "#/components/schemas/{model}"


def _hoist(schema: dict[str, Any], into: dict[str, Any]) -> dict[str, Any]:
    """Move ``$defs`` into ``into`` (refs already point at components) and return the rest."""
    defs = schema.pop("$defs", {})
    for name, definition in defs.items():
        into.setdefault(name, definition)
    return schema


@cache
def _result_adapter(verb_name: str, result: Any) -> TypeAdapter[Any]:
    return TypeAdapter(result)


def result_schema(verb: Verb, components: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON schema of a verb's result (refs into ``components`` when given, else inline
    ``$defs``)."""
    if verb.result is None:
        return {"type": "null"}
    adapter = _result_adapter(verb.name, verb.result)
    if components is None:
        return adapter.json_schema(mode="serialization")
    schema = adapter.json_schema(mode="serialization", ref_template=_REF)
    return _hoist(schema, components)


def params_schema(verb: Verb, components: dict[str, Any] | None = None) -> dict[str, Any]:
    if components is None:
        return verb.params.model_json_schema(by_alias=True)
    schema = verb.params.model_json_schema(by_alias=True, ref_template=_REF)
    return _hoist(schema, components)


def _counts_more(result: Any) -> bool:
    """A page of a longer list (``EntryList``) says how many more there are."""
    return isinstance(result, type) and issubclass(result, list) and hasattr(result, "more")


def output_schema(verb: Verb) -> dict[str, Any]:
    """The MCP ``outputSchema``: an object (a result that is not one is wrapped as
    ``{result: ...}``, as the MCP door sends it)."""
    schema = copy.deepcopy(result_schema(verb))
    if schema.get("type") == "object" and "anyOf" not in schema:
        return schema
    defs = schema.pop("$defs", None)
    wrapped: dict[str, Any] = {
        "type": "object",
        "properties": {"result": schema},
        "required": ["result"],
    }
    if _counts_more(verb.result):
        wrapped["properties"]["more"] = {"type": "integer", "minimum": 0}
    if defs:
        wrapped["$defs"] = defs
    return wrapped
