"""Document text kept whole: every visible text of an HTML page and every paragraph of a Word
body, in the order written, from real files built here with the parsers' own libraries."""

from __future__ import annotations

import base64

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


def test_a_page_of_divs_is_stored(file_memory: recuerdo.Memory) -> None:
    """Refused as empty_content before: its text sat in <div>s only."""
    data = page("<div>Only div text, a whole page of it.</div>")
    reply = file_memory.ingest(base64.b64encode(data).decode(), name="divs.html")
    assert reply["kind"] == "html" and reply["text"] == "Only div text, a whole page of it."
