"""Common words: the cost of a two-word search when one word is in every item.

    python benchmarks/common_words.py [--sizes 5000,50000,100000] [--queries 100] [--out DIR]

Entries of 20-60 words from a Zipf-shaped vocabulary, each also holding ``project`` (a word
that is not a stop word, as a project name is in a project's memory). Queries are
``project <word>`` for rare words: found in 1 to 50 entries (1 to ``size / 2,000`` past
100,000 entries, where the vocabulary has no word that rare). The lexical stage alone
(no embedder), ``search(limit=10)``, measured twice in the same run over the same store: with
common words left out of the ranking (today) and with every word ranked (``COMMON_AT`` set out
of reach, the behaviour before). ``rare_hits_same`` is the share of queries whose results
holding the rare word are the same, in the same order, both ways (the rest of the ten are
entries holding only ``project``, equally unrelated to the question either way).

Then the other shapes of issue 17, item 1, over the same store, each old and new in the same
run (``docs/decisions/0028-common-words.md``):

* ``search`` (lexical stage, embedder off, limit 10) for one common word (``project``, in every
  entry), two common words (each in half the entries or more), one word in 25-40% of them, such
  a word beside a common one, and such a word beside a rare one; old = every match ranked
  (``RANK_AT`` set out of reach); ``*_top10_same`` is the share of queries whose ten results are
  the same both ways, and ``third_rare_rare_hits_same`` the share whose results holding the rare
  word are the same, in the same order (``docs/decisions/0033-narrow-words-first.md``);
* ``recall(search=W, limit=20)`` for a word in 25-40% of the entries and for ``project``; old =
  the SQL recall ran before 0028 (every match read and sorted, ``more`` counted to 100,000),
  issued on the same connection; ``*_same`` is the share of equal answers (ids).

Prints a table and writes ``common_words.json`` to ``--out``.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
os.environ["RECUERDO_EMBEDDER"] = "none"

from _common import RESULTS, print_table, time_calls, write_json
from search_latency import index_without_vectors, vocabulary

SEARCH_SHAPES = ("one_common", "two_common", "one_third", "third_common", "third_rare")
TARGETS = {
    "pruned_p95_ms": ("<=", 15.0),
    **{f"{shape}_new_p95_ms": ("<=", 15.0) for shape in SEARCH_SHAPES},
    "recall_third_new_p95_ms": ("<=", 10.0),
    "recall_project_new_p95_ms": ("<=", 5.0),
}


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


def filled(folder: str, name: str, size: int, rng: random.Random, words: list[str]) -> Any:
    """A memory in ``folder`` holding ``size`` entries of :func:`entries`, chunked and in the
    words index (no vectors: the embedder is off)."""
    import recuerdo

    memory = recuerdo.open(name, base_dir=folder)
    batch = entries(size, rng, words)
    for first in range(0, size, 5000):
        memory.remember_many(batch[first : first + 5000])
    index_without_vectors(memory)
    return memory


def run_size(size: int, queries: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    words = vocabulary(rng)
    with tempfile.TemporaryDirectory() as folder:
        memory = filled(folder, "common", size, rng, words)
        try:
            with memory._store.read() as tx:
                frequency = _frequencies(tx, words, rare_at := max(50, size // 2000))
            rare = [word for word, n in frequency.items() if 1 <= n <= rare_at]
            asks = [{"query": f"project {word}", "limit": 10} for word in rng.sample(rare, queries)]
            pruned, exact, same = _both_ways(memory, asks, "COMMON_AT", _top)
            shapes = _other_shapes(memory, rng, words, rare, queries)
        finally:
            memory.close()
    return {
        "size": size,
        "pruned_p50_ms": round(pruned[0], 2),
        "pruned_p95_ms": round(pruned[1], 2),
        "all_words_p50_ms": round(exact[0], 2),
        "all_words_p95_ms": round(exact[1], 2),
        "rare_hits_same": round(same, 3),
        **shapes,
    }


def _other_shapes(
    memory: Any, rng: random.Random, vocabulary: list[str], rare: list[str], n: int
) -> dict[str, Any]:

    with memory._store.read() as tx:
        entries = int(tx.scalar("SELECT count(*) FROM chunks"))
        counts = {
            word: int(
                tx.scalar("SELECT count(*) FROM chunk_fts WHERE chunk_fts MATCH ?", (f'"{word}"',))
            )
            for word in vocabulary[:300]  # the Zipf ranks are its sorted order
        }
    common = [word for word, c in counts.items() if c >= entries / 2]
    third = [word for word, c in counts.items() if 0.25 * entries <= c <= 0.4 * entries]
    pick = rng.choice
    asks = {
        "one_common": [["project"]] * n,
        "two_common": [rng.sample(common, 2) for _ in range(n)],
        "one_third": [[pick(third)] for _ in range(n)],
        "third_common": [[pick(third), pick(common)] for _ in range(n)],
        "third_rare": [[pick(third), pick(rare)] for _ in range(n)],
    }
    found: dict[str, Any] = {}
    for shape, words in asks.items():
        calls = [{"query": " ".join(query), "limit": 10} for query in words]
        # Beside a rare word, the rare word's chunks are ranked in full (0033): what must not
        # change is their order; the ten may end with other chunks of the broad word alone.
        top, same_key = (_top, "rare_hits_same") if shape == "third_rare" else (_ids, "top10_same")
        new, old, same = _both_ways(memory, calls, "RANK_AT", top)
        found |= _row(shape, new, old) | {f"{shape}_{same_key}": round(same, 3)}
    for shape, needles in (
        ("recall_third", [pick(third) for _ in range(n)]),
        ("recall_project", ["project"] * n),
    ):
        calls = [{"search": needle, "limit": 20} for needle in needles]
        new = time_calls(memory.recall, calls)
        answers_new = [[e["id"] for e in memory.recall(**call)] for call in calls]
        old = time_calls(lambda **call: _old_recall(memory, **call), calls)
        answers_old = [_old_recall(memory, **call) for call in calls]
        same = sum(a == b for a, b in zip(answers_new, answers_old, strict=True)) / len(calls)
        found |= _row(shape, new, old) | {f"{shape}_same": round(same, 3)}
    return found


def _both_ways(
    memory: Any, calls: list[dict[str, Any]], rule: str, top: Callable[[Any, dict[str, Any]], Any]
) -> tuple[tuple[float, float], tuple[float, float], float]:
    """``search`` timed with the rule (a threshold of ``store/windowed_ranking.py``) as shipped and
    then set out of reach (the behaviour before it), on the same calls; and the share of calls
    whose ``top`` answer is the same both ways."""
    from recuerdo.store import windowed_ranking as search

    new = time_calls(memory.search, calls)
    tops_new = [top(memory, call) for call in calls]
    kept = getattr(search, rule)
    setattr(search, rule, 10**12)
    try:
        old = time_calls(memory.search, calls)
        tops_old = [top(memory, call) for call in calls]
    finally:
        setattr(search, rule, kept)
    same = sum(a == b for a, b in zip(tops_new, tops_old, strict=True)) / len(calls)
    return new, old, same


def _row(shape: str, new: tuple[float, float], old: tuple[float, float]) -> dict[str, float]:
    return {
        f"{shape}_new_p50_ms": round(new[0], 2),
        f"{shape}_new_p95_ms": round(new[1], 2),
        f"{shape}_old_p50_ms": round(old[0], 2),
        f"{shape}_old_p95_ms": round(old[1], 2),
    }


def _ids(memory: Any, call: dict[str, Any]) -> list[int]:
    return [hit["id"] for hit in memory.search(**call)["results"]]


def _old_recall(memory: Any, search: str, limit: int) -> list[int]:
    """recall(search=...) as it ran before 0028: every candidate read, sorted, and the rest
    counted up to 100,000 (the same SQL, on the store's connection; the index keeps each entry
    under the negative of its id since m024)."""
    from recuerdo.store.sqlite.search import INDEXED_UPTO, trigram_expression

    check, checked = "", []
    if len(search) > 3:
        check = (
            " AND (instr(lower(hit.content), lower(?)) > 0"
            " OR instr(recuerdo_fold(hit.content), ?) > 0)"
        )
        checked = [search, search.casefold()]
    found = (
        "SELECT hit.id FROM entry_trigrams JOIN items AS hit ON hit.id = -entry_trigrams.rowid"
        f" WHERE entry_trigrams MATCH ? AND hit.tenant = ?{check}"
        f" UNION ALL SELECT tail.id FROM items AS tail WHERE tail.id > ({INDEXED_UPTO})"
        " AND tail.tenant = ? AND instr(recuerdo_fold(tail.content), ?) > 0"
    )
    tenant, folded = memory.tenant, search.casefold()
    params = [trigram_expression(search), tenant, *checked, tenant, folded, tenant]
    matching = (
        f"FROM ({found}) AS found CROSS JOIN items WHERE items.id = found.id"
        " AND items.tenant = ? AND items.item_type = 'entry'"
    )
    with memory._store.read() as tx:
        rows = tx.all(f"SELECT items.* {matching} ORDER BY items.id DESC LIMIT ?", [*params, limit])
        tx.scalar(
            f"SELECT count(*) FROM (SELECT 1 {matching} ORDER BY items.id DESC"
            " LIMIT ? OFFSET ?) AS beyond",
            [*params, 100_000, limit],
        )
    return [row["id"] for row in rows]


def _frequencies(tx: Any, words: list[str], rare_at: int) -> dict[str, int]:
    """Entries per word, counted up to ``rare_at + 1``."""
    return {
        word: int(
            tx.scalar(
                "SELECT count(*) FROM (SELECT rowid FROM chunk_fts WHERE chunk_fts MATCH ?"
                f" LIMIT {rare_at + 1})",
                (f'"{word}"',),
            )
        )
        for word in words[2000:]
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
    parser.add_argument("--sizes", default="100000")
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    results = [run_size(int(size), args.queries, args.seed) for size in args.sizes.split(",")]
    targets = targets_at(results[-1]["size"])
    print_table(results, targets)
    print("json:", write_json("common_words", args.out, results, targets))


def targets_at(size: int) -> dict[str, tuple[str, float]]:
    """Issue 17's targets for the largest size: ``search`` p95 <= 15 ms at 100,000 items and
    <= 50 ms at 1M; the recall targets are stated at 100,000 only."""
    if size < 1_000_000:
        return TARGETS
    shapes = ["pruned_p95_ms", *(f"{shape}_new_p95_ms" for shape in SEARCH_SHAPES)]
    return {key: ("<=", 50.0) for key in shapes}


if __name__ == "__main__":
    main()
