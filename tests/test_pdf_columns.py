"""PDF pages set in columns are read column by column, from real PDFs built here with fpdf2
(the library the documents' own tests use): the left column whole, then the next, with the
lines across the columns (title, footer) in their place."""

from __future__ import annotations

import base64
import time
from typing import Any, NamedTuple

import pytest

import recuerdo
from recuerdo.ingest.document import blocks_of

TITLE = "Quarterly report on the storage fleet"
FOOTER = (
    "Footer note: this report is internal to the operations group and is revised every quarter."
)


def paragraph(label: str, words: int) -> str:
    """A paragraph of several lines whose every word says where it came from."""
    body = " ".join(f"{label.lower()}{i}" for i in range(words))
    return f"{label} opens here {body} and closes here."


LEFT = [paragraph("Alder", 30), paragraph("Birch", 45), paragraph("Cedar", 22)]
RIGHT = [paragraph("Maple", 40), paragraph("Olive", 18), paragraph("Poplar", 34)]


def new_pdf() -> Any:
    from fpdf import FPDF

    pdf = FPDF()  # A4: 210 mm wide
    pdf.set_auto_page_break(False)
    pdf.add_page()
    return pdf


def column(pdf: Any, x: float, width: float, texts: list[str], line: float, gap: float) -> None:
    y = 35.0
    for text in texts:
        pdf.set_xy(x, y)
        # Ragged right: fpdf's default justification spreads words so far apart in a narrow
        # column that the layout cuts a line into pieces, which is not what is tested here.
        pdf.multi_cell(width, line, text, align="L")
        y = pdf.get_y() + gap


def two_columns(line: float, gap: float) -> bytes:
    pdf = new_pdf()
    pdf.set_font("Helvetica", size=18)
    pdf.set_xy(10, 15)
    pdf.cell(190, 10, TITLE)
    pdf.set_font("Helvetica", size=10)
    column(pdf, 10, 85, LEFT, line, gap)
    column(pdf, 110, 85, RIGHT, line, gap)
    pdf.set_xy(10, 275)
    pdf.cell(190, 5, FOOTER)
    return bytes(pdf.output())


def texts(data: bytes) -> list[str]:
    return [block.text for block in blocks_of(data)[1]]


@pytest.mark.parametrize(("line", "gap"), [(5, 4), (7, 2)], ids=["tight", "spaced"])
def test_two_columns_are_read_one_after_the_other(
    memory: recuerdo.Memory, line: float, gap: float
) -> None:
    """The stored text: the title, the left column's paragraphs whole, the right column's,
    then the footer. At 7 mm every line is a box of its own, so the layout's grouping into
    boxes cannot hide the interleaving."""
    reply = memory.ingest(base64.b64encode(two_columns(line, gap)).decode(), name="cols.pdf")
    blocks = [(b["kind"], reply["text"][b["start"] : b["end"]]) for b in reply["blocks"]]
    assert blocks == [
        ("heading", TITLE),
        *(("paragraph", text) for text in LEFT + RIGHT),
        ("paragraph", FOOTER),
    ]
    assert reply["text"] == "\n\n".join([TITLE, *LEFT, *RIGHT, FOOTER])


def test_three_columns() -> None:
    first = [paragraph("Aspen", 20), paragraph("Beech", 16)]
    second = [paragraph("Hazel", 24), paragraph("Larch", 10)]
    third = [paragraph("Rowan", 14), paragraph("Willow", 22)]
    pdf = new_pdf()
    pdf.set_font("Helvetica", size=18)
    pdf.set_xy(10, 15)
    pdf.cell(190, 10, TITLE)
    pdf.set_font("Helvetica", size=9)
    for x, texts_ in ((10, first), (76, second), (142, third)):
        column(pdf, x, 58, texts_, 5, 3)
    assert texts(bytes(pdf.output())) == [TITLE, *first, *second, *third]


