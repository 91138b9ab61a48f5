"""Word counts kept per snapshot (decision 0053): ``search`` with the probes' answers kept, as
shipped, against the same search asking them every time (the code before), call by call.

    python benchmarks/word_counts.py [--size 100000] [--queries 200] [--out DIR]

The store and query shapes of ``common_words.py`` (entries of 20-60 Zipf-drawn words, each
holding ``project``; the lexical stage alone, no embedder, ``limit=10``): ``pruned`` is
``project`` beside a rare word, then one common word, two common words, a word in 25-40% of
the entries alone, beside a common word and beside a rare word. Each query runs twice in a
row, once each way, the first way alternating, so that the machine's noise falls on both
alike. ``asked`` is the code before (no answers kept: the reads go straight to the index);
``kept`` reuses what earlier queries read while the file is unchanged.

Then the worst case: one ``remember`` before every search, so every search finds the file
changed and keeps nothing from the one before (``*_after_write``). ``same`` is the share of
queries whose results are the same both ways (not given after writes: each way then searched
a memory one entry larger than the other did, and a broad word's window moves with it).

Prints a table and writes ``word_counts.json`` to ``--out``.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
os.environ["RECUERDO_EMBEDDER"] = "none"

from _common import RESULTS, percentiles, print_table, write_json
from common_words import _frequencies, entries
from search_latency import index_without_vectors, vocabulary

TARGETS = {"pruned_kept_p95_ms": ("<=", 15.0), "third_rare_kept_p95_ms": ("<=", 15.0)}


def _shapes(memory: Any, rng: random.Random, words: list[str], n: int) -> dict[str, list[str]]:
    with memory._store.read() as tx:
        chunks = int(tx.scalar("SELECT count(*) FROM chunks"))
        counts = {
            word: int(
                tx.scalar("SELECT count(*) FROM chunk_fts WHERE chunk_fts MATCH ?", (f'"{word}"',))
            )
            for word in words[:300]  # the Zipf ranks are the vocabulary's sorted order
        }
        rare_at = max(50, chunks // 2000)
        rare = [word for word, c in _frequencies(tx, words, rare_at).items() if 1 <= c <= rare_at]
    common = [word for word, c in counts.items() if c >= chunks / 2]
    third = [word for word, c in counts.items() if 0.25 * chunks <= c <= 0.4 * chunks]
    pick = rng.choice
    return {
        "pruned": [f"project {pick(rare)}" for _ in range(n)],
        "one_common": ["project"] * n,
        "two_common": [" ".join(rng.sample(common, 2)) for _ in range(n)],
        "one_third": [pick(third) for _ in range(n)],
        "third_common": [f"{pick(third)} {pick(common)}" for _ in range(n)],
        "third_rare": [f"{pick(third)} {pick(rare)}" for _ in range(n)],
    }


def _both_ways(
    memory: Any, queries: list[str], before: int, *, write_first: bool
) -> dict[str, Any]:
    """Each query timed kept and asked, the first way alternating; the share of queries whose
    results among the entries up to ``before`` (those written before any query) are the same."""
    from recuerdo.store.sqlite.connection import SQLiteTx

    kept_answers = SQLiteTx.snapshot_answers
    times: dict[str, list[float]] = {"kept": [], "asked": []}
    same = 0
    for i, query in enumerate(queries):
        found = {}
        for way in ("kept", "asked") if i % 2 == 0 else ("asked", "kept"):
            SQLiteTx.snapshot_answers = (  # type: ignore[method-assign]
                kept_answers if way == "kept" else lambda tx: None
            )
            try:
                if write_first:
                    memory.remember("learning", f"project note {i} {way}")
                start = time.perf_counter()
                found[way] = [hit["id"] for hit in memory.search(query, limit=10)["results"]]
                times[way].append(time.perf_counter() - start)
            finally:
                SQLiteTx.snapshot_answers = kept_answers  # type: ignore[method-assign]
        # A write between the two ways adds a newer match of ``project``: the entries
        # written before the queries are compared.
        same += [x for x in found["kept"] if x <= before] == [
            x for x in found["asked"] if x <= before
        ]
    row: dict[str, Any] = {}
    for way, samples in times.items():
        p50, p95 = percentiles(samples)
        row[f"{way}_p50_ms"], row[f"{way}_p95_ms"] = round(p50, 2), round(p95, 2)
    row["same"] = round(same / len(queries), 3)
    return row


def run(size: int, queries: int, seed: int) -> dict[str, Any]:
    import recuerdo

    rng = random.Random(seed)
    words = vocabulary(rng)
    found: dict[str, Any] = {"size": size}
    with tempfile.TemporaryDirectory() as folder:
        memory = recuerdo.open("counts", base_dir=folder)
        try:
            batch = entries(size, rng, words)
            for first in range(0, size, 5000):
                memory.remember_many(batch[first : first + 5000])
            index_without_vectors(memory)
            memory._upkeep.drain()
            with memory._store.read() as tx:
                before = int(tx.scalar("SELECT max(id) FROM items"))
            shapes = _shapes(memory, rng, words, queries)
            for shape, asks in shapes.items():
                row = _both_ways(memory, asks, before, write_first=False)
                found |= {f"{shape}_{key}": value for key, value in row.items()}
            for shape in ("pruned", "third_rare"):
                row = _both_ways(memory, shapes[shape][: queries // 2], before, write_first=True)
                # Each way ran after a write of its own, over a memory one entry apart: the
                # windows of broad words move with it, so equal answers are not expected.
                del row["same"]
                found |= {f"{shape}_after_write_{key}": value for key, value in row.items()}
        finally:
            memory.close()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    results = [run(args.size, args.queries, args.seed)]
    print_table(results, TARGETS)
    print("json:", write_json("word_counts", args.out, results, TARGETS))


if __name__ == "__main__":
    main()
