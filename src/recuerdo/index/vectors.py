"""Stored vectors and the meaning stage's search.

Vectors are stored once per (model, chunk text hash) as int8 with one float32 scale (388 bytes
for 384 dimensions: a million chunks take about 370 MiB). Up to ``EXACT_LIMIT`` vectors, each
process keeps the current model's vectors in memory and searches them exactly. Above that an
HNSW index (usearch, int8) answers first and its candidates are scored exactly on their stored
vectors; the HNSW is kept on disk beside the store (:mod:`.vector_file`), so a reopened memory
maps it and reads only the vectors stored since, instead of rebuilding it. Filters are applied
before the top-k cut: candidates are walked in score order and kept only if they pass the
filters, widening until ``k`` pass or every vector has been considered.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..store import released_hashes
from ..store.base import Row, Store, Tx, rows_by_id
from ..store.chunk_text import chunks_with_text
from . import vector_file
from .vector_file import IndexFiles

if TYPE_CHECKING:
    import numpy as np

    from .embed import Embedder
    from .vector_set import VectorSet

EMBED_BATCH = 64
EXACT_LIMIT = 50_000
DELTA_LIMIT = 20_000
"""Vectors stored after a mapped index's coverage are scored exactly; at this many, a new
generation of the index is written in the background (``docs/decisions/0015``)."""
ERASURE_WAIT = 1.0
"""Seconds a process waits for a forgetting process to rewrite the index before it decides the
index is stale (a forget rewrites it right after its commit)."""
RETRY_AFTER_FAILURE = 60.0
_SCALE_BYTES = 4
_BLOCK = 65_536  # rows handled at once when loading or scoring: bounds temporary memory
_FETCH = 500  # ids per query when reading stored vectors back

STATS: Counter[str] = Counter()
"""What the vector sets of this process did: ``built`` (an HNSW from every vector), ``opened``
(a saved one), ``saved``, ``discarded`` (a saved one not trusted), ``short_answers`` (an HNSW
search that found fewer vectors than it was asked for, so every vector was scored exactly), and
``erase_<outcome>`` for each deletion applied to saved files (see ``vector_file.erase``)."""


def mark_name(model: str) -> str:
    return f"embed:{model}"


def _mark(tx: Tx, model: str) -> int:
    value = tx.scalar("SELECT upto FROM index_marks WHERE name = ?", (mark_name(model),))
    return 0 if value is None else int(value)


def deletion_mark(tx: Tx) -> int:
    """Changes whenever vectors are deleted (see :func:`vector_file.next_mark`)."""
    return int(
        tx.scalar(
            "SELECT coalesce((SELECT upto FROM index_marks WHERE name = 'embeddings_deleted'), 0)"
        )
    )


def _top(tx: Tx) -> int:
    return int(tx.scalar("SELECT coalesce(max(id), 0) FROM embeddings"))


def encode(vector: np.ndarray) -> bytes:
    import numpy as np

    # The scale is stored as a float32 and divides in float32: a vector whose largest component
    # is a few float32 subnormals has a scale that is 0 there, and dividing by it made NaNs
    # that became arbitrary int8 values. Such a vector (and the zero vector) is stored as zeros
    # with the scale 1.
    scale = np.float32(float(np.max(np.abs(vector))) / 127)
    if not scale > 0 or not np.isfinite(scale):
        return np.float32(1.0).tobytes() + np.zeros(len(vector), np.int8).tobytes()
    quantized = np.clip(np.rint(vector / scale), -127, 127).astype(np.int8)
    return scale.tobytes() + quantized.tobytes()


def decode(blob: bytes) -> tuple[float, np.ndarray]:
    import numpy as np

    scale = float(np.frombuffer(blob[:_SCALE_BYTES], dtype=np.float32)[0])
    return scale, np.frombuffer(blob[_SCALE_BYTES:], dtype=np.int8)


def _unpack(blobs: Sequence[bytes], dim: int) -> tuple[np.ndarray, np.ndarray]:
    """The int8 matrix and the scales of stored vectors."""
    import numpy as np

    raw = np.frombuffer(b"".join(blobs), dtype=np.uint8).reshape(len(blobs), _SCALE_BYTES + dim)
    scales = raw[:, :_SCALE_BYTES].copy().view(np.float32).ravel()
    return raw[:, _SCALE_BYTES:].view(np.int8), scales


def _load(tx: Tx, model: str, dim: int, after: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ids, int8 matrix and scales of the model's vectors stored after embedding id ``after``,
    read a block at a time into arrays sized up front (no list of a million rows)."""
    import numpy as np

    # `model || ''` keeps the planner on the id range: with the (model, hash) index it read
    # every vector of the model, sorted, for each block.
    count = int(
        tx.scalar(
            "SELECT count(*) FROM embeddings WHERE id > ? AND model || '' = ?", (after, model)
        )
    )
    ids = np.empty(count, dtype=np.int64)
    matrix = np.empty((count, dim), dtype=np.int8)
    scales = np.empty(count, dtype=np.float32)
    filled = 0
    while filled < count:
        rows = tx.all(
            "SELECT id, vector FROM embeddings WHERE id > ? AND model || '' = ? ORDER BY id"
            " LIMIT ?",
            (after, model, min(_BLOCK, count - filled)),
        )
        if not rows:
            break  # fewer than counted: another writer cannot delete inside our snapshot
        end = filled + len(rows)
        ids[filled:end] = [row["id"] for row in rows]
        matrix[filled:end], scales[filled:end] = _unpack([row["vector"] for row in rows], dim)
        filled, after = end, int(rows[-1]["id"])
    return ids[:filled], matrix[:filled], scales[:filled]


