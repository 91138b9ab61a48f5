"""Background indexing claims its work through the database (a session advisory lock, tried):
processes sharing a PostgreSQL memory take turns instead of doing the same work twice, and a
process finding the work held moves on at once, then comes back so nothing stays unindexed."""

from __future__ import annotations

import contextlib
import hashlib
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import recuerdo
from recuerdo.store.postgres import PostgresStore

from .postgres import contract_url, no_pgvector_url, unique_memory

DIM = 8


class MeetingEmbedder:
    """Fixed vectors by text; records every text it embeds. Its first call waits (briefly)
    for a second process's first call: two processes that both set out to embed the same
    chunks are made to overlap, so a missing claim shows as texts embedded twice."""

    name = "test-meeting-8"
    dim = DIM
    min_similarity = -1.0
    fusion_weight = 1.0

    def __init__(self, arrivals: threading.Barrier, embedded: Counter[str]) -> None:
        self._arrivals = arrivals
        self._embedded = embedded
        self._first = True

    def embed(self, texts: list[str], *, query: bool = False) -> np.ndarray:
        if self._first and not query:
            self._first = False
            # When the other process never comes, the claim kept it out.
            with contextlib.suppress(threading.BrokenBarrierError):
                self._arrivals.wait(timeout=1.0)
        self._embedded.update(texts)
        return np.vstack([_unit(text) for text in texts]).astype(np.float32)


def _unit(text: str) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    raw = np.random.default_rng(seed).normal(size=DIM)
    return np.asarray(raw / np.linalg.norm(raw), dtype=np.float32)


@pytest.fixture
def name() -> Iterator[str]:
    memory = unique_memory("claims")
    yield memory
    PostgresStore(contract_url(), memory).drop()


def test_a_held_claim_is_skipped_at_once_and_free_again_after(name: str) -> None:
    first = PostgresStore(contract_url(), name)
    second = PostgresStore(contract_url(), name)
    answers: list[bool] = []
    try:
        with first.claim("index") as mine:
            assert mine
            # Another connection (another server) asks while it is held: it is told no, and
            # is not kept waiting (the thread ends while the claim is still held).
            asker = threading.Thread(target=lambda: _ask(second, answers))
            asker.start()
            asker.join(timeout=10)
            assert not asker.is_alive()
            assert answers == [False]
            with second.claim("embed:other") as other:
                assert other  # claims of other work are independent
        with second.claim("index") as again:
            assert again
    finally:
        first.close()
        second.close()


def test_a_held_claim_holds_back_no_vacuum(name: str) -> None:
    """A claim is held for a whole batch of work: it must not keep a transaction running, or
    no VACUUM of the database could remove a row deleted meanwhile (decision 0061). The session
    holding the claim has neither a transaction id nor a snapshot."""
    store = PostgresStore(contract_url(), name)
    try:
        with store.claim("index") as mine:
            assert mine
            with store.read() as tx:
                holders = tx.all(
                    "WITH k AS (SELECT hashtextextended(?, 0) AS h)"
                    " SELECT a.backend_xid::text AS xid, a.backend_xmin::text AS xmin"
                    " FROM k, pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
                    " WHERE l.locktype = 'advisory' AND l.granted"
                    " AND l.classid::bigint = (k.h >> 32) & 4294967295"
                    " AND l.objid::bigint = k.h & 4294967295",
                    (f"{store._shared.lock_key}:claim:index",),
                )
        assert [(row["xid"], row["xmin"]) for row in holders] == [(None, None)]
    finally:
        store.close()


def _ask(store: PostgresStore, answers: list[bool]) -> None:
    with store.claim("index") as mine:
        answers.append(mine)


