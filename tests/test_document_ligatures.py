"""Ligatures in an ingested document (a hunt for Semurg's document ingestion): a PDF's text
layer gives a ligature glyph as one code point (U+FB01 for "fi"), which no search folds, so
"finance" found nothing in a PDF set with ligatures. The stored text has the letters. Fails on
the code before."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

import recuerdo

LIGATURED = "The \ufb01nance team \ufb01les reports and the e\ufb04uent is \ufb02agged."
LETTERS = "The finance team files reports and the effluent is flagged."
FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")


def _pdf(text: str) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.add_font("body", fname=str(FONT))  # a font with the ligature glyphs
    pdf.set_font("body", size=12)
    pdf.multi_cell(120, 6, text)
    return bytes(pdf.output())


def _kinds() -> list[object]:
    pdf = pytest.param(
        "pdf", marks=pytest.mark.skipif(not FONT.is_file(), reason="no DejaVu font to set it")
    )
    return ["text", "html", pdf]


@pytest.mark.parametrize("kind", _kinds())
def test_a_ligature_is_stored_as_its_letters_and_found(memory: recuerdo.Memory, kind: str) -> None:
    data = {
        "text": LIGATURED.encode(),
        "html": f"<html><body><p>{LIGATURED}</p></body></html>".encode(),
        "pdf": _pdf(LIGATURED) if kind == "pdf" else b"",
    }[kind]
    stored = memory.ingest(base64.b64encode(data).decode(), name=f"report.{kind}")
    assert stored["kind"] == kind
    assert stored["text"] == LETTERS
    answer = memory.ask("finance effluent flagged")
    assert answer["grounding"]["state"] == "grounded"
    [passage] = answer["passages"]
    assert passage["citation"]["span"]["text"] == LETTERS
