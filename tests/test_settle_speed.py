"""A search embeds a small backlog before it answers, so that what was just written is found by
its meaning too (``facade._settle_meaning``), for at most SETTLE_SECONDS. With a slow model the
backlog cannot be done in that time, and the part that is done is the oldest, not the write
the reader just made: under steady writes with MiniLM, each search waited 0.3 s for nothing
(p50 326 ms against 6.8 ms, the review of decision 0180). A search now settles only a backlog
the model's measured speed can finish in time (decision 0181)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

import recuerdo
from recuerdo import facade

DIM = 8


class PacedEmbedder:
    """Vectors fixed by each text, at ``seconds`` a text."""

    dim = DIM
    min_similarity = -1.0
    fusion_weight = 1.0

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.name = f"test-paced-{seconds}"

    def embed(self, texts: list[str], *, query: bool = False) -> np.ndarray:
        time.sleep(self.seconds * len(texts))
        rows = [np.frombuffer(text.encode().ljust(DIM, b"x")[:DIM], np.uint8) for text in texts]
        vectors = np.vstack(rows).astype(np.float32) + 1.0
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _timed_search(memory: recuerdo.Memory) -> float:
    began = time.monotonic()
    memory.search("harbour")
    return time.monotonic() - began


def test_a_search_does_not_wait_for_a_backlog_its_model_cannot_finish(tmp_path: Path) -> None:
    memory = recuerdo.open("slow", base_dir=tmp_path, embedder=PacedEmbedder(0.01))
    try:
        memory._upkeep.stop(drain=False)  # no worker: only the searches embed
        memory.remember_many(
            [{"category": "learning", "content": f"harbour first {n}"} for n in range(64)]
        )
        memory._upkeep.drain(tasks=memory._upkeep._settle_tasks)  # the model is measured
        memory.remember_many(
            [{"category": "learning", "content": f"harbour note {n}"} for n in range(200)]
        )
        # 200 chunks at 0.01 s each take 2 s: more than a search may wait
        assert facade.SETTLE_SECONDS < 200 * 0.01
        waited = _timed_search(memory)
        assert waited < facade.SETTLE_SECONDS / 2
        assert memory.index_status()["meaning"] == "queued"
    finally:
        memory.close()


def test_a_small_backlog_a_fast_model_finishes_is_still_settled(tmp_path: Path) -> None:
    memory = recuerdo.open("fast", base_dir=tmp_path, embedder=PacedEmbedder(0.0001))
    try:
        memory._upkeep.stop(drain=False)
        memory.remember_many(
            [{"category": "learning", "content": f"harbour first {n}"} for n in range(64)]
        )
        memory._upkeep.drain(tasks=memory._upkeep._settle_tasks)
        assert memory._meaning._pace is not None  # measured, and fast enough
        memory.remember_many(
            [{"category": "learning", "content": f"harbour note {n}"} for n in range(100)]
        )
        memory.search("harbour")
        assert memory.index_status()["meaning"] == "armed"
    finally:
        memory.close()


class CallEmbedder(PacedEmbedder):
    """An endpoint's shape (``embedder="http"``): a fixed ``seconds`` a call, whatever its size."""

    def embed(self, texts: list[str], *, query: bool = False) -> np.ndarray:
        time.sleep(self.seconds)
        return PacedEmbedder(0.0).embed(texts, query=query)


def test_a_batch_of_one_chunk_does_not_set_the_pace(tmp_path: Path) -> None:
    """A batch costs a call and a commit whatever its size: a one-chunk batch measured at
    40 ms said 100 chunks take 4 s, and the read right after a write of 100 answered queued,
    though their settle is two calls (0.08 s). The static embedder did the same from a batch's
    commit (2.5-5 ms for one chunk: 60-120 chunks in SETTLE_SECONDS, the review of 0181)."""
    memory = recuerdo.open("call", base_dir=tmp_path, embedder=CallEmbedder(0.04))
    try:
        memory._upkeep.stop(drain=False)
        memory.remember("learning", "harbour one")
        memory._upkeep.drain(tasks=memory._upkeep._settle_tasks)  # a one-chunk batch
        memory.remember_many(
            [{"category": "learning", "content": f"harbour note {n}"} for n in range(100)]
        )
        assert memory.meaning_state() == "armed"
    finally:
        memory.close()
