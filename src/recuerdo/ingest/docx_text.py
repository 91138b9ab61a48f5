"""Word (.docx): the body's paragraphs and tables in the order they are written.

The body is walked once, as its XML: paragraphs, tables (a row is one block, its cells joined
with `` | ``; a table nested in a cell is read into that cell) and content controls
(``w:sdt``, which Word templates wrap around whole sections) in document order. Reading
``document.paragraphs`` and then ``document.tables`` lost the paragraphs in content controls
and the nested tables and moved every table to the end. Styles are read once into a map from
style id to kind: python-docx's ``paragraph.style`` looks the id up in the style list for
every paragraph, which made a document of many paragraphs quadratic.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

from .blocks import Block, BlockKind, clean

_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_MC = "http://schemas.openxmlformats.org/markup-compatibility/2006"
_P, _TBL, _TR, _TC = f"{{{_W}}}p", f"{{{_W}}}tbl", f"{{{_W}}}tr", f"{{{_W}}}tc"
_STYLE_ID, _VAL = f"{{{_W}}}styleId", f"{{{_W}}}val"
# Elements that only wrap content (a content control, custom XML, a tracked insertion): what
# they hold is read as if it stood in their place.
_WRAPPERS = frozenset(
    f"{{{_W}}}{tag}" for tag in ("sdt", "sdtContent", "customXml", "smartTag", "ins")
)
_CHARACTERS = {
    f"{{{_W}}}tab": "\t",
    f"{{{_W}}}br": "\n",
    f"{{{_W}}}cr": "\n",
    f"{{{_W}}}noBreakHyphen": "-",
}
_TEXT = f"{{{_W}}}t"
_SKIPPED = frozenset(
    (
        f"{{{_MC}}}Fallback",  # the same content again, for older readers
        f"{{{_W}}}del",  # a tracked deletion: not in the document any more
        f"{{{_W}}}pPr",
        f"{{{_W}}}rPr",
    )
)


def docx(data: bytes) -> list[Block]:
    import zipfile

    import docx as python_docx

    from ..errors import DocumentCorrupt

    try:
        document = python_docx.Document(io.BytesIO(data))
        kinds = _style_kinds(document)
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise DocumentCorrupt("the Word document is truncated or corrupt") from exc
    except Exception as exc:
        raise DocumentCorrupt(f"the Word document cannot be read ({type(exc).__name__})") from exc
    blocks = []
    for element in _items(document.element.body, (_P, _TBL)):
        if element.tag == _P:
            text = clean(_paragraph_text(element))
            if text:
                blocks.append(Block(_kind(element, kinds), text, None))
        else:
            blocks += [Block("paragraph", row, None) for row in _rows(element)]
    return blocks


def _style_kinds(document: Any) -> dict[str | None, BlockKind]:
    """Each paragraph style's id -> the kind of block its paragraphs are; ``None`` -> the
    default paragraph style's (a paragraph naming no style, or one that does not exist)."""
    kinds: dict[str | None, BlockKind] = {}
    for style in document.styles.element.iter(f"{{{_W}}}style"):
        if style.get(f"{{{_W}}}type") != "paragraph":
            continue
        name_element = style.find(f"{{{_W}}}name")
        name = (name_element.get(_VAL) if name_element is not None else "") or ""
        name = name.lower()
        kind: BlockKind = (
            "heading"
            if name.startswith(("heading", "title"))
            else "list_item"
            if "list" in name
            else "paragraph"
        )
        kinds[style.get(_STYLE_ID)] = kind
        if style.get(f"{{{_W}}}default") in ("1", "true", "on"):
            kinds[None] = kind
    return kinds


def _kind(paragraph: Any, kinds: dict[str | None, BlockKind]) -> BlockKind:
    properties = paragraph.find(f"{{{_W}}}pPr")
    style = None
    numbered = False
    if properties is not None:
        named = properties.find(f"{{{_W}}}pStyle")
        style = None if named is None else named.get(_VAL)
        numbered = properties.find(f"{{{_W}}}numPr") is not None
    kind = kinds.get(style, kinds.get(None, "paragraph"))
    # A paragraph numbered or bulleted directly (Word's "List Paragraph" with numbering, or
    # any style with a w:numPr) is a list item unless its style makes it a heading.
    return "list_item" if numbered and kind == "paragraph" else kind


def _items(parent: Any, tags: tuple[str, ...]) -> Iterator[Any]:
    """The children of ``parent`` with one of ``tags``, in order, looking through wrappers."""
    for child in parent:
        if child.tag in tags:
            yield child
        elif child.tag in _WRAPPERS:
            yield from _items(child, tags)


def _paragraph_text(paragraph: Any) -> str:
    """A paragraph's visible text: its runs wherever they sit (in hyperlinks, inline content
    controls, fields, tracked insertions), tabs and line breaks as characters."""
    parts: list[str] = []
    stack = [iter(paragraph)]
    while stack:
        element = next(stack[-1], None)
        if element is None:
            stack.pop()
            continue
        tag = element.tag
        if tag == _TEXT:
            parts.append(element.text or "")
        elif tag in _CHARACTERS:
            parts.append(_CHARACTERS[tag])
        elif tag not in _SKIPPED and len(element):
            stack.append(iter(element))
    return "".join(parts)


def _rows(table: Any) -> Iterator[str]:
    for row in _items(table, (_TR,)):
        cells = [_cell_text(cell) for cell in _items(row, (_TC,))]
        cells = [cell for cell in cells if cell]
        if cells:
            yield " | ".join(cells)


def _cell_text(cell: Any) -> str:
    """A cell's paragraphs and the rows of any table nested in it, in order, on one line (a
    cell's text is part of its row's block)."""
    parts = []
    for element in _items(cell, (_P, _TBL)):
        if element.tag == _P:
            parts.append(clean(_paragraph_text(element)))
        else:
            parts += _rows(element)
    return " ".join(part for part in parts if part)
