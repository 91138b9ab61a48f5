"""Reverse deltas between two versions of a text: how to rebuild the older one from the newer.

A note's current text is kept whole; each earlier version is kept as one of these, made from
the version after it (``notes/history.py``, ``store/revision_deltas.py``). The format is ours
and small:

* one header byte: ``0x01`` a delta, ``0x02`` a whole text; ``0x10`` added when the rest is
  zlib-compressed (only when that saves at least a tenth: short edits stay as they are);
* a whole text is its UTF-8;
* a delta is the length of the text it applies to (a varint: a delta applied to another text
  is refused, never silently wrong), then operations, each a varint ``length << 1 | kind``:
  kind 0 copies ``length`` characters of the newer text from a position given as a zigzag
  varint relative to the end of the previous copy (usually 0: one byte), kind 1 inserts
  ``length`` bytes of UTF-8 that follow.

Positions count code points, as Python slices do. Lone surrogates survive the round trip
(``surrogatepass``), so the codec is total over ``str``.
"""

from __future__ import annotations

import zlib
from difflib import SequenceMatcher

DELTA = 0x01
WHOLE = 0x02
COMPRESSED = 0x10
_COPY, _INSERT = 0, 1
COMPRESS_FROM = 128
"""Payloads shorter than this are never compressed (zlib's own header would eat the gain)."""
LINE_DIFF_FROM = 64
"""A changed middle shorter than this (both sides) is kept as one insert: no line matching."""
MAX_LINES = 20_000
"""Past this many lines in the changed middle, the middle is kept whole (bounded time)."""

Op = tuple[int, int, int, str]
"""(kind, start in the newer text, length copied, literal inserted)."""


