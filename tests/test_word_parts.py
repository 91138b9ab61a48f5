"""Word headers, footers and comments are part of a document's text (decision 0160): they were
not read, so a fact stated only in a running header, a footer or a reviewer's comment was never
stored, found or cited. A comment follows the block that holds its anchor, under its author's
name; each header and footer a reader sees is read once, after the body."""

from __future__ import annotations

import base64
import io
import time
from collections.abc import Callable
from typing import Any

import pytest

import recuerdo
from recuerdo.ingest.document import blocks_of


def _word(build: Callable[[Any], None]) -> bytes:
    import docx

    document = docx.Document()
    build(document)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _blocks(data: bytes) -> list[str]:
    found = blocks_of(data)[1]
    assert {block.kind for block in found} <= {"paragraph", "heading"}
    return [block.text for block in found]


def _element(tag: str, **attributes: str) -> Any:
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    return OxmlElement(tag, {qn(name.replace("_", ":", 1)): v for name, v in attributes.items()})


def _commented(document: Any) -> None:
    document.add_paragraph("Revenue grew by a third.")
    claim = document.add_paragraph("Costs held.")
    document.add_comment(claim.runs, text="Check against the audit.", author="Ana")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text = "Margin"
    table.cell(0, 1).text = "12%"
    document.add_comment(table.cell(0, 1).paragraphs[0].runs, text="Rounded.", author="")
    table.cell(1, 0).text = "Staff"
    first = document.add_paragraph("The plan spans")
    last = document.add_paragraph("two paragraphs.")
    comment = document.add_comment([first.runs[0], last.runs[0]], text="Too long.", author="Bo")
    comment.add_paragraph("Cut it to one.")
    document.add_paragraph("The end.")


def test_each_comment_follows_the_block_that_holds_its_anchor_under_its_author() -> None:
    """A comment on a table cell follows its row; one spanning two paragraphs follows the
    second (where its range ends); a comment without an author is labelled without one."""
    assert _blocks(_word(_commented)) == [
        "Revenue grew by a third.",
        "Costs held.",
        "[comment: Ana] Check against the audit.",
        "Margin | 12%",
        "[comment] Rounded.",
        "Staff",
        "The plan spans",
        "two paragraphs.",
        "[comment: Bo] Too long.",
        "Cut it to one.",
        "The end.",
    ]


def _sections(document: Any) -> None:
    """Three sections: the first with a header, a first-page header of the same text and a
    footer; the second linked to the first; the third with a header of its own and an even-page
    header, shown since odd and even pages differ."""
    document.settings.odd_and_even_pages_header_footer = True
    first = document.sections[0]
    first.header.paragraphs[0].text = "Acme Corp - Confidential"
    first.different_first_page_header_footer = True
    first.first_page_header.paragraphs[0].text = "Acme Corp - Confidential"
    first.footer.paragraphs[0].text = "Printed in Lima"
    first.footer.add_paragraph("Second footer line")
    document.add_paragraph("Section one.")
    document.add_section()  # linked to the previous: shows the same parts
    document.add_paragraph("Section two.")
    third = document.add_section()
    third.header.is_linked_to_previous = False
    third.header.paragraphs[0].text = "Appendix: Zorvian data"
    third.even_page_header.paragraphs[0].text = "Acme Corp - Confidential"
    third.even_page_footer.paragraphs[0].text = "Even footer"
    document.add_paragraph("Section three.")


def test_headers_and_footers_are_read_once_each_after_the_body() -> None:
    assert _blocks(_word(_sections)) == [
        "Section one.",
        "Section two.",
        "Section three.",
        "[header] Acme Corp - Confidential",
        "[header] Appendix: Zorvian data",
        "[footer] Printed in Lima",
        "Second footer line",
        "[footer] Even footer",
    ]


