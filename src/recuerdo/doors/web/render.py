"""What the lens draws from verb results: sanitised Markdown, diffs, and the neighbourhood of an
entity as SVG. Pure functions of data: no verb is called here."""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from markdown_it import MarkdownIt
from markupsafe import Markup, escape

# Raw HTML off: a note's <script> is shown as text, never run. markdown-it also refuses
# javascript:, vbscript: and data: link targets.
_MARKDOWN = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
_MARKDOWN.enable("table").enable("strikethrough")


def markdown(text: str) -> Markup:
    """A note's Markdown as HTML; its headings sit one level below the page's title."""
    tokens = _MARKDOWN.parse(text)
    for token in tokens:
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(6, int(token.tag[1:]) + 1)}"
    return Markup(_MARKDOWN.renderer.render(tokens, _MARKDOWN.options, {}))


@dataclass(frozen=True)
class DiffLine:
    kind: str  # "same", "added", "removed", "hunk"
    text: str


@dataclass(frozen=True)
class Diff:
    lines: list[DiffLine]
    simplified: bool
    """The changed middle was too long to match line by line: it is shown as removed whole,
    then added whole (every line still shown, none dropped)."""


MAX_MATCHED_LINES = 500
"""Past this many lines on either side of the changed middle, the lines are not matched.
difflib's matcher is about cubic on lines that repeat just under its "popular" threshold: on
such text 2,000 lines cost 0.05 s, 4,000 0.35 s, 14,000 a quarter of a minute (decision 0092),
and 2,000 lines against 1,000 interleaved with others 1.77 s (its review: hence 500).
An ordinary edit changes a few lines, and the common start and end are cut first, so the
bound applies to what changed, not to the note's length."""


Opcode = tuple[Literal["replace", "delete", "insert", "equal"], int, int, int, int]


class _Given(difflib.SequenceMatcher):  # type: ignore[type-arg]
    """A matcher whose opcodes are given: difflib's own grouping into hunks, over opcodes made
    here (the common start and end found in linear time, the middle matched only when short)."""

    def __init__(self, codes: list[Opcode]) -> None:
        super().__init__(None, [], [])
        self.given = codes

    def get_opcodes(self) -> list[Opcode]:
        return list(self.given)


def diff(old: str, new: str, context: int = 3) -> Diff:
    """The lines that changed from ``old`` to ``new`` (a unified diff, by line), in bounded
    time: the common first and last lines are cut in linear time, and a changed middle of more
    than :data:`MAX_MATCHED_LINES` lines is shown replaced whole, flagged ``simplified``."""
    a, b = old.splitlines(), new.splitlines()
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    a_end, b_end = len(a) - tail, len(b) - tail
    simplified = max(a_end - head, b_end - head) > MAX_MATCHED_LINES
    if simplified:
        middle: list[Opcode] = [("replace", head, a_end, head, b_end)]
    else:
        matcher = difflib.SequenceMatcher(None, a[head:a_end], b[head:b_end])
        middle = [
            (tag, i1 + head, i2 + head, j1 + head, j2 + head)
            for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        ]
    codes: list[Opcode] = []
    ends: list[Opcode] = [("equal", 0, head, 0, head), ("equal", a_end, len(a), b_end, len(b))]
    for code in [ends[0], *middle, ends[1]]:
        if code[1] == code[2] and code[3] == code[4]:
            continue  # empty
        if codes and codes[-1][0] == code[0] == "equal":
            code = ("equal", codes[-1][1], code[2], codes[-1][3], code[4])
            codes.pop()
        codes.append(code)
    lines: list[DiffLine] = []
    for group in _Given(codes).get_grouped_opcodes(context):
        first, last = group[0], group[-1]
        lines.append(
            DiffLine(
                "hunk",
                f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@",
            )
        )
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [DiffLine("same", line) for line in a[i1:i2]]
                continue
            lines += [DiffLine("removed", line) for line in a[i1:i2]]
            lines += [DiffLine("added", line) for line in b[j1:j2]]
    return Diff(lines, simplified)


