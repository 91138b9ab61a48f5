"""The two list-item shapes of basic-memory's Markdown (its documented note format).

- An observation: ``- [category] text #tag (context)``. The category is optional when the item
  has a ``#tag``; a trailing parenthesised group is its context; ``#words`` are its tags and stay
  in its text.
- A relation: ``- relation_type [[Target]] (context)``. The type is one word, or several in
  quotes; after the link only a parenthesised context may follow (an item with more text after
  the link is prose that happens to link, and stays in the note's text).

Task items (``[ ]``, ``[x]``, ``[-]`` and other one-symbol markers), Markdown links and clock
times (``[00:01:02]``) are not categories. Items inside fenced code blocks are not read.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

_ITEM = re.compile(r"^\s*[-*+]\s+(.*\S)\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_CATEGORY = re.compile(r"^\[([^\[\]()]+)\]\s+(\S.*)$")
_CLOCK = re.compile(r"^\d{1,3}:\d{2}(:\d{2})?([.,]\d{1,3})?(\s+-\s+\d{1,3}:\d{2}(:\d{2})?)?$")
_LINK_ONLY = re.compile(r"^\[[^\]]*\]\([^)]*\)$")


@dataclass(frozen=True)
class Observation:
    category: str | None
    content: str
    tags: tuple[str, ...]
    context: str | None


@dataclass(frozen=True)
class Relation:
    type: str
    target: str
    context: str | None


def list_items(body: str) -> Iterator[tuple[int, str]]:
    """(line number, text after the bullet) of every list item outside fenced code."""
    fenced = False
    for number, line in enumerate(body.splitlines(), start=1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        match = _ITEM.match(line)
        if match:
            yield number, match.group(1)


def parse_item(text: str) -> Observation | Relation | None:
    """What one list item states: a relation, an observation, or nothing to import."""
    text = text.strip()
    return _relation(text) or _observation(text)


def _closing_group(text: str) -> tuple[str, str] | None:
    """(text before, inside) when ``text`` ends with one balanced ``(...)`` group that is
    preceded by white space (or starts the text) and holds something."""
    if not text.endswith(")"):
        return None
    depth = 0
    for position in range(len(text) - 1, -1, -1):
        char = text[position]
        if char == ")":
            depth += 1
        elif char == "(":
            depth -= 1
            if depth == 0:
                before, inside = text[:position], text[position + 1 : -1].strip()
                if not inside or (before and not before[-1].isspace()):
                    return None
                return before.rstrip(), inside
    return None


def _relation(text: str) -> Relation | None:
    start = text.find("[[")
    if start <= 0:
        return None
    end = text.find("]]", start + 2)
    if end == -1:
        return None
    label = text[:start].strip()
    if len(label) >= 2 and label[0] in "'\"" and label[-1] == label[0]:
        label = label[1:-1].strip()
    elif any(char.isspace() for char in label):
        return None
    target = text[start + 2 : end].strip()
    if not label or not target or "[[" in target or "[[" in label:
        return None
    after = text[end + 2 :].strip()
    context = None
    if after:
        group = _closing_group(after)
        if group is None or group[0]:
            return None
        context = group[1]
    return Relation(label, target, context)


def _is_category(label: str) -> bool:
    if len(label) == 1 and (label in "xX" or not label.isalnum()):
        return False  # a task marker
    return not _CLOCK.match(label)


def _tags(text: str) -> tuple[str, ...]:
    found: list[str] = []
    for word in text.split():
        if word.startswith("#") and len(word) > 1:
            found.extend(part for part in word.split("#") if part and part not in found)
    return tuple(found)


def _observation(text: str) -> Observation | None:
    if text.startswith(("[ ]", "[x]", "[X]", "[-]")) or _LINK_ONLY.match(text):
        return None
    if text.startswith("[[") and text.endswith("]]"):
        return None
    category = None
    match = _CATEGORY.match(text)
    if match and _is_category(match.group(1).strip()):
        category, text = match.group(1).strip(), match.group(2).strip()
    tags = _tags(text)
    if category is None and not tags:
        return None
    context = None
    group = _closing_group(text)
    if group is not None and group[0]:
        text, context = group
    return Observation(category, text, _tags(text), context)