def _hidden_variants(document: Any) -> None:
    """A first-page header of a section whose first page is no longer different, an even-page
    footer in a document whose odd and even pages are alike, and an empty header: Word keeps
    the first two but shows none of them."""
    section = document.sections[0]
    section.different_first_page_header_footer = True
    section.first_page_header.paragraphs[0].text = "Draft cover"
    section.different_first_page_header_footer = False
    section.even_page_footer.paragraphs[0].text = "Old even footer"
    section.header.is_linked_to_previous = False  # an empty header part
    document.add_paragraph("Body.")


def test_header_and_footer_parts_word_does_not_show_are_not_read() -> None:
    assert _blocks(_word(_hidden_variants)) == ["Body."]


def _odd(document: Any) -> None:
    """References to parts that are not there: a comment with no comments part, a header whose
    relationship is missing, and a comment whose anchor was deleted (never shown by Word)."""
    paragraph = document.add_paragraph("Body with a dangling comment.")
    run = _element("w:r")
    run.append(_element("w:commentReference", w_id="7"))
    paragraph._p.append(run)
    sections = document.element.body.sectPr
    sections.insert(0, _element("w:headerReference", w_type="default", r_id="rId999"))
    sections.insert(0, _element("w:footerReference", w_type="first", r_id="rId998"))


def _orphan(document: Any) -> None:
    kept = document.add_paragraph("Kept.")
    document.add_comment(kept.runs, text="No anchor left.", author="Ana")
    for element in kept._p.xpath("./w:commentRangeStart | ./w:commentRangeEnd | ./w:r[2]"):
        kept._p.remove(element)


def _range_end_only(document: Any) -> None:
    """A comment whose reference mark was deleted: its range's end still places it."""
    claim = document.add_paragraph("Claimed.")
    document.add_comment(claim.runs, text="Source?", author="Ana")
    claim._p.remove(claim._p.xpath("./w:r[w:commentReference]")[0])
    document.add_paragraph("After.")


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (_odd, ["Body with a dangling comment."]),
        (_orphan, ["Kept."]),
        (_range_end_only, ["Claimed.", "[comment: Ana] Source?", "After."]),
    ],
    ids=["missing-parts", "comment-without-anchor", "comment-range-end-only"],
)
def test_missing_parts_and_anchors_do_not_fail(
    build: Callable[[Any], None], expected: list[str]
) -> None:
    assert _blocks(_word(build)) == expected


def _field(paragraph: Any, instruction: str, shown: str) -> None:
    """A complex field (begin, instruction, separator, its last result, end), as Word writes
    a page number."""

    def run(child: Any) -> Any:
        element = _element("w:r")
        element.append(child)
        paragraph._p.append(element)
        return child

    run(_element("w:fldChar", w_fldCharType="begin"))
    run(_element("w:instrText")).text = f" {instruction} "
    run(_element("w:fldChar", w_fldCharType="separate"))
    run(_element("w:t")).text = shown
    run(_element("w:fldChar", w_fldCharType="end"))


def _page_numbers(document: Any) -> None:
    """Word's page number footers: a number alone, in dashes (a simple field), and in words."""
    document.add_paragraph("Body.")
    document.add_paragraph("* * *")  # no letter, but no page number either: kept
    section = document.sections[0]
    _field(section.footer.paragraphs[0], "PAGE   \\* MERGEFORMAT", "2")
    section.different_first_page_header_footer = True
    dashed = section.first_page_footer.paragraphs[0]
    dashed.add_run("- ")
    simple = _element("w:fldSimple", w_instr=" PAGE ")
    simple.append(_element("w:r"))
    simple[0].append(_element("w:t"))
    simple[0][0].text = "1"
    dashed._p.append(simple)
    dashed.add_run(" -")
    words = section.header.paragraphs[0]
    words.add_run("Page ")
    _field(words, "PAGE", "2")
    words.add_run(" of ")
    _field(words, "NUMPAGES", "12")


def test_a_header_or_footer_of_page_numbers_only_is_not_read() -> None:
    """The number is whichever page Word last drew the part on: a footer of "2" or "- 1 -" is
    not a fact. Around words, the page number stays as the text shows it."""
    assert _blocks(_word(_page_numbers)) == ["Body.", "* * *", "[header] Page 2 of 12"]


