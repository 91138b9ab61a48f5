"""Word (.docx): the body's paragraphs and tables in the order they are written, each
footnote and endnote after the block that first cites it (decision 0154), each comment after
the block that holds its anchor, then the headers and footers a reader sees, once each
(decision 0160).

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
import re
from collections.abc import Iterator
from typing import Any

from .blocks import Block, BlockKind, clean
from .docx_parts import COMMENT_ANCHORS, NOTE_REFERENCES, Annotations, labelled, page_parts

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
_FIELD_CHAR, _FIELD_CHAR_TYPE = f"{{{_W}}}fldChar", f"{{{_W}}}fldCharType"
_INSTRUCTION, _SIMPLE_FIELD = f"{{{_W}}}instrText", f"{{{_W}}}fldSimple"
_INSTRUCTION_ATTRIBUTE = f"{{{_W}}}instr"
_PAGE_FIELDS = frozenset(("PAGE", "NUMPAGES", "SECTIONPAGES"))
_WORDED = re.compile(r"[^\W_]")  # a letter or a digit
_MARKS = frozenset((*NOTE_REFERENCES, *COMMENT_ANCHORS, _FIELD_CHAR, _INSTRUCTION, _SIMPLE_FIELD))
_SKIPPED = frozenset(
    (
        f"{{{_MC}}}Fallback",  # the same content again, for older readers
        f"{{{_W}}}del",  # a tracked deletion: not in the document any more
        f"{{{_W}}}pPr",
        f"{{{_W}}}rPr",
    )
)


MAX_UNZIPPED_XML = 64 * 1024 * 1024
"""The most XML a Word file may unzip to (decision 0160's review). python-docx parses every
XML part when it opens the file, at about 15 bytes of memory a byte of XML: a 300 KB upload
of 2 million short paragraphs took 1.2 GB before a word was read, and a 5 MB one (the upload
limit) would take tens of GB. A 5 MB file of text XML unzips to about 50 MB."""
MAX_UNZIPPED = 256 * 1024 * 1024  # every part, images included (kept as bytes)


def _check_unzipped(data: bytes) -> None:
    """Refuse a file whose parts unzip past the limits, from the sizes its directory declares
    (``zipfile`` reads no part past its declared size: a part that lies is corrupt)."""
    import zipfile

    from ..errors import PayloadTooLarge

    with zipfile.ZipFile(io.BytesIO(data)) as package:
        parts = package.infolist()
    xml = sum(p.file_size for p in parts if p.filename.lower().endswith((".xml", ".rels")))
    every = sum(p.file_size for p in parts)
    for size, limit, what in ((xml, MAX_UNZIPPED_XML, "XML"), (every, MAX_UNZIPPED, "data")):
        if size > limit:
            raise PayloadTooLarge(
                f"the Word document unzips to {size} bytes of {what}; the limit is {limit}",
                size=size,
                maximum=limit,
            )


def docx(data: bytes) -> list[Block]:
    import zipfile

    import docx as python_docx

    from ..errors import DocumentCorrupt, PayloadTooLarge

    try:
        _check_unzipped(data)
        document = python_docx.Document(io.BytesIO(data))
        kinds = _style_kinds(document)
        # Parses the parts python-docx keeps as bytes (notes): one that is not XML is a
        # corrupt file, as Word says, not an internal error.
        marks = Annotations(document, _texts)
        # A main part that is not a document (no body; another part's root) was an internal
        # error when the walk reached it.
        body = document.element.body
        if body is None:
            raise ValueError("no body")
    except PayloadTooLarge:
        raise
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise DocumentCorrupt("the Word document is truncated or corrupt") from exc
    except Exception as exc:
        raise DocumentCorrupt(f"the Word document cannot be read ({type(exc).__name__})") from exc
    blocks = []
    for element in _items(body, (_P, _TBL)):
        if element.tag == _P:
            text = clean(_paragraph_text(element, marks))
            if text:
                blocks.append(Block(_kind(element, kinds), text, None))
        else:
            # A row is a block: what it cites or anchors follows it, not the whole table.
            for row in _rows(element, marks):
                blocks.append(Block("paragraph", row, None))
                blocks += marks.since()
        blocks += marks.since()
    # After the body: a running header or footer is about the whole document or a section of
    # it, not the paragraph it would sit beside; placed there, it would split a passage of
    # body text. The same text shown on first, odd and even pages, or in several sections, is
    # read once.
    for kind in ("header", "footer"):
        read: set[tuple[str, ...]] = set()
        for root in page_parts(document, kind):
            texts = _texts(root, marks)
            if texts and tuple(texts) not in read:
                read.add(tuple(texts))
                blocks += labelled(f"[{kind}]", texts)
            blocks += marks.since()
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


def _paragraph_text(paragraph: Any, marks: Annotations) -> str:
    """A paragraph's visible text: its runs wherever they sit (in hyperlinks, inline content
    controls, fields, tracked insertions), tabs and line breaks as characters, and a note's
    reference as its label; a comment anchored in it is noted, to be read after its block.

    A paragraph whose only letters and digits are page numbers (the result Word last drew of a
    ``PAGE``, ``NUMPAGES`` or ``SECTIONPAGES`` field: a footer "- 3 -") is no text: the number
    is whichever page Word drew it on, and every document with page numbers would end in one.
    Around words ("Page 3 of 12") the field's result stays, as the text shows it."""
    parts: list[str] = []
    fields = _Fields()
    worded = numbered = False
    stack = [iter(paragraph)]
    while stack:
        element = next(stack[-1], None)
        if element is None:
            stack.pop()
            continue
        tag = element.tag
        if tag == _TEXT:
            text = element.text or ""
            parts.append(text)
            if fields.numbering:
                numbered = True
            elif not worded:
                worded = _WORDED.search(text) is not None
        elif tag in _CHARACTERS:
            parts.append(_CHARACTERS[tag])
        elif tag in _MARKS:  # rare: one look-up on the common path, not five
            if tag in NOTE_REFERENCES:
                parts.append(marks.cite(element))
                worded = True
            elif tag in COMMENT_ANCHORS:
                marks.anchor(element)
            elif tag == _FIELD_CHAR:
                fields.mark(element)
            elif tag == _INSTRUCTION:
                fields.instruction(element)
            elif _page_number(element.get(_INSTRUCTION_ATTRIBUTE)):  # a simple field
                parts += (text.text or "" for text in element.iter(_TEXT))
                numbered = True
            else:
                stack.append(iter(element))
        elif tag not in _SKIPPED and len(element):
            stack.append(iter(element))
    return "".join(parts) if worded or not numbered else ""


