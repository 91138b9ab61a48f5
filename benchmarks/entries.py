"""Entries benchmark: bulk load, durable single writes and recall latency at 10k and 100k.

    python benchmarks/entries.py [--sizes 10000,100000] [--queries 300] [--out DIR]

For each size a fresh memory is filled with realistic entries (five categories, tags from a
vocabulary of 60, eleven writers, sentences drawn from a Zipf-shaped vocabulary). It measures:

* bulk load rate (``remember_many`` in batches of 1,000: acknowledged, durable entries) and
  the time the substring index then needs to catch up,
* the rate of single durable ``remember`` calls (one committed transaction each, on the loaded
  store) next to a raw ``sqlite3`` insert+commit loop with the same pragmas on the same disk,
* the counts of the whole memory the memory lens shows first: ``overview``, ``summary``,
  ``status``, and ``status`` of one scope (p50 of 20 calls each),
* ``recall`` p50/p95 for (a) category + tag, (b) a word search, (c) ``from_`` one agent,
  (d) two tags, both required (``mode="all"``), (e) a category and one agent, (f) one scope
  (every other entry is in one of 50 project scopes, the others in the default one), (g) a
  scope (the default one too) and a category,
* a forget of the oldest entries and of the newest (p50; the oldest are the costliest to take
  out of the trigram index), of the newest again with a search and a round of the upkeep
  between (how an agent forgets: the round deletes the audit records the forget emptied,
  decision 0069), how long ``compact`` takes, and a forget of the oldest after it,
* peak RSS of the process.

It prints a table and writes ``entries.json`` to ``--out`` (default ``benchmarks/results``).
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

import recuerdo

sys.path.insert(0, str(Path(__file__).parent))
# The meaning model is measured in search_latency.py and locomo.py; here it would only
# compete with the writes being measured.
os.environ.setdefault("RECUERDO_EMBEDDER", "none")
from _common import (
    RESULTS,
    durable_rates,
    folder_mib,
    peak_rss_mib,
    percentiles,
    print_table,
    time_calls,
    write_json,
)

CATEGORIES = recuerdo.CATEGORIES
TAGS = [f"tag{i:02d}" for i in range(60)]
AGENTS = [f"agent{i}" for i in range(10)]
SCOPES = [f"project:p{i:02d}" for i in range(50)]
BATCH = 1000
SINGLE_WRITES = 800
FORGETS = 50


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
    for number in range(n):
        source = "main" if rng.random() < 0.5 else rng.choice(AGENTS)
        entry = {
            "category": rng.choice(CATEGORIES),
            "content": sentence(rng, words, weights),
            "tags": rng.sample(TAGS, rng.randint(1, 3)),
        }
        if number % 2:  # taken from the position, so the other draws are those of before
            entry["scope"] = SCOPES[number // 2 % len(SCOPES)]
        rows.append((source, entry))
    return rows


def load(mem: recuerdo.Memory, rows: list[tuple[str, dict[str, Any]]]) -> tuple[list[int], float]:
    """``rows`` (writer, entry) remembered in batches of ``BATCH``, each writer's through its
    own view of ``mem``; the new ids, and the seconds the writes took (the grouping before
    them not counted)."""
    views = {"main": mem, **{name: mem.agent(name) for name in AGENTS}}
    by_source: dict[str, list[dict[str, Any]]] = {}
    for source, entry in rows:
        by_source.setdefault(source, []).append(entry)
    ids: list[int] = []
    start = time.perf_counter()
    for source, entries in by_source.items():
        for i in range(0, len(entries), BATCH):
            ids += views[source].remember_many(entries[i : i + BATCH])  # type: ignore[arg-type]
    return ids, time.perf_counter() - start


def run_size(size: int, queries: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    words = vocabulary(rng)
    rows = make_entries(rng, size, words)
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        folder = Path(tmp)
        mem = recuerdo.open(f"bench-{size}", base_dir=folder)
        ids, seconds = load(mem, rows)
        bulk_rate = size / seconds
        # The substring index is built off the write path: measure searches while it lags
        # (they scan the unindexed tail), then how long until it is complete after the load.
        loaded = time.perf_counter()
        mid_words = words[200:1200]  # mid-frequency words: realistic, non-trivial result sets
        lag = mem._upkeep.backlog()
        lagging = time_calls(mem.recall, [{"search": rng.choice(mid_words)} for _ in range(30)])
        mem._upkeep.drain()
        catch_up = time.perf_counter() - loaded

        single_rate, raw_rate = durable_rates(
            lambda r, i: mem.remember("context", f"single durable write {r}-{i}", ["single"]),
            folder,
            SINGLE_WRITES,
        )

        filt = time_calls(
            mem.recall,
            [
                {"category": rng.choice(CATEGORIES), "tags": [rng.choice(TAGS)]}
                for _ in range(queries)
            ],
        )
        search = time_calls(mem.recall, [{"search": rng.choice(mid_words)} for _ in range(queries)])
        agent = time_calls(mem.recall, [{"from_": rng.choice(AGENTS)} for _ in range(queries)])
        every_tag = time_calls(
            mem.recall, [{"tags": rng.sample(TAGS, 2), "mode": "all"} for _ in range(queries)]
        )
        category_agent = time_calls(
            mem.recall,
            [
                {"category": rng.choice(CATEGORIES), "from_": rng.choice(AGENTS)}
                for _ in range(queries)
            ],
        )
        by_scope = time_calls(mem.recall, [{"scope": rng.choice(SCOPES)} for _ in range(queries)])
        scope_category = time_calls(
            mem.recall,
            [
                {"scope": rng.choice([*SCOPES, "default"]), "category": rng.choice(CATEGORIES)}
                for _ in range(queries)
            ],
        )
        # What the memory lens's first pages ask: the counts of the whole memory, and the
        # knowledge of one scope (every entry is in one of 51 scopes).
        counts = 20
        overview = time_calls(mem.overview, [{}] * counts)
        summary = time_calls(mem.summary, [{}] * counts)
        status = time_calls(mem.status, [{}] * counts)
        scope_status = time_calls(
            mem.status, [{"scope": rng.choice(SCOPES)} for _ in range(counts)]
        )
        db_mib = folder_mib(Path(mem.location).parent, f"bench-{size}*")
        forgets = forget_costs(mem, sorted(ids), mid_words)
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
        "recall_every_tag_p50_ms": round(every_tag[0], 2),
        "recall_every_tag_p95_ms": round(every_tag[1], 2),
        "recall_category_agent_p50_ms": round(category_agent[0], 2),
        "recall_category_agent_p95_ms": round(category_agent[1], 2),
        "recall_scope_p50_ms": round(by_scope[0], 2),
        "recall_scope_p95_ms": round(by_scope[1], 2),
        "recall_scope_category_p50_ms": round(scope_category[0], 2),
        "recall_scope_category_p95_ms": round(scope_category[1], 2),
        "overview_p50_ms": round(overview[0], 2),
        "summary_p50_ms": round(summary[0], 2),
        "status_p50_ms": round(status[0], 2),
        "status_of_a_scope_p50_ms": round(scope_status[0], 2),
        "db_mib": db_mib,
        **forgets,
        "peak_rss_mib": peak_rss_mib(),
    }


def forget_costs(mem: recuerdo.Memory, ids: list[int], words: list[str]) -> dict[str, float]:
    """What a forget costs where its entry sits: the trigram index lists the newest entries
    first, so the oldest sit last in every list (decision 0067), and after ``compact``. The
    last thing measured: it takes entries out of the memory."""
    oldest = iter(ids)
    newest = reversed(ids)

    def forgets(source: Iterator[int]) -> list[dict[str, Any]]:
        return [{"id": next(source)} for _ in range(FORGETS)]

    before_oldest = time_calls(mem.forget, forgets(oldest))
    before_newest = time_calls(mem.forget, forgets(newest))
    spaced, rounds = [], []
    for word in random.Random(FORGETS).choices(words, k=FORGETS):
        started = time.perf_counter()
        mem.forget(next(newest))
        spaced.append(time.perf_counter() - started)
        mem.recall(search=word)
        started = time.perf_counter()
        mem._upkeep.drain()  # the round a quiet moment gives the worker, run here to be timed
        rounds.append(time.perf_counter() - started)
    started = time.perf_counter()
    mem.compact()
    compact_s = time.perf_counter() - started
    after_oldest = time_calls(mem.forget, forgets(oldest))
    return {
        "forget_oldest_p50_ms": round(before_oldest[0], 2),
        "forget_oldest_p95_ms": round(before_oldest[1], 2),
        "forget_newest_p50_ms": round(before_newest[0], 2),
        "forget_newest_spaced_p50_ms": round(percentiles(spaced)[0], 2),
        "upkeep_round_after_forget_p50_ms": round(percentiles(rounds)[0], 2),
        "compact_s": round(compact_s, 2),
        "forget_oldest_after_compact_p50_ms": round(after_oldest[0], 2),
    }


TARGETS = {
    "recall_filter_p95_ms": ("<=", 5.0),
    # Issue 17, item 1: substring search p95 <= 5 ms at 100,000 entries (it was 10), and
    # <= 20 ms while the substring index lags behind a bulk load.
    "recall_search_p95_ms": ("<=", 5.0),
    "search_while_lagging_p95_ms": ("<=", 20.0),
    "bulk_load_per_s": (">=", 20_000),
    "remember_vs_raw": (">=", 0.7),
}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    results = [run_size(size, args.queries, args.seed) for size in sizes]
    print_table(results, TARGETS)
    write_json("entries", args.out, results, TARGETS)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
