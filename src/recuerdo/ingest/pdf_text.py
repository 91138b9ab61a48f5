"""PDF: paragraphs rebuilt from the page layout (pdfminer's text lines), not one per line."""

from __future__ import annotations

import io
import itertools
import re
import statistics
from typing import Any, NamedTuple

from ..errors import DocumentCorrupt, DocumentNotReadable
from .blocks import Block, BlockKind, clean
from .pdf_columns import column_order


def pdf(data: bytes) -> list[Block]:
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LAParams
    from pdfminer.pdfdocument import PDFEncryptionError, PDFPasswordIncorrect
    from pdfminer.pdfparser import PDFSyntaxError
    from pdfminer.psexceptions import PSException

    lines: list[_Line] = []
    try:
        for number, page in enumerate(extract_pages(io.BytesIO(data), laparams=LAParams()), 1):
            lines += _page_lines(page, number)
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
    blocks = []
    body = statistics.median(line.height for line in lines) if lines else 0.0
    for paragraph in _paragraphs(lines):
        text = clean("\n".join(line.text for line in paragraph))
        if not text:
            continue
        kind: BlockKind
        if _BULLET.match(text):
            kind = "list_item"
        elif len(paragraph) <= 2 and paragraph[0].height > body * _HEADING_SIZE:
            kind = "heading"
        else:
            kind = "paragraph"
        blocks.append(Block(kind, text, paragraph[0].page))
    if not blocks:
        raise DocumentNotReadable("the PDF holds no text (scanned pages or images only)")
    return blocks


# Rebuilding paragraphs from a PDF's layout. A PDF holds lines placed on a page, not
# paragraphs; the layout analysis groups close lines into boxes, but a paragraph set with
# generous line spacing comes out one box per line. So lines are regrouped here: a paragraph
# goes on while the next line sits below it in the same column, in the same type size, at
# about the page's usual line spacing; it ends at a wider gap, a change of column or size, a
# bullet, or a line that ends a sentence short of the column's edge.
_BULLET = re.compile(r"^([•\-*]|\d+[.)])\s")
_HEADING_SIZE = 1.15  # a line this much taller than the body text is a heading
_SIZE_CHANGE = 1.2
_EXTRA_GAP = 0.5  # in line heights, beyond the usual spacing: a paragraph break
_SHORT_LINE = 0.85  # of the column's width: a sentence ending here ends its paragraph


class _Line(NamedTuple):
    text: str
    x0: float
    x1: float
    y0: float
    y1: float
    page: int
    column: int = 0  # on a page set in columns, which one (0: one column, or across them)

    @property
    def height(self) -> float:
        return self.y1 - self.y0


def _page_lines(page: Any, number: int) -> list[_Line]:
    from pdfminer.layout import LTTextBox, LTTextLine

    boxes = sorted((e for e in page if isinstance(e, LTTextBox)), key=lambda box: (-box.y1, box.x0))
    found = [
        _Line(line.get_text().rstrip("\n"), line.x0, line.x1, line.y0, line.y1, number)
        for box in boxes
        for line in box
        if isinstance(line, LTTextLine) and line.get_text().strip()
    ]
    # Sorted by height alone, a page in columns reads one line of each column in turn: such a
    # page is read column by column (a page of one column keeps the order above).
    columns = column_order(found)
    if columns is not None:
        found = [line._replace(column=column) for line, column in columns]
    lines: list[_Line] = []
    for line in found:
        if lines and _same_line(lines[-1], line):
            # Widely spaced words can come out as pieces of one line: join them.
            before = lines[-1]
            line = before._replace(text=f"{before.text.rstrip()} {line.text.lstrip()}", x1=line.x1)
            lines[-1] = line
        else:
            lines.append(line)
    return lines


def _same_line(left: _Line, right: _Line) -> bool:
    """``right`` continues ``left`` on the same baseline, a word space or so further on."""
    height = max(left.height, right.height, 1e-6)
    return (
        left.column == right.column  # across a gutter: two columns' lines, however close
        and abs(left.y0 - right.y0) < 0.25 * height
        and 0 <= right.x0 - left.x1 < height
    )


def _gap(upper: _Line, lower: _Line) -> float:
    return upper.y0 - lower.y1


def _same_column(upper: _Line, lower: _Line) -> bool:
    return (
        upper.page == lower.page
        and upper.column == lower.column  # a full-width line never continues a column's text
        and lower.y1 <= upper.y1  # below it, not a new column starting higher up
        and lower.x0 < upper.x1
        and upper.x0 < lower.x1
    )


def _paragraphs(lines: list[_Line]) -> list[list[_Line]]:
    pairs = list(itertools.pairwise(lines))
    # The usual spacing between two lines of one paragraph: the median of the gaps that are
    # at most one and a half lines (wider ones are breaks already).
    close = [
        _gap(a, b)
        for a, b in pairs
        if _same_column(a, b) and 0 <= _gap(a, b) <= 1.5 * max(a.height, b.height)
    ]
    usual = statistics.median(close) if close else 0.0
    right: dict[tuple[int, int], float] = {}
    for line in lines:  # the right edge of each column (lines starting at the same place)
        key = (line.page, round(line.x0))
        right[key] = max(right.get(key, line.x1), line.x1)
    paragraphs: list[list[_Line]] = []
    for line in lines:
        if paragraphs and _continues(paragraphs[-1][-1], line, usual, right):
            paragraphs[-1].append(line)
        else:
            paragraphs.append([line])
    return paragraphs


def _continues(
    upper: _Line, lower: _Line, usual: float, right: dict[tuple[int, int], float]
) -> bool:
    if not _same_column(upper, lower) or _BULLET.match(lower.text.strip()):
        return False
    size = max(upper.height, lower.height) / max(min(upper.height, lower.height), 1e-6)
    if size > _SIZE_CHANGE:
        return False
    if _gap(upper, lower) > usual + _EXTRA_GAP * upper.height:
        return False
    edge = right.get((upper.page, round(upper.x0)), upper.x1)
    ends_sentence = upper.text.rstrip().endswith((".", "!", "?", ":", "…"))
    return not (ends_sentence and _room_left(upper, lower, edge))


def _room_left(upper: _Line, lower: _Line, edge: float) -> bool:
    """Whether the line stops well short of its column: short of ``_SHORT_LINE`` of its width,
    or with room for the next line's first word (a wrapped line is full; only a paragraph's
    end leaves that room)."""
    width = max(edge - upper.x0, 1e-6)
    if upper.x1 - upper.x0 < _SHORT_LINE * width:
        return True
    said = " ".join(upper.text.split())
    following = lower.text.split()
    if not said or not following:
        return False
    per_char = (upper.x1 - upper.x0) / len(said)
    return edge - upper.x1 > (len(following[0]) + 1) * per_char
