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
def _result_adapter(name: str, result: Any) -> TypeAdapter[Any]:
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
    """The MCP ``outputSchema`` of a verb (see :func:`reply_output_schema`)."""
    return reply_output_schema(verb.name, verb.result)


def _wrapped(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"result": schema}, "required": ["result"]}


def reply_output_schema(name: str, result: Any) -> dict[str, Any]:
    """The MCP ``outputSchema`` of a reply of type ``result``, as the MCP door sends it: an
    object as it is, anything else wrapped as ``{result: ...}``. A union is judged branch by
    branch (``list[Note] | Reviewed`` is either ``{result: [...]}`` or the object)."""
    if result is None:
        return _wrapped({"type": "null"})
    schema = copy.deepcopy(_result_adapter(name, result).json_schema(mode="serialization"))
    defs = schema.pop("$defs", None)

    def is_object(branch: dict[str, Any]) -> bool:
        ref = branch.get("$ref", "")
        if ref.startswith("#/$defs/") and defs:
            branch = defs.get(ref[len("#/$defs/") :], {})
        return branch.get("type") == "object"

    shaped: dict[str, Any]
    if is_object(schema) and "anyOf" not in schema:
        shaped = {"type": "object", **schema}  # a root $ref says it too (MCP asks for it)
    elif "anyOf" in schema and any(is_object(b) for b in schema["anyOf"]):
        branches = [b if is_object(b) else _wrapped(b) for b in schema["anyOf"]]
        shaped = {"type": "object", "anyOf": branches}
    else:
        shaped = _wrapped(schema)
        if _counts_more(result):
            shaped["properties"]["more"] = {"type": "integer", "minimum": 0}
    if defs:
        shaped["$defs"] = defs
    return shaped
