"""Retrieval verbs: search (ranked previews), context (a packed, cited pack), conversations,
links and the retrieval audit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import links
from .. import messages as message_ops
from ..clock import now_iso, parse_time
from ..errors import InvalidInput
from ..retrieval import audit as audit_log
from ..retrieval import index, pack, vectors
from ..retrieval import search as search_ops
from ..retrieval.embed import Embedder, configured_embedder
from ..retrieval.filters import Filters
from ..retrieval.query import check_mode
from ..text import checked_label
from .base import MemoryBase, guarded

SYNC_EMBED_LIMIT = 256
MAX_BUDGET_TOKENS = 200_000


def _bounded(value: object, field: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInput(f"{field} must be an integer from {low} to {high}, got {value!r}")
    return value


def _query_text(query: object) -> str:
    if not isinstance(query, str):
        raise InvalidInput(f"query must be text, got {type(query).__name__}")
    return query[:2000]


class RetrievalVerbs(MemoryBase):
    def _embedder(self) -> Embedder | None:
        """The model, after embedding a small backlog in place so the answer is complete."""
        embedder = configured_embedder()
        if embedder is None:
            return None
        with self._store.read() as tx:
            waiting = vectors.pending(tx, embedder.name)
        if 0 < waiting <= SYNC_EMBED_LIMIT and not self._upkeep.running:
            # No worker here (a short CLI process): finish the few vectors missing now. With
            # a worker, the answer says queued rather than making every reader wait on it.
            self._upkeep.drain(limit=SYNC_EMBED_LIMIT * 2)
        return embedder

    def _record(
        self, verb: str, query: str | None, filters: dict[str, Any], returned: list[int]
    ) -> None:
        self._audit.record(
            tenant=self.tenant,
            principal=self.principal,
            verb=verb,
            query=query,
            filters=filters,
            returned=returned,
        )
        self._upkeep.poke(0)

    @guarded
    def search(
        self,
        query: str,
        *,
        scope: str | None = None,
        kind: str | list[str] | None = None,
        types: str | list[str] | None = None,
        tags: Sequence[str] | None = None,
        tags_mode: str | None = None,
        mode: str = "any",
        limit: int = 10,
        source: str | None = None,
        status: str | None = None,
        since: str | None = None,
        until: str | None = None,
        preview_chars: int = search_ops.DEFAULT_PREVIEW,
        stages: Sequence[str] | None = None,
        repo: str | None = None,
        path_prefix: str | None = None,
    ) -> dict[str, Any]:
        """Ranked fragments for a query: words and meaning fused, each a preview (marked
        truncated when the item holds more) with its span; get(id) returns the whole item."""
        text = _query_text(query)
        words_mode = check_mode(mode)
        wanted = search_ops.check_stages(stages)
        count = _bounded(limit, "limit", 1, 100)
        preview = _bounded(preview_chars, "preview_chars", 20, 4000)
        filters = Filters.build(
            self.tenant,
            scope=scope,
            kind=kind,
            types=types,
            tags=tags,
            tags_mode=tags_mode,
            source=source,
            status=status,
            since=since,
            until=until,
            repo=repo,
            path_prefix=path_prefix,
        )
        use_meaning = "meaning" in wanted
        embedder = self._embedder() if text.strip() and use_meaning else configured_embedder()
        with self._store.read() as tx:
            if not text.strip():
                hits: list[dict[str, Any]] = []
                failed: list[str] = []
                meaning = search_ops.meaning_state(tx, embedder)
            else:
                candidates, meaning, failed = search_ops.run_stages(
                    tx,
                    self._store.location,
                    embedder,
                    filters,
                    text,
                    words_mode,
                    count,
                    stages=wanted,
                )
                hits = search_ops.assemble(tx, candidates[:count], preview, now_iso())
        state = "answered" if hits else ("could_not_judge" if failed else "nothing_stored")
        self._record("search", text, filters.describe(), [hit["id"] for hit in hits])
        reply: dict[str, Any] = {
            "query": text,
            "state": state,
            "meaning": meaning,
            "results": hits,
            "count": len(hits),
        }
        if failed:
            reply["failed_stages"] = failed
        return reply

    @guarded
    def context(
        self,
        query: str,
        *,
        scope: str | None = None,
        budget_tokens: int = 4000,
        depth: int = 1,
        max_per_source: int | None = None,
        kind: str | list[str] | None = None,
        types: str | list[str] | None = None,
    ) -> dict[str, Any]:
        """A context pack for a topic: the best matches and their linked neighbours, ranked,
        cited and cut to the token budget (truncated says when something did not fit)."""
        text = _query_text(query)
        budget = _bounded(budget_tokens, "budget_tokens", 1, MAX_BUDGET_TOKENS)
        hops = _bounded(depth, "depth", 0, 3)
        cap = (
            None
            if max_per_source is None
            else _bounded(max_per_source, "max_per_source", 1, MAX_BUDGET_TOKENS)
        )
        filters = Filters.build(self.tenant, scope=scope, kind=kind, types=types, skip_muted=True)
        embedder = self._embedder() if text.strip() else None
        with self._store.read() as tx:
            candidates: list[search_ops.Candidate] = []
            failed: list[str] = []
            meaning = search_ops.meaning_state(tx, embedder)
            if text.strip():
                candidates, meaning, failed = search_ops.run_stages(
                    tx, self._store.location, embedder, filters, text, "any", 20
                )
            blocks = self._blocks(tx, candidates, filters, hops)
        body, sources, truncated = pack.pack(blocks, budget, cap)
        state = "answered" if sources else ("could_not_judge" if failed else "nothing_stored")
        by_meaning = any(
            c.stages.get("meaning") and not c.stages.get("lexical") for c in candidates[:3]
        )
        grounding = pack.grounding(text, body, state, by_meaning)
        self._record("context", text, filters.describe(), [s["id"] for s in sources])
        return {
            "query": text,
            "state": state,
            "meaning": meaning,
            "context": body,
            "sources": sources,
            "truncated": truncated,
            "grounding": grounding,
            "budget_tokens": budget,
            "used_tokens": pack.tokens(body),
        }

    def _blocks(
        self, tx: Any, candidates: list[search_ops.Candidate], filters: Filters, hops: int
    ) -> list[dict[str, Any]]:
        seeds = {c.item_id: c for c in candidates}
        reached = pack.walk(tx, list(seeds), hops)
        where, params = filters.sql("i")
        marks = ",".join("?" * len(reached)) or "NULL"
        rows = {
            r["id"]: r
            for r in tx.all(
                f"SELECT * FROM items i WHERE i.id IN ({marks}) AND i.tenant = ?"
                " AND i.status <> 'deleted' AND i.muted = 0",
                [*reached, self.tenant],
            )
        }
        seed_marks = ",".join("?" * len(seeds)) or "NULL"
        allowed = {
            r["id"]
            for r in tx.all(
                f"SELECT i.id FROM items i WHERE i.id IN ({seed_marks}) AND {where}",
                [*seeds, *params],
            )
        }
        chunk_ids = [c.chunk_id for c in seeds.values() if c.chunk_id is not None]
        spans = {
            r["item_id"]: r
            for r in tx.all(
                f"SELECT item_id, start, stop FROM chunks WHERE id IN "
                f"({','.join('?' * len(chunk_ids)) or 'NULL'})",
                chunk_ids,
            )
        }
        ranked = []
        for item_id, (hop, touches) in reached.items():
            row = rows.get(item_id)
            if row is None or (hop == 0 and item_id not in allowed):
                continue
            seed = seeds.get(item_id)
            base = seed.score if seed else 0.0
            score = base - pack.HOP_PENALTY * hop + pack.CLUSTER_BONUS * max(0, touches - 1)
            ranked.append((score, item_id, hop, row))
        ranked.sort(key=lambda entry: (-entry[0], entry[1]))
        blocks = []
        for score, item_id, hop, row in ranked:
            span = spans.get(item_id)
            blocks.append(
                {
                    "header": f"## {pack.title_of(row)} ({pack.scope_label(row['scope'])})",
                    "text": row["content"],
                    "source": {
                        "id": item_id,
                        "title": pack.title_of(row),
                        "item_type": row["item_type"],
                        "scope": row["scope"],
                        "writer": row["source"],
                        "updated_at": row["updated_at"],
                        "span": None
                        if span is None
                        else {"start": span["start"], "end": span["stop"]},
                        "hop": hop,
                        "score": round(score, 6),
                    },
                }
            )
        return blocks

    @guarded
    def add_messages(
        self, conversation: str, messages: Sequence[dict[str, Any]], *, scope: str | None = None
    ) -> dict[str, Any]:
        """Store a conversation's turns in order ({speaker, text, date, ref} each), all in one
        transaction; search hits on them carry conversation, speaker, date and ref."""
        with self._store.write() as tx:
            reply = message_ops.add(
                tx,
                tenant=self.tenant,
                principal=self.principal,
                conversation=conversation,
                messages=messages,
                scope=scope,
            )
        self._upkeep.poke(reply["count"])
        return reply

    @guarded
    def link(self, from_id: int, to_id: int, type: str = "related") -> dict[str, Any]:
        """Link two items; context follows links (both ways) to bring related memory along."""
        with self._store.write() as tx:
            return links.link(tx, self.tenant, from_id, to_id, type)

    @guarded
    def index_status(self) -> dict[str, Any]:
        """How far the deferred indexes are: items waiting to be chunked, chunks waiting for
        a vector of the current model (progress of a re-embedding after a model change)."""
        embedder = configured_embedder()
        with self._store.read() as tx:
            chunks = int(
                tx.scalar(
                    "SELECT count(*) FROM chunks c JOIN items i ON"
                    " i.id = c.item_id WHERE i.tenant = ?",
                    (self.tenant,),
                )
            )
            unchunked = index.unchunked(tx)
            reply: dict[str, Any] = {
                "chunks": chunks,
                "items_waiting": unchunked,
                "model": None if embedder is None else embedder.name,
                "meaning": search_ops.meaning_state(tx, embedder),
            }
            if embedder is not None:
                waiting = int(
                    tx.scalar(
                        "SELECT count(*) FROM chunks c JOIN items i ON i.id = c.item_id"
                        " WHERE i.tenant = ? AND c.id > coalesce((SELECT upto FROM"
                        " index_marks WHERE name = ?), 0)",
                        (self.tenant, vectors.mark_name(embedder.name)),
                    )
                )
                reply["chunks_waiting_for_vectors"] = waiting
                reply["embedded_percent"] = (
                    100 if chunks == 0 else round(100 * (chunks - waiting) / chunks, 1)
                )
        return reply

    @guarded
    def audit(
        self,
        scope: str | None = None,
        since: str | None = None,
        principal: str | None = None,
        limit: int = 100,
    ) -> list[dict[str, Any]]:
        """The retrieval audit, newest first: who searched or recalled what, with which
        filters, what came back, and whether anything was found."""
        count = _bounded(limit, "limit", 1, 1000)
        self._audit.flush(self._store)
        with self._store.read() as tx:
            return audit_log.read(
                tx,
                self.tenant,
                scope=None if scope is None else checked_label(scope, "scope"),
                since=None if since is None else parse_time(since, "since"),
                principal=None if principal is None else checked_label(principal, "principal"),
                limit=count,
            )
