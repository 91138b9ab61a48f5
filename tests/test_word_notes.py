"""Word footnotes and endnotes are part of a document's text (decision 0154): they were not
read, so a fact stated only in a footnote (a source, a date, a caveat) was never stored, found
or cited. Each note follows the block that first cites it, under the label Word shows."""

from __future__ import annotations

import base64
import io
import re
import zipfile
from typing import Any

import pytest

import recuerdo
from recuerdo.ingest.document import blocks_of

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
WORD_XML = "application/vnd.openxmlformats-officedocument.wordprocessingml"


def _notes_part(kind: str, notes: dict[int, list[str]]) -> str:
    """A footnotes or endnotes part: Word's separator notes (ids -1 and 0), then ``notes``."""
    tag = kind[:-1]
    separators = "".join(
        f'<w:{tag} w:type="{kind_}" w:id="{n}"><w:p><w:r><w:separator/></w:r></w:p></w:{tag}>'
        for n, kind_ in ((-1, "separator"), (0, "continuationSeparator"))
    )
    body = "".join(
        f'<w:{tag} w:id="{note_id}">'
        + "".join(
            f"<w:p><w:r><w:{tag}Ref/></w:r><w:r><w:t xml:space='preserve'> {p}</w:t></w:r></w:p>"
            for p in paragraphs
        )
        + f"</w:{tag}>"
        for note_id, paragraphs in notes.items()
    )
    head = f'<?xml version="1.0" encoding="UTF-8"?><w:{kind} xmlns:w="{W}">'
    return f"{head}{separators}{body}</w:{kind}>"


def _with_notes(
    build: Any,
    footnotes: dict[int, list[str]],
    endnotes: dict[int, list[str]],
    unreadable: str = "",
) -> bytes:
    """A Word file made by python-docx, with footnote and endnote parts added as Word writes
    them; ``[fn:N]`` and ``[en:N]`` in its text become references to note N. The part named
    ``unreadable`` ("footnotes" or "endnotes") holds something that is not XML."""
    import docx

    document = docx.Document()
    build(document)
    out = io.BytesIO()
    document.save(out)
    source = zipfile.ZipFile(io.BytesIO(out.getvalue()))
    target = io.BytesIO()
    with zipfile.ZipFile(target, "w") as archive:
        for name in source.namelist():
            data = (
                source.read(name).decode("utf-8")
                if name.endswith(".xml") or name.endswith(".rels")
                else source.read(name)
            )
            if name == "word/document.xml":
                data = re.sub(
                    r"\[(fn|en):(\d+)\]",
                    lambda m: (
                        "</w:t></w:r><w:r><w:"
                        + ("footnote" if m.group(1) == "fn" else "endnote")
                        + f'Reference w:id="{m.group(2)}"/></w:r><w:r><w:t xml:space="preserve">'
                    ),
                    data,
                )
            elif name == "word/_rels/document.xml.rels":
                data = data.replace(
                    "</Relationships>",
                    f'<Relationship Id="rId90" Type="{REL}/footnotes" Target="footnotes.xml"/>'
                    f'<Relationship Id="rId91" Type="{REL}/endnotes" Target="endnotes.xml"/>'
                    "</Relationships>",
                )
            elif name == "[Content_Types].xml":
                data = data.replace(
                    "</Types>",
                    "".join(
                        f'<Override PartName="/word/{kind}.xml"'
                        f' ContentType="{WORD_XML}.{kind}+xml"/>'
                        for kind in ("footnotes", "endnotes")
                    )
                    + "</Types>",
                )
            archive.writestr(name, data)
        for kind, notes in (("footnotes", footnotes), ("endnotes", endnotes)):
            part = "<not xml" if kind == unreadable else _notes_part(kind, notes)
            archive.writestr(f"word/{kind}.xml", part)
    return target.getvalue()


def _body(document: Any) -> None:
    document.add_paragraph("Revenue grew by a third.[fn:7] Costs held.[fn:3]")
    table = document.add_table(rows=1, cols=2)
    table.cell(0, 0).text = "Margin[fn:7]"  # cited again: no second copy
    table.cell(0, 1).text = "Staff[en:2]"
    document.add_paragraph("The end.")


def _blocks(data: bytes) -> list[tuple[str, str]]:
    return [(block.kind, block.text) for block in blocks_of(data)[1]]