class _Fields:
    """The fields open in a paragraph as its begin, separator and end marks are read: how many
    of them are page numbers showing their result. Counted, not searched, and each one's
    instruction read once, so that a paragraph of many fields costs time in proportion to them.
    A field whose end falls in a later paragraph (a table of contents) is left open here."""

    def __init__(self) -> None:
        # Each open field: its instruction's pieces until its separator, then whether it is a
        # page number.
        self.open: list[list[str] | bool] = []
        self.numbering = 0

    def mark(self, element: Any) -> None:
        kind = element.get(_FIELD_CHAR_TYPE)
        if kind == "begin":
            self.open.append([])
        elif kind == "separate" and self.open and isinstance(self.open[-1], list):
            numbering = _page_number("".join(self.open[-1]))
            self.open[-1] = numbering
            self.numbering += numbering
        elif kind == "end" and self.open:
            self.numbering -= self.open.pop() is True

    def instruction(self, element: Any) -> None:
        if self.open and isinstance(self.open[-1], list):
            self.open[-1].append(element.text or "")


def _page_number(instruction: str | None) -> bool:
    words = (instruction or "").split(maxsplit=1)
    return bool(words) and words[0].upper() in _PAGE_FIELDS


def _rows(table: Any, marks: Annotations) -> Iterator[str]:
    for row in _items(table, (_TR,)):
        cells = [_cell_text(cell, marks) for cell in _items(row, (_TC,))]
        cells = [cell for cell in cells if cell]
        if cells:
            yield " | ".join(cells)


def _cell_text(cell: Any, marks: Annotations) -> str:
    """A cell's paragraphs and the rows of any table nested in it, in order, on one line (a
    cell's text is part of its row's block)."""
    return " ".join(_texts(cell, marks))


def _texts(parent: Any, marks: Annotations) -> list[str]:
    """The texts of ``parent``'s paragraphs and of its tables' rows, in order, empty ones
    left out (a cell, a note, a comment, a header)."""
    parts = []
    for element in _items(parent, (_P, _TBL)):
        if element.tag == _P:
            parts.append(clean(_paragraph_text(element, marks)))
        else:
            parts += _rows(element, marks)
    return [part for part in parts if part]
