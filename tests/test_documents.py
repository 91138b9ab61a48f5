"""Document ingestion from real files built here with the parsers' own libraries."""

from __future__ import annotations

import base64
import io
import json
import threading
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

import recuerdo
from recuerdo.doors.cli import cli

from .conftest import settled_dump

PARAGRAPH_1 = (
    "The billing service sends invoices on the first day of every month and keeps "
    "a copy of each one for seven years."
)
PARAGRAPH_2 = "Refunds are approved by the finance team within five working days."


def make_pdf(paragraphs: list[str]) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    for text in paragraphs:
        pdf.multi_cell(120, 6, text)  # narrow column: each paragraph spans several lines
        pdf.ln(8)
    return bytes(pdf.output())


def make_image_pdf() -> bytes:
    from fpdf import FPDF

    png = base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    )
    pdf = FPDF()
    pdf.add_page()
    pdf.image(io.BytesIO(png), x=10, y=10, w=50)
    return bytes(pdf.output())


def make_encrypted_pdf() -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    for page in PdfReader(io.BytesIO(make_pdf([PARAGRAPH_1]))).pages:
        writer.add_page(page)
    writer.encrypt("secret-password")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def make_docx() -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("Billing handbook", level=1)
    document.add_paragraph(PARAGRAPH_1)
    document.add_paragraph("Send reminders after ten days", style="List Bullet")
    document.add_paragraph(PARAGRAPH_2)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


HTML = (
    f"<!DOCTYPE html><html><head><title>x</title><style>p {{}}</style></head><body>"
    f"<h1>Billing handbook</h1><p>{PARAGRAPH_1}</p><ul><li>Send reminders after ten days"
    f"</li></ul><script>alert('no')</script><p>{PARAGRAPH_2}</p></body></html>"
).encode()
MARKDOWN = (
    f"# Billing handbook\n\n{PARAGRAPH_1}\n\n- Send reminders after ten days\n\n{PARAGRAPH_2}\n"
).encode()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_pdf_paragraphs_are_rebuilt_from_layout(memory: recuerdo.Memory) -> None:
    reply = memory.ingest(b64(make_pdf([PARAGRAPH_1, PARAGRAPH_2])), name="billing.pdf")
    assert reply["kind"] == "pdf"
    texts = [reply["text"][b["start"] : b["end"]] for b in reply["blocks"]]
    assert texts == [PARAGRAPH_1, PARAGRAPH_2]
    assert [b["page"] for b in reply["blocks"]] == [1, 1]
    first = reply["blocks"][0]
    assert reply["text"].encode()[first["byte_start"] : first["byte_end"]].decode() == PARAGRAPH_1


