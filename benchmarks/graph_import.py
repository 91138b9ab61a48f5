"""Graph import benchmark: a Semurg export read into a new memory, on SQLite and PostgreSQL.

    python benchmarks/graph_import.py [--entities 5000] [--facts 20000]
                                      [--database-url URL] [--out DIR]

A memory is filled with ``--facts`` relations among ``--entities`` typed entities (through
``remember_knowledge``, 300 relations a call), exported page by page, and the records are
read into a second, empty memory (``import_records``, 4,096 a call, as ``recuerdo import``
sends them). Measured: the import's records per second and the fill's, on an SQLite file and,
with ``--database-url``, on PostgreSQL, where every statement of the import is a round trip
(decision 0175). Prints a table and writes ``graph_import.json``.
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

sys.path.insert(0, str(Path(__file__).parent))
os.environ.setdefault("RECUERDO_EMBEDDER", "none")  # the graph, not the model, is measured
import recuerdo
from _common import RESULTS, write_json

RELATIONS = ["knows", "works_with", "advises", "funds"]
TARGETS = {"import_records_per_s": (">=", 5_000.0)}


def opened(base: Path, name: str, url: str | None) -> tuple[recuerdo.Memory, Any]:
    if url is None:
        return recuerdo.open(name, base_dir=base, embedder="none"), None
    from recuerdo.store.postgres import PostgresStore

    store = PostgresStore(url, name)
    return recuerdo.open(name, store=store, embedder="none"), store


def run(backend: str, entities: int, facts: int, url: str | None, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    names = [f"Entity {n} {rng.randrange(10**6)}" for n in range(entities)]
    relations = [
        {"source": rng.choice(names), "target": rng.choice(names), "type": rng.choice(RELATIONS)}
        for _ in range(facts)
    ]
    suffix = rng.randrange(10**9)
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        source, source_store = opened(Path(tmp), f"gi_source_{suffix}", url)
        target, target_store = opened(Path(tmp), f"gi_target_{suffix}", url)
        try:
            start = time.perf_counter()
            for first in range(0, facts, 300):
                batch = relations[first : first + 300]
                named = {r[end] for r in batch for end in ("source", "target")}
                source.remember_knowledge(
                    facts={
                        "entities": [{"name": name, "type": "person"} for name in named],
                        "relations": batch,
                    }
                )
            fill = time.perf_counter() - start
            records, cursor = [], None
            while True:
                page = source.export(cursor=cursor, limit=1024)
                records += page["records"]
                cursor = page.get("next")
                if cursor is None:
                    break
            start = time.perf_counter()
            for first in range(0, len(records), 4096):
                reply = target.import_records(records[first : first + 4096])
                assert not [s for s in reply["skipped"] if "malformed" in s["why"]], reply
            took = time.perf_counter() - start
        finally:
            for memory, store in ((source, source_store), (target, target_store)):
                memory.close()
                if store is not None:
                    store.drop()
    return {
        "backend": backend,
        "records": len(records),
        "fill_facts_per_s": round(facts / fill),
        "import_s": round(took, 2),
        "import_records_per_s": round(len(records) / took),
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entities", type=int, default=5000)
    parser.add_argument("--facts", type=int, default=20000)
    parser.add_argument("--database-url", default=os.environ.get("RECUERDO_DATABASE_URL"))
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    results = [run("sqlite", args.entities, args.facts, None, args.seed)]
    if args.database_url:
        results.append(run("postgres", args.entities, args.facts, args.database_url, args.seed))
    keys = list(results[0])[1:]
    print(f"{'metric':<22}" + "".join(f"{r['backend']:>12}" for r in results) + "  target")
    for key in keys:
        aim = TARGETS.get(key)
        shown = "".join(
            f"{r[key]:>12,}" if isinstance(r[key], int) else f"{r[key]:>12}" for r in results
        )
        print(f"{key:<22}{shown}  {'' if aim is None else f'{aim[0]} {aim[1]:,.0f}'}")
    write_json("graph_import", args.out, results, TARGETS)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
