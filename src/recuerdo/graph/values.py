"""Typed attribute values: what an agent says an entity's property is, kept exactly.

Accepted: text, integers, decimals (kept as their exact digits, never as binary floats),
booleans, dates and datetimes (ISO 8601 strings are recognised), and lists (kept as sets:
sorted, without repeats). ``{"type": "decimal", "value": "12.50"}`` states a type explicitly.
"""

from __future__ import annotations

import json
import re
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from ..errors import InvalidInput

TYPES = ("string", "integer", "decimal", "boolean", "date", "datetime", "list")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?")
MAX_TEXT = 4096


def typed(value: object, field: str = "attribute") -> tuple[str, Any]:
    """(type, canonical JSON-able value) of one attribute value."""
    if isinstance(value, dict) and set(value) == {"type", "value"}:
        return _explicit(str(value["type"]), value["value"], field)
    if isinstance(value, bool):
        return "boolean", value
    if isinstance(value, int):
        return "integer", value
    if isinstance(value, Decimal):
        return "decimal", _decimal_text(value, field)
    if isinstance(value, float):
        return "decimal", _decimal_text(Decimal(repr(value)), field)
    if isinstance(value, list | tuple | set | frozenset):
        items = [dict(zip(("type", "value"), typed(item, field), strict=True)) for item in value]
        canonical = sorted({json.dumps(item, sort_keys=True) for item in items})
        return "list", [json.loads(item) for item in canonical]
    if isinstance(value, str):
        if len(value) > MAX_TEXT:
            raise InvalidInput(f"{field}: text values have at most {MAX_TEXT} characters")
        if _DATE.fullmatch(value) and _valid_date(value):
            return "date", value
        if _DATETIME.fullmatch(value) and _valid_datetime(value):
            return "datetime", value
        return "string", value
    raise InvalidInput(
        f"{field}: unsupported value {value!r} (text, number, boolean, date or list)"
    )


def _explicit(kind: str, value: object, field: str) -> tuple[str, Any]:
    if kind not in TYPES:
        raise InvalidInput(f"{field}: type must be one of {', '.join(TYPES)}")
    if kind == "decimal":
        try:
            return "decimal", _decimal_text(Decimal(str(value)), field)
        except InvalidOperation as exc:
            raise InvalidInput(f"{field}: {value!r} is not a decimal number") from exc
    found_kind, found = typed(value, field)
    if found_kind != kind and not (kind == "string" and isinstance(value, str)):
        raise InvalidInput(f"{field}: {value!r} is not a {kind}")
    return kind, found if kind != "string" else value


def _decimal_text(number: Decimal, field: str) -> str:
    if not number.is_finite():
        raise InvalidInput(f"{field}: decimals must be finite")
    return str(number)


def _valid_date(text: str) -> bool:
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _valid_datetime(text: str) -> bool:
    try:
        datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def plain(value: Any) -> Any:
    """A JSON value for properties kept as they came (a fact's attributes, untyped): a decimal
    from a door that reads exact digits becomes the number JSON would have given."""
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value


KIND_PATTERN = '{{"type": "{kind}", %'
"""A LIKE pattern for the encoded values of one type (:func:`encode` writes "type" first)."""


def same_value(stored: dict[str, Any], asked: dict[str, Any]) -> bool:
    """Two decimals of equal value, whatever their digits ("1.80" and "1.8")."""
    if stored.get("type") != "decimal" or asked.get("type") != "decimal":
        return stored == asked
    return Decimal(stored["value"]) == Decimal(asked["value"])


def encode(kind: str, value: Any) -> str:
    return json.dumps({"type": kind, "value": value}, sort_keys=True, ensure_ascii=False)


def decode(stored: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(stored)
    return loaded
