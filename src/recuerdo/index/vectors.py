"""Stored vectors and the meaning stage's search.

Vectors are stored once per (model, chunk text hash) as int8 with one float32 scale (388 bytes
for 384 dimensions: a million chunks take about 370 MiB). Each process keeps the vectors of the
current model in memory and searches them exactly up to ``EXACT_LIMIT`` rows; above that an HNSW
index (usearch, int8) answers first and is checked exactly. Filters are applied before the top-k
cut: candidates are walked in score order and kept only if they pass the filters, widening until
``k`` pass or every vector has been considered.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..store.base import Row, Store, Tx

if TYPE_CHECKING:
    import numpy as np

    from .embed import Embedder

EMBED_BATCH = 64
EXACT_LIMIT = 50_000
_SCALE_BYTES = 4
_BLOCK = 65_536  # rows handled at once when loading or scoring: bounds temporary memory


def mark_name(model: str) -> str:
    return f"embed:{model}"


def _mark(tx: Tx, model: str) -> int:
    value = tx.scalar("SELECT upto FROM index_marks WHERE name = ?", (mark_name(model),))
    return 0 if value is None else int(value)


def encode(vector: np.ndarray) -> bytes:
    import numpy as np

    scale = float(np.max(np.abs(vector))) / 127 or 1.0
    quantized = np.clip(np.rint(vector / scale), -127, 127).astype(np.int8)
    return bytes(np.float32(scale).tobytes()) + bytes(quantized.tobytes())


def decode(blob: bytes) -> tuple[float, np.ndarray]:
    import numpy as np

    scale = float(np.frombuffer(blob[:_SCALE_BYTES], dtype=np.float32)[0])
    return scale, np.frombuffer(blob[_SCALE_BYTES:], dtype=np.int8)


def _load(tx: Tx, model: str, dim: int, after: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ids, int8 matrix and scales of the model's vectors stored after embedding id ``after``,
    read a block at a time into arrays sized up front (no list of a million rows)."""
    import numpy as np

    count = int(
        tx.scalar("SELECT count(*) FROM embeddings WHERE id > ? AND model = ?", (after, model))
    )
    ids = np.empty(count, dtype=np.int64)
    matrix = np.empty((count, dim), dtype=np.int8)
    scales = np.empty(count, dtype=np.float32)
    width = _SCALE_BYTES + dim
    filled = 0
    while filled < count:
        rows = tx.all(
            "SELECT id, vector FROM embeddings WHERE id > ? AND model = ? ORDER BY id LIMIT ?",
            (after, model, min(_BLOCK, count - filled)),
        )
        if not rows:
            break  # fewer than counted: another writer cannot delete inside our snapshot
        raw = np.frombuffer(b"".join(row["vector"] for row in rows), dtype=np.uint8)
        block = raw.reshape(len(rows), width)
        end = filled + len(rows)
        ids[filled:end] = [row["id"] for row in rows]
        scales[filled:end] = block[:, :_SCALE_BYTES].copy().view(np.float32).ravel()
        matrix[filled:end] = block[:, _SCALE_BYTES:].view(np.int8)
        filled, after = end, int(rows[-1]["id"])
    return ids[:filled], matrix[:filled], scales[:filled]


def embedding_text(row: Row) -> str:
    """What a chunk's vector means (see ``index.index_item``): its own vector text when it has
    one (messages), else the title and the body."""
    if row["embed_text"]:
        return str(row["embed_text"])
    return f"{row['title']}\n{row['body']}" if row["title"] else str(row["body"])


def embed_backlog(store: Store, embedder: Embedder) -> int:
    """Embed the next chunks above this model's watermark (outside any write lock); return
    how many chunks it moved over."""
    with store.read() as tx:
        upto = _mark(tx, embedder.name)
        rows = tx.all(
            "SELECT id, hash, title, body, embed_text FROM chunks /* every tenant */"
            " WHERE id > ? ORDER BY id LIMIT ?",
            (upto, EMBED_BATCH),
        )
        if not rows:
            return 0
        marks = ",".join("?" * len(rows))
        known = {
            r["hash"]
            for r in tx.all(
                f"SELECT hash FROM embeddings WHERE model = ? AND hash IN ({marks})",
                [embedder.name, *[row["hash"] for row in rows]],
            )
        }
    todo: dict[str, str] = {}
    for row in rows:
        if row["hash"] not in known:
            todo.setdefault(row["hash"], embedding_text(row))
    vectors = embedder.embed(list(todo.values())) if todo else None
    with store.write() as tx:
        if vectors is not None:
            tx.executemany(
                "INSERT INTO embeddings (model, hash, vector) VALUES (?, ?, ?)"
                " ON CONFLICT (model, hash) DO NOTHING",
                [
                    (embedder.name, digest, encode(vector))
                    for digest, vector in zip(todo, vectors, strict=True)
                ],
            )
        tx.execute(
            "INSERT INTO index_marks (name, upto) VALUES (?, ?) ON CONFLICT (name) DO UPDATE"
            " SET upto = CASE WHEN excluded.upto > index_marks.upto THEN excluded.upto"
            " ELSE index_marks.upto END",
            (mark_name(embedder.name), rows[-1]["id"]),
        )
    return int(rows[-1]["id"]) - upto


