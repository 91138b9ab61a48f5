"""Line ends of a text document (a hunt for Semurg's document ingestion): a lone CR (classic
Mac text) was no line end, so its paragraphs, headings and list items became one paragraph
("# Notes - first - second"), while the same text with LF or CRLF kept them. Fails on the
code before."""

from __future__ import annotations

import base64

import pytest

import recuerdo

LINES = ["# Notes", "", "Refunds take five days.", "", "- first step", "- second step", ""]


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"])
def test_every_line_end_keeps_the_blocks(memory: recuerdo.Memory, end: str) -> None:
    data = end.join(LINES).encode()
    stored = memory.ingest(base64.b64encode(data).decode(), name="notes.md")
    assert stored["kind"] == "markdown"
    assert [(b["kind"], stored["text"][b["start"] : b["end"]]) for b in stored["blocks"]] == [
        ("heading", "Notes"),
        ("paragraph", "Refunds take five days."),
        ("list_item", "first step"),
        ("list_item", "second step"),
    ]
