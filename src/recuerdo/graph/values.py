"""Typed attribute values: what an agent says an entity's property is, kept exactly.

Accepted: text, integers, decimals (kept as their exact digits, never as binary floats),
booleans, dates and datetimes (ISO 8601 strings are recognised), and lists (kept as sets:
sorted, without repeats). ``{"type": "decimal", "value": "12.50"}`` states a type explicitly.
"""

from __future__ import annotations

import json
import math
import re
import sys
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from ..core import exact
from ..core.exact import shown
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
        f"{field}: unsupported value {shown(value)} (text, number, boolean, date or list)"
    )


def _explicit(kind: str, value: object, field: str) -> tuple[str, Any]:
    if kind not in TYPES:
        raise InvalidInput(f"{field}: type must be one of {', '.join(TYPES)}")
    if kind == "decimal":
        try:
            return "decimal", _decimal_text(Decimal(str(value)), field)
        except InvalidOperation as exc:
            raise InvalidInput(f"{field}: {shown(value)} is not a decimal number") from exc
    found_kind, found = typed(value, field)
    if found_kind != kind and not (kind == "string" and isinstance(value, str)):
        raise InvalidInput(f"{field}: {shown(value)} is not a {kind}")
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


def fact_attributes(attributes: dict[str, Any], field: str) -> dict[str, Any]:
    """A fact's attributes (untyped: kept as they came) checked for the store: JSON, and its
    fractions kept as their digits, as an entity's decimals are (``1.80`` stays ``1.80``, and
    ``12345678901234567890.123`` keeps every digit; a float took both). A number JSON cannot
    hold (NaN, Infinity, or a decimal past a float's range, which a JSON reader takes for
    Infinity) is refused, and so is what JSON cannot write: a key that is not text or a number,
    an integer past the digits a JSON reader takes (a raw ValueError or TypeError escaped the
    write verbs)."""
    try:
        # First: it also refuses an object that holds itself, which the walk below never ends.
        encode_fact_attributes(attributes)
    except ValueError:  # the digits' limit, or a cycle
        limit = sys.get_int_max_str_digits()
        digits = (
            f"an integer has at most {limit} digits (a JSON reader takes no more), "
            if limit
            else ""
        )
        raise InvalidInput(f"{field}: {digits}an object does not hold itself") from None
    except TypeError as exc:
        raise InvalidInput(f"{field}: a key is text or a number ({exc})") from None
    stack: list[Any] = [attributes]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
        elif isinstance(item, Decimal | float) and not _fits_json(item):
            raise InvalidInput(
                f"{field}: numbers must be finite (NaN and Infinity are not JSON, nor a"
                " decimal past 1.8e308)"
            )
    return attributes


def _fits_json(number: Decimal | float) -> bool:
    if isinstance(number, Decimal) and not number.is_finite():
        return False  # float() of a signalling NaN raises
    return math.isfinite(float(number))


def encode_fact_attributes(attributes: dict[str, Any]) -> str:
    """A fact's attributes as stored: JSON, each fraction written with its own digits."""
    return exact.dumps(attributes, sort_keys=True) if attributes else "{}"


def decode_fact_attributes(stored: str) -> dict[str, Any]:
    """A fact's stored attributes, fractions as ``Decimal`` (the digits they were given)."""
    loaded: dict[str, Any] = exact.loads(stored)
    return loaded


def same_fact_attributes(one: str, other: str) -> bool:
    """Two stored spellings of the same attributes: digits count (``1.8`` is not ``1.80``, as
    for an entity's decimal), spacing and key order do not."""
    return encode_fact_attributes(decode_fact_attributes(one)) == encode_fact_attributes(
        decode_fact_attributes(other)
    )


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
