"""Document text kept whole: every visible text of an HTML page and every paragraph of a Word
body, in the order written, from real files built here with the parsers' own libraries."""

from __future__ import annotations

import base64
import io
from typing import Any

import pytest

import recuerdo
from recuerdo.ingest.document import blocks_of


def blocks(data: bytes) -> list[tuple[str, str]]:
    return [(block.kind, block.text) for block in blocks_of(data)[1]]


def page(body: str) -> bytes:
    head = "<!DOCTYPE html><html><head><title>Not body text</title></head>"
    return f"{head}<body>{body}</body></html>".encode()


HTML_CASES = [
    (
        "<div>Alpha: the contract renews on 1 May.</div><p>Beta paragraph.</p>\n"
        "Gamma directly in body.<br>Delta after a line break.\n"
        "<section>Epsilon in a section.</section>",
        [
            ("paragraph", "Alpha: the contract renews on 1 May."),
            ("paragraph", "Beta paragraph."),
            ("paragraph", "Gamma directly in body. Delta after a line break."),
            ("paragraph", "Epsilon in a section."),
        ],
    ),
    (
        "<div><div>Only div text, a whole page of it.</div></div>",
        [("paragraph", "Only div text, a whole page of it.")],
    ),
    ("<pre>def f():\n    return 1\n</pre>", [("paragraph", "def f():\n    return 1")]),
    (
        "One line<br>the next<br><br>A new paragraph",
        [("paragraph", "One line the next"), ("paragraph", "A new paragraph")],
    ),
    (
        "<p>Bo<b>ld</b> and <a href='/x'>linked</a> words</p>",
        [("paragraph", "Bold and linked words")],
    ),
    (
        "<div hidden>Hidden</div><template>Template</template><noscript>No script</noscript>"
        "<script>var s = 'script';</script><style>p {}</style><p>Shown</p>",
        [("paragraph", "Shown")],
    ),
    (
        "<article><h2>Renewals</h2>Notice is due <em>sixty</em> days ahead."
        "<ul><li><p>Loose item</p></li><li>Tight item<ul><li>Nested item</li></ul></li></ul>"
        "After the list</article>",
        [
            ("heading", "Renewals"),
            ("paragraph", "Notice is due sixty days ahead."),
            ("list_item", "Loose item"),
            ("list_item", "Tight item"),
            ("list_item", "Nested item"),
            ("paragraph", "After the list"),
        ],
    ),
]


@pytest.mark.parametrize(
    ("body", "expected"),
    HTML_CASES,
    ids=["outside-paragraphs", "only-divs", "pre", "line-breaks", "inline", "invisible", "nested"],
)
def test_html_keeps_every_visible_text_in_order(body: str, expected: list[tuple[str, str]]) -> None:
    assert blocks(page(body)) == expected


def test_html_deeply_nested_is_read_whole_in_order() -> None:
    """Text at every level of 3000 nested elements, before and after the level below: all of it,
    in document order (one walk of the tree: no look at each node's ancestors, no recursion)."""
    depth = 3000
    opening = [f"open {i}" for i in range(depth)]
    closing = [f"close {i}" for i in reversed(range(depth))]
    body = "".join(f"<div>{t}" for t in opening) + "<p>middle</p>"
    body += "".join(f"{t}</div>" for t in closing)
    expected = [*opening, "middle", *closing]
    assert [text for _, text in blocks(page(body))] == expected


def test_html_nested_past_what_the_parser_reads_in_time_is_refused() -> None:
    """The HTML parser's own tree building looks down the stack of open elements at each
    <div>: 20,000 nested ones (100 KB) would take it seconds, a 5 MB page of them hours.
    Refused as not readable, from an estimate made before parsing."""
    with pytest.raises(recuerdo.DocumentNotReadable):
        blocks_of(page("<div>" * 20_000 + "deep" + "</div>" * 20_000))


def test_a_page_of_divs_is_stored(file_memory: recuerdo.Memory) -> None:
    """Refused as empty_content before: its text sat in <div>s only."""
    data = page("<div>Only div text, a whole page of it.</div>")
    reply = file_memory.ingest(base64.b64encode(data).decode(), name="divs.html")
    assert reply["kind"] == "html" and reply["text"] == "Only div text, a whole page of it."


def _word(build: Any) -> bytes:
    import docx

    document = docx.Document()
    build(document)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _in_content_control(document: Any, paragraph: Any) -> None:
    """Move ``paragraph`` into a block-level content control (w:sdt), as Word templates do."""
    from docx.oxml import OxmlElement

    sdt, content = OxmlElement("w:sdt"), OxmlElement("w:sdtContent")
    element = paragraph._p
    element.getparent().remove(element)
    content.append(element)
    sdt.append(content)
    document.element.body.insert(len(document.element.body) - 1, sdt)  # before w:sectPr


def _tables_and_controls(document: Any) -> None:
    document.add_paragraph("Alpha before the table.")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text = "Cell one"
    table.cell(0, 1).add_table(rows=1, cols=1).cell(0, 0).text = "Nested detail"
    table.cell(1, 0).text = "Second row"
    document.add_paragraph("Omega after the table.")
    _in_content_control(document, document.add_heading("Controlled heading", level=2))
    _in_content_control(document, document.add_paragraph("Controlled item", style="List Bullet"))
    document.add_paragraph("The end.")


def test_word_body_is_read_in_order_with_tables_and_content_controls() -> None:
    """Tables where they stand (not all at the end), a nested table's text in its cell, and
    paragraphs inside content controls, with their headings and list items."""
    assert blocks(_word(_tables_and_controls)) == [
        ("paragraph", "Alpha before the table."),
        ("paragraph", "Cell one | Nested detail"),
        ("paragraph", "Second row"),
        ("paragraph", "Omega after the table."),
        ("heading", "Controlled heading"),
        ("list_item", "Controlled item"),
        ("paragraph", "The end."),
    ]


def test_word_styles_are_looked_up_once_not_per_paragraph(monkeypatch: pytest.MonkeyPatch) -> None:
    """python-docx's style lookup scans the style list: once per paragraph made 30,000 plain
    paragraphs take over a minute. The styles are read once, whatever the paragraph count."""
    from docx.styles.styles import Styles

    def many(document: Any) -> None:
        document.add_heading("Title", level=1)
        for number in range(300):
            document.add_paragraph(f"Paragraph {number}.")

    data = _word(many)
    lookups = 0
    real = Styles.get_by_id

    def counted(self: Styles, *args: Any) -> Any:
        nonlocal lookups
        lookups += 1
        return real(self, *args)

    monkeypatch.setattr(Styles, "get_by_id", counted)
    found = blocks(data)
    assert found[0] == ("heading", "Title") and len(found) == 301
    assert lookups <= 2
