"""How the Semurg profile shows replies, and the schemas of what it shows.

A reply is the verb's own, shown in one place (:func:`present`, applied by the gateway): ids are
decimal strings (clients send them back unchanged), and every reply says its ``state``
(answered, nothing_stored, could_not_judge) and ``meaning`` (armed, not_armed; a write may say
queued). The reply types are the verbs' typed results shown the same way
(:func:`presented_schema`), so a reply and its published schema cannot drift apart.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

from ...verbs import VERBS
from .. import schemas

if TYPE_CHECKING:
    from ...engine import Memory

ID_KEYS = frozenset(
    {"id", "doc_id", "rests_on", "replaced_by", "documents_retained", "documents_emptied"}
)
"""Reply fields holding ids (or lists of them): shown as decimal strings."""
STATES = ["answered", "nothing_stored", "could_not_judge"]
MEANINGS = ["armed", "not_armed", "queued", "failed"]


def present(reply: Any, memory: Memory) -> Any:
    """A verb's reply as Semurg shows it: ids as decimal strings; ``state`` (``answered`` unless
    the verb says otherwise) and ``meaning`` (the verb's, else the memory's now) on every
    reply."""
    shown = _ids(reply)
    if not isinstance(shown, dict):
        shown = {"result": shown}
    shown.setdefault("state", "answered")
    if "meaning" not in shown:
        shown["meaning"] = memory.meaning_state()
    return shown


def _ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _as_id(v) if k in ID_KEYS else _ids(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_ids(item) for item in value]
    return value


def _as_id(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, list):
        return [_as_id(item) for item in value]
    return _ids(value)


def presented_schema(result: dict[str, Any]) -> dict[str, Any]:
    """A verb's result schema (inline ``$defs``) shown as :func:`present` shows the reply: id
    fields are decimal strings, ``state`` and ``meaning`` are always there. Definitions are
    renamed ``Semurg<Name>``: beside the native ones (integer ids) in OpenAPI's components."""
    shown = copy.deepcopy(result)
    defs = {f"Semurg{name}": _id_fields(_renamed(d)) for name, d in shown.pop("$defs", {}).items()}
    shown = _id_fields(_renamed(shown))
    if shown.get("type") != "object" or "properties" not in shown:
        shown = {"type": "object", "properties": {"result": shown}, "required": ["result"]}
    properties = shown["properties"]
    properties.setdefault("state", {"type": "string", "enum": STATES})
    properties.setdefault("meaning", {"type": "string", "enum": MEANINGS})
    shown["required"] = sorted({*shown.get("required", []), "state", "meaning"})
    if defs:
        shown["$defs"] = defs
    return shown


def _renamed(node: Any) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            node = {**node, "$ref": "#/$defs/Semurg" + ref[len("#/$defs/") :]}
        return {key: _renamed(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_renamed(item) for item in node]
    return node


def _id_fields(node: Any) -> Any:
    """Every object schema's id properties as strings (recursively)."""
    if isinstance(node, list):
        return [_id_fields(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _id_fields(value) for key, value in node.items()}
    properties = node.get("properties")
    if isinstance(properties, dict):
        node["properties"] = {
            key: _id_type(value) if key in ID_KEYS else value for key, value in properties.items()
        }
    return node


def _id_type(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    if node.get("type") == "integer":
        shown = {k: v for k, v in node.items() if k not in ("minimum", "maximum")}
        return {**shown, "type": "string", "pattern": "^[0-9]+$"}
    if node.get("type") == "array" and "items" in node:
        return {**node, "items": _id_type(node["items"])}
    for union in ("anyOf", "oneOf"):
        if union in node:
            return {**node, union: [_id_type(option) for option in node[union]]}
    return node


def reply_schema(verb: str) -> Callable[[], dict[str, Any]]:
    """The schema of ``verb``'s reply as this profile shows it (built when first asked)."""
    return lambda: _reply_schema(verb)


@cache
def _reply_schema(verb: str) -> dict[str, Any]:
    return presented_schema(schemas.result_schema(VERBS[verb]))