def spaced_pdf(paragraphs: list[str], line_height: float, gap: float) -> bytes:
    """Paragraphs set at ``line_height`` (mm) with ``gap`` (mm) between them (0: none)."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    for text in paragraphs:
        pdf.multi_cell(120, line_height, text)
        pdf.ln(gap)
    return bytes(pdf.output())


@pytest.mark.parametrize(
    ("line_height", "gap"),
    [(5, 8), (8, 8), (10, 12), (6, 0)],
    ids=["single", "double", "wide", "no-gap"],
)
def test_pdf_paragraphs_survive_any_line_spacing(
    memory: recuerdo.Memory, line_height: float, gap: float
) -> None:
    """Wrapped paragraphs are one block each however generous the line spacing (the layout's
    boxes alone give one block per line when it is wide), and with no gap between paragraphs
    a short line ending a sentence still ends its paragraph."""
    paragraphs = [PARAGRAPH_1, PARAGRAPH_2, PARAGRAPH_1.replace("seven", "nine")]
    reply = memory.ingest(b64(spaced_pdf(paragraphs, line_height, gap)), name="spaced.pdf")
    assert reply["block_count"] == 3
    assert [reply["text"][b["start"] : b["end"]] for b in reply["blocks"]] == paragraphs


def test_a_larger_type_line_is_a_heading(memory: recuerdo.Memory) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=20)
    pdf.multi_cell(120, 10, "Billing handbook")
    pdf.set_font("Helvetica", size=12)
    pdf.multi_cell(120, 6, PARAGRAPH_1)
    reply = memory.ingest(b64(bytes(pdf.output())), name="handbook.pdf")
    blocks = [(b["kind"], reply["text"][b["start"] : b["end"]]) for b in reply["blocks"]]
    assert blocks == [("heading", "Billing handbook"), ("paragraph", PARAGRAPH_1)]


def test_customs_says_what_the_upload_went_through(memory: recuerdo.Memory) -> None:
    """The kind read from the bytes, the size, redactions, the stored text read back, and the
    upload emptied (only the parsed text is kept)."""
    data = make_pdf([PARAGRAPH_1])
    reply = memory.ingest(b64(data), name="notes.txt")
    assert reply["customs"] == {
        "kind": "pdf",
        "bytes": len(data),
        "blocks_redacted": 0,
        "read_back": "identical",
        "emptied": True,
    }
    secret = b"Deploy key: ghp_" + b"a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8" + b"\n\nPlain words."
    redacted = memory.ingest(b64(secret), name="keys.txt")
    assert redacted["customs"]["blocks_redacted"] == 1 and redacted["block_count"] == 2
    assert "a1B2c3D4" not in redacted["text"]


@pytest.mark.parametrize(
    ("data", "kind"), [(make_docx(), "docx"), (HTML, "html"), (MARKDOWN, "markdown")]
)
def test_structured_kinds_keep_blocks_in_order(
    memory: recuerdo.Memory, data: bytes, kind: str
) -> None:
    reply = memory.ingest(b64(data), name="handbook")
    assert reply["kind"] == kind
    blocks = [(b["kind"], reply["text"][b["start"] : b["end"]]) for b in reply["blocks"]]
    assert blocks == [
        ("heading", "Billing handbook"),
        ("paragraph", PARAGRAPH_1),
        ("list_item", "Send reminders after ten days"),
        ("paragraph", PARAGRAPH_2),
    ]


def test_kind_comes_from_the_bytes_not_the_name(memory: recuerdo.Memory, tmp_path: Path) -> None:
    misleading = tmp_path / "notes.pdf"
    misleading.write_bytes(b"Plain words in a file whose name says PDF.")
    assert memory.ingest(path=str(misleading))["kind"] == "text"
    word = tmp_path / "report.txt"
    word.write_bytes(make_docx())
    reply = memory.ingest(path=str(word))
    assert reply["kind"] == "docx" and reply["name"] == "report.txt"


SNIFFED = [
    (b"Review notes: the template forgets to close the <body> element.\n\nFix it.", "text"),
    (b"# Frontend checklist\n\n- every page has one <p> per paragraph\n", "markdown"),
    (b"Notes\n<html> is the root element.", "text"),
    (b"\xef\xbb\xbf  <!-- saved page -->\n<!DOCTYPE html><p>Saved</p>", "html"),
    (b'<?xml version="1.0"?>\n<html xmlns="http://www.w3.org/1999/xhtml"><p>X</p></html>', "html"),
    (b"<HEAD><title>t</title></HEAD><BODY>Upper case</BODY>", "html"),
    (b"\n\n<body>Only a body</body>", "html"),
]


@pytest.mark.parametrize(
    ("data", "kind"), SNIFFED, ids=[f"{k}-{i}" for i, (_, k) in enumerate(SNIFFED)]
)
def test_html_is_what_starts_as_html(data: bytes, kind: str) -> None:
    """HTML only when the bytes start as an HTML document (after a byte order mark, white
    space, comments, an XML declaration); notes and Markdown that mention a tag stay text (a
    .txt naming "<body>" was refused as empty, a .md naming "<p>" lost its heading)."""
    from recuerdo.ingest.document import blocks_of

    found, blocks = blocks_of(data)
    assert found == kind and blocks
    if kind != "html":
        assert "<" in " ".join(block.text for block in blocks)


def test_large_text_answers_sizes(memory: recuerdo.Memory) -> None:
    reply = memory.ingest(b64(("A long sentence of words. " * 2000).encode()), name="big")
    assert "text" not in reply and "blocks" not in reply
    assert reply["text_bytes"] > 16_384 and reply["passages"] > 1 and reply["block_count"] == 1


def test_ingested_passages_are_searchable_and_cited(memory: recuerdo.Memory) -> None:
    memory.remember_knowledge(facts={"entities": [{"name": "finance team", "type": "team"}]})
    reply = memory.ingest(b64(MARKDOWN), name="handbook", source="wiki")
    memory._upkeep.drain()
    [hit] = memory.search("refunds approved", types="document")["results"]
    assert hit["id"] == reply["doc_id"]
    passages = [i for i in memory.about("finance team")["items"] if i["kind"] == "passage"]
    assert passages[0]["citation"]["source"]["name"] == "handbook"
    assert passages[0]["citation"]["span_state"] == "verified"


def test_the_same_document_twice_is_stored_once(memory: recuerdo.Memory) -> None:
    """The same bytes, name and source in the same scope: the second ingest answers
    ``already`` with the first's doc_id and stores nothing (it was stored twice, and found
    twice). Another name, source, scope or other bytes make a document of their own."""
    first = memory.ingest(b64(MARKDOWN), name="handbook.md", source="wiki")
    memory._upkeep.drain()
    before = memory.export(scope="user")["records"][1:]  # past the header and its time
    again = memory.ingest(b64(MARKDOWN), name="handbook.md", source="wiki")
    assert (first["outcome"], again["outcome"]) == ("stored", "already")
    assert {**again, "outcome": "stored"} == first
    memory._upkeep.drain()
    assert memory.export(scope="user")["records"][1:] == before
    assert [h["id"] for h in memory.search("refunds approved")["results"]] == [first["doc_id"]]
    others = [
        memory.ingest(b64(MARKDOWN), name="copy.md", source="wiki"),
        memory.ingest(b64(MARKDOWN), name="handbook.md", source="mail"),
        memory.ingest(b64(MARKDOWN), name="handbook.md", source="wiki", scope="team"),
        memory.ingest(b64(MARKDOWN + b"\nOne more line."), name="handbook.md", source="wiki"),
    ]
    assert [o["outcome"] for o in others] == ["stored"] * 4
    assert len({first["doc_id"], *(o["doc_id"] for o in others)}) == 5


@pytest.mark.parametrize("kind", ["pdf", "docx", "html", "markdown"])
def test_a_document_is_read_before_the_memory_is_locked_for_writing(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """Reading a document holds no other writer back: a PDF of 3,000 short paragraphs took
    27 s to read on a loaded machine, while every writer of the memory (on PostgreSQL, every
    server sharing it) waited behind the ingest's write lock. A write from another thread
    during the read is done before the read ends."""
    from recuerdo.ingest import parse

    data = {"pdf": make_pdf([PARAGRAPH_1]), "docx": make_docx(), "html": HTML, "markdown": MARKDOWN}
    reader = "plain" if kind == "markdown" else kind
    original = getattr(parse, reader)
    written: list[int] = []
    during: list[bool] = []
    writers: list[threading.Thread] = []

    def read_while_another_writes(*args: object, **kwargs: object) -> object:
        writer = threading.Thread(
            target=lambda: written.append(memory.remember("context", "written during a read"))
        )
        writers.append(writer)
        writer.start()
        writer.join(timeout=5)
        during.append(bool(written))
        return original(*args, **kwargs)

    monkeypatch.setattr(parse, reader, read_while_another_writes)
    reply = memory.ingest(b64(data[kind]), name=f"handbook.{kind}")
    for writer in writers:
        writer.join(timeout=60)
    assert during == [True]
    assert reply["outcome"] == "stored" and written


def _truncated_zip() -> bytes:
    data = make_docx()
    return data[: len(data) // 2]


def _zip_not_word() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("hello.txt", "not word")
    return out.getvalue()


@pytest.mark.parametrize(
    ("data", "error", "status"),
    [
        (make_encrypted_pdf(), recuerdo.DocumentNotReadable, 422),
        (make_image_pdf(), recuerdo.DocumentNotReadable, 422),
        (make_pdf([PARAGRAPH_1])[:300], recuerdo.DocumentCorrupt, 422),
        (_truncated_zip(), recuerdo.DocumentCorrupt, 422),
        (_zip_not_word(), recuerdo.UnsupportedMediaType, 415),
        (bytes(range(256)) * 4, recuerdo.UnsupportedMediaType, 415),
        (b"\xff\xfe\xfa not utf-8", recuerdo.UnsupportedMediaType, 415),
        (b"x" * 5_000_001, recuerdo.PayloadTooLarge, 413),
    ],
    ids=["encrypted", "image-only", "cut-pdf", "cut-docx", "zip", "binary", "latin", "too-big"],
)
def test_refusals_store_nothing(
    file_memory: recuerdo.Memory, data: bytes, error: type[recuerdo.RecuerdoError], status: int
) -> None:
    before = settled_dump(file_memory)
    with pytest.raises(error) as caught:
        file_memory.ingest(b64(data), name="bad")
    assert caught.value.status == status
    assert settled_dump(file_memory) == before


def test_cli_ingests_many_files_and_reports_each(tmp_path: Path) -> None:
    good = tmp_path / "a.md"
    good.write_bytes(MARKDOWN)
    pdf = tmp_path / "b.pdf"
    pdf.write_bytes(make_pdf([PARAGRAPH_2]))
    bad = tmp_path / "c.bin"
    bad.write_bytes(bytes(range(256)))
    runner = CliRunner(env={"RECUERDO_STATE_DIR": str(tmp_path), "RECUERDO_MEMORY": "docs"})
    result = runner.invoke(cli, ["--json", "ingest", str(good), str(pdf), str(bad)])
    assert result.exit_code == 1
    reports = json.loads(result.output)
    assert [r["ok"] for r in reports] == [True, True, False]
    assert reports[2]["error"] == "unsupported_media_type"
    assert reports[1]["result"]["kind"] == "pdf"
