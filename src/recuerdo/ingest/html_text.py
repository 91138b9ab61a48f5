"""HTML: every visible text node, in document order, cut into blocks at block boundaries.

One walk of the tree (a stack, no per-node look at the ancestors: a page of deeply nested
``<div>``s was quadratic that way). Text outside any paragraph element is kept (directly in
``<body>``, in a ``<div>`` or ``<section>``, after a ``<br>``): an element that starts a block
(a ``<div>`` as much as a ``<p>``) ends the text gathered so far and starts another, and an
inline element (``<b>``, ``<a>``, an unknown tag) only adds its text. A ``<pre>`` keeps its
lines and indentation. Only what a reader never sees is skipped: scripts, styles, templates,
``noscript``, the head, and elements marked ``hidden`` or styled inline ``display: none`` or
``visibility: hidden``.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import DocumentNotReadable
from .blocks import Block, BlockKind

# Elements a browser lays out as blocks (the HTML standard's rendering section): each one is a
# paragraph break before and after.
# fmt: off
_BREAKS = frozenset((
    "address", "article", "aside", "blockquote", "body", "caption", "center", "dd", "details",
    "dialog", "dir", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form",
    "frameset", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hgroup", "hr", "html", "legend",
    "li", "listing", "main", "menu", "nav", "ol", "p", "plaintext", "pre", "search", "section",
    "summary", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul", "xmp",
))
# fmt: on
_SKIPPED = frozenset(
    ("head", "script", "style", "template", "noscript", "iframe", "canvas", "datalist")
)
_HEADINGS = frozenset(("h1", "h2", "h3", "h4", "h5", "h6"))
_VERBATIM = frozenset(("pre", "listing", "plaintext", "xmp"))
_INVISIBLE_STYLE = re.compile(
    r"(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*hidden)\s*(?:!\s*important\s*)?(?:;|$)",
    re.IGNORECASE,
)
_BR = object()  # a line break inside the text gathered: two in a row end a paragraph


class _Gatherer:
    """The text of the block being read, and the blocks done."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.parts: list[Any] = []  # strings and _BR marks
        self.kind: BlockKind = "paragraph"
        self.verbatim = False

    def add(self, text: str, kind: BlockKind, verbatim: bool) -> None:
        if not self.parts:
            self.kind, self.verbatim = kind, verbatim
        self.parts.append(text)

    def line_break(self, kind: BlockKind, verbatim: bool) -> None:
        if verbatim:
            self.add("\n", kind, verbatim)
        elif self.parts:
            self.parts.append(_BR)

    def end(self) -> None:
        """The block being read is complete (a block element starts or ends here)."""
        if not self.parts:
            return
        parts, self.parts = self.parts, []
        if self.verbatim:
            self._verbatim("".join(parts))
            return
        # A single <br> is a line break inside the paragraph (an address, a verse); two in a
        # row, with only white space between, are how many pages separate paragraphs.
        pieces: list[str] = []
        breaks = 0
        for part in parts:
            if part is _BR:
                breaks += 1
            elif part.isspace():
                pieces.append(part)
            else:
                if breaks >= 2:
                    self._paragraph(pieces)
                    pieces = []
                pieces.append(" " + part if breaks else part)
                breaks = 0
        self._paragraph(pieces)

    def _paragraph(self, pieces: list[str]) -> None:
        text = " ".join("".join(pieces).split())
        if text:
            self.blocks.append(Block(self.kind, text, None))

    def _verbatim(self, text: str) -> None:
        lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
        while lines and not lines[0]:
            lines.pop(0)
        while lines and not lines[-1]:
            lines.pop()
        if lines:
            self.blocks.append(Block(self.kind, "\n".join(lines), None))


