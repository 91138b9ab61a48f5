"""Pure text operations on note bodies: byte caps, private spans, and the five edit operations.

Nothing here touches the store, so every rule can be tested (and fuzzed) on plain strings.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ..errors import (
    FindAmbiguous,
    FindNotFound,
    InvalidOperation,
    OperationContentMismatch,
    SectionAmbiguous,
    SectionNotFound,
)

OPERATIONS = ("append", "prepend", "replace", "replace_section", "find_replace")
_PRIVATE_TAG = re.compile(r"<(/?)private>", re.IGNORECASE)
PRIVATE_MARK = "[private]"
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*)$")
"""Up to three spaces may open a heading (CommonMark): "   ## B" was not one, and its section
could not be replaced."""

_FENCE = re.compile(r"^ {0,3}(?:(`{3,})(?!.*`)|(~{3,}))")
"""A fence is indented three spaces at most, and a backtick fence's info has no backtick
(CommonMark): an indented code line of backticks, or "```x``` text" (inline code), opened a
fence that hid every heading after it."""


def without_closing_hashes(title: str) -> str:
    """A heading's title without its closing run of ``#``, which follows a space only ("C#" is a
    title, "C ##" is "C"). Not a regular expression: ``(?:^|[ \t]+)#+[ \t]*$`` backtracked
    over every run of spaces, and a heading of 40,000 spaces took 12 s to read."""
    kept = title.rstrip()
    bare = kept.rstrip("#")
    if not bare:
        return ""
    return bare.rstrip(" \t") if bare != kept and bare[-1] in " \t" else kept


class Capped(NamedTuple):
    text: str
    truncated: bool
    original_bytes: int
    stored_bytes: int


def cap_utf8(text: str, limit_bytes: int) -> Capped:
    """Cut ``text`` to at most ``limit_bytes`` of UTF-8 without splitting a character."""
    raw = text.encode("utf-8")
    if len(raw) <= limit_bytes:
        return Capped(text, False, len(raw), len(raw))
    kept = raw[:limit_bytes].decode("utf-8", errors="ignore")
    return Capped(kept, True, len(raw), len(kept.encode("utf-8")))


def redact_private(text: str) -> str:
    """``<private>...</private>`` spans never reach the store. Spans may nest: a span ends at
    the ``</private>`` that closes its first ``<private>`` (the first ``</private>`` ended it,
    and what followed an inner span was stored in clear). A ``<private>`` never closed takes
    the rest of the text, as a private key without its END marker does (decision 0080): it was
    stored in clear, tag and all. A ``</private>`` with no span open is left as it is: nothing
    says where the private text began."""
    if "<" not in text:
        return text
    kept: list[str] = []
    depth, start = 0, 0
    for tag in _PRIVATE_TAG.finditer(text):
        if not tag.group(1):  # an opening tag
            if depth == 0:
                kept.append(text[start : tag.start()])
            depth += 1
        elif depth:
            depth -= 1
            if depth == 0:
                kept.append(PRIVATE_MARK)
                start = tag.end()
    if depth:
        kept.append(PRIVATE_MARK)
    else:
        kept.append(text[start:])
    return "".join(kept)


_BLANK_LINES = re.compile(r"\A(?:[ \t]*\r?\n)+")


def line_break(text: str) -> str:
    """The line break a note is written with: CRLF when every break in it is one, else LF. The
    breaks an edit adds (the blank line of an append, those around a replaced section) follow
    it: a CRLF note came back with LF joins among its CRLF lines (decision 0144)."""
    return "\r\n" if "\r\n" in text and text.count("\n") == text.count("\r\n") else "\n"


def join_blocks(first: str, second: str, newline: str | None = None) -> str:
    """Two blocks of text separated by one blank line (the append rule). The second keeps the
    indentation of its first line: only blank lines are taken off before it (a prepend took
    the spaces of a note that opens with indented code). The blank line is made of ``newline``,
    by default the first block's line break (the note an append or a remember adds to)."""
    newline = line_break(first) if newline is None else newline
    first, second = first.rstrip(), _BLANK_LINES.sub("", second).rstrip()
    if not first:
        return second
    if not second:
        return first
    return f"{first}{newline * 2}{second}"


class Heading(NamedTuple):
    line: int  # its first line (a setext heading's text may run over several)
    level: int
    title: str
    end: int  # its last line: the underline of a setext heading


