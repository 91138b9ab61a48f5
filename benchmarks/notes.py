"""Notes benchmark: key updates, get, history and recent at 10k and 100k notes.

    python benchmarks/notes.py [--sizes 10000,100000] [--queries 300] [--out DIR]

Each size fills a fresh memory with notes of 300-900 characters in 50 project scopes and the
user scope, each under a topic key and saved 1 to 9 times (5 on average), so every note has a
history. The fill goes through the same ``save`` code as the API, batched into large
transactions so it takes minutes, not hours. Then, on the filled store:

* the rate of single durable ``save`` calls that update a note by key, next to a raw ``sqlite3``
  insert+commit loop on the same disk (alternating rounds),
* ``get``, ``history`` and ``recent`` (16 KiB, one scope or all) p50/p95,
* database size per stored revision, and peak RSS.

Prints a table and writes ``notes.json`` to ``--out``.
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

import recuerdo
from recuerdo.notes import operations as notes

sys.path.insert(0, str(Path(__file__).parent))
# The meaning model is measured in search_latency.py and locomo.py; here it would only
# compete with the writes being measured.
os.environ.setdefault("RECUERDO_EMBEDDER", "none")
from _common import (
    RESULTS,
    durable_rates,
    folder_mib,
    peak_rss_mib,
    print_table,
    time_calls,
    write_json,
)

KINDS = ["decision", "architecture", "bugfix", "pattern", "config", "discovery", "learning"]
SCOPES = ["user"] + [f"project:p{i:02d}" for i in range(50)]
FILL_BATCH = 2000
SINGLE_WRITES = 800
TARGETS = {
    "get_p95_ms": ("<=", 2.0),
    "recent_p95_ms": ("<=", 10.0),
    "key_update_vs_raw": (">=", 0.6),
}


def vocabulary(rng: random.Random, size: int = 4000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return sorted(
        {"".join(rng.choice(letters) for _ in range(rng.randint(3, 9))) for _ in range(size * 2)}
    )[:size]


def body(rng: random.Random, words: list[str]) -> str:
    paragraphs = []
    length = rng.randint(300, 900)
    while sum(len(p) for p in paragraphs) < length:
        paragraphs.append(" ".join(rng.choices(words, k=rng.randint(10, 30))).capitalize() + ".")
    return "\n\n".join(paragraphs)


def fill(
    mem: recuerdo.Memory, size: int, rng: random.Random, words: list[str]
) -> tuple[int, dict[str, str]]:
    """Create ``size`` notes with 1-9 saves each through ``notes.save``; return the number
    of revisions and each key's scope."""
    plan = [
        (f"topic/{i}", rng.choice(SCOPES), rng.choice(KINDS), rng.randint(1, 9))
        for i in range(size)
    ]
    # Interleave the saves the way a real memory grows: revisions of many notes mixed.
    saves = [(key, scope, kind) for key, scope, kind, times in plan for _ in range(times)]
    rng.shuffle(saves)
    revisions = 0
    for start in range(0, len(saves), FILL_BATCH):
        with mem._store.write() as tx:
            for key, scope, kind in saves[start : start + FILL_BATCH]:
                reply = notes.save(
                    tx,
                    tenant=mem.tenant,
                    principal="fill",
                    title=f"Note {key}",
                    content=body(rng, words),
                    kind=kind,
                    scope=scope,
                    key=key,
                    session=None,
                    expected_version=None,
                    tags=None,
                    strict=False,
                )
                revisions += reply["outcome"] in ("created", "updated")
    return revisions, {key: scope for key, scope, _, _ in plan}


def run_size(size: int, queries: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    words = vocabulary(rng)
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        folder = Path(tmp)
        mem = recuerdo.open(f"notes-{size}", base_dir=folder)
        start = time.perf_counter()
        revisions, scopes = fill(mem, size, rng, words)
        fill_seconds = time.perf_counter() - start
        # The fill bypasses the verbs, so its notes are not chunked yet: index them now, or
        # the background worker would do it during (and charge it to) the timed updates.
        start = time.perf_counter()
        mem._upkeep.drain()
        index_seconds = time.perf_counter() - start
        mem._store.reclaim()  # type: ignore[attr-defined]
        db = folder_mib(Path(mem.location).parent, f"notes-{size}*")

        def update(r: int, i: int) -> None:
            key = f"topic/{rng.randrange(size)}"
            text = body(rng, words) + f" ({r}-{i})"
            mem.save(f"Note {key}", text, key=key, scope=scopes[key])

        update_rate, raw_rate = durable_rates(update, folder, SINGLE_WRITES)
        with mem._store.read() as tx:
            note_ids = [
                row["id"]
                for row in tx.all(
                    "SELECT id FROM items WHERE item_type = 'note' ORDER BY random() LIMIT ?",
                    (queries,),
                )
            ]
        get = time_calls(mem.get, [{"id": i} for i in note_ids])
        hist = time_calls(mem.history, [{"id": i} for i in note_ids])
        recent = time_calls(
            mem.recent, [{"scope": rng.choice([*SCOPES, None])} for _ in range(queries)]
        )
        mem.close()
    return {
        "size": size,
        "revisions": revisions,
        "fill_saves_per_s": round(revisions / fill_seconds),
        "chunk_index_after_fill_s": round(index_seconds, 1),
        "key_update_per_s": round(update_rate),
        "raw_sqlite_per_s": round(raw_rate),
        "key_update_vs_raw": round(update_rate / raw_rate, 2),
        "get_p50_ms": round(get[0], 2),
        "get_p95_ms": round(get[1], 2),
        "history_p50_ms": round(hist[0], 2),
        "history_p95_ms": round(hist[1], 2),
        "recent_p50_ms": round(recent[0], 2),
        "recent_p95_ms": round(recent[1], 2),
        "db_mib": db,
        "bytes_per_revision": round(db * 2**20 / revisions),
        "peak_rss_mib": peak_rss_mib(),
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    results = [run_size(int(s), args.queries, args.seed) for s in args.sizes.split(",") if s]
    print_table(results, TARGETS)
    write_json("notes", args.out, results, TARGETS)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
