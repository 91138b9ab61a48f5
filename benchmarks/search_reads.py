"""What a search reads: each of two changes against the code before it, call by call.

    python benchmarks/search_reads.py [--size 100000] [--queries 200] [--out DIR]

* ``kept`` / ``asked`` (decision 0053): the probes of how far each word reaches, kept while
  the words index is unchanged, against asked every time.
* ``narrowed`` / ``all_looked_at`` (decision 0054): the exact-word check looking for the
  words in the texts of the chunks whose indexed words include every query word (and in any
  text past ASCII), against looking in each of the best 500.

The store and query shapes of ``common_words.py`` (entries of 20-60 Zipf-drawn words, each
holding ``project``; the lexical stage alone, no embedder, ``limit=10``): ``pruned`` is
``project`` beside a rare word, then one common word, two common words, a word in 25-40% of
the entries alone, beside a common word and beside a rare word, two mid-frequency words, and
a question of nine words (stop words, a mid-frequency, a 25-40% and a rare word). Each query
runs twice in a row, once each way, the first way alternating, so that the machine's noise
falls on both alike.

Then 0053 with a pause of 0.3 s before each search (``*_after_pause``): the upkeep writes the
audit record of each search (a commit of the file, not of the words index) before the next
one. Then its worst case: one ``remember`` before every search, indexed by the upkeep in the
background, so searches often find the words index changed (``*_after_write``). ``same`` is
the share of queries whose results are the same both ways (not given after writes: each way
then searched a memory one entry larger than the other did, and a broad word's window moves
with it).

Prints a table and writes ``search_reads.json`` to ``--out``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
os.environ["RECUERDO_EMBEDDER"] = "none"

from _common import RESULTS, percentiles, print_table, write_json
from common_words import _frequencies, filled
from search_latency import vocabulary

TARGETS = {"pruned_kept_p95_ms": ("<=", 15.0), "third_rare_kept_p95_ms": ("<=", 15.0)}
PAUSE_S = 0.3
MID = slice(300, 2000)  # Zipf ranks of mid-frequency words: in some 0.1-2% of the entries


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
    mid = words[MID]
    pick = rng.choice
    return {
        "pruned": [f"project {pick(rare)}" for _ in range(n)],
        "one_common": ["project"] * n,
        "two_common": [" ".join(rng.sample(common, 2)) for _ in range(n)],
        "one_third": [pick(third) for _ in range(n)],
        "third_common": [f"{pick(third)} {pick(common)}" for _ in range(n)],
        "third_rare": [f"{pick(third)} {pick(rare)}" for _ in range(n)],
        "mid_pair": [f"{pick(mid)} {pick(mid)}" for _ in range(n)],
        "question": [
            f"what did the {pick(mid)} say about {pick(third)} and the {pick(rare)}"
            for _ in range(n)
        ],
    }


@contextlib.contextmanager
def _before(change: str) -> Iterator[None]:
    """The code as it was before ``change``: "kept" (0053) or "narrowed" (0054)."""
    from recuerdo.store.sqlite.connection import SQLiteTx
    from recuerdo.store.sqlite.search import FTS5Text

    owner, name = (
        (SQLiteTx, "snapshot_answers") if change == "kept" else (FTS5Text, "holding_every")
    )
    shipped = getattr(owner, name)
    setattr(owner, name, lambda *_: None)
    try:
        yield
    finally:
        setattr(owner, name, shipped)


WAYS = {"kept": "asked", "narrowed": "all_looked_at"}


def _both_ways(
    memory: Any,
    queries: list[str],
    before: int,
    change: str,
    *,
    write_first: bool = False,
    pause: float = 0.0,
) -> dict[str, Any]:
    """Each query timed with ``change`` and without (the first way alternating); the share of
    queries whose results among the entries up to ``before`` (those written before any query)
    are the same."""
    ways = (change, WAYS[change])
    times: dict[str, list[float]] = {way: [] for way in ways}
    same = 0
    for i, query in enumerate(queries):
        found = {}
        for way in ways if i % 2 == 0 else ways[::-1]:
            with contextlib.nullcontext() if way == change else _before(change):
                if write_first:
                    memory.remember("learning", f"project note {i} {way}")
                time.sleep(pause)
                start = time.perf_counter()
                found[way] = [hit["id"] for hit in memory.search(query, limit=10)["results"]]
                times[way].append(time.perf_counter() - start)
        # A write between the two ways adds a newer match of ``project``: the entries
        # written before the queries are compared.
        same += [x for x in found[ways[0]] if x <= before] == [
            x for x in found[ways[1]] if x <= before
        ]
    row: dict[str, Any] = {}
    for way, samples in times.items():
        p50, p95 = percentiles(samples)
        row[f"{way}_p50_ms"], row[f"{way}_p95_ms"] = round(p50, 2), round(p95, 2)
    row[f"{change}_same"] = round(same / len(queries), 3)
    return row


def run(size: int, queries: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    words = vocabulary(rng)
    found: dict[str, Any] = {"size": size}
    with tempfile.TemporaryDirectory() as folder:
        memory = filled(folder, "reads", size, rng, words)
        try:
            memory._upkeep.drain()
            with memory._store.read() as tx:
                before = int(tx.scalar("SELECT max(id) FROM items"))
            shapes = _shapes(memory, rng, words, queries)
            for change in WAYS:
                for shape, asks in shapes.items():
                    row = _both_ways(memory, asks, before, change)
                    found |= {f"{shape}_{key}": value for key, value in row.items()}
            for shape in ("pruned", "third_rare"):
                # A pause past the upkeep's gathering time: each search's audit record is
                # written (a commit) before the next search starts.
                asks = shapes[shape][: max(1, queries // 5)]
                row = _both_ways(memory, asks, before, "kept", pause=PAUSE_S)
                found |= {f"{shape}_after_pause_{key}": value for key, value in row.items()}
            for shape in ("pruned", "third_rare"):
                asks = shapes[shape][: queries // 2]
                row = _both_ways(memory, asks, before, "kept", write_first=True)
                # Each way ran after a write of its own, over a memory one entry apart: the
                # windows of broad words move with it, so equal answers are not expected.
                del row["kept_same"]
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
    print("json:", write_json("search_reads", args.out, results, TARGETS))


if __name__ == "__main__":
    main()