def test_two_processes_embed_each_chunk_once_and_leave_none_unembedded(name: str) -> None:
    """Two memories on one database (as two servers) drain their embedding work at the same
    moment: every chunk gets its vector, and no text is embedded by both."""
    arrivals = threading.Barrier(2)
    embedded: Counter[str] = Counter()
    url = contract_url()
    writer = recuerdo.open(name, url=url, embedder="none")
    texts = [f"entry {n} about the harbour crane number {n * 31}" for n in range(150)]
    try:
        for text in texts:
            writer.remember("learning", text)
        writer._upkeep.drain()  # chunked; no vectors (no embedder here)
    finally:
        writer.close()
    servers = [
        recuerdo.open(name, url=url, embedder=MeetingEmbedder(arrivals, embedded)) for _ in range(2)
    ]
    try:
        for server in servers:
            server._upkeep.stop(drain=False)  # only the drains below embed
        threads = [threading.Thread(target=server._upkeep.drain) for server in servers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        with servers[0]._store.read() as tx:
            chunks = tx.scalar("SELECT count(*) FROM chunks")
            missing = tx.scalar(
                "SELECT count(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM embeddings e"
                " WHERE e.model = ? AND e.hash = c.hash)",
                (MeetingEmbedder.name,),
            )
    finally:
        for server in servers:
            server.close()
    assert chunks >= len(texts)
    assert missing == 0
    twice = [text for text, times in embedded.items() if times > 1]
    assert twice == []
    assert sum(embedded.values()) == chunks


def test_work_claimed_elsewhere_is_done_once_the_claim_ends(name: str) -> None:
    """A process writes while another holds the indexing claim: its worker is told no, and
    comes back by itself (no further write) once the claim ends, so nothing stays unchunked."""
    url = contract_url()
    other = PostgresStore(url, name)
    memory = recuerdo.open(name, url=url, embedder="none")
    try:
        with other.claim("index") as held:
            assert held
            memory.remember("learning", "written while another server indexes")
            time.sleep(1.0)  # the worker has tried (its writes gather for 0.2 s) and was told no
            assert _unchunked(other) == 1
        deadline = time.monotonic() + 20
        while _unchunked(other) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _unchunked(other) == 0
    finally:
        memory.close()
        other.close()


def _unchunked(store: PostgresStore) -> int:
    with store.read() as tx:
        return int(
            tx.scalar(
                "SELECT count(*) FROM items WHERE id >"
                " (SELECT upto FROM index_marks WHERE name = 'chunks')"
            )
        )


def test_each_process_s_vectors_follow_new_rows_incrementally(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A server's in-memory vector set (where the database has no pgvector) reads only the
    vectors stored since its last look, whichever process stored them, and finds the new texts
    by meaning."""
    from recuerdo.index import vectors

    name, url = unique_memory("claims"), no_pgvector_url()

    loads: list[int] = []
    original = vectors._load

    def recording(tx: Any, model: str, dim: int, after: int) -> Any:
        loads.append(after)
        return original(tx, model, dim, after)

    monkeypatch.setattr(vectors, "_load", recording)
    embedded: Counter[str] = Counter()
    writer, reader = (
        recuerdo.open(name, url=url, embedder=MeetingEmbedder(threading.Barrier(1), embedded))
        for _ in range(2)
    )
    try:
        assert writer.index_status()["backend"]["vector_search"] == "memory"
        writer.remember("learning", "the first harbour crane is painted red")
        writer._upkeep.drain()
        assert _first_result(reader, "the first harbour crane is painted red") is not None
        seen = len(reader._meaning.vectors(MeetingEmbedder(threading.Barrier(1), embedded)))
        loads.clear()
        writer.remember("learning", "the second ferry leaves at dawn")
        writer._upkeep.drain()
        found = _first_result(reader, "the second ferry leaves at dawn")
        grown = len(reader._meaning.vectors(MeetingEmbedder(threading.Barrier(1), embedded)))
    finally:
        writer.close()
        reader.close()
        PostgresStore(url, name).drop()
    assert found == "the second ferry leaves at dawn"
    assert grown == seen + 1
    assert loads and min(loads) > 0  # read from its last vector on, never from the start


def _first_result(memory: recuerdo.Memory, query: str) -> str | None:
    """The best meaning-only hit's text (the exact text is the nearest vector to itself)."""
    results = memory.search(query, stages=["meaning"])["results"]
    return str(results[0]["preview"]) if results else None
