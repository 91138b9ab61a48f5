"""Parsers: bytes of a known kind -> blocks of text in reading order.

A block is a heading, paragraph or list item with its page (PDF) or None. PDF paragraphs come
from the page layout (``pdf_text``), Word keeps its body's order and its styles' headings and
list items (``docx_text``), HTML keeps every visible text in document order (``html_text``);
plain text and Markdown are read here.
"""

from __future__ import annotations

import re

from .blocks import Block, BlockKind, clean
from .docx_text import docx
from .html_text import html
from .pdf_text import pdf

__all__ = ["Block", "BlockKind", "docx", "html", "pdf", "plain"]


def plain(text: str, markdown: bool) -> list[Block]:
    blocks = []
    # Lines end in LF, CRLF or a lone CR (classic Mac text): each is a line end.
    for part in re.split(r"\n\s*\n", text.replace("\r\n", "\n").replace("\r", "\n")):
        lines = [line for line in part.split("\n") if line.strip()]
        if not lines:
            continue
        if markdown and all(re.match(r"^\s*([-*+]|\d+[.)])\s", line) for line in lines):
            blocks += [
                Block("list_item", clean(re.sub(r"^\s*([-*+]|\d+[.)])\s+", "", line)), None)
                for line in lines
            ]
            continue
        if markdown and re.match(r"^#{1,6}\s", lines[0]):
            blocks.append(Block("heading", clean(lines[0].lstrip("#")), None))
            lines = lines[1:]
            if not lines:
                continue
        blocks.append(Block("paragraph", clean(" ".join(lines)), None))
    return blocks
