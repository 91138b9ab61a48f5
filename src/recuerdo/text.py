"""Checks every piece of user text passes before it is stored."""

from __future__ import annotations

from .errors import ContentTooLarge, EmptyContent, InvalidInput
from .security.secrets import redact_text


def checked_text(value: object, field: str, *, max_bytes: int, allow_blank: bool = False) -> str:
    """Validate ``value`` as storable text and return it with secrets redacted.

    Refuses non-strings, NUL characters and lone surrogates (which no UTF-8 store can keep
    faithfully), blank text unless ``allow_blank``, and text over ``max_bytes`` (never cut).
    """
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be text, got {type(value).__name__}")
    if not allow_blank and not value.strip():
        raise EmptyContent(f"{field} is empty: there is nothing to store")
    if "\x00" in value:
        raise InvalidInput(f"{field} contains a NUL character, which cannot be stored as text")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"{field} is not valid Unicode text (lone surrogate)") from exc
    if size > max_bytes:
        raise ContentTooLarge(
            f"{field} is {size} bytes; the limit is {max_bytes} bytes (nothing was stored)",
            original_bytes=size,
            limit_bytes=max_bytes,
        )
    return redact_text(value)


def checked_label(value: object, field: str, *, max_chars: int = 200) -> str:
    """A short identifier-like label (task, step, rule, agent name): trimmed, one line."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{field} must be a non-empty text label")
    label = value.strip()
    if len(label) > max_chars:
        raise InvalidInput(f"{field} is longer than {max_chars} characters")
    if any(ch in label for ch in "\x00\r\n"):
        raise InvalidInput(f"{field} must be a single line without NUL characters")
    return label
