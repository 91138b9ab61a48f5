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
    for name, definition in schema.pop("$defs", {}).items():
        _add_component(into, name, definition)
    return schema


def _add_component(components: dict[str, Any], name: str, definition: Any) -> None:
    """One named schema in the shared components. Two different types of one name would make
    one silently describe the other's replies, so a clash stops the door from starting."""
    known = components.setdefault(name, definition)
    if known != definition:
        raise TypeError(
            f"two reply types are both named {name!r} with different shapes: rename one"
        )


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
    if entry.reply_schema is None and entry.output is None:
        return result_schema(VERBS[entry.verb], components)
    if entry.reply_schema is None:
        adapter = _result_adapter(entry.name, entry.output)
        if components is None:
            return adapter.json_schema(mode="serialization")
        return _hoist(adapter.json_schema(mode="serialization", ref_template=_REF), components)
    schema = copy.deepcopy(entry.reply_schema())
    if components is None:
        return schema
    return hoist_defs(schema, components)


def wraps(output_schema: dict[str, Any]) -> bool:
    """Whether the MCP door sends every reply of a tool with this ``outputSchema``
    (:func:`tool_output_schema`) as ``{result: ...}``: when it has no object branch (a union
    sends its object bare, its list wrapped)."""
    return "anyOf" not in output_schema and output_schema.get("required") == ["result"]


def tool_output_schema(entry: ToolMap) -> dict[str, Any]:
    """A tool's MCP ``outputSchema`` (see :func:`reply_output_schema`)."""
    if entry.reply_schema is None:
        return reply_output_schema(entry.name, entry.result)
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
        _add_component(components, name, point(definition))
    return point(schema)  # type: ignore[no-any-return]


_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "deprecated"})


def quick_to_check(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with the same meaning, in the shape a validator walks fastest: each ``$ref``
    to its ``$defs`` replaced by the definition, and an ``anyOf`` of bare types (pydantic's
    ``X | None``) written as one ``type`` list. An MCP client checks every structured reply
    against the tool's outputSchema (the official one, with ``jsonschema``): a search reply of
    10 hits took 1.67 ms to check as pydantic writes the schema, 1.28 ms in this shape. A
    schema whose definitions refer to themselves is left as it is."""
    defs: dict[str, Any] = schema.get("$defs", {})
    if any(_refers_to(definition, name, defs, set()) for name, definition in defs.items()):
        return schema

    def shaped(node: Any) -> Any:
        if isinstance(node, list):
            return [shaped(item) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and ref[8:] in defs:
            rest = {key: value for key, value in node.items() if key != "$ref"}
            if set(rest) <= _ANNOTATIONS:
                return {**shaped(defs[ref[8:]]), **rest}
        out = {key: shaped(value) for key, value in node.items() if key != "$defs"}
        branches = out.get("anyOf")
        if (
            "type" not in out
            and isinstance(branches, list)
            and all(isinstance(b, dict) and set(b) == {"type"} for b in branches)
            and all(isinstance(b["type"], str) for b in branches)
        ):
            del out["anyOf"]
            out["type"] = [b["type"] for b in branches]
        return out

    result: dict[str, Any] = shaped(schema)
    if _mentions_defs(result):
        result["$defs"] = defs  # a ref kept (beside other keywords) still resolves
    return result


def _refers_to(node: Any, name: str, defs: dict[str, Any], seen: set[str]) -> bool:
    if isinstance(node, list):
        return any(_refers_to(item, name, defs, seen) for item in node)
    if not isinstance(node, dict):
        return False
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = ref[8:]
        if target == name:
            return True
        if target not in seen and target in defs:
            seen.add(target)
            if _refers_to(defs[target], name, defs, seen):
                return True
    return any(_refers_to(value, name, defs, seen) for value in node.values())


def _mentions_defs(node: Any) -> bool:
    if isinstance(node, list):
        return any(_mentions_defs(item) for item in node)
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return True
        return any(_mentions_defs(value) for value in node.values())
    return False