def _range(start: int, stop: int) -> str:
    """A hunk's line range as unified diffs write it (1-based; an empty range names the line
    before it)."""
    length = stop - start
    first = start + 1 if length else start
    return str(first) if length == 1 else f"{first},{length}"


def highlight(passage: str, quote: str | None) -> Markup:
    """The passage with the quoted span marked (the first place it occurs)."""
    if not quote or quote not in passage:
        return Markup(escape(passage))
    start = passage.index(quote)
    stop = start + len(quote)
    return Markup("{}<mark>{}</mark>{}").format(passage[:start], quote, passage[stop:])


@dataclass(frozen=True)
class Edge:
    subject: str
    relation: str
    object: str
    derived: bool


def facts_of(items: Iterable[Mapping[str, Any]]) -> list[Edge]:
    edges: list[Edge] = []
    seen: set[tuple[str, str, str]] = set()
    for item in items:
        if item.get("kind") != "fact":
            continue
        key = (str(item["subject"]), str(item["relation"]), str(item["object"]))
        if key in seen:
            continue
        seen.add(key)
        edges.append(Edge(*key, derived=bool(item.get("derived"))))
    return edges


WIDTH, HEIGHT = 720, 460


def neighbourhood_svg(center: str, edges: list[Edge], link: Any) -> Markup:
    """Entities as nodes (the subject in the middle, the others on a ring), facts as labelled
    arrows, derived facts dashed. Every other node links (``link(name)``) to its own page."""
    names = [center, *sorted({n for e in edges for n in (e.subject, e.object)} - {center})]
    places: dict[str, tuple[float, float]] = {center: (WIDTH / 2, HEIGHT / 2)}
    others = names[1:]
    for index, name in enumerate(others):
        angle = 2 * math.pi * index / max(1, len(others)) - math.pi / 2
        places[name] = (
            WIDTH / 2 + 0.38 * WIDTH * math.cos(angle),
            HEIGHT / 2 + 0.36 * HEIGHT * math.sin(angle),
        )
    parts = [
        Markup(
            '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" class="graph"'
            ' role="img" aria-labelledby="graph-title graph-desc">'
            '<title id="graph-title">Neighbourhood of {c}</title>'
            '<desc id="graph-desc">{n} entities and {f} facts; the fact list below says the'
            " same in words.</desc>"
            '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7"'
            ' markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z"/>'
            "</marker></defs>"
        ).format(w=WIDTH, h=HEIGHT, c=center, n=len(names), f=len(edges))
    ]
    for edge in edges:
        (x1, y1), (x2, y2) = places[edge.subject], places[edge.object]
        length = math.hypot(x2 - x1, y2 - y1) or 1.0
        shorten = 30 / length  # stop at the node's edge
        ex, ey = x2 - (x2 - x1) * shorten, y2 - (y2 - y1) * shorten
        css = "edge derived" if edge.derived else "edge"
        dash = ' stroke-dasharray="6 4"' if edge.derived else ""
        parts.append(
            Markup(
                '<g class="{css}"><line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}"'
                ' marker-end="url(#arrow)"{dash}/><text x="{mx:.1f}" y="{my:.1f}"'
                ' text-anchor="middle">{label}</text></g>'
            ).format(
                css=css,
                x1=x1,
                y1=y1,
                x2=ex,
                y2=ey,
                dash=Markup(dash),
                mx=(x1 + x2) / 2,
                my=(y1 + y2) / 2 - 6,
                label=edge.relation + (" (derived)" if edge.derived else ""),
            )
        )
    for name in names:
        x, y = places[name]
        node = Markup(
            '<circle cx="{x:.1f}" cy="{y:.1f}" r="28"/><text x="{x:.1f}" y="{ty:.1f}"'
            ' text-anchor="middle">{label}</text>'
        ).format(x=x, y=y, ty=y + 46, label=name)
        if name == center:
            parts.append(Markup('<g class="node center">{}</g>').format(node))
        else:
            parts.append(
                Markup('<a href="{href}" class="node"><title>Open {name}</title>{node}</a>').format(
                    href=link(name), name=name, node=node
                )
            )
    parts.append(Markup("</svg>"))
    return Markup("").join(parts)
