"""The parts of a Word file around its body: footnotes and endnotes (decision 0154), comments,
headers and footers (decision 0160).

Notes and comments are read where the text refers to them, after the block that holds the
reference; headers and footers once each, after the body. Every part comes through
python-docx's package (its relationships), parsed once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from .blocks import Block, clean

_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_ID, _TYPE, _VAL = f"{{{_W}}}id", f"{{{_W}}}type", f"{{{_W}}}val"
_NOTE_KINDS = ("footnote", "endnote")
NOTE_REFERENCES = {f"{{{_W}}}{kind}Reference": kind for kind in _NOTE_KINDS}
# Where a comment is anchored: its range's end, or the reference mark Word puts just after it.
COMMENT_ANCHORS = frozenset((f"{{{_W}}}commentRangeEnd", f"{{{_W}}}commentReference"))
_ROMAN = (
    *((1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc")),
    *((50, "l"), (40, "xl"), (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i")),
)
_OFF = ("0", "false", "off")

# Reads the paragraphs and table rows of an element (a note, a comment, a header) into texts,
# citing notes and anchoring comments through the Annotations it is given.
Reader = Callable[[Any, "Annotations"], list[str]]


class Annotations:
    """A document's footnotes, endnotes and comments by id.

    Notes are labelled in the order the text first cites them, as Word numbers them by default
    (footnotes 1, 2, 3; endnotes i, ii, iii), and read after the block that first cites them:
    a note qualifies what cites it (a passage, a citation holds both). A comment is read after
    the block that holds its anchor, under its author's name: it is about that text."""

    def __init__(self, document: Any, read: Reader) -> None:
        self._read = read
        self._notes: dict[str, dict[str, Any]] = {kind: {} for kind in _NOTE_KINDS}
        self._comments: dict[str, Any] = {}
        self._labels: dict[tuple[str, str], str] = {}
        self._counts = dict.fromkeys(_NOTE_KINDS, 0)
        self._cited: list[tuple[str, Any]] = []
        self._anchored: set[str] = set()
        self._placed: list[Any] = []
        parsed: set[tuple[str, str]] = set()
        for relation in document.part.rels.values():
            kind = relation.reltype.rsplit("/", 1)[-1].removesuffix("s")
            if relation.is_external or kind not in (*_NOTE_KINDS, "comment"):
                continue
            # Each part once: many relationships can name one part, and reading it for each
            # made a small file cost minutes (decision 0160).
            if (kind, relation.target_part.partname) in parsed:
                continue
            parsed.add((kind, relation.target_part.partname))
            root = part_root(relation.target_part)
            for element in root.iter(f"{{{_W}}}{kind}"):
                if kind == "comment":
                    self._comments[element.get(_ID)] = element
                # The separators Word draws above the notes are notes too, with a type.
                elif element.get(_TYPE) in (None, "normal"):
                    self._notes[kind][element.get(_ID)] = element

    def cite(self, element: Any) -> str:
        """The label of the note ``element`` (a reference) cites, as the text shows it."""
        kind, note_id = NOTE_REFERENCES[element.tag], element.get(_ID)
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

    def anchor(self, element: Any) -> None:
        """A comment's anchor (``element``) is in the block being read: the comment follows it.
        A comment's range end and its reference, or a second anchor, place it once."""
        comment_id = element.get(_ID)
        if comment_id in self._anchored:
            return
        self._anchored.add(comment_id)
        comment = self._comments.get(comment_id)
        if comment is not None:
            self._placed.append(comment)

    def since(self) -> list[Block]:
        """The blocks of the notes first cited and the comments anchored since the last call:
        each one's paragraphs and table rows, the first under its label. Reading a note can
        anchor a comment (Word allows comments in notes), so this reads until none is left."""
        blocks: list[Block] = []
        while self._cited or self._placed:
            cited, self._cited = self._cited, []
            for label, note in cited:
                blocks += labelled(f"[{label}]", self._read(note, self))
            placed, self._placed = self._placed, []
            for comment in placed:
                author = clean(comment.get(f"{{{_W}}}author") or "")
                label = f"[comment: {author}]" if author else "[comment]"
                blocks += labelled(label, self._read(comment, self))
        return blocks


def labelled(label: str, texts: list[str]) -> list[Block]:
    """Paragraph blocks of ``texts``, the first under ``label``."""
    if texts:
        texts[0] = f"{label} {texts[0]}"
    return [Block("paragraph", text, None) for text in texts]


def page_parts(document: Any, kind: str) -> Iterator[Any]:
    """The root of each header (``kind`` "header") or footer part a reader of ``document`` can
    see, once each, in the order the sections first show them.

    A section shows its default header, its first-page header when it has a different first
    page (``w:titlePg``) and its even-page header when the document has different odd and even
    pages (``w:evenAndOddHeaders``). A section that does not name one of these (Word's "link to
    previous") shows the previous section's; one named by no section so far shows nothing. Parts
    Word keeps but does not show (a first-page header after "different first page" was turned
    off) are not read."""
    even = _even_pages(document)
    current: dict[str, str] = {}
    seen: set[str] = set()  # the parts read, by name
    body = document.element.body
    for section in body.xpath("./w:p/w:pPr/w:sectPr | ./w:sectPr"):
        for reference in section.iterchildren(f"{{{_W}}}{kind}Reference"):
            current[reference.get(_TYPE) or "default"] = reference.get(f"{{{_R}}}id")
        shown = ["default"]
        if _on(section.find(f"{{{_W}}}titlePg")):
            shown.insert(0, "first")
        if even:
            shown.append("even")
        for variant in shown:
            relation = document.part.rels.get(current.get(variant))
            if (
                relation is None
                or relation.is_external
                or not relation.reltype.endswith(f"/{kind}")
                or relation.target_part.partname in seen
            ):
                continue
            # Once per part, not per relationship: many relationships can name one part.
            seen.add(relation.target_part.partname)
            # A header or footer part python-docx parsed when it opened the file; one of
            # another kind it keeps as bytes (an image) is skipped, not parsed here.
            root = getattr(relation.target_part, "element", None)
            if root is not None:
                yield root


def _even_pages(document: Any) -> bool:
    """Whether the document's settings say odd and even pages differ (``w:evenAndOddHeaders``).
    Read from the part itself: python-docx's ``document.settings`` raised an internal error
    when the settings relationship named another kind of part (styles, an image; the document
    itself, endless recursion) or an external one. Such a settings part says nothing."""
    for relation in document.part.rels.values():
        if relation.reltype.endswith("/settings") and not relation.is_external:
            root = getattr(relation.target_part, "element", None)
            return root is not None and _on(root.find(f"{{{_W}}}evenAndOddHeaders"))
    return False


def _on(element: Any) -> bool:
    """Whether a Word on/off property is set: present, and not given a false value."""
    return element is not None and (element.get(_VAL) or "true").lower() not in _OFF


def part_root(part: Any) -> Any:
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
