"""Search latency at scale: lexical, meaning, hybrid and context, at 10k, 100k (and 1M) chunks.

    python benchmarks/search_latency.py [--sizes 10000,100000] [--queries 200] [--out DIR]
    python benchmarks/search_latency.py --sizes 1000000     # on request: about 15 minutes

Synthetic but realistic text: short notes of 40-120 words drawn from a Zipf-shaped vocabulary
of 20,000 words, one chunk each, written with ``remember_many``. Measured per size:

* indexing throughput without embeddings: chunks/s of the chunker + full-text index;
* embedding throughput of the local model (all-MiniLM-L6-v2 int8) on 2,000 of the chunks;
* vectors for the rest: embedding a million chunks on two cores takes over an hour, so the
  vectors of the first 2,000 chunks, each perturbed with noise, stand in for the others (the
  search cost depends on the number and size of vectors, not on what they mean);
* p50/p95 of ``search`` with the lexical stage only, the meaning stage only (including the
  query's embedding) and both, and of ``context`` (4,000 tokens, depth 1);
* peak RSS and database size.

Prints a table and writes ``search_latency.json`` to ``--out``.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import RESULTS, folder_mib, peak_rss_mib, print_table, time_calls, write_json

os.environ.setdefault("RECUERDO_EMBEDDER", "minilm")
EMBED_SAMPLE = 2000
TARGETS = {
    "lexical_p95_ms": ("<=", 10.0),
    "hybrid_p95_ms": ("<=", 40.0),
    "context_p95_ms": ("<=", 60.0),
}


def vocabulary(rng: random.Random, size: int = 20_000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(3, 10))))
    return sorted(words)


def batches(size: int, rng: random.Random, words: list[str]) -> Iterator[list[dict[str, Any]]]:
    """The notes, 5,000 at a time: a million at once would weigh on the peak RSS measured."""
    import itertools

    cumulative = list(itertools.accumulate(1 / (rank + 1) ** 1.05 for rank in range(len(words))))
    categories = ["learning", "decision", "context", "preference", "rule"]
    for first in range(0, size, 5000):
        yield [
            {
                "category": categories[n % 5],
                "content": " ".join(
                    rng.choices(words, cum_weights=cumulative, k=rng.randint(40, 120))
                ).capitalize()
                + ".",
                "scope": f"project:p{n % 20}",
            }
            for n in range(first, min(first + 5000, size))
        ]


def index_without_vectors(mem: Any) -> float:
    """Chunk and full-text index everything; chunks/s."""
    from recuerdo.index import chunks as index

    start = time.perf_counter()
    done = 0
    while True:
        with mem._store.write() as tx:
            moved = index.chunk_backlog(tx)
        if not moved:
            break
        done += moved
    rate = done / (time.perf_counter() - start)
    while True:
        with mem._store.write() as tx:
            if not tx.substrings.catch_up():
                break
    return rate


def add_vectors(mem: Any, rng: random.Random) -> float:
    """Embed a sample for real (returns chunks/s), then give every other chunk a perturbed
    copy of a sample vector."""
    import numpy as np

    from recuerdo.index import vectors
    from recuerdo.index.embed import load_embedder
    from recuerdo.store import chunk_text

    embedder = load_embedder()
    assert embedder is not None, "install recuerdo[embed] to run this benchmark"
    with mem._store.read() as tx:
        sample = chunk_text.chunks_with_text(
            tx, "1 = 1 ORDER BY c.id LIMIT ?", (EMBED_SAMPLE,), every_tenant=True
        )
    texts = [vectors.embedding_text(row) for row in sample]
    start = time.perf_counter()
    base = embedder.embed(texts)
    rate = len(texts) / (time.perf_counter() - start)
    noise = np.random.default_rng(rng.randint(0, 2**31))
    with mem._store.write() as tx:
        tx.executemany(
            "INSERT INTO embeddings (model, hash, vector) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            [
                (embedder.name, row["hash"], vectors.encode(vector))
                for row, vector in zip(sample, base, strict=True)
            ],
        )
        after = sample[-1]["id"]
        while True:
            part = tx.all(
                "SELECT id, hash FROM chunks WHERE id > ? ORDER BY id LIMIT 50000", (after,)
            )
            if not part:
                break
            after = part[-1]["id"]
            picks = base[noise.integers(0, len(base), len(part))]
            picks = picks + noise.normal(0, 0.03, picks.shape).astype(np.float32)
            picks /= np.linalg.norm(picks, axis=1, keepdims=True)
            tx.executemany(
                "INSERT INTO embeddings (model, hash, vector) VALUES (?, ?, ?)"
                " ON CONFLICT DO NOTHING",
                [
                    (embedder.name, row["hash"], vectors.encode(v))
                    for row, v in zip(part, picks, strict=True)
                ],
            )
        top = tx.scalar("SELECT max(id) FROM chunks")
        tx.execute(
            "INSERT INTO index_marks (name, upto) VALUES (?, ?) ON CONFLICT (name)"
            " DO UPDATE SET upto = excluded.upto",
            (vectors.mark_name(embedder.name), top),
        )
    return rate


def run_size(size: int, queries: int, seed: int) -> dict[str, Any]:
    import recuerdo

    rng = random.Random(seed)
    words = vocabulary(rng)
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        mem = recuerdo.open(f"latency-{size}", base_dir=tmp)
        mem._upkeep.stop(drain=False)  # each index is built and timed below, not in the back
        elapsed = 0.0
        for batch in batches(size, rng, words):
            start = time.perf_counter()
            mem.remember_many(batch)
            elapsed += time.perf_counter() - start
        write_rate = size / elapsed
        chunk_rate = index_without_vectors(mem)
        embed_rate = add_vectors(mem, rng)
        mid = words[100:3000]

        def asks(n: int) -> list[dict[str, Any]]:
            return [{"query": " ".join(rng.sample(mid, rng.randint(2, 5)))} for _ in range(n)]

        start = time.perf_counter()
        mem.search(asks(1)[0]["query"], stages=["meaning"])  # loads the vectors (and HNSW)
        warm = time.perf_counter() - start
        for ask in asks(20):  # warm the page cache, as a serving process would be
            mem.search(ask["query"])
        # Every stage gets queries of its own: the query-vector cache must not flatter them.
        lexical = time_calls(lambda **a: mem.search(a["query"], stages=["lexical"]), asks(queries))
        meaning = time_calls(lambda **a: mem.search(a["query"], stages=["meaning"]), asks(queries))
        hybrid = time_calls(lambda **a: mem.search(a["query"]), asks(queries))
        context = time_calls(lambda **a: mem.context(a["query"]), asks(queries))
        db = folder_mib(Path(mem.location).parent, f"latency-{size}*")
        mem._upkeep.stop(drain=False)
        mem._store.close()
    return {
        "size": size,
        "write_per_s": round(write_rate),
        "chunks_indexed_per_s": round(chunk_rate),
        "chunks_embedded_per_s": round(embed_rate),
        "vector_load_s": round(warm, 1),
        "lexical_p50_ms": round(lexical[0], 2),
        "lexical_p95_ms": round(lexical[1], 2),
        "meaning_p50_ms": round(meaning[0], 2),
        "meaning_p95_ms": round(meaning[1], 2),
        "hybrid_p50_ms": round(hybrid[0], 2),
        "hybrid_p95_ms": round(hybrid[1], 2),
        "context_p50_ms": round(context[0], 2),
        "context_p95_ms": round(context[1], 2),
        "db_mib": db,
        "peak_rss_mib": peak_rss_mib(),
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    results = [run_size(int(s), args.queries, args.seed) for s in args.sizes.split(",") if s]
    targets = dict(TARGETS)
    if results[-1]["size"] >= 1_000_000:
        targets = {"hybrid_p95_ms": ("<=", 150.0), "peak_rss_mib": ("<=", 2048.0)}
    print_table(results, targets)
    write_json("search_latency", args.out, results, targets)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
