"""ask: a question's graph answer: the facts of the entities it names, then passages, each
cited, and how well the answer is grounded.

1. Seeds: the entities the question names (by name, a word of a name, a prefix, a close
   spelling, or a type word; small words never seed alone). ``as_of`` hides entities recorded
   later.
2. Facts: the graph walked ``hops`` steps from the seeds in both directions, as the view sees
   it (the present: current facts; ``as_of``: what was known then; ``valid_at``: what was true
   then), with the facts derived from them. Current facts come first, then by distance, then by
   how many of the question's words they share, stored before derived.
3. Passages: the search stages (words, meaning, and the seeds' mentions), fused, inside the
   scope and the view, fill what ``k`` leaves after the facts; at an instant, a note changed
   since is found by its words of then and read in its version of then (``then.py``).
4. Grounding: grounded (every content word of the question is in the answer),
   grounded_by_meaning (found by meaning, not by its words), related (some words; the
   ``uncovered`` ones listed), uncited (none of them), nothing_stored, could_not_judge.
"""

from __future__ import annotations

from typing import Any

from ..graph import store
from ..graph.about import compact_item, graph_facts, passage_citation, visible_seeds
from ..graph.match import seed
from ..index.words import terms
from ..store.base import Tx
from . import pack
from .results import AnswerState
from .search import loaded, meaning_alone_leads
from .then import AtInstant, passage_span

DEFAULT_K = 8
MAX_K = 100


def answer(
    tx: Tx,
    *,
    tenant: str,
    scope: str,
    query: str,
    hops: int,
    k: int,
    view: store.View,
    compact: bool,
    found: AtInstant,
    failed: list[str],
) -> tuple[dict[str, Any], list[int]]:
    """The answer, and the items it returns (for the retrieval audit)."""
    candidates = found.candidates
    matches = (
        visible_seeds(tx, tenant, seed(tx, tenant, scope, query), view) if query.strip() else []
    )
    seeds = {m["entity_id"]: m["name"] for m in matches}
    facts = _ranked(graph_facts(tx, tenant, seeds, hops, view, k), query)[:k] if seeds else []
    passages = _passages(tx, tenant, found, k - len(facts), query, view.as_of is None)
    state: AnswerState = (
        "answered" if facts or passages else ("could_not_judge" if failed else "nothing_stored")
    )
    said = " ".join([*(_sentence(f) for f in facts), *(p["text"] for p in passages)])
    reply: dict[str, Any] = {
        "query": query,
        "scope": scope,
        "state": state,
        "facts": [compact_item(f) for f in facts] if compact else facts,
        "seeds": [{"name": m["name"], "how": m["how"], "matched": m["matched"]} for m in matches],
        "passages": [compact_item(p) for p in passages] if compact else passages,
        "grounding": pack.grounding(query, said, state, meaning_alone_leads(candidates)),
        "k": k,
        "hops": hops,
        "as_of": view.as_of,
        "valid_at": view.valid_at,
        "compact": compact,
    }
    if failed:
        reply["failed_stages"] = failed
    if found.unread:
        reply["earlier_texts_unread"] = found.unread
    if found.withheld:
        reply["earlier_texts_withheld"] = found.withheld
    return reply, [p["doc_id"] for p in passages]


def _sentence(fact: dict[str, Any]) -> str:
    return f"{fact['subject']} {fact['relation'].replace('_', ' ')} {fact['object']}"


def _ranked(facts: list[dict[str, Any]], query: str) -> list[dict[str, Any]]:
    """Current before ended, near before far, more of the question's words before fewer, stored
    before derived (a stable sort keeps the walk's order among equals)."""
    words = [word[:5] for word in terms(query)]

    def shared(fact: dict[str, Any]) -> int:
        said = store.fold(_sentence(fact))
        return sum(1 for word in words if word in said)

    return sorted(
        facts,
        key=lambda f: (f.get("state") == "ended", f["hop"], -shared(f), f["derived"]),
    )


def _passages(
    tx: Tx, tenant: str, at: AtInstant, limit: int, query: str, live_only: bool
) -> list[dict[str, Any]]:
    """The best ``limit`` passages of the fused candidates, each with its citation; a note
    changed since the instant asked for is read, and cited, in its version of then (a note
    deleted since is there for ``as_of``: ``live_only`` is off)."""
    chosen = at.candidates[: max(0, limit)]
    if not chosen:
        return []
    found = []
    for candidate, doc, stored in loaded(
        tx, tenant, chosen, columns="id, title, category, content, created_at", live_only=live_only
    ):
        chunk: Any = stored
        then = at.texts.get(candidate.item_id)
        if then is not None:  # its chunks are cut from its text of now
            doc = {**doc, "content": then.text, "title": then.title}
            start, stop = passage_span(then.text, query)
            chunk = {"id": None, "start": start, "stop": stop, "body": then.text[start:stop]}
        elif chunk is None:  # not cut into passages yet: the whole text is the passage
            content = doc["content"]
            chunk = {"id": None, "start": 0, "stop": len(content), "body": content}
        stages = sorted(candidate.stages)
        citation = passage_citation(chunk, doc)
        if then is not None:
            citation["source"]["version"] = then.version
        citation["found_by"] = {"stage": "search", "stages": stages}
        found.append(
            {
                "kind": "passage",
                "id": chunk["id"],
                "doc_id": candidate.item_id,
                "text": chunk["body"],
                "score": round(candidate.score, 6),
                "found_by": stages,
                "citation": citation,
            }
        )
    return found