def test_a_paragraph_of_many_open_fields_is_read_in_linear_time() -> None:
    """40,000 date fields begun and never ended, each after the last one's separator: read in
    well under a second (asking every open field at each mark whether it is a page number
    would take minutes)."""
    from docx.oxml import parse_xml
    from docx.oxml.ns import nsdecls

    field = (
        '<w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText>DATE</w:instrText></w:r>'
        '<w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>7</w:t></w:r>'
    )

    def build(document: Any) -> None:
        paragraph = document.add_paragraph("Figures")
        runs = parse_xml(f"<w:p {nsdecls('w')}>{field * 40_000}</w:p>")
        paragraph._p.extend(list(runs))

    data = _word(build)
    started = time.perf_counter()
    [text] = _blocks(data)
    assert time.perf_counter() - started < 5
    assert text == "Figures" + "7" * 40_000


def _fact_in(where: str) -> Callable[[Any], None]:
    fact = "Approved by the Zorvian regulator."

    def build(document: Any) -> None:
        paragraph = document.add_paragraph("The merger closed in spring.")
        if where == "comment":
            document.add_comment(paragraph.runs, text=fact, author="Ana")
        else:
            getattr(document.sections[0], where).paragraphs[0].text = fact

    return build


@pytest.mark.parametrize(
    ("where", "label"),
    [("header", "[header]"), ("footer", "[footer]"), ("comment", "[comment: Ana]")],
)
def test_a_fact_only_in_a_header_footer_or_comment_is_stored_found_and_cited(
    memory: recuerdo.Memory, where: str, label: str
) -> None:
    line = f"{label} Approved by the Zorvian regulator."
    reply = memory.ingest(base64.b64encode(_word(_fact_in(where))).decode(), name="deal.docx")
    assert reply["text"] == f"The merger closed in spring.\n\n{line}"
    memory._upkeep.drain()
    [hit] = memory.search("Zorvian regulator", types="document")["results"]
    assert hit["id"] == reply["doc_id"]
    [passage] = memory.ask("Zorvian regulator")["passages"]
    citation = passage["citation"]
    assert citation["source"]["name"] == "deal.docx" and citation["span_state"] == "verified"
    assert line in citation["span"]["text"]


def _one_part_many_relationships(kind: str, count: int, size: int) -> bytes:
    """``count`` relationships naming one part of ``size`` paragraphs or notes: a header part
    named by a section each, or a footnotes part. A few kilobytes zipped."""
    from docx.opc.constants import RELATIONSHIP_TYPE as RT
    from docx.opc.packuri import PackURI
    from docx.opc.part import Part
    from docx.oxml import parse_xml
    from docx.oxml.ns import nsdecls

    def build(document: Any) -> None:
        namespaces = nsdecls("w", "r")
        if kind == "header":
            lines = "<w:p><w:r><w:t>Acme header</w:t></w:r></w:p>" * size
            blob = f"<w:hdr {namespaces}>{lines}</w:hdr>"
            reltype, content_type = RT.HEADER, "header+xml"
        else:
            notes = "".join(
                f'<w:footnote w:id="{n}"><w:p><w:r><w:t>Note {n}</w:t></w:r></w:p></w:footnote>'
                for n in range(size)
            )
            blob = f"<w:footnotes {namespaces}>{notes}</w:footnotes>"
            reltype, content_type = RT.FOOTNOTES, "footnotes+xml"
        part = Part(
            PackURI(f"/word/{kind}1.xml"),
            f"application/vnd.openxmlformats-officedocument.wordprocessingml.{content_type}",
            blob.encode(),
            document.part.package,
        )
        body = document.element.body
        for number in range(count):
            document.part.rels.add_relationship(reltype, part, f"rIdX{number}")
            if kind == "header":
                reference = f'<w:headerReference w:type="default" r:id="rIdX{number}"/>'
                section = f"<w:pPr><w:sectPr>{reference}</w:sectPr></w:pPr>"
                text = f"<w:r><w:t>Section {number}.</w:t></w:r>"
                body.insert(number, parse_xml(f"<w:p {namespaces}>{section}{text}</w:p>"))
        if kind == "footnotes":
            document.add_paragraph("Claim.")
            document.paragraphs[-1]._p.append(
                parse_xml(f'<w:r {namespaces}><w:footnoteReference w:id="1"/></w:r>')
            )

    return _word(build)