def embedding_text(row: Row) -> str:
    """What a chunk's vector means (see ``index.chunks.chunk_rows``): its own vector text when
    it has one (messages), else the title and the body (a row of
    :func:`~recuerdo.store.chunk_text.chunks_with_text`)."""
    if row["embed_text"]:
        return str(row["embed_text"])
    body = str(row["body"])
    return f"{row['title']}\n{body}" if row["title"] else body


_CHUNK_HASHES = "SELECT id, hash FROM chunks /* every tenant */"


def embed_backlog(store: Store, embedder: Embedder) -> int:
    """Embed the next chunks above this model's watermark (outside any write lock); return
    how many chunks it moved over."""
    with store.read() as tx:
        upto = _mark(tx, embedder.name)
        rows = chunks_with_text(
            tx, "c.id > ? ORDER BY c.id LIMIT ?", (upto, EMBED_BATCH + 1), every_tenant=True
        )
        if not rows:
            return 0
        caught_up = len(rows) <= EMBED_BATCH  # this batch takes the last of the backlog
        rows = rows[:EMBED_BATCH]
        marks = ",".join("?" * len(rows))
        known = {
            r["hash"]
            for r in tx.all(
                f"SELECT hash FROM embeddings WHERE model = ? AND hash IN ({marks})",
                [embedder.name, *[row["hash"] for row in rows]],
            )
        }
    todo: dict[bytes, str] = {}
    for row in rows:
        if row["hash"] not in known:
            todo.setdefault(row["hash"], embedding_text(row))
    vectors = embedder.embed(list(todo.values())) if todo else None
    # Durable, unlike the other index work: the saved HNSW file is written outside the WAL's
    # order and names the vectors it covers, so those must be on disk first (decision 0032).
    with store.write() as tx:
        if vectors is not None:
            # Only for a text one of these chunks still carries: one deleted while it was
            # embedded has been released and collected already; its vector would stay behind.
            chunks = [row["id"] for row in rows]
            carried = {c["hash"] for c in rows_by_id(tx, _CHUNK_HASHES, chunks).values()}
            tx.executemany(
                "INSERT INTO embeddings (model, hash, vector) VALUES (?, ?, ?)"
                " ON CONFLICT (model, hash) DO NOTHING",
                [
                    (embedder.name, digest, encode(vector))
                    for digest, vector in zip(todo, vectors, strict=True)
                    if digest in carried
                ],
            )
        if tx.vectors is not None:
            # After the rows: a first load builds the index over all of them at its end.
            tx.vectors.follow(embedder.name, embedder.dim, caught_up=caught_up)
        tx.execute(
            "INSERT INTO index_marks (name, upto) VALUES (?, ?) ON CONFLICT (name) DO UPDATE"
            " SET upto = CASE WHEN excluded.upto > index_marks.upto THEN excluded.upto"
            " ELSE index_marks.upto END",
            (mark_name(embedder.name), rows[-1]["id"]),
        )
    return int(rows[-1]["id"]) - upto


