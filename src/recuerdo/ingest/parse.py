"""Parsers: bytes of a known kind -> blocks of text in reading order.

A block is a heading, paragraph or list item with its page (PDF) or None. PDF paragraphs come
from the page layout (pdfminer's text boxes), not one per line; Word keeps its styles' headings
and list items; HTML keeps its block elements in document order.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

from ..errors import DocumentCorrupt, DocumentNotReadable


class Block(NamedTuple):
    kind: str  # heading | paragraph | list_item
    text: str
    page: int | None


def _clean(text: str) -> str:
    text = re.sub(r"-\n(?=[a-z])", "", text)  # words hyphenated across lines
    return " ".join(text.split())


def pdf(data: bytes) -> list[Block]:
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LAParams, LTTextBox
    from pdfminer.pdfdocument import PDFEncryptionError, PDFPasswordIncorrect
    from pdfminer.pdfparser import PDFSyntaxError
    from pdfminer.psexceptions import PSException

    blocks: list[Block] = []
    try:
        for number, page in enumerate(extract_pages(io.BytesIO(data), laparams=LAParams()), 1):
            boxes = sorted(
                (e for e in page if isinstance(e, LTTextBox)), key=lambda box: (-box.y1, box.x0)
            )
            for box in boxes:
                text = _clean(box.get_text())
                if text:
                    kind = "list_item" if re.match(r"^([•\-*]|\d+[.)])\s", text) else "paragraph"
                    blocks.append(Block(kind, text, number))
    except (PDFEncryptionError, PDFPasswordIncorrect) as exc:
        raise DocumentNotReadable("the PDF is encrypted: no text can be read") from exc
    except (
        PDFSyntaxError,
        PSException,
        ValueError,
        KeyError,
        TypeError,
        AssertionError,
        IndexError,
    ) as exc:
        raise DocumentCorrupt(f"the PDF is truncated or corrupt ({type(exc).__name__})") from exc
    except Exception as exc:
        if "encrypt" in str(exc).lower() or "password" in str(exc).lower():
            raise DocumentNotReadable("the PDF is encrypted: no text can be read") from exc
        raise DocumentCorrupt(f"the PDF cannot be read ({type(exc).__name__})") from exc
    if not blocks:
        raise DocumentNotReadable("the PDF holds no text (scanned pages or images only)")
    return blocks


def docx(data: bytes) -> list[Block]:
    import zipfile

    import docx as python_docx

    try:
        document = python_docx.Document(io.BytesIO(data))
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise DocumentCorrupt("the Word document is truncated or corrupt") from exc
    except Exception as exc:
        raise DocumentCorrupt(f"the Word document cannot be read ({type(exc).__name__})") from exc
    blocks = []
    for paragraph in document.paragraphs:
        text = _clean(paragraph.text)
        if not text:
            continue
        style = (paragraph.style.name or "").lower() if paragraph.style is not None else ""
        kind = (
            "heading"
            if style.startswith(("heading", "title"))
            else "list_item"
            if "list" in style
            else "paragraph"
        )
        blocks.append(Block(kind, text, None))
    for table in document.tables:
        for row in table.rows:
            cells = [_clean(cell.text) for cell in row.cells]
            if any(cells):
                blocks.append(Block("paragraph", " | ".join(cells), None))
    return blocks


_HTML_BLOCKS = {
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "p",
    "li",
    "pre",
    "blockquote",
    "td",
    "th",
    "dt",
    "dd",
    "figcaption",
    "caption",
}


def html(text: str) -> list[Block]:
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(text)
    for node in tree.css("script, style, noscript, template"):
        node.decompose()
    root = tree.body or tree.root
    if root is None:
        return []
    blocks = []
    for node in root.traverse(include_text=False):
        if node.tag not in _HTML_BLOCKS:
            continue
        if any(parent.tag in _HTML_BLOCKS for parent in _parents(node)):
            continue  # nested block: its text is already in the outer one
        content = _clean(node.text(separator=" "))
        if content:
            kind = (
                "heading"
                if node.tag.startswith("h") and node.tag[1:].isdigit()
                else "list_item"
                if node.tag == "li"
                else "paragraph"
            )
            blocks.append(Block(kind, content, None))
    return blocks


def _parents(node: Any) -> Iterator[Any]:
    parent = node.parent
    while parent is not None:
        yield parent
        parent = parent.parent


def plain(text: str, markdown: bool) -> list[Block]:
    blocks = []
    for part in re.split(r"\n\s*\n", text.replace("\r\n", "\n")):
        lines = [line for line in part.split("\n") if line.strip()]
        if not lines:
            continue
        if markdown and all(re.match(r"^\s*([-*+]|\d+[.)])\s", line) for line in lines):
            blocks += [
                Block("list_item", _clean(re.sub(r"^\s*([-*+]|\d+[.)])\s+", "", line)), None)
                for line in lines
            ]
            continue
        if markdown and re.match(r"^#{1,6}\s", lines[0]):
            blocks.append(Block("heading", _clean(lines[0].lstrip("#")), None))
            lines = lines[1:]
            if not lines:
                continue
        blocks.append(Block("paragraph", _clean(" ".join(lines)), None))
    return blocks
