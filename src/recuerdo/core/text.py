"""Checks every piece of user text passes before it is stored."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import ContentTooLarge, EmptyContent, InvalidInput, InvalidTags
from .exact import shown

MAX_ID = 2**63 - 1
"""The largest id either store keeps (a signed 64-bit integer)."""


def whole_number(raw: str, *, largest: int = MAX_ID) -> int | None:
    """``raw`` read as a whole number from 0 to ``largest``, or None when it is not one.

    Every number a caller writes as text (an id in a path, a form or a JSON string, a page
    cursor, a port) is read by this and nothing else: ``str.isdigit`` is true of "²", which
    ``int`` refuses, and of "٣", which ``int`` reads; ``int`` refuses more than 4,300 digits,
    and a store refuses a number past 64 bits. Each was an HTTP 500 where it was read directly.
    """
    if not 0 < len(raw) <= len(str(largest)) or not (raw.isascii() and raw.isdecimal()):
        return None
    value = int(raw)
    return value if value <= largest else None


def checked_text(value: object, field: str, *, max_bytes: int, allow_blank: bool = False) -> str:
    """Validate ``value`` as storable text and return it (the secret guard ran before, at the
    verb's door: ``recuerdo.facade.verb``).

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
        # ASCII text is its own UTF-8 (isascii reads a flag): no copy made to count its bytes.
        size = len(value) if type(value) is str and value.isascii() else len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"{field} is not valid Unicode text (lone surrogate)") from exc
    if size > max_bytes:
        raise ContentTooLarge(
            f"{field} is {size} bytes; the limit is {max_bytes} bytes (nothing was stored)",
            original_bytes=size,
            limit_bytes=max_bytes,
        )
    return value


def checked_label(value: object, field: str, *, max_chars: int = 200) -> str:
    """A short identifier-like label (task, step, rule, agent name): trimmed, one line."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{field} must be a non-empty text label")
    label = value.strip()
    if len(label) > max_chars:
        raise InvalidInput(f"{field} is longer than {max_chars} characters")
    if "\x00" in label or "\r" in label or "\n" in label:
        raise InvalidInput(f"{field} must be a single line without NUL characters")
    return label


OWNERS_WRITER = "main"
"""The owner's own writer of entries (top-level code): no agent or token takes its name."""

# Letters drawn as a letter of the owner's writer's name once folded: Cyrillic М А І Ӏ and
# Greek Μ Α Ι Ν (casefolded here), the dotless ı, Latin small capitals ᴍ ᴀ ɪ ɴ and the Latin
# alpha and iota ɑ ɩ (NFKC keeps these Latin letters as they are); and letters drawn as a
# blank, dropped: the Hangul fillers (the halfwidth one is U+3164 once folded) and the
# braille blank.
_DRAWN_AS_LATIN = str.maketrans("мμаαіιӏıνᴍᴀɪɴɑɩ", "mmaaiiiinmainai", "\u115f\u1160\u3164\u2800")
_UNSEEN = ("Mn", "Me", "Cf")  # marks (once decomposed) and invisible format characters
# Spaces narrow enough to go unseen between two letters (six-per-em, thin, hair, narrow
# no-break, medium mathematical), dropped before NFKC makes them plain spaces: "Ma In" is
# a name of its own, "Ma<hair space>In" reads as Main.
_NARROW = str.maketrans("", "", "\u2006\u2009\u200a\u202f\u205f")


def owners_writer(name: str) -> bool:
    """Whether ``name`` reads as the owner's writer (decision 0136): compared once folded as a
    reader takes it, compatibility forms as their letters (fullwidth ``ｍａｉｎ``, mathematical
    ones), case, marks, narrow spaces and invisible or blank characters dropped, and the letters
    drawn as those of ``main`` (Greek, Cyrillic, Latin small capitals) read as them. An agent
    so named was listed as the owner's writer beside it; a name is refused a little too widely
    (``mäin``) rather than too narrowly."""
    seen = unicodedata.normalize("NFKC", name.translate(_NARROW))
    folded = unicodedata.normalize("NFKD", seen.casefold())
    visible = "".join(ch for ch in folded if unicodedata.category(ch) not in _UNSEEN)
    return visible.translate(_DRAWN_AS_LATIN) == OWNERS_WRITER


MAX_TAGS = 64
MAX_TAG_CHARS = 100


