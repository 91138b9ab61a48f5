"""One memory's meaning stage: its embedder, that model's vectors (held in memory, or through
the HNSW index saved beside the store), and the vectors of recent queries.

Everything here belongs to one open memory (and the views of it), never to the process: two
memories of one process, in memory or on disk, never see each other's vectors. Only a model's
weights are shared between memories that use the same model (``embed.load_embedder``): they are
read-only and cost ~100 MiB to load.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from math import inf
from typing import TYPE_CHECKING

from ..core.exact import shown
from ..errors import InvalidInput
from ..store.base import Store, Tx
from .embed import CHOICES, Embedder, load_embedder, unarmed_reason
from .vector_set import VectorSet
from .vectors import EMBED_BATCH, Erased, erasing, pending, settle_erasures

if TYPE_CHECKING:
    import numpy as np

QUERY_CACHE_SIZE = 2048
# The smallest batch that measures the model's pace: a one-chunk batch's 2.5-5 ms (its commit)
# said the static embedder settles 60-120 chunks in SETTLE_SECONDS (the review of 0181).
PACE_FROM = EMBED_BATCH // 2

EmbedderChoice = Embedder | str | None
"""An embedder object, the name of a configured one (``none``, ``minilm``, ``static``, ``e5``,
``http``, ``auto``), or None for the process's configuration (``RECUERDO_EMBEDDER``)."""

# What a search reads of an embedder object. One it lacks was found only by a search: every
# search failed on ``fusion_weight`` (words alone too), and a model without ``min_similarity``
# was taken for a broken one (``meaning: failed``, no error said why).
EMBEDDER_PARTS = ("name", "dim", "min_similarity", "fusion_weight", "embed")


def _check_object(embedder: Embedder) -> None:
    """Refuse an embedder object lacking a part a search reads, or whose weight in the fusion
    is not a number a rank can be multiplied by (NaN would put every candidate's score out of
    order; a negative weight would rank the model's best matches last)."""
    lacking = [part for part in EMBEDDER_PARTS if not hasattr(embedder, part)]
    if lacking:
        raise InvalidInput(
            f"an embedder object has {', '.join(EMBEDDER_PARTS)};"
            f" {type(embedder).__name__} lacks {', '.join(lacking)}"
        )
    weight: object = embedder.fusion_weight  # a user's object: any value may be there
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 <= weight < inf:
        raise InvalidInput(
            f"an embedder's fusion_weight is a finite number of at least 0, got {shown(weight)}"
        )


class Meaning:
    def __init__(self, embedder: EmbedderChoice = None, store: Store | None = None) -> None:
        """``store``: the memory's store, where the vectors are read and beside which their
        HNSW index is saved (without it, vectors are held in memory only)."""
        if isinstance(embedder, str) and embedder.strip().lower() not in CHOICES:
            raise InvalidInput(f"embedder is one of {', '.join(CHOICES)}, got {shown(embedder)}")
        if embedder is not None and not isinstance(embedder, str):
            _check_object(embedder)
        self._choice = embedder
        self._store = store
        self._embedder: Embedder | None = None
        self._resolved = False
        self._vectors: VectorSet | None = None
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self._pace: float | None = None  # seconds a chunk of the backlog, as last measured

    def paced(self, batch: Callable[[], int]) -> int:
        """Run ``batch``, a batch of the backlog (it returns the chunks it moved over), and
        keep the model's pace from it (smoothed over batches) for :meth:`finishes`. Only a
        batch of ``PACE_FROM`` chunks or more is measured: a smaller one's time is mostly what
        any batch costs (a commit, an endpoint's call), not its chunks'."""
        began = time.perf_counter()
        chunks = batch()
        if chunks >= PACE_FROM:
            pace = (time.perf_counter() - began) / chunks
            self._pace = pace if self._pace is None else (self._pace + pace) / 2
        return chunks

    def finishes(self, chunks: int, seconds: float) -> bool:
        """Whether the model embeds ``chunks`` within ``seconds`` at its measured pace (yes
        until a batch was measured): a search that waits for a backlog it cannot finish waits
        for nothing, since the oldest chunks go first and its own write last (decision 0181)."""
        pace = self._pace
        return pace is None or chunks * pace <= seconds

    @property
    def choice(self) -> EmbedderChoice:
        return self._choice

    @property
    def embedder(self) -> Embedder | None:
        """The model, loaded at first use (a memory that never searches by meaning never
        loads one)."""
        if not self._resolved:
            chosen = self._choice
            model = chosen if chosen is not None and not isinstance(chosen, str) else None
            if model is None:
                model = load_embedder(chosen if isinstance(chosen, str) else None)
            with self._lock:
                if not self._resolved:
                    self._embedder, self._resolved = model, True
        return self._embedder

    def state(self, tx: Tx) -> str:
        """``not_armed`` (no model), ``queued`` (texts wait for their vectors) or ``armed``."""
        embedder = self.embedder
        if embedder is None:
            return "not_armed"
        return "queued" if pending(tx, embedder.name) else "armed"

    def unarmed_reason(self) -> str | None:
        """Why no model answers (None when one does)."""
        if self.embedder is not None:
            return None
        return unarmed_reason(self._choice if isinstance(self._choice, str) else None)

    def vectors(self, embedder: Embedder) -> VectorSet:
        """This memory's vectors of ``embedder``'s model, kept up to date from the store."""
        with self._lock:
            if self._vectors is None or self._vectors.model != embedder.name:
                self._vectors = VectorSet(embedder.name, embedder.dim, self._store)
            return self._vectors

    @contextlib.contextmanager
    def erasing(self) -> Iterator[None]:
        """Around a write transaction: the vectors it deletes leave this memory's index, in
        memory and on disk, as soon as it commits (before the verb that wrote returns)."""
        with erasing(self._settle):
            yield

    def _settle(self, events: list[Erased]) -> None:
        if self._store is not None:
            settle_erasures(self._store, events, self._vectors)

    def close(self) -> None:
        """Wait for an index generation being written."""
        if self._vectors is not None:
            self._vectors.close()

    def query_vector(self, embedder: Embedder, query: str) -> np.ndarray:
        """The query's vector; agents ask the same things again and again, so recent queries'
        vectors are kept (a query costs 4-10 ms of model time, a cache hit microseconds)."""
        with self._lock:
            cached = self._queries.get(query)
            if cached is not None:
                self._queries.move_to_end(query)
                return cached
        vector: np.ndarray = embedder.embed([query], query=True)[0]
        with self._lock:
            self._queries[query] = vector
            while len(self._queries) > QUERY_CACHE_SIZE:
                self._queries.popitem(last=False)
        return vector