def pending(tx: Tx, model: str) -> int:
    """Chunks (and unchunked items) still waiting for a vector of ``model``.

    One statement: a search asks twice (to settle a small backlog, then to say whether its
    answer used meaning), and on PostgreSQL each of the three it was cost a round trip. The
    mark's default is taken inside its subquery: ``id > coalesce((SELECT ...), 0)`` is not
    "leakproof" to PostgreSQL's tenant policies, so under them it read every chunk (22 ms at
    100,000 chunks) instead of the range above the mark (the review's finding)."""
    return int(
        tx.scalar(
            "SELECT (SELECT count(*) FROM chunks /* every tenant */ WHERE id >"
            " (SELECT coalesce(max(upto), 0) FROM index_marks WHERE name = ?))"
            " + (SELECT count(*) FROM items /* every tenant */"
            " WHERE id > (SELECT upto FROM index_marks WHERE name = 'chunks'))",
            (mark_name(model),),
        )
    )


@dataclass(frozen=True)
class Erased:
    """Vectors one transaction deleted: their ids by model, the deletion mark before and after,
    and the highest embedding id left (new vectors get higher ids)."""

    removed: dict[str, list[int]]
    before: int
    after: int
    top: int


Settle = Callable[[list[Erased]], None]


@dataclass
class _Frame:
    settle: Settle
    events: list[Erased]


_erasing = threading.local()


def _frames() -> list[_Frame]:
    frames: list[_Frame] | None = getattr(_erasing, "frames", None)
    if frames is None:
        frames = _erasing.frames = []
    return frames


@contextlib.contextmanager
def erasing(settle: Settle) -> Iterator[None]:
    """Around a write transaction of one memory (``settle`` is that memory's): once it
    commits, ``settle`` gets what :func:`collect_orphans` deleted inside it (so the vectors can
    leave the persisted index before the caller returns). Nested uses for the same memory
    settle once, when the outermost ends; a write of another memory inside gets a frame of its
    own, so each memory hears only of its own deletions. A failed write settles nothing."""
    frames = _frames()
    if frames and frames[-1].settle == settle:
        yield  # the enclosing write of this memory settles
        return
    frame = _Frame(settle, [])
    frames.append(frame)
    try:
        yield
    finally:
        frames.remove(frame)
    if frame.events:
        settle(frame.events)


def collect_orphans(tx: Tx) -> int:
    """Delete vectors whose text no chunk carries any more (after edits and deletes), and
    tell every process's in-memory copy to start over. Only the texts of chunks deleted since
    the last collection are looked at (``store/released_hashes.py``); returns 1 when there
    were some (work for the upkeep loop), else 0."""
    removed = released_hashes.take_orphans(tx)
    if removed is None:
        return 0
    if removed:
        before = deletion_mark(tx)
        after = vector_file.next_mark(before)
        tx.execute(
            "INSERT INTO index_marks (name, upto) VALUES ('embeddings_deleted', ?)"
            " ON CONFLICT (name) DO UPDATE SET upto = excluded.upto",
            (after,),
        )
        frames = _frames()
        if frames:  # the innermost write is the one this transaction belongs to
            by_model: dict[str, list[int]] = defaultdict(list)
            for row in removed:
                by_model[str(row["model"])].append(int(row["id"]))
            frames[-1].events.append(Erased(dict(by_model), before, after, _top(tx)))
    return 1


def settle_erasures(store: Store, events: list[Erased], current: VectorSet | None) -> None:
    """Apply committed deletions: to the persisted index files of ``store`` (rewritten without
    the vectors, or removed) and to ``current``, the memory's vector set, when it holds them in
    memory only."""
    home = vector_file.index_home(store.location)
    for model in sorted({model for event in events for model in event.removed}):
        files = None if home is None else IndexFiles(home, model, store.location)

        def sample(ids: Sequence[int], model: str = model) -> list[tuple[int, str]]:
            with store.read() as tx:
                return _digests_in(tx, model, ids)

        for event in events:
            ids = event.removed.get(model, [])
            if current is not None and current.model == model:
                current.forget(ids, event.before, event.after, event.top)
            if files is not None and files.folder.exists():
                try:
                    done = vector_file.erase(
                        files, ids, event.before, event.after, event.top, sample
                    )
                except Exception:
                    # The deletion is committed: whatever kept the files from being rewritten,
                    # they must not outlive it (if even this fails, the caller hears of it).
                    with files.locked():
                        files.discard()
                    done = "discarded"
                STATS[f"erase_{done}"] += 1