def _varint(value: int, out: bytearray) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _read_varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data):
            raise ValueError("a delta ends inside a number")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def common_prefix(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` share."""
    # Binary search over slice comparisons: C speed even for megabytes.
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def common_suffix(a: str, b: str, limit: int) -> int:
    """How many trailing characters ``a`` and ``b`` share, at most ``limit`` (so that a suffix
    does not overlap a prefix already counted)."""
    low, high = 0, min(len(a), len(b), limit)
    while low < high:
        middle = (low + high + 1) // 2
        if a[len(a) - middle :] == b[len(b) - middle :]:
            low = middle
        else:
            high = middle - 1
    return low


def _trimmed(newer: str, older: str, at: int, out: list[Op]) -> None:
    """``older`` from ``newer`` (which starts at ``at`` in the whole newer text): their common
    start and end copied, the middle of ``older`` inserted."""
    prefix = common_prefix(newer, older)
    suffix = common_suffix(newer, older, min(len(newer), len(older)) - prefix)
    out.append((_COPY, at, prefix, ""))
    out.append((_INSERT, 0, 0, older[prefix : len(older) - suffix]))
    out.append((_COPY, at + len(newer) - suffix, suffix, ""))


def _lines(newer: str, older: str, at: int, out: list[Op]) -> None:
    """The changed middles matched line by line; each run of lines that differs is trimmed
    again (one word changed in a long line costs the word, not the line)."""
    new_lines = newer.splitlines(keepends=True)
    old_lines = older.splitlines(keepends=True)
    if len(new_lines) + len(old_lines) > MAX_LINES:
        out.append((_INSERT, 0, 0, older))
        return
    starts = [at]
    for line in new_lines:
        starts.append(starts[-1] + len(line))
    matcher = SequenceMatcher(None, old_lines, new_lines)
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag == "equal":
            out.append((_COPY, starts[b0], starts[b1] - starts[b0], ""))
        elif tag == "replace":
            _trimmed(
                newer[starts[b0] - at : starts[b1] - at], "".join(old_lines[a0:a1]), starts[b0], out
            )
        elif tag == "delete":
            out.append((_INSERT, 0, 0, "".join(old_lines[a0:a1])))


def _worth_matching(newer: str, older: str) -> bool:
    """Whether line matching can find much: both middles long enough, and at least a quarter
    of the older one made of lines the newer one also has (a rewrite shares none, and the
    matcher would cost milliseconds to find that out)."""
    if "\n" not in older or min(len(newer), len(older)) < LINE_DIFF_FROM:
        return False
    present = set(newer.splitlines(keepends=True))
    shared = sum(len(line) for line in older.splitlines(keepends=True) if line in present)
    return shared * 4 >= len(older)


def _ops(newer: str, older: str) -> list[Op]:
    """Copies and inserts that build ``older`` from ``newer``: the common start and end of
    the two are copied; a long changed middle is matched line by line."""
    prefix = common_prefix(newer, older)
    suffix = common_suffix(newer, older, min(len(newer), len(older)) - prefix)
    new_middle = newer[prefix : len(newer) - suffix]
    old_middle = older[prefix : len(older) - suffix]
    ops: list[Op] = [(_COPY, 0, prefix, "")]
    if _worth_matching(new_middle, old_middle):
        _lines(new_middle, old_middle, prefix, ops)
    else:
        ops.append((_INSERT, 0, 0, old_middle))
    ops.append((_COPY, len(newer) - suffix, suffix, ""))
    return ops


def _encode_ops(source_length: int, ops: list[Op]) -> bytes:
    """The operations as bytes: adjacent copies and adjacent inserts merged, empty ones
    dropped."""
    merged: list[Op] = []
    for op in ops:
        kind, start, length, literal = op
        if (kind == _COPY and not length) or (kind == _INSERT and not literal):
            continue
        if merged and merged[-1][0] == kind:
            last = merged[-1]
            if kind == _INSERT:
                merged[-1] = (kind, 0, 0, last[3] + literal)
                continue
            if last[1] + last[2] == start:
                merged[-1] = (kind, last[1], last[2] + length, "")
                continue
        merged.append(op)
    out = bytearray()
    _varint(source_length, out)
    cursor = 0
    for kind, start, length, literal in merged:
        if kind == _COPY:
            _varint(length << 1 | _COPY, out)
            offset = start - cursor
            _varint(offset << 1 if offset >= 0 else (-offset << 1) - 1, out)
            cursor = start + length
        else:
            raw = _utf8(literal)
            _varint(len(raw) << 1 | _INSERT, out)
            out += raw
    return bytes(out)


def _pack(kind: int, payload: bytes) -> bytes:
    if len(payload) >= COMPRESS_FROM:
        packed = zlib.compress(payload, 1)  # the fastest level: this runs on the write path
        if len(packed) * 10 <= len(payload) * 9:
            return bytes([kind | COMPRESSED]) + packed
    return bytes([kind]) + payload


def whole(text: str) -> bytes:
    """``text`` kept whole in the delta format (a snapshot: no other text is needed)."""
    return _pack(WHOLE, _utf8(text))


def make(newer: str, older: str) -> bytes:
    """The delta that turns ``newer`` into ``older`` (or ``older`` whole, when that is no
    larger)."""
    delta = _encode_ops(len(newer), _ops(newer, older))
    full = _utf8(older)
    if len(full) <= len(delta):
        return _pack(WHOLE, full)
    return _pack(DELTA, delta)


def is_whole(data: bytes) -> bool:
    """Whether ``data`` holds its text whole (it needs no newer text to be read)."""
    return bool(data) and data[0] & ~COMPRESSED == WHOLE


def _payload(data: bytes) -> tuple[int, bytes]:
    if not data:
        raise ValueError("an empty delta")
    kind, body = data[0], data[1:]
    if kind & COMPRESSED:
        try:
            body = zlib.decompress(body)
        except zlib.error as exc:  # damage, reported as any other unreadable delta
            raise ValueError(f"a compressed delta that does not decompress ({exc})") from exc
        kind &= ~COMPRESSED
    if kind not in (DELTA, WHOLE):
        raise ValueError(f"unknown delta kind {data[0]:#x}")
    return kind, body


def apply(data: bytes, newer: str | None) -> str:
    """The older text that ``data`` describes, from ``newer`` (not read for a whole text).
    A delta made from another text is refused with ``ValueError``."""
    kind, body = _payload(data)
    if kind == WHOLE:
        return body.decode("utf-8", "surrogatepass")
    if newer is None:
        raise ValueError("a delta needs the newer text")
    length, at = _read_varint(body, 0)
    if length != len(newer):
        raise ValueError(f"a delta made from {length} characters, applied to {len(newer)}")
    parts: list[str] = []
    cursor = 0
    while at < len(body):
        tag, at = _read_varint(body, at)
        size = tag >> 1
        if tag & 1 == _COPY:
            zigzag, at = _read_varint(body, at)
            start = cursor + (zigzag >> 1 if not zigzag & 1 else -((zigzag + 1) >> 1))
            if start < 0 or start + size > len(newer):
                raise ValueError("a delta copies past the end of the text")
            parts.append(newer[start : start + size])
            cursor = start + size
        else:
            if at + size > len(body):
                raise ValueError("a delta ends inside a literal")
            parts.append(body[at : at + size].decode("utf-8", "surrogatepass"))
            at += size
    return "".join(parts)