def check_tags(tags: object) -> list[str]:
    """Tags as an ordered list without repeats; a single string is one tag."""
    if tags is None:
        return []
    if isinstance(tags, str):
        tags = [tags]
    # A mapping's keys were taken for its tags, silently, and bytes failed on its first
    # number: each is refused as what it is. A plain list is neither (the ABCs' checks were
    # a fifth of a bulk load's validation).
    if type(tags) is not list and (
        not isinstance(tags, Iterable) or isinstance(tags, Mapping | bytes | bytearray)
    ):
        raise InvalidTags(f"tags must be a list of text labels, got {type(tags).__name__}")
    result: list[str] = []
    for tag in tags:
        if not isinstance(tag, str) or not tag.strip():
            raise InvalidTags(f"every tag must be non-empty text, got {shown(tag)}")
        if len(tag) > MAX_TAG_CHARS or "\x00" in tag or "\r" in tag or "\n" in tag:
            raise InvalidTags(f"a tag is one line of at most {MAX_TAG_CHARS} characters: {tag!r}")
        # Checked above but for a lone surrogate, which plain ASCII text cannot hold.
        plain = type(tag) is str and tag.isascii()
        cleaned = tag if plain else checked_text(tag, "tag", max_bytes=MAX_TAG_CHARS * 4)
        if cleaned not in result:
            result.append(cleaned)
    if len(result) > MAX_TAGS:
        raise InvalidTags(f"at most {MAX_TAGS} tags per entry, got {len(result)}")
    return result


def check_text(arguments: Mapping[str, Any], *, reading: bool = False) -> None:
    """Refuse text no store can keep faithfully (a lone surrogate), naming the argument; and,
    for a read (``reading``), text with a NUL character: no stored text holds one (writes
    refuse it), so it could match nothing, and PostgreSQL refuses it as a parameter."""
    for name, value in arguments.items():
        try:
            _check_value(name.rstrip("_"), value, reading)
        except RecursionError:
            # A value that holds itself (a raw RecursionError, the hunt over the rules).
            raise InvalidInput(f"{name.rstrip('_')} is nested too deeply") from None


def _check_value(name: str, value: Any, reading: bool) -> None:
    if _has_lone_surrogate(value):
        raise InvalidInput(f"{name} holds text that is not valid Unicode (a lone surrogate)")
    if reading and _has_nul(value):
        raise InvalidInput(f"{name} contains a NUL character; no stored text holds one")


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, list | tuple):
        return any(_has_nul(item) for item in value)
    return False


def _has_lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    # A plain ASCII string (isascii reads a flag) is passed over without a call, and a plain
    # dict or list is known without the ABC's check or a union's (several times slower than
    # a type's): they were most of this check's cost in a bulk load of entries. Containers
    # still recurse one call and one generator a level, as the secret guard's walk after it
    # does, so a value nested too deeply is refused here, by name, before that walk.
    if type(value) is dict or (type(value) is not list and isinstance(value, Mapping)):
        return any(
            ((type(k) is not str or not k.isascii()) and _has_lone_surrogate(k))
            or ((type(v) is not str or not v.isascii()) and _has_lone_surrogate(v))
            for k, v in value.items()
        )
    if type(value) is list or isinstance(value, list | tuple | set | frozenset):
        return any(
            (type(item) is not str or not item.isascii()) and _has_lone_surrogate(item)
            for item in value
        )
    return False


def shown_on_one_line(text: str) -> str:
    """``text`` on one line of a display (a plan's steps, the summary's rules): a line break or
    another control character is written as its escape (``\\n``), so a multi-line result
    cannot pass for more lines of the display (or move a terminal's cursor). Tabs stay."""
    if text.isprintable():
        return text
    return "".join(_escaped(ch) if _unprintable(ch) else ch for ch in text)


def _unprintable(ch: str) -> bool:
    return unicodedata.category(ch) in ("Cc", "Zl", "Zp") and ch != "\t"


def _escaped(ch: str) -> str:
    named = {"\n": "\\n", "\r": "\\r"}
    return named.get(ch) or (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")


def _joins_previous(char: str) -> bool:
    """A code point drawn as part of the character before it: a combining mark, a joiner, a
    variation selector, a skin tone, an emoji tag."""
    point = ord(char)
    return (
        unicodedata.category(char).startswith("M")
        or point == 0x200D
        or 0xFE00 <= point <= 0xFE0F
        or 0x1F3FB <= point <= 0x1F3FF
        or 0xE0020 <= point <= 0xE007F
    )


def _is_flag_half(char: str) -> bool:
    return 0x1F1E6 <= ord(char) <= 0x1F1FF


def clip(text: str, limit: int) -> str:
    """At most ``limit`` characters of ``text``, never ending inside what a reader sees as one
    character: a cut between a letter and its accent, inside a flag, a joined emoji or a CRLF
    changed the last character shown ("é" became "e", a flag a lone letter). The cut moves back
    to the start of that character, so a pack, a preview or a snippet stays within its limit
    (decision 0144)."""
    end = max(0, min(limit, len(text)))
    while 0 < end < len(text):
        before, after = text[end - 1], text[end]
        if _joins_previous(after) or ord(before) == 0x200D or before + after == "\r\n":
            end -= 1
        elif _is_flag_half(before) and _is_flag_half(after):
            start = end - 1
            while start > 0 and _is_flag_half(text[start - 1]):
                start -= 1
            if (end - start) % 2 == 0:
                break  # the cut falls between two whole flags
            end -= 1
        else:
            break
    return text[:end]
