"""The upkeep of one open store: which deferred indexes the worker keeps up to date."""

from __future__ import annotations

from collections.abc import Callable

from . import entries
from .retrieval import index, vectors
from .retrieval.audit import AuditLog
from .retrieval.embed import configured_embedder
from .store.base import Store, Tx
from .upkeep import Upkeep


def _in_write(store: Store, step: Callable[[Tx], int]) -> Callable[[], int]:
    def run() -> int:
        with store.write() as tx:
            return step(tx)

    return run


def upkeep_for(store: Store, audit: AuditLog) -> Upkeep:
    """Trigram and chunk indexes, vectors (when a model is installed), orphaned vectors and
    the audit buffer. On close, everything but the model is finished in place."""

    def embed() -> int:
        embedder = configured_embedder()
        return 0 if embedder is None else vectors.embed_backlog(store, embedder)

    def backlog() -> int:
        with store.read() as tx:
            return entries.unindexed(tx) + index.unchunked(tx)

    cheap = [
        _in_write(store, entries.index_backlog),
        _in_write(store, index.chunk_backlog),
        _in_write(store, index.rechunk_backlog),
        _in_write(store, vectors.collect_orphans),
        lambda: audit.flush(store),
    ]
    return Upkeep(cheap, backlog, on_close=cheap, idle_tasks=[embed])
