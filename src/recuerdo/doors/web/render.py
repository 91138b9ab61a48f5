"""What the lens draws from verb results: sanitised Markdown, diffs, and the neighbourhood of an
entity as SVG. Pure functions of data: no verb is called here."""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

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


def diff(old: str, new: str, context: int = 3) -> list[DiffLine]:
    """The lines that changed from ``old`` to ``new`` (a unified diff, by line)."""
    lines: list[DiffLine] = []
    for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=context):
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("@@"):
            lines.append(DiffLine("hunk", line))
        elif line.startswith("+"):
            lines.append(DiffLine("added", line[1:]))
        elif line.startswith("-"):
            lines.append(DiffLine("removed", line[1:]))
        else:
            lines.append(DiffLine("same", line[1:]))
    return lines


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