_SETEXT_UNDERLINE = re.compile(r"^ {0,3}(?:(=+)|(-+))[ \t]*$")
_NO_PARAGRAPH = re.compile(
    r"^(?: {4}|\t)| {0,3}(?:[-*+>]|\d{1,9}[.)])(?:[ \t]|$)| {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$"
)
"""Indented code, a list item's or a quote's first line, and a thematic break (``***``): no
paragraph starts there, so a ``---`` under one is a thematic break, not a setext underline
(CommonMark)."""
_FRONT_MATTER_END = ("---", "...")


def headings(text: str) -> list[Heading]:
    """Markdown headings outside code fences and front matter: ATX (``## Title``) and setext (a
    paragraph over a line of ``=`` for level 1 or ``-`` for level 2; decision 0153). A fence is
    closed only by a run of its own character at least as long, with nothing after it
    (CommonMark): a ``~~~`` line inside a backtick block closed it, and the headings after the
    block were hidden, so a section replaced before them took them with it."""
    found = []
    fence = ""  # the open fence's run of backticks or tildes
    paragraph: list[str] = []  # the open paragraph's lines, which an underline makes a heading
    lines = text.split("\n")
    skip = _front_matter_lines(lines)
    for number, raw in enumerate(lines):
        if number < skip:
            continue
        line = raw.removesuffix("\r")  # a CRLF note's underline ended in "\r", and was none
        mark = _FENCE.match(line)
        run, after = ((mark.group(1) or mark.group(2)), line[mark.end() :]) if mark else ("", "")
        if fence:
            if run and run[0] == fence[0] and len(run) >= len(fence) and not after.strip():
                fence = ""
            continue
        if run:
            fence, paragraph = run, []
        elif match := _HEADING.match(line):
            title = without_closing_hashes(match.group(2))
            found.append(Heading(number, len(match.group(1)), title.strip(), number))
            paragraph = []
        elif paragraph and (underline := _SETEXT_UNDERLINE.match(line)):
            title = " ".join(part.strip() for part in paragraph)
            level = 1 if underline.group(1) else 2
            found.append(Heading(number - len(paragraph), level, title, number))
            paragraph = []
        elif not line.strip() or (not paragraph and _NO_PARAGRAPH.match(line)):
            paragraph = []
        elif paragraph and _NO_PARAGRAPH.match(line) and not line[:1].isspace():
            paragraph = []  # a list item or a quote interrupts the paragraph
        else:
            paragraph.append(line)
    return found


def _front_matter_lines(lines: list[str]) -> int:
    """How many lines the note's front matter takes (a ``---`` first line, up to the next
    ``---`` or ``...``): its closing ``---`` under ``title: x`` is no heading."""
    if not lines or lines[0].rstrip() != "---":
        return 0
    for number in range(1, len(lines)):
        if lines[number].rstrip() in _FRONT_MATTER_END:
            return number + 1
    return 0


def _replace_section(text: str, section: str, body: str) -> str:
    given = section.strip()
    if line := _HEADING.match(given):  # the heading line itself, as the note shows it
        given = without_closing_hashes(line.group(2))  # "## C ##" names "C"
    wanted = given.lstrip("#").strip().casefold()
    found = headings(text)
    matches = [h for h in found if h.title.casefold() == wanted]
    if not matches:
        present = ", ".join(f'"{h.title}"' for h in found) or "none"
        raise SectionNotFound(
            f'No section titled "{section}". Headings present: {present}',
            headings=[h.title for h in found],
        )
    if len(matches) > 1:
        raise SectionAmbiguous(
            f'{len(matches)} sections are titled "{section}"; edit the note with find_replace '
            "or rename one of them first"
        )
    target = matches[0]
    lines = text.split("\n")
    end = len(lines)
    for heading in found:
        if heading.line > target.line and heading.level <= target.level:
            end = heading.line
            break
    newline = line_break(text)
    middle = body.strip("\r\n")
    own = headings(middle)
    heading_lines = lines[target.line : target.end + 1]
    if own and own[0].line == 0 and own[0].title.casefold() == wanted:
        # The content opens with the section's own heading (as read back with get): it
        # replaces the heading's lines rather than stacking a second heading under them, which
        # left two sections of that title, and the next replace_section was refused as
        # ambiguous.
        given_lines = middle.split("\n")
        heading_lines = [part.rstrip("\r") + newline[:-1] for part in given_lines[: own[0].end + 1]]
        middle = "\n".join(given_lines[own[0].end + 1 :]).strip("\r\n")
    head = "\n".join([*lines[: target.line], *heading_lines]).removesuffix("\r")
    rest = "\n".join(lines[end:])
    parts = [head, middle] if middle else [head]
    result = (newline * 2).join(parts)
    if rest.strip():
        return f"{result}{newline * 2}{rest}"
    return result + (newline if text.endswith("\n") else "")