def test_a_column_line_nearly_touching_the_next_column_stays_in_its_column() -> None:
    """A left-column line that runs on to about 5 mm from the right column (a third of the
    gutter) is still the left column's, not a line across both."""
    pdf = new_pdf()
    pdf.set_font("Helvetica", size=18)
    pdf.set_xy(10, 15)
    pdf.cell(190, 10, TITLE)
    pdf.set_font("Helvetica", size=10)
    column(pdf, 110, 85, RIGHT, 6, 3)
    column(pdf, 10, 85, LEFT, 6, 3)
    long = "Long line of the left column: itreachesfarintothegutter nearly"
    pdf.set_xy(10, pdf.get_y() + 3)
    pdf.cell(0, 6, long)
    assert 100 < 10 + pdf.get_string_width(long) < 106  # mm: the right column starts at 110
    assert texts(bytes(pdf.output())) == [TITLE, *LEFT, long, *RIGHT]


def test_full_width_lines_between_bands_of_columns() -> None:
    """A line across the columns (a figure caption) ends the columns above it; the columns
    start again below it. Lines 7 mm apart: one box per line."""
    upper_left = [paragraph("Alder", 26), paragraph("Birch", 12)]
    upper_right = [paragraph("Maple", 20), paragraph("Olive", 16)]
    lower_left, lower_right = [paragraph("Cedar", 24)], [paragraph("Poplar", 20)]
    caption = "Figure 1: the fleet by region, a caption set across both columns of the page."
    pdf = new_pdf()
    pdf.set_font("Helvetica", size=10)
    column(pdf, 10, 85, upper_left, 7, 3)
    column(pdf, 110, 85, upper_right, 7, 3)
    pdf.set_xy(10, 130)
    pdf.cell(190, 5, caption)
    for x, texts_ in ((10, lower_left), (110, lower_right)):
        pdf.set_xy(x, 145)
        pdf.multi_cell(85, 7, texts_[0], align="L")
    assert texts(bytes(pdf.output())) == [
        *upper_left,
        *upper_right,
        caption,
        *lower_left,
        *lower_right,
    ]


def test_a_page_of_one_column_is_read_as_before() -> None:
    """A single column (ragged lines, a short heading, a centred page number) is not mistaken
    for columns, so it keeps the order it always had."""
    paragraphs = [paragraph("Alder", 60), paragraph("Birch", 35), "Short closing line."]
    pdf = new_pdf()
    pdf.set_font("Helvetica", size=18)
    pdf.set_xy(10, 15)
    pdf.cell(60, 10, "Fleet")
    pdf.set_font("Helvetica", size=10)
    column(pdf, 10, 190, paragraphs, 5, 3)
    pdf.set_xy(100, 280)
    pdf.cell(10, 5, "3")
    assert texts(bytes(pdf.output())) == ["Fleet", *paragraphs, "3"]


class Box(NamedTuple):
    x0: float
    x1: float
    y0: float
    y1: float


def test_a_page_of_many_lines_is_ordered_in_linear_time() -> None:
    """Two columns of about 40,000 lines each under a title, with a full-width line every
    1,000 rows: ordered in well under a second (a comparison of every pair of lines would take
    hours), each band's left column before its right one."""
    from recuerdo.ingest.pdf_columns import SEPARATOR, column_order

    lines = [Box(10, 590, 100_000, 100_010)]
    for row in range(40_000):
        top = 99_990 - row * 2
        if row % 1000 == 999:
            lines.append(Box(10, 590, top - 1, top))
        else:
            lines += [Box(10, 290, top - 1, top), Box(310, 590, top - 1, top)]
    started = time.perf_counter()
    ordered = column_order(lines)
    elapsed = time.perf_counter() - started
    assert ordered is not None and elapsed < 5
    assert ordered[0] == (lines[0], SEPARATOR)
    band = [column for _, column in ordered[1:2000]]
    assert band == [1] * 999 + [2] * 999 + [SEPARATOR]
