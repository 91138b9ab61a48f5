"""One model's vectors in one memory, as the meaning stage searches them.

Up to ``vectors.EXACT_LIMIT`` vectors are held in memory and scored exactly. A larger set is
searched through an HNSW index first: the one saved beside the store (:mod:`.vector_file`) when
it can be trusted, mapped rather than read, else one built here from every vector and then
saved in the background. Vectors stored after the saved index's coverage are scored exactly
("extra") until there are ``vectors.DELTA_LIMIT`` of them; then a new generation is written in
the background. HNSW candidates are scored on their stored vectors (so a vector the store no
longer holds is never offered), then every other vector follows in exact tiers.

Deletions this process commits are applied at once (``vectors.settle_erasures``); deletions
another process committed are followed once that process has rewritten the files (it does so
right after its commit), else the saved index is dropped and rebuilt.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..store.base import Store, Tx
from . import vector_file, vectors
from .vector_file import PLACEHOLDER_KEY, Header, IndexFiles

if TYPE_CHECKING:
    import numpy as np

_WORKER_NICE = 15
_POLL = 0.05


@dataclass(frozen=True)
class _Ann:
    """The HNSW side of a large set. Replaced, never changed, except that an index built here
    (``header`` None) takes new vectors in place, under the set's index lock."""

    index: Any
    header: Header | None
    """The file ``index`` maps (read-only), or None: built in this process, in memory."""
    covered: int
    """Every vector of the model with an id up to this is in ``index``."""
    cursor: int
    """... or in ``extra``: vectors stored after the mapped file, scored exactly."""
    deletions: int
    extra: vectors._Snapshot

    def __len__(self) -> int:
        return len(self.index) + len(self.extra.ids)


def _compare(file_mark: int, store_mark: int) -> str:
    """``same``; ``newer`` (the file saw a deletion this transaction does not); ``behind`` (it
    misses one); ``foreign`` (another history)."""
    if file_mark == store_mark:
        return "same"
    order, seen = vector_file.mark_order(file_mark), vector_file.mark_order(store_mark)
    if order != seen:
        return "newer" if order > seen else "behind"
    return "foreign"


