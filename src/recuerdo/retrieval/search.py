"""Hybrid search: the lexical and meaning stages, fused, with previews and explicit states.

Each stage proposes candidates *inside* the filters; weighted reciprocal rank fusion merges
them (each stage's weight and k below; the meaning stage's weight is its model's). The lexical
stage is BM25 over chunks (title above body above context words), with the turns of
conversations rescored by speaker, neighbouring turns, the question a turn answers and the
best-matching turns of their sitting (``turns.py``); items written in the last moments, not
chunked yet, are matched directly. A query that names a calendar date adds the dated stage,
run with the lexical one: the items of that date ranked by the query's other words
(``dates.py``). The meaning stage is cosine similarity over chunk vectors (see ``vectors.py``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ..core.exact import shown
from ..core.items import MAIL, status_of
from ..core.text import clip
from ..errors import InvalidInput
from ..index.chunk import line_range
from ..index.chunks import chunk_mark, stale
from ..index.meaning import Meaning
from ..index.vectors import meaning_candidates, ordered_candidates
from ..index.words import QueryWords, as_read, query_words, terms, written_words
from ..store import chunk_text
from ..store.base import Row, Tx, rows_by_id
from ..store.unspaced import is_unspaced
from . import turns
from .dates import named_window
from .exact import exact_first, holds_word
from .filters import Filters
from .head import pool_entry, read_best
from .results import Hit

if TYPE_CHECKING:
    from ..index.embed import Embedder

RRF_K = 60
# Weighted reciprocal rank fusion: each stage adds weight / (k + rank). Meaning (and the graph)
# use the usual k = 60. The lexical stage's k is sharpened to 5: on conversational memory its
# first few ranks carry far more evidence than k = 60 assumes, so meaning may reorder the tail
# and add what words miss, but does not unseat a strong word match (LoCoMo, all questions:
# lexical R@5/R@10 65.1/73.2, equal-k fusion 51.8/63.3, this 65.3/73.8;
# docs/decisions/0004-fusion.md).
STAGE_K = {"lexical": 5, "dated": 5, "meaning": RRF_K, "graph": RRF_K}
WEIGHTS = {"lexical": 1.0, "dated": 0.5, "graph": 0.8}
# A query naming a calendar date also ranks, by its words, the items of that date alone
# (``dates.py``): half the lexical stage's weight, so they rise without pushing out the best
# word matches of other dates (LoCoMo: docs/decisions/0035-dated-queries.md).
# The meaning stage's weight is its model's (``Embedder.fusion_weight``), measured for each
# shipped model against the lexical stage's 1.0 (docs/decisions/0191).
WORD_STAGES = ("lexical", "dated")
CANDIDATES = 50  # per stage, before fusion
TAIL_LIMIT = 5000
EXACT_WINDOW = 500  # best-ranked chunks looked at for the query's words as written
# Ranked chunks checked against the filters per query. The first batch is the exact check's
# window, so one read of those chunks gives both their text and whether they pass.
FILTER_BATCH = EXACT_WINDOW
FIRST_WINDOW = 2000  # ranked chunks asked for at first (see lexical_stage)
DEFAULT_PREVIEW = 300


@dataclass
class Candidate:
    item_id: int
    chunk_id: int | None
    score: float = 0.0
    stages: dict[str, int] = field(default_factory=dict)  # stage -> rank (1 = best)

    @property
    def by_words(self) -> bool:
        """Whether a word stage found it (not meaning or the graph alone)."""
        return any(stage in self.stages for stage in WORD_STAGES)


def meaning_alone_leads(candidates: list[Candidate]) -> bool:
    """Whether one of the first three was found by meaning and by no word stage (the answer
    then says it rests on meaning, not on the words asked)."""
    return any("meaning" in c.stages and not c.by_words for c in candidates[:3])


def lexical_stage(
    tx: Tx,
    filters: Filters,
    words: list[str],
    mode: str,
    k: int,
    written: list[str] | None = None,
    *,
    widen: bool = True,
) -> list[tuple[int | None, int]]:
    """(chunk id, item id) best first, one per item: BM25 over chunks, rescored for the turns
    of conversations (``turns.py``: the speaker a query names, the turns around a turn, the
    question a turn answers, the turns said the same day), then the items too new to be
    chunked, matched word by word."""
    if not words:
        return []
    pool = lexical_pool(tx, filters, words, mode, k, written, widen=widen)
    named: set[str] = set()
    if mode == "any":
        named, said = turns.speaker_words(pool, written or words)
        rest = [word for word in words if word not in said]
        if said and rest:
            again = lexical_pool(tx, filters, rest, mode, k, written, widen=widen)
            pool = turns.merge(pool, again)
    pool = turns.rescore(tx, filters.tenant, pool, named, words)
    found: list[tuple[int | None, int]] = [(r.chunk_id, r.item_id) for r in pool]
    return _merge_tail(found, _tail(tx, filters, words, mode), k)


def lexical_pool(
    tx: Tx,
    filters: Filters,
    words: list[str],
    mode: str,
    k: int,
    written: list[str] | None,
    *,
    widen: bool = True,
) -> list[turns.Ranked]:
    """The best-ranked chunks passing the filters, one per item, at least ``k`` of them when
    there are (up to ``turns.POOL`` when the ranked rows already fetched hold them; only the
    first ``k`` where no turn is rescored and part of the best chunks settles them: head.py).

    The full-text index ranks first, alone (a join per match would cost far more than the
    ranking); its best chunks are then checked against the filters, and the ranked window
    widens until ``k`` items pass or every match was seen, so filtering happens before the
    cut, never after it."""
    where, params = filters.sql("i")
    found: list[turns.Ranked] = []
    seen: set[int] = set()
    want = max(k, turns.POOL)
    # Ranking every match is the cost, whatever the window: FTS5 scores them all, and a larger
    # LIMIT only costs the rows fetched (about 1 ms for 2,000). The first window is therefore
    # wide enough for a filter that keeps a few percent (a member's own messages: 3% of
    # 100,000 in benchmarks/messaging.py), and rows are checked a batch at a time, so a filter
    # that keeps most rows checks no more than before. When too few pass, the next window is
    # sized from the share that passed (at least fourfold), since every ranking scores every
    # match again:
    # a selective filter (one scope of many, a member's own messages) then pays two rankings,
    # not one per growth step. Rows are checked in rank order, a batch at a time, and the
    # checking stops once ``want`` passed (the chunk id breaks ties so that pages never
    # overlap); only fewer than ``k`` makes the window grow, and only where ``widen`` (a stage
    # that only adds to another takes the first window's matches).
    #
    # Without a filter that narrows the search, and with no other tenant's chunks in the
    # ranking, most of the best EXACT_WINDOW chunks pass, and those are all the first window is
    # read for: its other rows are asked for (ranked again) only when fewer than ``want`` of
    # them passed. Fetching the 1,500 rows that are seldom looked at cost 0.7 of a 9 ms search
    # over 10,000 notes.
    window, offset, checked = max(k * 2, FIRST_WINDOW), 0, 0
    in_two = (
        not filters.narrows and want <= EXACT_WINDOW and not tx.text.ranks_others(filters.tenant)
    )
    while len(found) < k:
        part = EXACT_WINDOW if in_two and offset == 0 else window
        ranked = tx.text.rank(filters.tenant, words, mode, part, offset)
        if not ranked:
            break
        exact: set[int] = set()
        head: dict[int, Row] = {}
        if offset == 0:
            best = ranked[:EXACT_WINDOW]
            settled, head, exact = read_best(tx, filters, best, words, written or words, mode, k)
            if settled is not None:
                return settled  # its first k items, all that is kept (head.py)
            ranked = exact_first(ranked, exact)
        scores = dict(ranked)
        for first in range(0, window, FILTER_BATCH):
            if first == len(ranked) == part < window:  # the rest of the first window
                rest = tx.text.rank(filters.tenant, words, mode, window - part, part)
                ranked += rest
                scores.update(rest)
            if first >= len(ranked):
                break
            ids = [chunk_id for chunk_id, _ in ranked[first : first + FILTER_BATCH]]
            if offset == 0 and first == 0:
                passing = head  # the same chunks: the exact ones only moved ahead within them
            else:
                marks = ",".join("?" * len(ids))
                passing = {
                    row["id"]: row
                    for row in tx.all(
                        "SELECT c.id, c.item_id, i.item_type, i.category, i.session FROM chunks c"
                        " JOIN items i ON i.tenant = c.tenant AND i.id = c.item_id"
                        f" WHERE c.id IN ({marks}) AND {where} AND NOT {stale('c')}",
                        [*ids, *params],
                    )
                }
            checked += len(ids)
            for chunk_id in ids:
                row = passing.get(chunk_id)
                if row is not None and row["item_id"] not in seen:
                    seen.add(row["item_id"])
                    found.append(pool_entry(row, chunk_id, scores[chunk_id], chunk_id in exact))
            if len(found) >= want:
                break
        if len(ranked) < window or not widen:
            break
        offset += window
        share = max(len(found), 1) / checked
        window = max(window * 4, int(2 * (k - len(found)) / share))
    return found


def _tail(tx: Tx, filters: Filters, words: list[str], mode: str) -> list[int]:
    """Items not chunked yet (above the watermark, or queued to be re-cut) that contain the
    words (prefix match per word)."""
    where, params = filters.sql("i")
    rows = tx.all(
        "SELECT i.id, i.title, i.content FROM items i WHERE i.id IN"
        " (SELECT n.id FROM items n WHERE n.tenant = ? AND n.id > ?"
        " UNION ALL SELECT q.item_id FROM rechunk_queue q WHERE q.tenant = ?)"
        f" AND {where} ORDER BY i.id DESC LIMIT ?",
        [filters.tenant, chunk_mark(tx), filters.tenant, *params, TAIL_LIMIT],
    )
    # A word of the text starting with each query word's first five characters, found by
    # ``str.find`` (16 MiB of text took 0.65 s to cut into a set of words, 0.01-0.02 s to
    # search). A word is letters and digits only, so five characters that are not (a
    # lower-cased letter may be two characters, one of them a mark) start none.
    # A word of an unspaced script, or a symbol, is looked for whole (holds_word finds it
    # inside a run).
    prefixes = [
        word if is_unspaced(word) else word[:5]
        for word in words
        if word[:5].isalnum() or is_unspaced(word)
    ]
    scored = []
    for row in rows:
        text = as_read(f"{row['title'] or ''} {row['content']}")
        hits = sum(holds_word(text, prefix, whole=False) for prefix in prefixes)
        if hits and (mode != "all" or hits == len(words)):
            scored.append((hits, row["id"]))
    scored.sort(key=lambda pair: (-pair[0], -pair[1]))
    return [item_id for _, item_id in scored]


def _merge_tail(
    found: list[tuple[int | None, int]], tail: list[int], k: int
) -> list[tuple[int | None, int]]:
    if not tail:
        return found[:k]
    merged: list[tuple[int | None, int]] = []
    for index in range(max(len(found), len(tail))):  # alternate: neither list starves
        if index < len(tail):
            merged.append((None, tail[index]))
        if index < len(found):
            merged.append(found[index])
    return merged[:k]


def meaning_stage(
    tx: Tx, meaning: Meaning, embedder: Embedder, filters: Filters, query: str, k: int
) -> list[tuple[int | None, int]]:
    import numpy as np  # loaded with any embedder

    query_vector = meaning.query_vector(embedder, query)
    if not np.isfinite(query_vector).all() or not query_vector.any():
        # No direction (a query of words the model has no rows for): nothing is near it. Its
        # cosine is 0 with every vector in process (every item passed a threshold of 0, the
        # HTTP embedder's default) and NaN in pgvector (0182), and either cost a full scan.
        return []
    where, params = filters.sql("i")
    joined = (
        "FROM embeddings e JOIN chunks c ON c.tenant = ? AND c.hash = e.hash JOIN items i"
        f" ON i.tenant = c.tenant AND i.id = c.item_id WHERE {where} AND NOT {stale('c')}"
    )
    if tx.vectors is not None:  # the database orders the vectors (pgvector)
        return [
            (chunk, item)
            for chunk, item, _ in ordered_candidates(
                tx,
                embedder.name,
                embedder.dim,
                query_vector,
                joined,
                [filters.tenant, *params],
                k,
                embedder.min_similarity,
            )
        ]

    def allowed(embedding_ids: list[int]) -> list[tuple[int, int, int]]:
        marks = ",".join("?" * len(embedding_ids))
        rows = tx.all(
            f"SELECT e.id AS eid, c.id AS cid, c.item_id {joined} AND e.id IN ({marks})",
            [filters.tenant, *params, *embedding_ids],
        )
        return [(r["eid"], r["cid"], r["item_id"]) for r in rows]

    return [
        (chunk, item)
        for chunk, item, _ in meaning_candidates(
            tx, meaning.vectors(embedder), query_vector, allowed, k, embedder.min_similarity
        )
    ]


def fuse(
    stages: dict[str, list[tuple[int | None, int]]], weights: dict[str, float]
) -> list[Candidate]:
    """Weighted reciprocal rank fusion, one candidate per item (its best-ranked chunk), each
    stage weighed by ``weights`` (a stage it does not weigh is a caller's mistake)."""
    by_item: dict[int, Candidate] = {}
    for stage, ranked in stages.items():
        weight, k = weights[stage], STAGE_K.get(stage, RRF_K)
        for rank, (chunk_id, item_id) in enumerate(ranked, start=1):
            candidate = by_item.setdefault(item_id, Candidate(item_id, chunk_id))
            if candidate.chunk_id is None:
                candidate.chunk_id = chunk_id
            candidate.stages[stage] = rank
            candidate.score += weight / (k + rank)
    return sorted(by_item.values(), key=lambda c: (-c.score, -c.item_id))


def fragment(
    item: Row, chunk: Row | None, candidate: Candidate, preview_chars: int, at: str
) -> Hit:
    text = item["content"]
    start, stop = (chunk["start"], chunk["stop"]) if chunk is not None else (0, len(text))
    piece = text[start:stop]
    preview = clip(piece, preview_chars)
    hit: Hit = {
        "id": item["id"],
        "item_type": item["item_type"],
        "title": item["title"],
        "kind": item["category"],
        "scope": item["scope"],
        "source": item["source"],
        "status": status_of(item, at),
        "score": round(candidate.score, 6),
        "found_by": sorted(candidate.stages),
        "ranks": dict(candidate.stages),
        "preview": preview,
        "truncated": len(preview) < len(text),
        "item_chars": len(text),
        "item_bytes": len(text.encode("utf-8")),
        "span": {"start": start, "end": stop, "chunk_id": candidate.chunk_id},
        "updated_at": item["updated_at"],
    }
    if item["item_type"] == "message":
        meta = json.loads(item["meta"])
        hit["conversation"] = item["session"]
        hit["speaker"] = meta.get("speaker")
        hit["date"] = item["occurred_at"]
        hit["ref"] = meta.get("ref")
    elif item["item_type"] == MAIL:  # where it was said, as for a turn of a transcript
        hit["conversation"] = item["session"]
        hit["speaker"] = item["category"]
        hit["date"] = item["created_at"]
    elif item["item_type"] == "entry":
        hit["tags"] = json.loads(item["tags"])
    elif item["item_type"] == "code":
        meta = json.loads(item["meta"])
        first, last = line_range(text, start, stop)
        hit["repo"] = meta.get("repo")
        hit["path"] = meta.get("path")
        hit["lines"] = {"start": first, "end": last}
        hit["commit"] = meta.get("commit")
        hit["ordinal"] = meta.get("ordinal")
    return hit


def loaded(
    tx: Tx,
    tenant: str,
    candidates: list[Candidate],
    *,
    columns: str = "*",
    live_only: bool = False,
    chunk_text_too: bool = True,
) -> list[tuple[Candidate, Row, Row | None]]:
    """Each candidate whose item is still there, with the item's ``columns`` and its chunk
    (None for an item not cut into passages yet), in the candidates' order; ``live_only``
    leaves deleted items out. Without ``chunk_text_too`` a chunk is only its place in the
    item (``start``, ``stop``): its text is not read (a hit slices the item's own)."""
    items = rows_by_id(
        tx,
        f"SELECT {columns} FROM items",
        [c.item_id for c in candidates],
        where="tenant = ?" + (" AND status <> 'deleted'" if live_only else ""),
        params=(tenant,),
    )
    chunk_ids = [c.chunk_id for c in candidates if c.chunk_id is not None]
    chunks: Mapping[int, Row] = (
        chunk_text.by_id(tx, chunk_ids, tenant)
        if chunk_text_too
        else rows_by_id(
            tx,
            "SELECT id, start, stop FROM chunks",
            chunk_ids,
            where="tenant = ?",
            params=(tenant,),
        )
    )
    found: list[tuple[Candidate, Row, Row | None]] = []
    for candidate in candidates:
        item = items.get(candidate.item_id)
        if item is not None:
            chunk = chunks.get(candidate.chunk_id) if candidate.chunk_id is not None else None
            found.append((candidate, item, chunk))
    return found


def assemble(
    tx: Tx, tenant: str, candidates: list[Candidate], preview_chars: int, at: str
) -> list[Hit]:
    if not candidates:
        return []
    return [
        fragment(item, chunk, candidate, preview_chars, at)
        for candidate, item, chunk in loaded(tx, tenant, candidates, chunk_text_too=False)
    ]


STAGES = ("lexical", "meaning", "graph")


def check_stages(stages: object) -> tuple[str, ...]:
    if stages is None:
        return STAGES
    chosen = [stages] if isinstance(stages, str) else stages
    if not isinstance(chosen, list | tuple) or not chosen or not set(chosen) <= set(STAGES):
        raise InvalidInput(f"stages are among {', '.join(STAGES)}, got {shown(stages)}")
    return tuple(chosen)


GraphStage = Callable[[Tx, str, int], list[tuple[int | None, int]]]
"""Graph candidates for a query: (chunk id, item id) best first. The facade passes it in, so
retrieval does not depend on the graph family (the graph depends on the index below both)."""


def run_stages(
    tx: Tx,
    meaning: Meaning,
    filters: Filters,
    query: str,
    mode: str,
    k: int,
    *,
    graph: GraphStage | None = None,
    stages: tuple[str, ...] = STAGES,
    words: QueryWords | None = None,
) -> tuple[list[Candidate], str, list[str]]:
    """Fused candidates, the meaning state, and the stages that failed. ``words``: the
    query's, when the caller has read them already."""
    found: dict[str, list[tuple[int | None, int]]] = {}
    if "lexical" in stages:
        asked = query_words(query) if words is None else words
        found["lexical"] = lexical_stage(
            tx, filters, asked.terms, mode, max(k, CANDIDATES), asked.written
        )
        window = named_window(query)
        # A caller who set the time bounds chose the dates already.
        if window is not None and filters.since is None and filters.until is None:
            # Those items are of that date: the words naming it are not asked of their text.
            rest = window.rest(query)
            on_date = replace(filters, since=window.since, until=window.until)
            # It only adds to the lexical stage: the best-ranked matches are enough (a date
            # holds few of a memory's items, and widening would rank every match again).
            found["dated"] = lexical_stage(
                tx, on_date, terms(rest), mode, max(k, CANDIDATES), written_words(rest), widen=False
            )
    failed: list[str] = []
    embedder = meaning.embedder
    state = meaning.state(tx)
    if embedder is not None and query.strip() and "meaning" in stages:
        try:
            found["meaning"] = meaning_stage(
                tx, meaning, embedder, filters, query, max(k, CANDIDATES)
            )
        except Exception:  # a broken model must not take words-only search down with it
            failed.append("meaning")
            state = "failed"
    if graph is not None and "graph" in stages and query.strip():
        ranked = graph(tx, query, max(k, CANDIDATES))
        if ranked:
            found["graph"] = _filter_items(tx, filters, ranked)
    # The meaning stage weighs what its model's ranking is worth (``Embedder.fusion_weight``).
    meaning_weight = {} if embedder is None else {"meaning": embedder.fusion_weight}
    fused = fuse(found, WEIGHTS | meaning_weight)
    if mode == "all":
        # Every word must be there: meaning (and the graph) reorder what words found, they do
        # not add what lacks a word.
        fused = [candidate for candidate in fused if candidate.by_words]
    return fused, state, failed


def _filter_items(
    tx: Tx, filters: Filters, ranked: list[tuple[int | None, int]]
) -> list[tuple[int | None, int]]:
    """Keep the graph's candidates that pass the filters (the graph knows no filters)."""
    where, params = filters.sql("i")
    ids = [item for _, item in ranked]
    marks = ",".join("?" * len(ids))
    allowed = {
        r["id"]
        for r in tx.all(
            f"SELECT i.id FROM items i WHERE i.id IN ({marks}) AND {where}", [*ids, *params]
        )
    }
    return [pair for pair in ranked if pair[1] in allowed]
