"""Cutting item text into chunks: the unit of search and citation.

A chunk is a span ``[start, end)`` of code points into the item's text. Text is cut at sentence
ends into chunks of about 100-200 words; a short text is one chunk; a message is one chunk
(one turn). Spans always index the stored text exactly, so a citation can be re-checked.
"""

from __future__ import annotations

import re
from typing import NamedTuple

TARGET_WORDS = 150
MAX_WORDS = 200
MIN_WORDS = 100
# A sentence ends at . ! ? … (and closing quotes/brackets) followed by space, or at a blank
# line; list items and headings (a line break before "-", "*", "#", a digit) end one too.
_BOUNDARY = re.compile(r"(?<=[.!?…])[\"')\]]*\s+|\n\s*\n+|\n(?=\s*(?:[-*+#>]|\d+[.)])\s)")
_WORD = re.compile(r"\S+")


class Span(NamedTuple):
    start: int
    end: int


def _sentences(text: str) -> list[Span]:
    spans = []
    position = 0
    for match in _BOUNDARY.finditer(text):
        if match.start() > position:
            spans.append(Span(position, match.start()))
        position = match.end()
    if position < len(text):
        spans.append(Span(position, len(text)))
    return [s for s in spans if text[s.start : s.end].strip()]


def sentence_spans(text: str, within: Span) -> list[Span]:
    """The sentences of ``text[within]``, as spans of ``text`` (without surrounding blanks)."""
    found = []
    for sentence in _sentences(text[within.start : within.end]):
        piece = text[within.start + sentence.start : within.start + sentence.end]
        start = within.start + sentence.start + (len(piece) - len(piece.lstrip()))
        found.append(Span(start, start + len(piece.strip())))
    return found


def _split_long(text: str, span: Span) -> list[Span]:
    """A run-on 'sentence' longer than MAX_WORDS is cut between words."""
    words = list(_WORD.finditer(text, span.start, span.end))
    if len(words) <= MAX_WORDS:
        return [span]
    pieces = []
    for first in range(0, len(words), TARGET_WORDS):
        group = words[first : first + TARGET_WORDS]
        pieces.append(Span(group[0].start(), group[-1].end()))
    return pieces


def chunk_spans(text: str, *, whole: bool = False) -> list[Span]:
    """The chunk spans of ``text``; ``whole`` keeps it as one chunk (a message turn)."""
    stripped = text.strip()
    if not stripped:
        return []
    if whole:
        start = text.index(stripped[0])
        return [Span(start, start + len(stripped))]
    sentences = [piece for s in _sentences(text) for piece in _split_long(text, s)]
    chunks: list[Span] = []
    current: Span | None = None
    words = 0
    for sentence in sentences:
        count = len(_WORD.findall(text, sentence.start, sentence.end))
        if current is not None and words + count > MAX_WORDS and words >= MIN_WORDS // 2:
            chunks.append(current)
            current, words = None, 0
        current = sentence if current is None else Span(current.start, sentence.end)
        words += count
        if words >= TARGET_WORDS:
            chunks.append(current)
            current, words = None, 0
    if current is not None:
        if chunks and words < MIN_WORDS // 4:
            chunks[-1] = Span(chunks[-1].start, current.end)  # a short tail joins its chunk
        else:
            chunks.append(current)
    return chunks


# Stored code is cut into whole lines: a hit then names a line span an editor can open.
CODE_MAX_LINES = 60
CODE_MIN_LINES = 20
CODE_MAX_CHARS = 4000


def code_spans(text: str) -> list[Span]:
    """Chunks of whole lines: at most CODE_MAX_LINES lines and about CODE_MAX_CHARS
    characters, ended after a blank line when one falls in the second part of the window
    (code reads in blocks); a single longer line is cut by characters."""
    starts = [0]
    at = text.find("\n")
    while at != -1 and at + 1 < len(text):
        starts.append(at + 1)
        at = text.find("\n", at + 1)
    ends = [*starts[1:], len(text)]
    spans: list[Span] = []
    first = 0
    while first < len(starts):
        last = first
        while (
            last + 1 < len(starts)
            and last + 1 - first < CODE_MAX_LINES
            and ends[last + 1] - starts[first] <= CODE_MAX_CHARS
        ):
            last += 1
        if last + 1 < len(starts):
            for candidate in range(last, first + CODE_MIN_LINES - 1, -1):
                if not text[starts[candidate] : ends[candidate]].strip():
                    last = candidate
                    break
        start, stop = starts[first], ends[last]
        while stop - start > CODE_MAX_CHARS and last == first:  # one very long line
            spans.append(Span(start, start + CODE_MAX_CHARS))
            start += CODE_MAX_CHARS
        if text[start:stop].strip():
            spans.append(Span(start, stop))
        first = last + 1
    return spans


def line_range(text: str, start: int, stop: int) -> tuple[int, int]:
    """1-based first and last line of ``text[start:stop]``."""
    first = text.count("\n", 0, start) + 1
    return first, first + text.count("\n", start, max(start, stop - 1))
