"""Common words: the cost of a two-word search when one word is in every item.

    python benchmarks/common_words.py [--sizes 5000,50000,100000] [--queries 100] [--out DIR]

Entries of 20-60 words from a Zipf-shaped vocabulary, each also holding ``project`` (a word
that is not a stop word, as a project name is in a project's memory). Queries are
``project <word>`` for words found in 1 to 50 entries. The lexical stage alone
(no embedder), ``search(limit=10)``, measured twice in the same run over the same store: with
common words left out of the ranking (today) and with every word ranked (``COMMON_AT`` set out
of reach, the behaviour before). ``rare_hits_same`` is the share of queries whose results
holding the rare word are the same, in the same order, both ways (the rest of the ten are
entries holding only ``project``, equally unrelated to the question either way).

Prints a table and writes ``common_words.json`` to ``--out``.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
os.environ["RECUERDO_EMBEDDER"] = "none"

from _common import RESULTS, print_table, time_calls, write_json
from search_latency import index_without_vectors, vocabulary

TARGETS = {"pruned_p95_ms": ("<=", 15.0)}


def entries(size: int, rng: random.Random, words: list[str]) -> list[dict[str, Any]]:
    import itertools

    cumulative = list(itertools.accumulate(1 / (rank + 1) ** 1.05 for rank in range(len(words))))
    return [
        {
            "category": "learning",
            "content": "Project "
            + " ".join(rng.choices(words, cum_weights=cumulative, k=rng.randint(20, 60))),
        }
        for _ in range(size)
    ]


def run_size(size: int, queries: int, seed: int) -> dict[str, Any]:
    import recuerdo
    from recuerdo.store.sqlite import search

    rng = random.Random(seed)
    words = vocabulary(rng)
    with tempfile.TemporaryDirectory() as folder:
        memory = recuerdo.open("common", base_dir=folder)
        try:
            batch = entries(size, rng, words)
            for first in range(0, size, 5000):
                memory.remember_many(batch[first : first + 5000])
            index_without_vectors(memory)
            with memory._store.read() as tx:
                frequency = _frequencies(tx, words)
            rare = [word for word, n in frequency.items() if 1 <= n <= 50]
            asks = [{"query": f"project {word}", "limit": 10} for word in rng.sample(rare, queries)]
            pruned = time_calls(memory.search, asks)
            tops_pruned = [_top(memory, ask) for ask in asks]
            kept, search.COMMON_AT = search.COMMON_AT, 10**12
            try:
                exact = time_calls(memory.search, asks)
                tops_exact = [_top(memory, ask) for ask in asks]
            finally:
                search.COMMON_AT = kept
        finally:
            memory.close()
    same = sum(a == b for a, b in zip(tops_pruned, tops_exact, strict=True)) / len(asks)
    return {
        "size": size,
        "pruned_p50_ms": round(pruned[0], 2),
        "pruned_p95_ms": round(pruned[1], 2),
        "all_words_p50_ms": round(exact[0], 2),
        "all_words_p95_ms": round(exact[1], 2),
        "rare_hits_same": round(same, 3),
    }


def _frequencies(tx: Any, words: list[str]) -> dict[str, int]:
    """Entries per word (the bounded count the ranking uses, capped at 51)."""
    return {
        word: int(
            tx.scalar(
                "SELECT count(*) FROM (SELECT rowid FROM chunk_fts WHERE chunk_fts MATCH ?"
                " LIMIT 51)",
                (f'"{word}"',),
            )
        )
        for word in words[2000:6000]
    }


def _top(memory: Any, ask: dict[str, Any]) -> list[int]:
    word = ask["query"].split()[-1]
    with memory._store.read() as tx:
        holding = {
            row["id"] for row in tx.all("SELECT id FROM items WHERE instr(content, ?) > 0", (word,))
        }
    return [hit["id"] for hit in memory.search(**ask)["results"] if hit["id"] in holding]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="5000,50000,100000")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    results = [run_size(int(size), args.queries, args.seed) for size in args.sizes.split(",")]
    print_table(results, TARGETS)
    print("json:", write_json("common_words", args.out, results, TARGETS))


if __name__ == "__main__":
    main()
