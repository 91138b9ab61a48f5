"""Embedding speed and recall: the static table against MiniLM (and no model at all).

    python benchmarks/embedding.py [--data ../shared/data/locomo/locomo10.json]
                                   [--chunks 3000] [--minilm-chunks 96] [--no-locomo | --no-speed]
                                   [--locomo-embedders static,minilm,none] [--conversations N]
                                   [--out DIR]

Speed: 200-word chunks (LoCoMo turns run together, or this project's own docs and sources when
the data is absent), embedded as passages the way the index does (batches of 64), by one
thread and by two threads each taking half. Both embedders get the same texts; MiniLM gets the
first ``--minilm-chunks`` of them, since it is about a thousand times slower. Each rate is the
best of three rounds after a warm-up (the machine may be shared); chunks per CPU-second is
printed beside it, since it moves less with other load.

Recall: ``benchmarks/locomo.py``'s run for each of ``--locomo-embedders`` (static, MiniLM and
none unless told), one after the other in this process; R@5 and R@10 of the lexical stage, the
meaning stage alone and the hybrid, over all 1,986 questions, or over the first
``--conversations`` conversations (a subset, printed with the table, when MiniLM's indexing
would take too long on a busy machine). ``--no-speed`` and ``--no-locomo`` run one half only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import RESULTS, write_json
from locomo import DEFAULT_DATA, turns_of
from locomo import run as locomo_run

WORDS_PER_CHUNK = 200
BATCH = 64  # the index's EMBED_BATCH
TARGETS: dict[str, tuple[str, float]] = {"static chunks/s, 2 threads": (">=", 5000.0)}
COLUMNS = (
    "chunks/s 1 thread",
    "chunks/s 2 threads",
    "chunks/cpu-s 1 thread",
    "chunks/cpu-s 2 threads",
)


def chunks(data: Path, count: int) -> list[str]:
    """``count`` texts of 200 words (repeating the source when it is too short)."""
    if data.exists():
        words = [
            word
            for conversation in json.loads(data.read_text())
            for turn in turns_of(conversation)
            for word in f"{turn['speaker']}: {turn['text']}".split()
        ]
    else:
        root = Path(__file__).resolve().parents[1]
        files = sorted((root / "docs").rglob("*.md")) + sorted((root / "src").rglob("*.py"))
        words = [word for path in files for word in path.read_text().split()]
    texts = [
        " ".join(words[first : first + WORDS_PER_CHUNK])
        for first in range(0, len(words) - WORDS_PER_CHUNK, WORDS_PER_CHUNK)
    ]
    return (texts * (count // len(texts) + 1))[:count]


def rate(embed: Callable[[list[str]], Any], texts: list[str], threads: int) -> tuple[float, float]:
    """(chunks per wall second, chunks per CPU second of this process), best of three."""

    def work(part: list[str]) -> None:
        for first in range(0, len(part), BATCH):
            embed(part[first : first + BATCH])

    best = (0.0, 0.0)
    for _ in range(3):
        parts = [texts[i::threads] for i in range(threads)]
        workers = [threading.Thread(target=work, args=(part,)) for part in parts]
        wall, cpu = time.perf_counter(), time.process_time()
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        best = max(best, (len(texts) / wall, len(texts) / max(cpu, 1e-9)))
    return best


def speed(texts: list[str], minilm_count: int) -> dict[str, dict[str, Any]]:
    """Static: one calling thread, then two. MiniLM: its passage path with one worker thread,
    then with two (its own way of using both cores in the background)."""
    from recuerdo.index.embed import MiniLM
    from recuerdo.index.static import StaticMiniLM

    began = time.perf_counter()
    static = StaticMiniLM()
    load = time.perf_counter() - began
    minilm = MiniLM()
    sample = texts[:minilm_count]

    def static_passages(batch: list[str]) -> Any:
        return static.embed(batch, query=False)

    def minilm_passages(batch: list[str]) -> Any:
        return minilm.embed(batch, query=False)

    measured: dict[str, dict[str, Any]] = {}
    static_passages(texts[:BATCH])  # warm-up: the word cache, the table's pages
    one, one_cpu = rate(static_passages, texts, 1)
    two, two_cpu = rate(static_passages, texts, 2)
    measured["static"] = {
        "chunks": len(texts),
        "load s": round(load, 2),
        "table from": static.origin,
    }
    minilm_passages(sample[:4])
    minilm.workers = 1
    m_one, m_one_cpu = rate(minilm_passages, sample, 1)
    minilm.workers = 2
    m_two, m_two_cpu = rate(minilm_passages, sample, 1)
    measured["minilm"] = {"chunks": len(sample)}
    for name, figures in (
        ("static", (one, two, one_cpu, two_cpu)),
        ("minilm", (m_one, m_two, m_one_cpu, m_two_cpu)),
    ):
        for column, value in zip(COLUMNS, figures, strict=True):
            measured[name][column] = round(value, 1)
    return measured


def recall(data: Path, names: list[str], conversations: int | None) -> dict[str, dict[str, float]]:
    found: dict[str, dict[str, float]] = {}
    for name in names:
        table, info = locomo_run(data, name, conversations)
        row: dict[str, float] = {
            "conversations": info["conversations"],
            "questions": info["questions"],
            "index s": info["index_seconds"],
        }
        for mode in ("lexical", "meaning", "hybrid"):
            if mode in table:
                for k in ("R@5", "R@10"):
                    row[f"{mode} {k}"] = table[mode]["all"][k]
        found[name] = row
    return found


def show_speed(measured: dict[str, dict[str, Any]]) -> None:
    print(f"{'embedder':<8} {'chunks':>7} " + " ".join(f"{c:>22}" for c in COLUMNS))
    for name, row in measured.items():
        print(f"{name:<8} {row['chunks']:>7} " + " ".join(f"{row[c]:>22}" for c in COLUMNS))
    static_two = measured["static"]["chunks/s 2 threads"]
    target = TARGETS["static chunks/s, 2 threads"][1]
    verdict = "met" if static_two >= target else "MISSED"
    origin = {"cache": "from the cache", "package": "unpacked from the package"}.get(
        measured["static"]["table from"], "distilled the table"
    )
    print(f"static, 2 threads: {static_two} chunks/s (target >= {target:.0f}: {verdict})")
    print(f"static load: {measured['static']['load s']} s ({origin})")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--chunks", type=int, default=3000)
    parser.add_argument("--minilm-chunks", type=int, default=96)
    parser.add_argument("--no-locomo", action="store_true", help="speed only")
    parser.add_argument("--no-speed", action="store_true", help="recall only")
    parser.add_argument(
        "--locomo-embedders", default="static,minilm,none", help="comma-separated, in order"
    )
    parser.add_argument(
        "--conversations", type=int, default=None, help="LoCoMo: only the first N of the 10"
    )
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    if args.no_speed and args.no_locomo:
        parser.error("--no-speed and --no-locomo leave nothing to run")
    result: dict[str, Any] = {}
    if not args.no_speed:
        texts = chunks(args.data, args.chunks)
        print(f"{os.cpu_count()} cores; {len(texts)} chunks of {WORDS_PER_CHUNK} words")
        result["speed"] = measured = speed(texts, args.minilm_chunks)
        show_speed(measured)
    if not args.no_locomo:
        if not args.data.exists():
            print(f"LoCoMo data not found at {args.data} (pass --data)", file=sys.stderr)
            return 2
        found = recall(args.data, args.locomo_embedders.split(","), args.conversations)
        order = [
            f"{mode} {k}" for mode in ("lexical", "meaning", "hybrid") for k in ("R@5", "R@10")
        ]
        columns = ["conversations", "questions", "index s", *order]
        metrics = [m for m in columns if any(m in row for row in found.values())]
        print(f"{'embedder':<8} " + " ".join(f"{m:>13}" for m in metrics))
        for name, row in found.items():
            print(f"{name:<8} " + " ".join(f"{row.get(m, '-'):>13}" for m in metrics))
        result["locomo"] = found
    write_json("embedding", args.out, [result], TARGETS)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