@pytest.mark.parametrize(
    ("kind", "count", "size", "tail"),
    [("header", 3_000, 3_000, 3_000), ("footnotes", 500, 20_000, 2)],
)
def test_a_part_named_by_many_relationships_is_read_once(
    kind: str, count: int, size: int, tail: int
) -> None:
    """Each part is read once, not once per relationship naming it: a header part named by
    3,000 sections under 3,000 relationship ids, or a footnotes part named 500 times, made a
    file of tens of kilobytes take minutes (reading the same part again for each)."""
    data = _one_part_many_relationships(kind, count, size)
    assert len(data) < 200_000
    started = time.perf_counter()
    texts = _blocks(data)
    assert time.perf_counter() - started < 5
    if kind == "header":
        assert texts[count:] == ["[header] Acme header"] + ["Acme header"] * (size - 1)
    else:
        assert texts[-tail:] == ["Claim.[1]", "[1] Note 1"]


def _header_names_an_image(document: Any) -> None:
    """A section's header relationship names an image: bytes, not XML."""
    from docx.opc.constants import RELATIONSHIP_TYPE as RT
    from docx.opc.packuri import PackURI
    from docx.opc.part import Part

    document.add_paragraph("Body.")
    image = Part(PackURI("/word/media/x.bin"), "image/png", b"\x89PNG", document.part.package)
    document.part.rels.add_relationship(RT.HEADER, image, "rIdImage")
    sections = document.element.body.sectPr
    sections.insert(0, _element("w:headerReference", w_type="default", r_id="rIdImage"))


def _settings_names(target: str) -> Callable[[Any], None]:
    """The settings relationship names another part, or there are two: python-docx's
    ``document.settings`` raised AttributeError (the styles part), recursed without end (the
    document part) or raised ValueError (two)."""

    def build(document: Any) -> None:
        from docx.opc.constants import RELATIONSHIP_TYPE as RT

        document.add_paragraph("Body.")
        document.sections[0].header.paragraphs[0].text = "Acme header"
        rels = document.part.rels
        settings = next(r for r in rels.values() if r.reltype == RT.SETTINGS)
        if target == "settings":  # a second relationship to it: python-docx's ValueError
            rels.add_relationship(RT.SETTINGS, settings.target_part, "rIdSettings2")
            return
        part = document.part if target == "document" else document.part.part_related_by(RT.STYLES)
        settings._target = part

    return build


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (_header_names_an_image, ["Body."]),
        (_settings_names("styles"), ["Body.", "[header] Acme header"]),
        (_settings_names("document"), ["Body.", "[header] Acme header"]),
        (_settings_names("settings"), ["Body.", "[header] Acme header"]),
    ],
    ids=[
        "header-names-an-image",
        "settings-names-styles",
        "settings-names-the-document",
        "two-settings-relationships",
    ],
)
def test_relationships_naming_parts_of_another_kind_are_skipped(
    build: Callable[[Any], None], expected: list[str]
) -> None:
    """They raised AttributeError, RecursionError or lxml's XMLSyntaxError: internal errors
    on a file the code before read. A part of the wrong kind says nothing, as for the notes."""
    assert _blocks(_word(build)) == expected


def _body_fields(document: Any) -> None:
    """Page number fields in the body: alone in dashes, beside typed digits, in a table cell,
    and a date field (not a page number) alone."""
    dashed = document.add_paragraph("- ")
    _field(dashed, "PAGE", "4")
    dashed.add_run(" -")
    _field(document.add_paragraph(), "PAGE", "4")
    document.add_paragraph("2024 / ")
    _field(document.paragraphs[-1], "PAGE", "4")
    _field(document.add_paragraph(), "DATE \\@ yyyy", "2026")
    table = document.add_table(rows=1, cols=2)
    table.cell(0, 0).text = "Cell"
    _field(table.cell(0, 1).paragraphs[0], "NUMPAGES", "12")


