"""JSON whose fractions keep their digits, and values as a message quotes them.

The doors read a JSON fraction as a ``Decimal`` (``1.80`` stays ``1.80``, and
``12345678901234567890.123`` keeps every digit); ``json.dumps(default=str)`` wrote such a
value back as a string (``"1.80"``), and a float loses the digits. :func:`dumps` writes a
``Decimal`` as the JSON number it is, :func:`loads` reads fractions back as ``Decimal``, and
:func:`shown` quotes a value in an error as the caller wrote it (``1.5``, not
``Decimal('1.5')``).
"""

from __future__ import annotations

import json
import secrets
from decimal import Decimal
from typing import Any


def dumps(value: Any, **options: Any) -> str:
    """``json.dumps(value, default=str, **options)``, with each finite ``Decimal`` written as a
    JSON number of its own digits (a non-finite one, which JSON cannot hold, as its text)."""
    mark = ""

    def spelled(item: Any) -> Any:
        nonlocal mark
        if isinstance(item, Decimal) and item.is_finite():
            # The json module writes no number it did not make itself: the digits go out as a
            # string carrying a mark that no text of the value can spell, and lose the quotes
            # after.
            mark = mark or secrets.token_hex(8)
            return f"{mark}{item}"
        return str(item)

    text = json.dumps(value, default=spelled, **options)
    if not mark:
        return text
    # Each marked string is '"', the mark, the digits, '"' (digits hold no quote). Split on the
    # opening, not a regular expression: one of the mark's was compiled at each call (~170 us,
    # and each evicted another pattern from the re module's cache) and scanned a 180 KB search
    # reply in ~400 us, where the split takes ~50 us.
    head, *marked = text.split(f'"{mark}')
    pieces = [head]
    for part in marked:
        end = part.index('"')
        pieces += (part[:end], part[end + 1 :])
    return "".join(pieces)


def loads(text: str | bytes) -> Any:
    """JSON with its fractions read as ``Decimal``, as the doors read a request."""
    return json.loads(text, parse_float=Decimal)


def shown(value: Any) -> str:
    """``value`` as an error quotes it: as ``repr`` does, but a decimal as the number the
    caller wrote (``1.5``, not ``Decimal('1.5')``), in a list or an object too (written then as
    JSON)."""
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dict | list | tuple) and _holds_decimal(value):
        try:
            return dumps(value, ensure_ascii=False)
        except (TypeError, ValueError):  # keys JSON has no form for, an int past str()'s digits
            pass
    return repr(value)


def _holds_decimal(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Decimal):
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False