NOTES = {7: ["Source: the 2023 annual report, page 12."], 3: ["Before one-off items.", "Audited."]}


def test_each_note_follows_the_block_that_first_cites_it_under_its_label() -> None:
    data = _with_notes(_body, NOTES, {2: ["Full-time equivalents."]})
    assert _blocks(data) == [
        ("paragraph", "Revenue grew by a third.[1] Costs held.[2]"),
        ("paragraph", "[1] Source: the 2023 annual report, page 12."),
        ("paragraph", "[2] Before one-off items."),
        ("paragraph", "Audited."),
        ("paragraph", "Margin[1] | Staff[i]"),
        ("paragraph", "[i] Full-time equivalents."),
        ("paragraph", "The end."),
    ]


def test_a_reference_to_a_missing_note_keeps_its_label_only() -> None:
    data = _with_notes(lambda d: d.add_paragraph("Claim.[fn:5]"), {}, {})
    assert _blocks(data) == [("paragraph", "Claim.[1]")]


@pytest.mark.parametrize("kind", ["footnote", "endnote"])
def test_a_fact_in_a_note_is_stored_and_found(file_memory: recuerdo.Memory, kind: str) -> None:
    marker = "fn" if kind == "footnote" else "en"
    data = _with_notes(
        lambda d: d.add_paragraph(f"The merger closed.[{marker}:1]"),
        {1: ["Approved by the Zorvian regulator."]} if kind == "footnote" else {},
        {1: ["Approved by the Zorvian regulator."]} if kind == "endnote" else {},
    )
    reply = file_memory.ingest(base64.b64encode(data).decode(), name="report.docx")
    assert "[1] Approved by the Zorvian regulator." in reply["text"] or (
        "[i] Approved by the Zorvian regulator." in reply["text"]
    )
    file_memory._upkeep.drain()
    [hit] = file_memory.search("Zorvian regulator", types="document")["results"]
    assert hit["id"] == reply["doc_id"]


def test_endnotes_are_labelled_in_roman_numerals_as_word_numbers_them() -> None:
    """Word's default endnote numbering: i, ii, iii, iv ... (subtractive forms included)."""
    cited = (1, 4, 9, 14, 40, 49)
    numbered = {n: [f"Note {n}."] for n in range(1, 50)}
    data = _with_notes(
        lambda d: d.add_paragraph("".join(f"x[en:{n}]" for n in range(1, 50))), {}, numbered
    )
    labels = [text.split("]")[0][1:] for _, text in _blocks(data)[1:]]
    assert [labels[n - 1] for n in cited] == ["i", "iv", "ix", "xiv", "xl", "xlix"]


@pytest.mark.parametrize("kind", ["footnotes", "endnotes"])
def test_a_notes_part_that_is_not_xml_is_a_corrupt_document(
    file_memory: recuerdo.Memory, kind: str
) -> None:
    """It raised lxml's XMLSyntaxError, an internal error, rather than document_corrupt."""
    data = _with_notes(lambda d: d.add_paragraph("Claim.[fn:1][en:1]"), {}, {}, unreadable=kind)
    with pytest.raises(recuerdo.DocumentCorrupt):
        file_memory.ingest(base64.b64encode(data).decode(), name="broken.docx")
    assert file_memory.export(scope="user")["records"][1:] == []


def test_a_comment_anchored_in_a_note_follows_the_note() -> None:
    """Word allows comments in notes: the note is read after the block citing it, then the
    comment after the note (decision 0160)."""
    anchor = '</w:t></w:r><w:r><w:commentReference w:id="0"/></w:r><w:r><w:t>'

    def build(document: Any) -> None:
        commented = document.add_paragraph("Scratch.")
        document.add_comment(commented.runs, text="Checked with the registry.", author="Ana")
        commented._p.getparent().remove(commented._p)  # its anchor moves to the note
        document.add_paragraph("Claim.[fn:1]")
        document.add_paragraph("Next.")

    data = _with_notes(build, {1: [f"Source: the registry.{anchor}"]}, {})
    assert _blocks(data) == [
        ("paragraph", "Claim.[1]"),
        ("paragraph", "[1] Source: the registry."),
        ("paragraph", "[comment: Ana] Checked with the registry."),
        ("paragraph", "Next."),
    ]
