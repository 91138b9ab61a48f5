"""ask with and without as_of/valid_at on a memory of a few thousand notes, a third of them
edited after the instant asked about (decision 0129).

    python benchmarks/ask_times.py build DIR [NOTES]
    python benchmarks/ask_times.py measure DIR        # prints one JSON line of p50/p95 (ms)
    python benchmarks/ask_times.py alternate DIR OLD_SRC NEW_SRC [ROUNDS]

``alternate`` runs ``measure`` under each source tree in turn, ROUNDS times each, on the same
store, so old and new code are timed on the same machine in the same run. With
``ASK_TIMES_PG_URL`` set, the memory is a PostgreSQL one on that server (``drop DIR`` drops it).
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

QUERIES = 40
PG_MEMORY = "ask-times-bench"


def _open() -> object:
    import recuerdo

    url = os.environ.get("ASK_TIMES_PG_URL")
    if not url:
        return recuerdo.open("ask-times")
    from recuerdo.store.postgres import PostgresStore

    return recuerdo.open(PG_MEMORY, store=PostgresStore(url, PG_MEMORY))


def _words() -> list[str]:
    rng = random.Random(7)
    syllables = ["ka", "lo", "mi", "ren", "tas", "vo", "qui", "dal", "ne", "sur", "fin", "gor"]
    return sorted({"".join(rng.choice(syllables) for _ in range(3)) for _ in range(900)})


def _sentence(rng: random.Random, words: list[str]) -> str:
    return " ".join(rng.choice(words) for _ in range(rng.randint(12, 40))).capitalize() + "."


def build(folder: Path, count: int) -> None:
    from recuerdo.core.clock import now_iso

    os.environ["RECUERDO_STATE_DIR"] = str(folder)
    rng, words = random.Random(11), _words()
    memory: Any = _open()
    ids = [
        memory.save(f"Note {n}", " ".join(_sentence(rng, words) for _ in range(3)))["id"]
        for n in range(count)
    ]
    memory._upkeep.drain()
    time.sleep(0.01)
    then = now_iso()
    time.sleep(0.01)
    for note in ids[::3]:
        memory.edit(note, "replace", " ".join(_sentence(rng, words) for _ in range(3)))
    memory._upkeep.drain()
    (folder / "then.txt").write_text(then)
    memory.close()


def measure(folder: Path) -> None:
    os.environ["RECUERDO_STATE_DIR"] = str(folder)
    rng, words = random.Random(5), _words()
    then = (folder / "then.txt").read_text()
    memory: Any = _open()
    queries = [" ".join(rng.choice(words) for _ in range(3)) for _ in range(QUERIES)]
    found: dict[str, object] = {}
    bounds: dict[str, str]
    from recuerdo.core.clock import now_iso

    cases = {
        "now": {},
        "as_of": {"as_of": then},  # a third of the notes edited since
        "valid_at": {"valid_at": then},
        "as_of_now": {"as_of": now_iso()},  # none changed since
    }
    for name, bounds in cases.items():
        memory.ask(queries[0], **bounds)  # warm
        samples = []
        for query in queries:
            start = time.perf_counter()
            memory.ask(query, **bounds)
            samples.append(time.perf_counter() - start)
        samples.sort()
        found[name] = {
            "p50": round(statistics.median(samples) * 1000, 2),
            "p95": round(samples[int(0.95 * (len(samples) - 1))] * 1000, 2),
        }
    memory.close()
    print(json.dumps(found))


def alternate(folder: Path, old: str, new: str, rounds: int) -> None:
    runs: dict[str, list[dict[str, dict[str, float]]]] = {"old": [], "new": []}
    for _ in range(rounds):
        for label, source in (("old", old), ("new", new)):
            out = subprocess.run(
                [sys.executable, __file__, "measure", str(folder)],
                env={**os.environ, "PYTHONPATH": source},
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            runs[label].append(json.loads(out.strip().splitlines()[-1]))
            print(label, runs[label][-1], flush=True)
    for label, found in runs.items():
        summary = {
            name: {
                stat: round(statistics.median(r[name][stat] for r in found), 2)
                for stat in ("p50", "p95")
            }
            for name in found[0]
        }
        print("median of rounds", label, json.dumps(summary))


if __name__ == "__main__":
    verb, where = sys.argv[1], Path(sys.argv[2])
    if verb == "build":
        build(where, int(sys.argv[3]) if len(sys.argv) > 3 else 3000)
    elif verb == "measure":
        measure(where)
    elif verb == "drop":
        from recuerdo.store.postgres import PostgresStore

        PostgresStore(os.environ["ASK_TIMES_PG_URL"], PG_MEMORY).drop()
    else:
        alternate(where, sys.argv[3], sys.argv[4], int(sys.argv[5]) if len(sys.argv) > 5 else 3)