class VectorSet:
    """The current model's vectors, kept up to date from the store as they arrive."""

    def __init__(self, model: str, dim: int, store: Store | None = None) -> None:
        self.model = model
        self.dim = dim
        self._store = store
        home = None if store is None else vector_file.index_home(store.location)
        self._files = None
        if home is not None and store is not None:
            self._files = IndexFiles(home, model, store.location)
        self._lock = threading.RLock()
        self._ann_lock = threading.Lock()  # one usearch call at a time on an index
        self._snap = vectors._empty(dim)
        self._ann: _Ann | None = None
        self._seen: tuple[int, int] | None = None
        self._worker: threading.Thread | None = None
        self._failed_at = -vectors.RETRY_AFTER_FAILURE
        _live.add(self)

    def __len__(self) -> int:
        ann = self._ann
        return len(self._snap.ids) if ann is None else len(ann)

    # -- keeping up with the store ---------------------------------------------------------

    def refresh(self, tx: Tx) -> None:
        """Take in the vectors stored since the last call, and follow deletions."""
        deletions, top = vectors.deletion_mark(tx), vectors._top(tx)
        if self._seen == (deletions, top):
            return
        with self._lock:
            if self._seen == (deletions, top):
                return
            seen: tuple[int, int] | None = (deletions, top)
            if self._seen is None and self._ann is None and self._files is not None:
                self._ann = self._open_saved(tx, deletions)
            ann = self._ann
            if ann is not None and ann.deletions != deletions:
                ann, settled = self._follow(tx, ann, deletions)
                if not settled:
                    seen = None  # this transaction is older than the files: look again
            if ann is not None:
                ann = self._extend(tx, ann)
            else:
                self._snap = vectors._extended(self._snap, tx, self.model, self.dim, deletions)
                if len(self._snap.ids) > vectors.EXACT_LIMIT:
                    saved = None if self._files is None else self._open_saved(tx, deletions)
                    ann = self._build(self._snap, deletions) if saved is None else saved
                    ann = self._extend(tx, ann)
            self._ann = ann
            self._seen = seen
        self._persist_soon()

    def _open_saved(self, tx: Tx, deletions: int) -> _Ann | None:
        """The saved index, when it describes this store's vectors, else None (and a saved
        index that does not is deleted)."""
        assert self._files is not None
        header = self._settled_header(deletions)
        if header is None:
            return None
        if (
            self._verdict(header, deletions) not in ("same", "newer")
            or header.dim != self.dim
            or not self._samples_hold(tx, header)
        ):
            self._discard(header)
            return None
        index = self._files.open(header)
        if index is None:
            self._discard(header)
            return None
        with self._files.locked():
            if self._files.header() == header:
                # Generations a crash left behind (between the header's commit and the
                # tidying) may hold vectors forgotten since: they go now.
                self._files.tidy(header.generation)
        vectors.STATS["opened"] += 1
        extra = vectors._empty(self.dim, header.deletions, header.covered)
        return _Ann(index, header, header.covered, header.covered, header.deletions, extra)

    def _settled_header(self, deletions: int) -> Header | None:
        """The files' header; when it misses a deletion the store has, wait a moment for the
        forgetting process, which rewrites the files right after its commit."""
        assert self._files is not None
        header = self._files.header()
        deadline = time.monotonic() + vectors.ERASURE_WAIT
        while header is not None and _compare(header.deletions, deletions) == "behind":
            if time.monotonic() >= deadline:
                break
            time.sleep(_POLL)
            with self._files.locked():  # held by a process rewriting the files
                header = self._files.header()
        return header

    def _verdict(self, header: Header, deletions: int) -> str:
        """How the header's deletion mark compares with the store's (see :func:`_compare`); a
        header ahead of this transaction is ``newer`` only if it is not ahead of the store
        (a store restored from an older copy has the files of its future beside it)."""
        verdict = _compare(header.deletions, deletions)
        if verdict == "newer" and self._latest_mark() != header.deletions:
            return "foreign"
        return verdict

    def _latest_mark(self) -> int | None:
        """The store's deletion mark as last committed (read in a thread of its own: this
        thread is inside a read transaction, and a connection holds one at a time)."""
        store = self._store
        found: list[int] = []

        def read() -> None:
            assert store is not None
            with store.read() as tx:
                found.append(vectors.deletion_mark(tx))

        worker = threading.Thread(target=read, name="recuerdo-mark")
        worker.start()
        worker.join()
        return found[0] if found else None

    def _samples_hold(self, tx: Tx, header: Header) -> bool:
        """Whether the store holds the header's sample rows unchanged (those this transaction
        can see: a newer header may name rows stored since it began)."""
        top = vectors._top(tx)
        visible = [pair for pair in header.samples if pair[0] <= top]
        found = dict(vectors._digests_in(tx, self.model, [i for i, _ in visible]))
        return bool(visible) and all(found.get(i) == digest for i, digest in visible)

    def _discard(self, header: Header) -> None:
        assert self._files is not None
        with self._files.locked():
            if self._files.header() == header:
                self._files.discard()
                vectors.STATS["discarded"] += 1

    def _follow(self, tx: Tx, ann: _Ann, deletions: int) -> tuple[_Ann | None, bool]:
        """After a deletion: the index to use (None: start over), and whether it is settled."""
        if ann.header is None or self._files is None:
            return None, True  # deleted by another process: which vectors went is unknown
        header = self._settled_header(deletions)
        verdict = "gone" if header is None else self._verdict(header, deletions)
        if verdict == "newer":
            return ann, False
        if header is None or verdict != "same":
            if header is not None:
                self._discard(header)
            return None, True
        if (header.generation, header.crc) == (ann.header.generation, ann.header.crc):
            # The same data file: only the mark and the coverage moved.
            extra = vectors._empty(self.dim, header.deletions, header.covered)
            return replace(
                ann,
                header=header,
                covered=header.covered,
                cursor=header.covered,
                deletions=header.deletions,
                extra=extra,
            ), True
        return self._open_saved(tx, deletions), True

    def _extend(self, tx: Tx, ann: _Ann) -> _Ann:
        import numpy as np

        ids, matrix, scales = vectors._load(tx, self.model, self.dim, ann.cursor)
        if not len(ids):
            return ann
        cursor = int(ids[-1])
        if ann.header is None:
            with self._ann_lock:
                vector_file.add_vectors(ann.index, ids, matrix)
            return replace(ann, covered=cursor, cursor=cursor)
        old = ann.extra
        extra = vectors._Snapshot(
            np.concatenate([old.ids, ids]),
            np.concatenate([old.matrix, matrix]),
            np.concatenate([old.scales, scales]),
            None,
            cursor,
            ann.deletions,
        )
        return replace(ann, cursor=cursor, extra=extra)

    def _build(self, snap: vectors._Snapshot, deletions: int) -> _Ann:
        index = vector_file.new_index(self.dim)
        vector_file.add_vectors(index, snap.ids, snap.matrix)
        vectors.STATS["built"] += 1
        extra = vectors._empty(self.dim, deletions, snap.last_id)
        return _Ann(index, None, snap.last_id, snap.last_id, deletions, extra)

    def forget(self, removed: Sequence[int], before: int, after: int, top: int) -> None:
        """Apply a deletion this process committed to an index held in memory only (saved
        files are rewritten by ``vectors.settle_erasures`` and followed at the next refresh)."""
        import numpy as np

        with self._lock:
            ann = self._ann
            if ann is None or ann.header is not None or ann.deletions != before:
                return
            keys = np.asarray(sorted(set(removed)), dtype=np.uint64)
            with self._ann_lock:
                if len(keys):
                    present = keys[np.asarray(ann.index.contains(keys), dtype=bool)]
                    if len(present):
                        ann.index.remove(present)
            cursor = min(ann.cursor, top)
            self._ann = replace(ann, covered=cursor, cursor=cursor, deletions=after)

    # -- searching -------------------------------------------------------------------------

    def ranked(
        self, query: np.ndarray, k: int, tx: Tx | None = None
    ) -> Iterator[list[tuple[int, float]]]:
        """Tiers of (embedding id, cosine), best first. A large set first offers the HNSW's
        candidates: the nearest ``max(2k, 64)`` (and as many of the best extra vectors) scored
        exactly on their stored vectors, read through ``tx`` (the search's transaction); then
        the other candidates, with cosines estimated from the HNSW's distances; then ever
        larger exact tiers until every vector was offered. An HNSW that answers with fewer
        vectors than asked for while holding more is not trusted for that query: every vector
        is then offered in exact tiers."""
        import numpy as np

        ann = self._ann
        offered = None
        asked = max(k * 20, 200)
        if ann is not None:
            keys, distances, complete = self._search(ann, query, asked)
            if not complete:
                # The graph did not reach what it holds (a part that lost its links, as
                # concurrent inserts sometimes leave it): every vector is scored exactly.
                ann = None
                vectors.STATS["short_answers"] += 1
        if ann is not None:
            size = max(2 * k, 64)
            extra_ids, extra_scores = self._extra_best(ann, query, asked)
            offered = np.concatenate([keys, extra_ids])
            found, scores = self._stored_scores(
                np.concatenate([keys[:size], extra_ids[:size]]), query, tx
            )
            best = np.argsort(-scores)
            if len(best):
                yield [(int(found[i]), float(scores[i])) for i in best]
            rough = _estimated(distances[:size], keys[:size], found, scores, distances[size:])
            tail_ids = np.concatenate([keys[size:], extra_ids[size:]])
            tail_scores = np.concatenate([rough, extra_scores[size:]])
            order = np.argsort(-tail_scores, kind="stable")
            if len(order):
                yield [(int(tail_ids[i]), float(tail_scores[i])) for i in order]
            snap = self._everything(tx)
        elif self._ann is not None:
            snap = self._everything(tx)
        else:
            snap = self._snap
        if not len(snap.ids):
            return
        rest = None if offered is None else np.nonzero(~np.isin(snap.ids, offered))[0]
        scores = vectors._scores(snap, query, rest)
        positions = np.arange(len(snap.ids)) if rest is None else rest
        tier = max(k * 8, 256)
        done = 0
        while done < len(positions):
            size = min(tier, len(positions) - done)
            if size < len(positions) - done:
                part = np.argpartition(-scores, size - 1)[:size]
            else:
                part = np.nonzero(np.isfinite(scores))[0]
            part = part[np.argsort(-scores[part])]
            # One conversion of each array: the same Python ints and floats as int() and
            # float() of each element, in a sixth of the time (0.26 ms of a search; 0184).
            ids, cosines = snap.ids[positions[part]].tolist(), scores[part].tolist()
            yield list(zip(ids, cosines, strict=True))
            scores[part] = -np.inf
            done += size
            tier *= 8

    def _search(
        self, ann: _Ann, query: np.ndarray, count: int
    ) -> tuple[np.ndarray, np.ndarray, bool]:
        """Embedding ids the HNSW finds near the query, nearest first, their distances, and
        whether it found as many as it was asked for (or all it holds)."""
        import numpy as np

        with self._ann_lock:
            if ann.index.expansion_search < count:
                ann.index.expansion_search = count
            found = ann.index.search(np.asarray(query, dtype=np.float32), count)
            held = len(ann.index)
        keys = np.asarray(found.keys, dtype=np.uint64).ravel()
        distances = np.asarray(found.distances, dtype=np.float64).ravel()
        real = keys < PLACEHOLDER_KEY
        complete = len(keys) >= min(count, held)
        return keys[real].astype(np.int64), distances[real], complete

    @staticmethod
    def _extra_best(ann: _Ann, query: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
        """The best of the vectors stored after the mapped file, with their exact cosines."""
        import numpy as np

        extra = ann.extra
        if not len(extra.ids):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        scores = vectors._scores(extra, query)
        best = np.argsort(-scores)[:count]
        return extra.ids[best], scores[best]

    def _stored_scores(
        self, ids: np.ndarray, query: np.ndarray, tx: Tx | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Exact cosines of the vectors ``ids`` the store still holds: read back through
        ``tx``, else from the in-memory copy."""
        import numpy as np

        if tx is not None:
            found, matrix, scales = vectors.stored(tx, self.model, self.dim, ids)
            return found, vectors.products(matrix.astype(np.float32), query) * scales
        snap = self._snap
        at = np.minimum(np.searchsorted(snap.ids, ids), max(len(snap.ids) - 1, 0))
        held = at[snap.ids[at] == ids] if len(snap.ids) else at[:0]
        return snap.ids[held], vectors._scores(snap, query, held)

    def _everything(self, tx: Tx | None) -> vectors._Snapshot:
        """Every vector, exactly (a large set reads them only when the HNSW's candidates did
        not satisfy a search)."""
        if tx is None:
            return self._snap
        with self._lock:
            deletions = vectors.deletion_mark(tx)
            self._snap = vectors._extended(self._snap, tx, self.model, self.dim, deletions)
            return self._snap

    # -- saving ----------------------------------------------------------------------------

    def _persist_soon(self) -> None:
        """Write a generation in the background when the index was built here, or when the
        extra vectors have grown to ``DELTA_LIMIT``."""
        ann = self._ann
        if self._files is None or ann is None:
            return
        if ann.header is not None and len(ann.extra.ids) < vectors.DELTA_LIMIT:
            return
        if time.monotonic() - self._failed_at < vectors.RETRY_AFTER_FAILURE:
            return
        with self._lock:
            if self._worker is not None and self._worker.is_alive():
                return
            self._worker = threading.Thread(
                target=self._persist, name="recuerdo-vectors", daemon=True
            )
            self._worker.start()

    def _persist(self) -> None:
        with contextlib.suppress(AttributeError, OSError):  # background work yields the CPU
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), _WORKER_NICE)
        try:
            self.write_generation()
        except Exception:
            self._failed_at = time.monotonic()

    def write_generation(self) -> bool:
        """Save the index as a new generation (now, in this thread); whether one was written.
        Nothing is written when the state misses a deletion the store has: the next refresh
        follows it first."""
        files, store = self._files, self._store
        if files is None or store is None:
            return False
        with files.locked():  # a forgetting process waits, then erases from what is written
            ann = self._ann
            header = files.header()
            if ann is None or (
                ann.header is not None
                and (header is None or header.generation != ann.header.generation)
            ):
                return False
            in_memory = ann.header is None
            with self._ann_lock if in_memory else contextlib.nullcontext():
                ann = self._ann
                if ann is None or (ann.header is None) != in_memory:
                    return False
                if in_memory:
                    index, covered = ann.index, ann.covered
                else:
                    assert header is not None
                    index, covered = files.open(header, view=False), ann.cursor
                    if index is None:
                        return False
                    vector_file.add_vectors(index, ann.extra.ids, ann.extra.matrix)
                with store.read() as tx:
                    if vectors.deletion_mark(tx) != ann.deletions:
                        return False
                    samples = self._pick_samples(tx, index)
                written = files.save(
                    index,
                    covered=covered,
                    deletions=ann.deletions,
                    samples=samples,
                    previous=header,
                )
            del index
            view = files.open(written, verified=True)
            files.tidy(written.generation)
        if view is None:
            raise RuntimeError("a generation just written does not open")
        vectors.STATS["saved"] += 1
        self._adopt(ann, written, view)
        return True

    def _pick_samples(self, tx: Tx, index: Any) -> list[tuple[int, str]]:
        """The highest id and a few random ones, with their digests."""
        import numpy as np

        keys = np.asarray(index.keys, dtype=np.uint64)
        keys = keys[keys < PLACEHOLDER_KEY].astype(np.int64)
        if not len(keys):
            raise RuntimeError("an empty index is not saved")
        top = int(keys.max())
        size = min(len(keys), 4 * vector_file.SAMPLES)
        picks = [top, *(int(k) for k in np.random.default_rng().choice(keys, size, False))]
        found = dict(vectors._digests_in(tx, self.model, sorted(set(picks))))
        if top not in found:
            raise RuntimeError("the index holds a vector the store does not")
        others = [(key, found[key]) for key in dict.fromkeys(picks[1:]) if key in found]
        return [(top, found[top]), *[pair for pair in others if pair[0] != top]][
            : vector_file.SAMPLES
        ]

    def _adopt(self, ann: _Ann, written: Header, view: Any) -> None:
        """Search the generation just written, unless the state moved on meanwhile."""
        with self._lock:
            current = self._ann
            if current is None or current.deletions != ann.deletions:
                return  # the next refresh follows the files
            if (current.header is None) != (ann.header is None) or (
                current.header is not None
                and ann.header is not None
                and current.header.generation != ann.header.generation
            ):
                return
            extra = current.extra
            keep = extra.ids > written.covered
            extra = vectors._Snapshot(
                extra.ids[keep],
                extra.matrix[keep],
                extra.scales[keep],
                None,
                max(extra.last_id, written.covered),
                extra.deletions,
            )
            cursor = written.covered if current.header is None else current.cursor
            self._ann = _Ann(view, written, written.covered, cursor, ann.deletions, extra)
            self._seen = None  # vectors added in memory after the save are read again

    def close(self, timeout: float | None = None) -> None:
        """Wait for a generation being written."""
        worker = self._worker
        if worker is not None and worker is not threading.current_thread():
            worker.join(timeout)


def _estimated(
    distances: np.ndarray,
    keys: np.ndarray,
    found: np.ndarray,
    scores: np.ndarray,
    wanted: np.ndarray,
) -> np.ndarray:
    """Cosines for the HNSW distances ``wanted``, from a straight line fitted through the
    nearest candidates' (distance, exact cosine) pairs (the distance is an affine function of
    the int8 dot product; its constants are usearch's business), never above the lowest exact
    cosine so that tiers stay best first. Reading thousands of stored vectors back to score
    them exactly would cost more than the search."""
    import numpy as np

    if not len(wanted):
        return np.zeros(0, dtype=np.float32)
    exact = dict(zip(found.tolist(), scores.tolist(), strict=True))
    pairs = [
        (d, exact[key])
        for d, key in zip(distances.tolist(), keys.tolist(), strict=True)
        if key in exact
    ]
    floor = min(exact.values(), default=1.0)
    if len({d for d, _ in pairs}) < 2:
        return np.full(len(wanted), floor, dtype=np.float32)
    x, y = np.asarray(pairs, dtype=np.float64).T
    slope, intercept = np.polyfit(x, y, 1)
    estimate: np.ndarray = np.minimum(slope * wanted + intercept, floor).astype(np.float32)
    return estimate


_live: weakref.WeakSet[VectorSet] = weakref.WeakSet()


@atexit.register
def _finish_writes() -> None:
    # A thread killed inside usearch's native code at interpreter exit aborts the process.
    for vector_set in list(_live):
        vector_set.close()
