"""Context packs: ranked blocks of memory within a token budget (the Notarium recall rules).

1. Seeds come from hybrid search, with their fused scores.
2. A breadth-first walk follows item links both ways up to ``depth`` hops, through the items the
   call's filters keep only (scope, kind, type, muted, deleted, who may read): a neighbour is
   packed on the same terms as a seed (docs/decisions/0103-context-walk-keeps-the-filters.md).
   A hop that reaches more new items than the budget could hold blocks (and 1,000) keeps
   those of the lowest ids and ends the walk; the pack says ``links_cut`` (decision 0162).
3. Blocks rank by ``score - 1000 * hop`` (a seed always outranks a neighbour), plus a small bonus
   for neighbours linked to more than one seed; ties by id.
4. The budget in characters is ``budget_tokens * 4``; each block is capped at
   ``max_per_source`` tokens (default ``max(500, ceil(budget / 2))``), the separator before
   it included, and cut with ``...``.
5. A block is ``## {title} ({scope label})`` then its text.
6. Whole blocks are added in rank order, counting separators; the first block that does not fit
   stops the pack and sets ``truncated``. If the very first block is too big it is cut to the
   budget, so a pack is never empty when something matched.
7. Muted categories and deleted items are left out.
8. ``used_tokens`` is the estimate of the whole pack, separators included, and never more than
   the budget; a source's ``tokens`` is its share of it (its block and the separator before it,
   counted at the running total), so the sources add up to ``used_tokens`` exactly: rounded one
   by one, 21 small blocks in a pack of 100 tokens claimed 105.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Sequence

from typing_extensions import TypedDict

from ..core.text import clip
from ..store.base import Row
from .results import AnswerState, Cited, Grounding, Source

CHARS_PER_TOKEN = 4
SEPARATOR = "\n\n"
ELLIPSIS = "..."
# The fewest characters a block takes after the first: the separator, "## ", a title of one
# character, " ()" around an empty scope label, the line break, and no text.
SMALLEST_BLOCK = len(SEPARATOR) + len("## ") + 1 + len(" ()") + 1


def most_blocks(budget_tokens: int, max_per_source: int | None = None) -> int:
    """More blocks than this never fit in a pack of ``budget_tokens``: a walk that reached
    more items may leave the rest unread (retrieval/walk.py, decision 0162). A cap of
    ``max_per_source`` under the smallest block cuts each block to the cap, separator
    included (a cap of 1 token: 4 characters a block)."""
    smallest = SMALLEST_BLOCK
    if max_per_source is not None:
        smallest = min(smallest, max_per_source * CHARS_PER_TOKEN)
    return 1 + budget_tokens * CHARS_PER_TOKEN // smallest


def tokens(text: str) -> int:
    """The documented estimate: four characters a token."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def scope_label(scope: str) -> str:
    if scope == "user":
        return "personal"
    if scope.startswith("project:"):
        return f"project: {scope[len('project:') :]}"
    return scope


def title_of(row: Row) -> str:
    if row["title"]:
        return str(row["title"])
    if row["item_type"] == "message":
        meta = json.loads(row["meta"])
        when = f", {row['occurred_at'][:10]}" if row["occurred_at"] else ""
        return f"{meta.get('speaker', 'message')}{when}"
    return f"{row['category']} {row['item_type']}"


class Block(TypedDict):
    header: str
    text: str
    source: Cited


def set_blocks(rows: Sequence[Row], ranked: Iterable[Block]) -> Iterator[Block]:
    """The items of a named context set first, in the set's order and flagged pinned, then
    the ranked blocks that are not among them."""
    chosen = [
        Block(
            header=f"## {title_of(row)} ({scope_label(row['scope'])})",
            text=row["content"],
            source={
                "id": row["id"],
                "title": title_of(row),
                "item_type": row["item_type"],
                "scope": row["scope"],
                "writer": row["source"],
                "updated_at": row["updated_at"],
                "span": None,
                "hop": 0,
                "score": 0.0,
                "pinned": True,
            },
        )
        for row in rows
        if not row["muted"]
    ]
    shown = {block["source"]["id"] for block in chosen}
    yield from chosen
    # lazily: the ranked blocks' rows are read as the pack takes them (retrieval/walk.py)
    yield from (block for block in ranked if block["source"]["id"] not in shown)


def pack(
    blocks: Iterable[Block], budget_tokens: int, max_per_source: int | None
) -> tuple[str, list[Source], bool]:
    """Join ranked blocks (each with ``header`` and ``text``) within the budget."""
    budget = budget_tokens * CHARS_PER_TOKEN
    cap = (
        max_per_source if max_per_source is not None else max(500, math.ceil(budget_tokens / 2))
    ) * CHARS_PER_TOKEN
    parts: list[str] = []
    used = 0
    kept: list[Source] = []
    truncated = False

    def share(start: int, stop: int) -> int:
        # rounded at the running total, not block by block, so the shares add up to the whole
        return math.ceil(stop / CHARS_PER_TOKEN) - math.ceil(start / CHARS_PER_TOKEN)

    for block in blocks:
        text = f"{block['header']}\n{block['text']}"
        # the cap holds for the whole block, header and the separator before it included: a
        # header longer than it is cut too, and a source's share never tops max_per_source
        room = cap - (len(SEPARATOR) if parts else 0)
        cut = len(text) > room
        if cut:
            text = (clip(text, room - len(ELLIPSIS)) + ELLIPSIS)[: max(room, 0)]
        cost = len(text) + (len(SEPARATOR) if parts else 0)
        if used + cost > budget:
            if not parts:  # never empty: the first block is cut to the budget
                text = clip(text, budget - len(ELLIPSIS)) + ELLIPSIS
                text = text[:budget]
                parts.append(text)
                kept.append({**block["source"], "cut": True, "tokens": share(0, len(text))})
            truncated = True
            break
        parts.append(text)
        kept.append({**block["source"], "cut": cut, "tokens": share(used, used + cost)})
        used += cost
    return SEPARATOR.join(parts), kept, truncated


def grounding(query: str, body: str, state: AnswerState, by_meaning: bool) -> Grounding:
    """How well the pack answers the question's words: grounded (every content word of the
    question is in it), grounded_by_meaning (found by meaning, not by its words), related
    (some words; ``uncovered`` lists the others), uncited, nothing_stored, could_not_judge."""
    if state == "nothing_stored" or state == "could_not_judge":
        return {"state": state}
    from ..index.words import as_read, terms

    words = terms(query)
    text = as_read(body)
    uncovered = [w for w in words if w[:5] not in text]
    if not uncovered:
        return {"state": "grounded"}
    if by_meaning:
        return {"state": "grounded_by_meaning", "uncovered": uncovered}
    if len(uncovered) < len(words):
        return {"state": "related", "uncovered": uncovered}
    return {"state": "uncited", "uncovered": uncovered}