def _occurrences(text: str, find: str) -> int:
    """How many times ``find`` occurs in ``text``, overlapping ones included ("ab ab" is twice
    in "ab ab ab": ``str.count`` counts it once, and the edit was not refused as ambiguous)."""
    count, at = 0, text.find(find)
    while at != -1:
        count += 1
        at = text.find(find, at + 1)
    return count


def _find_replace(text: str, find: str, replacement: str) -> str:
    if "\r" not in find and "\n" in find and find not in text and line_break(text) == "\r\n":
        # A passage copied with LF line breaks (as most callers send text) names the same
        # lines of a CRLF note: it was "not found" in a note that visibly held it.
        find = find.replace("\n", "\r\n")
        replacement = replacement.replace("\r\n", "\n").replace("\n", "\r\n")
    count = _occurrences(text, find)
    if count == 0:
        raise FindNotFound("The text to find does not occur in the note (nothing was changed)")
    if count > 1:
        raise FindAmbiguous(
            f"The text to find occurs {count} times; give a longer, unique passage",
            occurrences=count,
        )
    start = text.index(find)
    before, after = text[:start], text[start + len(find) :]
    if replacement:
        return before + replacement + after
    # Deleting: close the gap with the larger of the two surrounding runs of line breaks
    # (at most two, i.e. one blank line), so paragraphs neither merge nor drift apart. A run
    # is counted in breaks, not characters: CRLF counted twice, and a CRLF note's paragraphs
    # drifted two blank lines apart, joined by LF.
    kept_before = before.rstrip("\r\n")
    kept_after = after.lstrip("\r\n")
    runs = (before[len(kept_before) :], after[: len(after) - len(kept_after)])
    breaks = min(2, max(max(run.count("\n"), run.count("\r")) for run in runs))
    if not kept_before or not kept_after:
        return kept_before + kept_after
    if breaks == 0 and kept_before.endswith(" ") and kept_after.startswith(" "):
        kept_after = kept_after[1:]  # "a bad b" minus "bad" is "a b", not "a  b"
    newline = "\r\n" if "\r\n" in "".join(runs) else "\n"
    return kept_before + newline * breaks + kept_after


def check_edit(
    operation: object, content: object, section: object, find: object
) -> tuple[str, str]:
    """Refuse an operation whose arguments do not go together; return (operation, content)."""
    if operation not in OPERATIONS:
        raise InvalidOperation(
            f"Unknown edit operation {operation!r}. Operations: {', '.join(OPERATIONS)}"
        )
    assert isinstance(operation, str)
    if not isinstance(content, str):
        raise OperationContentMismatch(f"{operation} needs content (text)")
    if operation == "find_replace":
        if not isinstance(find, str) or not find:
            raise OperationContentMismatch("find_replace needs the text to find (find=...)")
    elif find is not None:
        raise OperationContentMismatch(f"find is only used by find_replace, not {operation}")
    if operation == "replace_section":
        if not isinstance(section, str) or not section.strip():
            raise OperationContentMismatch("replace_section needs the heading (section=...)")
    elif section is not None:
        raise OperationContentMismatch(f"section is only used by replace_section, not {operation}")
    if operation in ("append", "prepend", "replace") and not content.strip():
        raise OperationContentMismatch(
            f"{operation} needs non-empty content (to remove text use find_replace with empty "
            "content, or delete the note)"
        )
    return operation, content


def apply_edit(
    text: str, operation: str, content: str, *, section: str | None = None, find: str | None = None
) -> str:
    """The note body after one edit (arguments already checked by :func:`check_edit`)."""
    if operation == "append":
        return join_blocks(text, content)
    if operation == "prepend":
        return join_blocks(content, text, line_break(text))
    if operation == "replace":
        return content
    if operation == "replace_section":
        assert section is not None
        return _replace_section(text, section, content)
    assert find is not None
    return _find_replace(text, find, content)
