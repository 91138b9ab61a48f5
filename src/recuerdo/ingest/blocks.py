"""What every parser gives: blocks of text (heading, paragraph, list item) in reading order."""

from __future__ import annotations

import re
from typing import Literal, NamedTuple

BlockKind = Literal["heading", "paragraph", "list_item"]


class Block(NamedTuple):
    kind: BlockKind
    text: str
    page: int | None


def clean(text: str) -> str:
    """One line of text: words hyphenated across lines joined, whitespace runs one space."""
    text = re.sub(r"-\n(?=[a-z])", "", text)
    return " ".join(text.split())