def pending(tx: Tx, model: str) -> int:
    """Chunks (and unchunked items) still waiting for a vector of ``model``."""
    waiting = tx.scalar(
        "SELECT count(*) FROM chunks /* every tenant */ WHERE id > ?", (_mark(tx, model),)
    )
    unchunked = tx.scalar(
        "SELECT count(*) FROM items /* every tenant */"
        " WHERE id > (SELECT upto FROM index_marks WHERE name = 'chunks')"
    )
    return int(waiting) + int(unchunked)


def collect_orphans(tx: Tx) -> int:
    """Delete vectors whose text no chunk carries any more (after edits and deletes), and
    tell every process's in-memory copy to start over. Runs only when chunks were deleted
    since the last collection; returns 1 when it ran (work for the upkeep loop), else 0."""
    deletions = tx.scalar("SELECT upto FROM index_marks WHERE name = 'chunk_deletions'")
    collected = tx.scalar("SELECT upto FROM index_marks WHERE name = 'chunk_deletions_collected'")
    if deletions == collected:
        return 0
    tx.execute(
        "UPDATE index_marks SET upto = ? WHERE name = 'chunk_deletions_collected'", (deletions,)
    )
    removed = tx.execute(
        "DELETE FROM embeddings WHERE NOT EXISTS (SELECT 1 FROM chunks c /* every tenant */"
        " WHERE c.hash = embeddings.hash)"
    )
    if removed:
        tx.execute(
            "INSERT INTO index_marks (name, upto) VALUES ('embeddings_deleted', 1)"
            " ON CONFLICT (name) DO UPDATE SET upto = index_marks.upto + 1"
        )
    return 1


@dataclass(frozen=True)
class _Snapshot:
    """The vectors as of one refresh. Never changed in place: a refresh builds a new one, so
    a search holds no lock while it scores."""

    ids: np.ndarray
    matrix: np.ndarray
    scales: np.ndarray
    dense: np.ndarray | None
    last_id: int
    deletions: int


def _usearch_index() -> Any:
    """usearch's ``Index``, loaded after onnxruntime when that is installed: with usearch's
    native module loaded first, importing onnxruntime later kills the process (segmentation
    fault; usearch 2.26, onnxruntime 1.32), and a memory can build its HNSW before it loads a
    model (a large memory's first search by a query vector it was given)."""
    with contextlib.suppress(ImportError):
        import onnxruntime  # noqa: F401
    from usearch.index import Index

    return Index


