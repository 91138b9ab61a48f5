"""Entries benchmark: bulk load, durable single writes and recall latency at 10k and 100k.

    python benchmarks/entries.py [--sizes 10000,100000] [--queries 300] [--out DIR]

For each size a fresh memory is filled with realistic entries (five categories, tags from a
vocabulary of 60, eleven writers, sentences drawn from a Zipf-shaped vocabulary). It measures:

* bulk load rate (``remember_many`` in batches of 1,000: acknowledged, durable entries) and
  the time the substring index then needs to catch up,
* the rate of single durable ``remember`` calls (one committed transaction each, on the loaded
  store) next to a raw ``sqlite3`` insert+commit loop with the same pragmas on the same disk,
* ``recall`` p50/p95 for (a) category + tag, (b) a word search, (c) ``from_`` one agent,
* peak RSS of the process.

It prints a table and writes ``entries.json`` to ``--out`` (default ``benchmarks/results``).
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import recuerdo

CATEGORIES = recuerdo.CATEGORIES
TAGS = [f"tag{i:02d}" for i in range(60)]
AGENTS = [f"agent{i}" for i in range(10)]
BATCH = 1000
SINGLE_WRITES = 800


def vocabulary(rng: random.Random, size: int = 5000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(3, 10))))
    return sorted(words)


def sentence(rng: random.Random, words: list[str], weights: list[float]) -> str:
    return " ".join(rng.choices(words, weights, k=rng.randint(8, 30))).capitalize() + "."


def make_entries(rng: random.Random, n: int, words: list[str]) -> list[tuple[str, dict[str, Any]]]:
    weights = [1 / (rank + 1) for rank in range(len(words))]
    rows = []
    for _ in range(n):
        source = "main" if rng.random() < 0.5 else rng.choice(AGENTS)
        entry = {
            "category": rng.choice(CATEGORIES),
            "content": sentence(rng, words, weights),
            "tags": rng.sample(TAGS, rng.randint(1, 3)),
        }
        rows.append((source, entry))
    return rows


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p50 = statistics.median(ordered)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return p50 * 1000, p95 * 1000


def time_calls(call: Any, arguments: list[dict[str, Any]]) -> tuple[float, float]:
    """p50/p95 in ms of ``call(**args)`` over the argument sets."""
    samples = []
    for args in arguments:
        start = time.perf_counter()
        call(**args)
        samples.append(time.perf_counter() - start)
    return percentiles(samples)


def raw_connection(folder: Path) -> sqlite3.Connection:
    """A bare sqlite3 connection with the store's pragmas, on the same disk."""
    conn = sqlite3.connect(folder / "raw.db", isolation_level=None)
    for pragma in ("journal_mode=WAL", "synchronous=FULL", "foreign_keys=ON", "secure_delete=ON"):
        conn.execute(f"PRAGMA {pragma}")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY AUTOINCREMENT, content TEXT NOT NULL)")
    return conn


def durable_rates(
    mem: recuerdo.Memory, folder: Path, n: int, rounds: int = 8
) -> tuple[float, float]:
    """Median rates of single durable remembers and of raw insert+commit, measured in
    alternating rounds so that disk noise hits both alike."""
    conn = raw_connection(folder)
    ours, raw = [], []
    per_round = max(1, n // rounds)
    for r in range(rounds):
        start = time.perf_counter()
        for i in range(per_round):
            mem.remember("context", f"single durable write {r}-{i}", ["single"])
        ours.append(per_round / (time.perf_counter() - start))
        start = time.perf_counter()
        for i in range(per_round):
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO t (content) VALUES (?)", (f"raw write {r}-{i}",))
            conn.execute("COMMIT")
        raw.append(per_round / (time.perf_counter() - start))
    conn.close()
    return statistics.median(ours), statistics.median(raw)


def run_size(size: int, queries: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    words = vocabulary(rng)
    rows = make_entries(rng, size, words)
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        folder = Path(tmp)
        mem = recuerdo.open(f"bench-{size}", base_dir=folder)
        views = {"main": mem, **{name: mem.agent(name) for name in AGENTS}}
        by_source: dict[str, list[dict[str, Any]]] = {}
        for source, entry in rows:
            by_source.setdefault(source, []).append(entry)
        start = time.perf_counter()
        for source, entries in by_source.items():
            for i in range(0, len(entries), BATCH):
                views[source].remember_many(entries[i : i + BATCH])  # type: ignore[arg-type]
        bulk_rate = size / (time.perf_counter() - start)
        # The substring index is built off the write path: measure searches while it lags
        # (they scan the unindexed tail), then how long until it is complete after the load.
        loaded = time.perf_counter()
        mid_words = words[200:1200]  # mid-frequency words: realistic, non-trivial result sets
        lag = mem._upkeep.backlog()
        lagging = time_calls(mem.recall, [{"search": rng.choice(mid_words)} for _ in range(30)])
        mem._upkeep.drain()
        catch_up = time.perf_counter() - loaded

        single_rate, raw_rate = durable_rates(mem, folder, SINGLE_WRITES)

        filt = time_calls(
            mem.recall,
            [
                {"category": rng.choice(CATEGORIES), "tags": [rng.choice(TAGS)]}
                for _ in range(queries)
            ],
        )
        search = time_calls(mem.recall, [{"search": rng.choice(mid_words)} for _ in range(queries)])
        agent = time_calls(mem.recall, [{"from_": rng.choice(AGENTS)} for _ in range(queries)])
        db_bytes = sum(p.stat().st_size for p in Path(mem.location).parent.glob(f"bench-{size}*"))
        mem.close()
    return {
        "size": size,
        "bulk_load_per_s": round(bulk_rate),
        "index_backlog_after_load": lag,
        "search_while_lagging_p95_ms": round(lagging[1], 2),
        "index_complete_after_s": round(catch_up, 2),
        "remember_per_s": round(single_rate),
        "raw_sqlite_per_s": round(raw_rate),
        "remember_vs_raw": round(single_rate / raw_rate, 2),
        "recall_filter_p50_ms": round(filt[0], 2),
        "recall_filter_p95_ms": round(filt[1], 2),
        "recall_search_p50_ms": round(search[0], 2),
        "recall_search_p95_ms": round(search[1], 2),
        "recall_agent_p50_ms": round(agent[0], 2),
        "recall_agent_p95_ms": round(agent[1], 2),
        "db_mib": round(db_bytes / 2**20, 1),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


TARGETS = {
    "recall_filter_p95_ms": ("<=", 5.0),
    "recall_search_p95_ms": ("<=", 10.0),
    "bulk_load_per_s": (">=", 20_000),
    "remember_vs_raw": (">=", 0.7),
}


def print_table(results: list[dict[str, Any]]) -> None:
    keys = list(results[0])
    width = max(len(k) for k in keys)
    print(
        f"{'metric':<{width}}  "
        + "  ".join(f"{r['size']:>10,}" for r in results)
        + "  target (largest size)"
    )
    for key in keys[1:]:
        target = TARGETS.get(key)
        note = f"{target[0]} {target[1]}" if target else ""
        if target:
            value = results[-1][key]
            ok = value <= target[1] if target[0] == "<=" else value >= target[1]
            note += "  met" if ok else "  MISSED"
        print(f"{key:<{width}}  " + "  ".join(f"{r[key]:>10}" for r in results) + f"  {note}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    results = [run_size(size, args.queries, args.seed) for size in sizes]
    print_table(results)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "entries.json").write_text(
        json.dumps({"results": results, "targets": TARGETS}, indent=2)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
