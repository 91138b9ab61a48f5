"""Audit flush benchmark: what writing the retrieval audit of listings costs, beside the reads.

    python benchmarks/audit_flush.py [--size 100000] [--recalls 300] [--rounds 5] [--seed 11]
                                     [--out DIR]

A memory of ``--size`` entries (``entries.py``'s kind, and its setting, made when it is
imported: no embedder unless ``RECUERDO_EMBEDDER`` names one) answers rounds of ``--recalls``
category + tag ``recall`` calls (200 entries listed each, the default limit). Each call's
audit record is kept in memory; after each round the buffered records are written at once,
as the upkeep's flush writes them: one ``retrieval_audit`` row per call, with the ids of the
entries it returned, which a forget must find the records by (decisions 0005, 0069): a
``retrieval_audit_items`` row per id before step m051, a full-text index of the ids since
(0192). The table gives, per round, the reads' time per call, the records written and the ids
they hold, and the flush's time in all and per record; the flushes grow the audit round after
round, as a server's do.

It prints a table and writes ``audit_flush.json`` to ``--out`` (default ``benchmarks/results``).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import recuerdo

sys.path.insert(0, str(Path(__file__).parent))
from _common import RESULTS, print_table, write_json
from entries import CATEGORIES, TAGS, load, make_entries, vocabulary


def run(size: int, recalls: int, rounds: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    rows = make_entries(rng, size, vocabulary(rng))
    found: list[dict[str, Any]] = []
    with (
        tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp,
        recuerdo.open("audit-bench", base_dir=tmp) as mem,
    ):
        load(mem, rows)
        # The load indexed, then the worker stopped: a round's records all wait for the flush
        # measured below, and no round of the worker's (its fold of the log) lands in a round.
        # The drain's flush made the hourly prune, so none comes in the rounds; SQLite's own
        # checkpoint, every 1,000 pages of log, still may, as in a server.
        mem._upkeep.drain()
        mem._upkeep.stop(drain=False)
        for number in range(1, rounds + 1):
            calls = [
                {"category": rng.choice(CATEGORIES), "tags": [rng.choice(TAGS)]}
                for _ in range(recalls)
            ]
            started = time.perf_counter()
            returned = sum(len(mem.recall(**call)) for call in calls)
            reads = time.perf_counter() - started
            started = time.perf_counter()
            records = mem._audit.flush(mem._store)
            flush = time.perf_counter() - started
            found.append(
                {
                    "size": size,
                    "round": number,
                    "recall_ms_per_call": round(1000 * reads / recalls, 3),
                    "records_flushed": records,
                    "ids_returned": returned,
                    "flush_ms": round(1000 * flush, 1),
                    "flush_ms_per_record": round(1000 * flush / max(records, 1), 3),
                }
            )
    return found


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--recalls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    found = run(args.size, args.recalls, args.rounds, args.seed)
    print(f"{args.size:,} entries, {args.recalls} category + tag recalls a round")
    print_table(found, {})
    write_json("audit_flush", args.out, found, {})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
