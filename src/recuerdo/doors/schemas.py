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
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter

from ..verbs import VERBS, Verb

if TYPE_CHECKING:
    from .profiles import ToolMap

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
    return _as_object(copy.deepcopy(result_schema(verb)), counts_more=_counts_more(verb.result))


def _is_object(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "object" and "anyOf" not in schema


def _as_object(schema: dict[str, Any], *, counts_more: bool = False) -> dict[str, Any]:
    if _is_object(schema):
        return schema
    defs = schema.pop("$defs", None)
    wrapped: dict[str, Any] = {
        "type": "object",
        "properties": {"result": schema},
        "required": ["result"],
    }
    if counts_more:
        wrapped["properties"]["more"] = {"type": "integer", "minimum": 0}
    if defs:
        wrapped["$defs"] = defs
    return wrapped


def tool_reply_schema(entry: ToolMap, components: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON schema of a tool's reply as a door sends it: the profile's presented shape, else
    its verb's typed result (refs into ``components`` when given, else inline ``$defs``)."""
    if entry.reply_schema is None:
        return result_schema(VERBS[entry.verb], components)
    schema = copy.deepcopy(entry.reply_schema())
    if components is None:
        return schema
    return hoist_defs(schema, components)


def wraps_result(entry: ToolMap) -> bool:
    """Whether the MCP door sends this tool's reply as ``{result: ...}``: always when its
    schema is not one object (a list, or a list or an object), so the reply fits the schema."""
    if entry.reply_schema is not None:
        return not _is_object(entry.reply_schema())
    return not _is_object(result_schema(VERBS[entry.verb]))


def tool_output_schema(entry: ToolMap) -> dict[str, Any]:
    """A tool's MCP ``outputSchema`` (see :func:`output_schema`)."""
    if entry.reply_schema is None:
        return output_schema(VERBS[entry.verb])
    return _as_object(copy.deepcopy(entry.reply_schema()))


def hoist_defs(schema: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    """A schema with inline ``$defs`` (refs ``#/$defs/X``) made to refer to ``components``
    instead, its definitions moved there."""
    defs = schema.pop("$defs", {})

    def point(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                node = {**node, "$ref": _REF.format(model=ref[len("#/$defs/") :])}
            return {key: point(value) for key, value in node.items()}
        if isinstance(node, list):
            return [point(item) for item in node]
        return node

    for name, definition in defs.items():
        components.setdefault(name, point(definition))
    return point(schema)  # type: ignore[no-any-return]