class VectorSet:
    """The current model's vectors, in memory, refreshed from the store as they arrive."""

    def __init__(self, model: str, dim: int) -> None:
        import numpy as np

        self.model = model
        self.dim = dim
        self._lock = threading.Lock()
        self._ann_lock = threading.Lock()
        self._ann: Any = None
        self._ann_size = 0
        self._snap = _Snapshot(
            np.zeros(0, dtype=np.int64),
            np.zeros((0, dim), dtype=np.int8),
            np.zeros(0, dtype=np.float32),
            None,
            0,
            -1,
        )

    def refresh(self, tx: Tx) -> None:
        """Load vectors added since the last call; start over when any were deleted."""
        import numpy as np

        deletions = int(
            tx.scalar(
                "SELECT coalesce((SELECT upto FROM index_marks WHERE name = 'embeddings_deleted'),"
                " 0)"
            )
        )
        top = int(tx.scalar("SELECT coalesce(max(id), 0) FROM embeddings"))
        snap = self._snap
        if deletions == snap.deletions and top <= snap.last_id:
            return
        with self._lock:
            snap = self._snap
            if deletions != snap.deletions:
                snap = _Snapshot(
                    np.zeros(0, dtype=np.int64),
                    np.zeros((0, self.dim), dtype=np.int8),
                    np.zeros(0, dtype=np.float32),
                    None,
                    0,
                    deletions,
                )
                with self._ann_lock:
                    self._ann, self._ann_size = None, 0
            ids, matrix, scales = _load(tx, self.model, self.dim, snap.last_id)
            if not len(ids) and snap is self._snap:
                return
            if len(snap.ids):
                all_ids = np.concatenate([snap.ids, ids])
                all_matrix = np.concatenate([snap.matrix, matrix])
                all_scales = np.concatenate([snap.scales, scales])
            else:  # the first load: no copy of a million vectors
                all_ids, all_matrix, all_scales = ids, matrix, scales
            dense = None
            if len(all_ids) <= EXACT_LIMIT:
                # Small sets keep a float32 copy (at most 75 MiB): one BLAS product a query.
                fresh = matrix.astype(np.float32) * scales[:, None]
                dense = (
                    fresh
                    if snap.dense is None and not len(snap.ids)
                    else np.concatenate(
                        [
                            snap.dense
                            if snap.dense is not None
                            else snap.matrix.astype(np.float32) * snap.scales[:, None],
                            fresh,
                        ]
                    )
                )
            self._snap = _Snapshot(
                all_ids,
                all_matrix,
                all_scales,
                dense,
                int(ids[-1]) if len(ids) else snap.last_id,
                deletions,
            )

    def __len__(self) -> int:
        return len(self._snap.ids)

    @staticmethod
    def _scores(snap: _Snapshot, query: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Cosines of the query with the given rows (all when None)."""
        import numpy as np

        if snap.dense is not None:
            dense = snap.dense if rows is None else snap.dense[rows]
            scored: np.ndarray = dense @ query
            return scored
        rows = np.arange(len(snap.ids)) if rows is None else rows
        out = np.empty(len(rows), dtype=np.float32)
        for first in range(0, len(rows), _BLOCK):  # bounded temporary memory
            block = snap.matrix[rows[first : first + _BLOCK]].astype(np.float32)
            out[first : first + len(block)] = block @ query
        scored = out * snap.scales[rows]
        return scored

    def _ann_rows(self, snap: _Snapshot, query: np.ndarray, count: int) -> np.ndarray:
        import numpy as np

        Index = _usearch_index()

        with self._ann_lock:
            if self._ann is None:
                self._ann = Index(
                    ndim=self.dim,
                    metric="ip",
                    dtype="i8",
                    connectivity=16,
                    expansion_add=64,
                    expansion_search=max(64, count),
                )
            if self._ann_size < len(snap.ids):
                for first in range(self._ann_size, len(snap.ids), _BLOCK):
                    fresh = np.arange(first, min(first + _BLOCK, len(snap.ids)))
                    # In blocks: a million float32 copies at once would take 1.5 GiB.
                    self._ann.add(fresh, snap.matrix[fresh].astype(np.float32) / 127.0, threads=2)
                    self._ann_size = int(fresh[-1]) + 1
            found = self._ann.search(query, count)
        return np.asarray(found.keys, dtype=np.int64)

    def ranked(self, query: np.ndarray, k: int) -> Iterator[list[tuple[int, float]]]:
        """Tiers of (embedding id, cosine), best first: the HNSW's answer checked exactly when
        the set is large, then ever larger exact tiers until every vector was offered."""
        import numpy as np

        snap = self._snap
        total = len(snap.ids)
        if total == 0:
            return
        offered = np.zeros(total, dtype=bool)
        if total > EXACT_LIMIT:
            try:
                rows = self._ann_rows(snap, query, max(k * 20, 200))
            except ImportError:
                rows = np.zeros(0, dtype=np.int64)
            rows = rows[(rows >= 0) & (rows < total)]
            if len(rows):
                offered[rows] = True
                scores = self._scores(snap, query, rows)
                order = np.argsort(-scores)
                yield [(int(snap.ids[rows[i]]), float(scores[i])) for i in order]
        rest = None if not offered.any() else np.nonzero(~offered)[0]
        scores = self._scores(snap, query, rest)
        positions = np.arange(total) if rest is None else rest
        tier = max(k * 8, 256)
        done = 0
        while done < len(positions):
            size = min(tier, len(positions) - done)
            if size < len(positions) - done:
                part = np.argpartition(-scores, size - 1)[:size]
            else:
                part = np.nonzero(np.isfinite(scores))[0]
            part = part[np.argsort(-scores[part])]
            yield [(int(snap.ids[positions[i]]), float(scores[i])) for i in part]
            scores[part] = -np.inf
            done += size
            tier *= 8


def meaning_candidates(
    tx: Tx,
    vectors: VectorSet,
    query_vector: np.ndarray,
    allowed: Callable[[list[int]], list[tuple[int, int, int]]],
    k: int,
    min_similarity: float = -1.0,
) -> list[tuple[int, int, float]]:
    """The k best (chunk id, item id, cosine), one per item, among those that pass
    ``allowed`` (the filters, over embedding ids; returns (embedding, chunk, item) rows)."""
    vectors.refresh(tx)
    found: list[tuple[int, int, float]] = []
    seen_items: set[int] = set()
    for offered in vectors.ranked(query_vector, k):
        tier = [pair for pair in offered if pair[1] >= min_similarity]
        last = len(tier) < len(offered)  # tiers come best first: nothing further can pass
        step = max(2 * k, 64)
        for first in range(0, len(tier), step):
            part = tier[first : first + step]
            scores = dict(part)
            for embedding_id, chunk_id, item_id in allowed([e for e, _ in part]):
                if item_id not in seen_items:
                    seen_items.add(item_id)
                    found.append((chunk_id, item_id, scores[embedding_id]))
            if len(found) >= k:
                break
        if len(found) >= k or last:
            break
    found.sort(key=lambda row: -row[2])
    return found[:k]