def test_in_the_body_only_a_paragraph_of_page_numbers_alone_is_dropped() -> None:
    """The rule of headers and footers holds in the body: a paragraph, or a cell, whose only
    letters and digits are a page field's result is left out. Digits typed beside the field,
    or another field's result (a year), keep the paragraph as the text shows it."""
    assert _blocks(_word(_body_fields)) == ["2024 / 4", "2026", "Cell"]


def _main_part(root: str) -> bytes:
    """A Word file whose main part's root is ``root``: a document without a body, or another
    part's root (a header's)."""
    import zipfile

    from docx.oxml.ns import nsdecls

    source = zipfile.ZipFile(io.BytesIO(_word(lambda document: None)))
    target = io.BytesIO()
    with zipfile.ZipFile(target, "w") as archive:
        for name in source.namelist():
            data = source.read(name)
            if name == "word/document.xml":
                data = f"<w:{root} {nsdecls('w')}><w:p/></w:{root}>".encode()
            archive.writestr(name, data)
    return target.getvalue()


@pytest.mark.parametrize("root", ["document", "hdr"])
def test_a_main_part_that_is_not_a_document_is_corrupt(
    file_memory: recuerdo.Memory, root: str
) -> None:
    """It raised TypeError or AttributeError, internal errors, when the walk reached the body
    (before this change too)."""
    data = _main_part(root)
    with pytest.raises(recuerdo.DocumentCorrupt):
        file_memory.ingest(base64.b64encode(data).decode(), name="broken.docx")
    assert file_memory.export(scope="user")["records"][1:] == []


def _unzipping_to(xml_bytes: int, media_bytes: int = 0) -> bytes:
    """A small Word file whose main part unzips to ``xml_bytes`` of short paragraphs (and a
    picture part of ``media_bytes`` zeros): a zip bomb of the kind python-docx parses whole."""
    import zipfile

    from docx.oxml.ns import nsdecls

    source = zipfile.ZipFile(io.BytesIO(_word(lambda document: None)))
    paragraph = b"<w:p><w:r><w:t>x</w:t></w:r></w:p>"
    body = paragraph * (xml_bytes // len(paragraph))
    target = io.BytesIO()
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in source.namelist():
            data = source.read(name)
            if name == "word/document.xml":
                data = f"<w:document {nsdecls('w')}><w:body>".encode() + body
                data += b"</w:body></w:document>"
            archive.writestr(name, data)
        if media_bytes:
            archive.writestr("word/media/image1.png", bytes(media_bytes))
    return target.getvalue()


@pytest.mark.parametrize(
    ("xml_bytes", "media_bytes"), [(80 * 1024 * 1024, 0), (1024, 300 * 1024 * 1024)]
)
def test_a_file_that_unzips_past_the_limit_is_refused_before_it_is_parsed(
    file_memory: recuerdo.Memory, xml_bytes: int, media_bytes: int
) -> None:
    """An upload far under the 5 MB limit whose parts unzip to 80 MB of XML (about 1.2 GB of
    memory once python-docx parsed it), or to 300 MB of data, is refused by what it declares,
    and nothing is stored (decision 0160's review)."""
    data = _unzipping_to(xml_bytes, media_bytes)
    assert len(data) < 2_000_000
    with pytest.raises(recuerdo.PayloadTooLarge) as refused:
        file_memory.ingest(base64.b64encode(data).decode(), name="bomb.docx")
    assert refused.value.code == "payload_too_large" and "unzips to" in str(refused.value)
    assert file_memory.export(scope="user")["records"][1:] == []


def test_a_large_ordinary_file_under_the_limit_is_read() -> None:
    data = _unzipping_to(4 * 1024 * 1024)
    assert len(_blocks(data)) > 100_000
