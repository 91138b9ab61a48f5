"""Word (.docx): the body's paragraphs and tables in the order they are written, each
footnote and endnote after the block that first cites it (decision 0154).

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
    notes = _Notes(document)
    blocks = []
    for element in _items(document.element.body, (_P, _TBL)):
        if element.tag == _P:
            text = clean(_paragraph_text(element, notes))
            if text:
                blocks.append(Block(_kind(element, kinds), text, None))
        else:
            blocks += [Block("paragraph", row, None) for row in _rows(element, notes)]
        blocks += notes.cited_since()
    return blocks


_NOTE_KINDS = ("footnote", "endnote")
_REFERENCES = {f"{{{_W}}}{kind}Reference": kind for kind in _NOTE_KINDS}
_NOTE_ID, _NOTE_TYPE = f"{{{_W}}}id", f"{{{_W}}}type"
_ROMAN = (
    *((1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc")),
    *((50, "l"), (40, "xl"), (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i")),
)


class _Notes:
    """A document's footnotes and endnotes by id, labelled in the order the body first cites
    them as Word numbers them by default (footnotes 1, 2, 3; endnotes i, ii, iii). A note is
    read where it is first cited: its text, after the block that cites it, stays beside what it
    qualifies (a passage, a citation). The parts are read once, through python-docx's package."""

    def __init__(self, document: Any) -> None:
        self._notes: dict[str, dict[str, Any]] = {kind: {} for kind in _NOTE_KINDS}
        self._labels: dict[tuple[str, str], str] = {}
        self._counts = dict.fromkeys(_NOTE_KINDS, 0)
        self._cited: list[tuple[str, Any]] = []
        for relation in document.part.rels.values():
            kind = relation.reltype.rsplit("/", 1)[-1].removesuffix("s")
            if kind not in self._notes or relation.is_external:
                continue
            root = _part_root(relation.target_part)
            for note in root.iter(f"{{{_W}}}{kind}"):
                # The separators Word draws above the notes are notes too, with a type.
                if note.get(_NOTE_TYPE) in (None, "normal"):
                    self._notes[kind][note.get(_NOTE_ID)] = note

    def cite(self, element: Any) -> str:
        """The label of the note ``element`` (a reference) cites, as the text shows it."""
        kind, note_id = _REFERENCES[element.tag], element.get(_NOTE_ID)
        label = self._labels.get((kind, note_id))
        if label is None:
            self._counts[kind] += 1
            count = self._counts[kind]
            label = str(count) if kind == "footnote" else _roman(count)
            self._labels[(kind, note_id)] = label
            note = self._notes[kind].get(note_id)
            if note is not None:
                self._cited.append((label, note))
        return f"[{label}]"

    def cited_since(self) -> list[Block]:
        """The blocks of the notes first cited since the last call: each note's paragraphs
        and table rows, the first under its label."""
        blocks: list[Block] = []
        cited, self._cited = self._cited, []
        for label, note in cited:
            texts = _texts(note, self)
            if texts:
                texts[0] = f"[{label}] {texts[0]}"
            blocks += [Block("paragraph", text, None) for text in texts]
        return blocks


def _part_root(part: Any) -> Any:
    """A part's XML root: python-docx parses the parts it knows, and keeps the others' bytes."""
    element = getattr(part, "element", None)
    if element is not None:
        return element
    from docx.oxml.parser import parse_xml

    return parse_xml(part.blob)


def _roman(number: int) -> str:
    digits = []
    for value, letters in _ROMAN:
        count, number = divmod(number, value)
        digits.append(letters * count)
    return "".join(digits)


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


def _paragraph_text(paragraph: Any, notes: _Notes) -> str:
    """A paragraph's visible text: its runs wherever they sit (in hyperlinks, inline content
    controls, fields, tracked insertions), tabs and line breaks as characters, and a note's
    reference as its label."""
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
        elif tag in _REFERENCES:
            parts.append(notes.cite(element))
        elif tag not in _SKIPPED and len(element):
            stack.append(iter(element))
    return "".join(parts)


def _rows(table: Any, notes: _Notes) -> Iterator[str]:
    for row in _items(table, (_TR,)):
        cells = [_cell_text(cell, notes) for cell in _items(row, (_TC,))]
        cells = [cell for cell in cells if cell]
        if cells:
            yield " | ".join(cells)


def _cell_text(cell: Any, notes: _Notes) -> str:
    """A cell's paragraphs and the rows of any table nested in it, in order, on one line (a
    cell's text is part of its row's block)."""
    return " ".join(_texts(cell, notes))


def _texts(parent: Any, notes: _Notes) -> list[str]:
    """The texts of ``parent``'s paragraphs and of its tables' rows, in order, empty ones
    left out (a cell, a note)."""
    parts = []
    for element in _items(parent, (_P, _TBL)):
        if element.tag == _P:
            parts.append(clean(_paragraph_text(element, notes)))
        else:
            parts += _rows(element, notes)
    return [part for part in parts if part]