def stored(
    tx: Tx, model: str, dim: int, ids: Sequence[int] | np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ids, int8 matrix and scales of those of the given embeddings the store holds."""
    import numpy as np

    found: list[int] = []
    blobs: list[bytes] = []
    for first in range(0, len(ids), _FETCH):
        part = [int(i) for i in ids[first : first + _FETCH]]
        marks = ",".join("?" * len(part))
        # `model || ''`: looked up by id (with the (model, hash) index, SQLite read every
        # vector of the model for each query: 270 ms a search at 20,000 vectors).
        for row in tx.all(
            f"SELECT id, vector FROM embeddings WHERE id IN ({marks}) AND model || '' = ?",
            [*part, model],
        ):
            found.append(int(row["id"]))
            blobs.append(row["vector"])
    if not found:
        return np.zeros(0, np.int64), np.zeros((0, dim), np.int8), np.zeros(0, np.float32)
    matrix, scales = _unpack(blobs, dim)
    return np.asarray(found, dtype=np.int64), matrix, scales


def _digests_in(tx: Tx, model: str, ids: Sequence[int]) -> list[tuple[int, str]]:
    """(id, digest) of the given embeddings the store holds (see ``vector_file.row_digest``)."""
    found: list[tuple[int, str]] = []
    for first in range(0, len(ids), _FETCH):
        part = list(ids[first : first + _FETCH])
        marks = ",".join("?" * len(part))
        rows = tx.all(
            f"SELECT id, hash, vector FROM embeddings WHERE id IN ({marks}) AND model || '' = ?",
            [*part, model],
        )
        found += [
            (int(r["id"]), vector_file.row_digest(model, r["hash"], bytes(r["vector"])))
            for r in rows
        ]
    return sorted(found)


@dataclass(frozen=True)
class _Snapshot:
    """The vectors as of one refresh. Never changed in place: a refresh builds a new one, so
    a search holds no lock while it scores. A newer snapshot may view the same buffers
    (:class:`_Room`), with its own rows after this one's."""

    ids: np.ndarray
    matrix: np.ndarray
    scales: np.ndarray
    dense: np.ndarray | None
    last_id: int
    deletions: int
    room: _Room | None = None


@dataclass
class _Room:
    """Buffers with room to grow, behind the snapshots of one vector set (the exact tier).

    Each snapshot views their first rows. New vectors are written after the newest snapshot's
    rows, which no older snapshot views, so a refresh copies nothing already loaded. Building
    each refresh's arrays whole held the old and the new copy at once, and the float32 copy
    twice more on the way (``astype``, then the product): a server's first search after
    10,000 writes peaked 7 MiB above where it settled (docs/decisions/0031). The spare rows
    cost address space only until written."""

    ids: np.ndarray
    matrix: np.ndarray
    scales: np.ndarray
    dense: np.ndarray | None
    filled: int

    @classmethod
    def around(cls, snap: _Snapshot, rows: int) -> _Room:
        """New buffers for ``rows`` rows, the first ones ``snap``'s."""
        import numpy as np

        dim = snap.matrix.shape[1]
        room = cls(
            np.empty(rows, dtype=np.int64),
            np.empty((rows, dim), dtype=np.int8),
            np.empty(rows, dtype=np.float32),
            np.empty((rows, dim), dtype=np.float32) if rows <= EXACT_LIMIT else None,
            len(snap.ids),
        )
        count = len(snap.ids)
        room.ids[:count], room.matrix[:count], room.scales[:count] = (
            snap.ids,
            snap.matrix,
            snap.scales,
        )
        if room.dense is not None and count:
            room.dense[:count] = snap.matrix if snap.dense is None else snap.dense
            if snap.dense is None:
                room.dense[:count] *= snap.scales[:, None]
        return room

    def fits(self, snap: _Snapshot, added: int) -> bool:
        """Whether ``snap`` is the newest view of these buffers and ``added`` rows fit after."""
        return self.filled == len(snap.ids) and self.filled + added <= len(self.ids)

    def append(self, ids: np.ndarray, matrix: np.ndarray, scales: np.ndarray) -> int:
        """Write rows after the filled ones; the new count."""
        start, end = self.filled, self.filled + len(ids)
        self.ids[start:end], self.matrix[start:end], self.scales[start:end] = ids, matrix, scales
        if self.dense is not None:
            # Scaled in place, as ``matrix.astype(float32) * scales`` would be, without the
            # temporary.
            self.dense[start:end] = matrix
            self.dense[start:end] *= scales[:, None]
        self.filled = end
        return end


def _empty(dim: int, deletions: int = -1, last_id: int = 0) -> _Snapshot:
    import numpy as np

    return _Snapshot(
        np.zeros(0, dtype=np.int64),
        np.zeros((0, dim), dtype=np.int8),
        np.zeros(0, dtype=np.float32),
        None,
        last_id,
        deletions,
    )


def _extended(snap: _Snapshot, tx: Tx, model: str, dim: int, deletions: int) -> _Snapshot:
    """``snap`` with the vectors stored since; read again from the start when any were
    deleted."""
    import numpy as np

    if deletions != snap.deletions:
        snap = _empty(dim, deletions)
    ids, matrix, scales = _load(tx, model, dim, snap.last_id)
    if not len(ids):
        return snap
    if not len(snap.ids):  # the first load: no copy of a million vectors
        dense = None
        if len(ids) <= EXACT_LIMIT:
            # Small sets keep a float32 copy (at most 75 MiB): one product a query.
            dense = matrix.astype(np.float32)
            dense *= scales[:, None]
        return _Snapshot(ids, matrix, scales, dense, int(ids[-1]), deletions)
    room = snap.room
    if room is None or not room.fits(snap, len(ids)):
        # Room for as many again: a set growing by bursts copies its rows a few times, not
        # at every refresh. The float32 copy is kept up to EXACT_LIMIT rows, as before.
        needed = len(snap.ids) + len(ids)
        room = _Room.around(snap, min(2 * needed, max(needed, EXACT_LIMIT)))
    end = room.append(ids, matrix, scales)
    return _Snapshot(
        room.ids[:end],
        room.matrix[:end],
        room.scales[:end],
        None if room.dense is None else room.dense[:end],
        int(ids[-1]),
        deletions,
        room,
    )


def products(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``matrix @ query`` on the calling thread alone. A matrix-vector product is bound by
    memory, not arithmetic, and OpenBLAS splits it over threads that must all be scheduled
    before it returns: on a busy server (every core taken by requests) 2,000 vectors took
    4-30 ms that way against 0.1-0.8 ms on one thread (docs/decisions/0026). ``einsum``
    runs numpy's own vectorised loop, with no thread pool to wait for."""
    import numpy as np

    scored: np.ndarray = np.einsum("ij,j->i", matrix, query)
    return scored


def _scores(snap: _Snapshot, query: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """Cosines of the query with the given rows (all when None)."""
    import numpy as np

    if snap.dense is not None:
        dense = snap.dense if rows is None else snap.dense[rows]
        return products(dense, query)
    rows = np.arange(len(snap.ids)) if rows is None else rows
    out = np.empty(len(rows), dtype=np.float32)
    for first in range(0, len(rows), _BLOCK):  # bounded temporary memory
        block = snap.matrix[rows[first : first + _BLOCK]].astype(np.float32)
        out[first : first + len(block)] = products(block, query)
    scored: np.ndarray = out * snap.scales[rows]
    return scored


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
    for offered in vectors.ranked(query_vector, k, tx):
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


def ordered_candidates(
    tx: Tx,
    model: str,
    dim: int,
    query_vector: np.ndarray,
    joined: str,
    params: Sequence[object],
    k: int,
    min_similarity: float = -1.0,
) -> list[tuple[int, int, float]]:
    """:func:`meaning_candidates` answered by the database's vector index (``tx.vectors``):
    ``joined`` is ``FROM embeddings e ... WHERE ...`` (with ``params``), joining chunks ``c``
    and applying the tenant and the filters. Asks for more rows until ``k`` items pass (an
    item's best chunk counts), then, when the index offered fewer rows than asked (it can stop
    short), every row the filters keep is scored exactly."""
    assert tx.vectors is not None
    query = [float(x) for x in query_vector]
    limit, exact = max(4 * k, 64), False
    while True:
        distance, condition, bound = tx.vectors.order("e", model, dim, query, limit, exact)
        rows = tx.all(
            f"SELECT c.id AS cid, c.item_id, {distance} AS distance {joined} AND {condition}"
            " ORDER BY distance LIMIT ?",
            [*bound, *params, limit],
        )
        found: list[tuple[int, int, float]] = []
        seen: set[int] = set()
        below = False
        for row in rows:
            cosine = 1.0 - float(row["distance"])
            # A zero vector's cosine distance is NaN, which sorts last and passed the test
            # below (0182): a stored one now ends the reading (a zero query never gets here, 0186).
            if not math.isfinite(cosine) or cosine < min_similarity:
                below = True  # rows come nearest first: none further can pass
                break
            if row["item_id"] not in seen:
                seen.add(row["item_id"])
                found.append((int(row["cid"]), int(row["item_id"]), cosine))
        if len(found) >= k or below or (exact and len(rows) < limit):
            return found[:k]
        if len(rows) < limit:
            exact = True
        else:
            limit *= 8