def html(text: str) -> list[Block]:
    from selectolax.lexbor import LexborHTMLParser

    if _too_deep(text):
        raise DocumentNotReadable(
            "the HTML nests its elements too deep to be read (thousands of levels)"
        )
    tree = LexborHTMLParser(text)
    # Dropped in one query rather than looked at on every element of the walk (reading each
    # element's attributes took as long as the rest of the walk).
    for invisible in tree.css("[hidden]"):
        invisible.decompose()
    # An inline style that hides an element hides it as ``hidden`` does: a reader never sees
    # it, and pages hide text from readers that way (0145). A style sheet's rules are not read.
    for styled in tree.css("[style]"):
        if _INVISIBLE_STYLE.search(styled.attributes.get("style") or ""):
            styled.decompose()
    root = tree.body or tree.root
    if root is None:
        return []
    out = _Gatherer()
    headings = lists = verbatim = 0  # how many of each are open around the current node
    # The walk: (node, None) enters a node, (node, tag) leaves an element opened earlier.
    stack: list[tuple[Any, str | None]] = [(root, None)]
    while stack:
        node, leaving = stack.pop()
        if leaving is not None:
            if leaving in _BREAKS:
                out.end()
            headings -= leaving in _HEADINGS
            lists -= leaving == "li"
            verbatim -= leaving in _VERBATIM
            continue
        if node.is_text_node:
            content = node.text_content
            if content:
                out.add(content, _kind(headings, lists), verbatim > 0)
            continue
        if not node.is_element_node:
            continue  # a comment
        tag = node.tag
        if tag in _SKIPPED:
            continue
        if tag == "br":
            out.line_break(_kind(headings, lists), verbatim > 0)
            continue
        if tag in _BREAKS:
            out.end()
        headings += tag in _HEADINGS
        lists += tag == "li"
        verbatim += tag in _VERBATIM
        stack.append((node, tag))
        children = []
        child = node.child
        while child is not None:
            children.append(child)
            child = child.next
        stack.extend((c, None) for c in reversed(children))
    out.end()
    return out.blocks


def _kind(headings: int, lists: int) -> BlockKind:
    """Text inside a heading is the heading's; inside a list item (even in a paragraph of
    it, as loose lists are written) the item's."""
    return "heading" if headings else "list_item" if lists else "paragraph"


# The HTML parser's own cost. Building the tree, the standard parser looks down the stack of
# open elements at each <div>, <p>, <section>... for a <p> to close: with thousands of elements
# open that is quadratic (lexbor, 16,000 nested <div>s: 1.2 s; 32,000: 11 s; a 5 MB page of
# them: hours). Browsers cap the depth; here a page whose look-downs would pass the budget
# (about a second of parsing) is refused, on an estimate made in one pass over the tags.
# Real pages nest a few dozen deep: their estimate is thousands of times below it.
_MAX_SCOPE_STEPS = 100_000_000
_TAG = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9]*)")
_LOOKS_DOWN = _BREAKS - {"body", "html", "frameset", "caption", "td", "th", "tr", "tbody"}
_STAYS_SHUT = frozenset(  # void elements, and those the next of their kind closes
    (
        "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param",
        "source", "track", "wbr", "p", "li", "dt", "dd", "option", "optgroup", "tr", "td", "th",
        "tbody", "thead", "tfoot", "rb", "rt", "rp", "rtc", "colgroup",
    )
)  # fmt: skip


def _too_deep(text: str) -> bool:
    """Whether the parser would look at more than ``_MAX_SCOPE_STEPS`` stack entries (an
    estimate: every element stays open until its end tag, except those of ``_STAYS_SHUT``)."""
    if text.count("<") ** 2 <= _MAX_SCOPE_STEPS:
        return False  # too few tags to pass it, whatever their nesting
    depth = steps = 0
    for found in _TAG.finditer(text):
        closing, name = found.groups()
        name = name.lower()
        if name in _STAYS_SHUT:
            steps += depth if not closing and name in _LOOKS_DOWN else 0
        elif closing:
            depth -= depth > 0
        else:
            steps += depth if name in _LOOKS_DOWN else 0
            depth += 1
        if steps > _MAX_SCOPE_STEPS:
            return True
    return False
