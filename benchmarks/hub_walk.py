"""Context packs over a hub note of 40,000 links, on SQLite and PostgreSQL.

    python benchmarks/hub_walk.py [--links 40000] [--calls 20] [--rounds 4]
        [--database-url URL] [--compare-src OLD/src]

A leaf note copied ``--links`` times, each copy linked from a hub note (as in
tests/test_context_counts.py), the indexes caught up, then
``context("lighthouse", depth=2, budget_tokens=200)`` and at ``depth=1`` and the default
budget, timed p50/p95. Each backend's memory is built once; the
calls run in a child process per source tree, and with ``--compare-src`` (the ``src`` folder of
another checkout, e.g. a ``git worktree`` of main) the two trees take turns, ``--rounds``
times, so that the machine's load hits both alike; each also prints the pack's source ids, which
must match. PostgreSQL is the server at ``--database-url`` (else ``$RECUERDO_DATABASE_URL``,
else CI's cluster on port 5433). Prints a table and writes ``hub_walk.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import RESULTS, percentile

os.environ.setdefault("RECUERDO_EMBEDDER", "none")  # the walk, not the model, is measured
TARGET_MS = 50.0  # "tens of milliseconds" for a pack over the hub, p50, both backends
CI_URL = "postgresql://recuerdo:recuerdo@localhost:5433/recuerdo_ci"
CALLS = (
    ("depth2_budget200", {"depth": 2, "budget_tokens": 200}),
    ("depth1_budget4000", {"depth": 1}),
)


def build(mem: Any, links: int) -> None:
    leaf = mem.save("Leaf note", "A keeper's log.")["id"]
    with mem._store.write() as tx:  # in bulk: the verbs would take minutes
        row = tx.one("SELECT * FROM items WHERE id = ?", [leaf])
        columns = [c for c in row.keys() if c not in ("id", "title")]  # noqa: SIM118
        last = links - 1
        count = f"WITH RECURSIVE n(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM n WHERE k < {last})"
        tx.execute(
            f"INSERT INTO items ({', '.join(columns)}, title) {count}"
            f" SELECT {', '.join('i.' + c for c in columns)}, 'Copy ' || n.k"
            " FROM items i, n WHERE i.id = ?",
            [leaf],
        )
    hub = mem.save("Hub note", "The hub of the lighthouse keepers.")["id"]
    mem.link(hub, leaf)
    with mem._store.write() as tx:
        tx.execute(
            "INSERT INTO links (tenant, from_id, to_id, type, origin, created_at)"
            " SELECT tenant, ?, id, 'related', 'explicit', created_at FROM items"
            " WHERE tenant = ? AND title LIKE 'Copy %'",
            [hub, row["tenant"]],
        )
    # the indexes caught up, as in a memory at rest: else each search reads the 40,000
    # unindexed copies, and that, not the walk, is what would be timed
    mem._upkeep.drain()
    if mem._store.dialect == "postgres":
        with mem._store.write() as tx:
            tx.execute("ANALYZE links")
            tx.execute("ANALYZE items")


def child(backend: str, where: str, calls: int) -> dict[str, Any]:
    """In the child process: the timings of each call, and the ids it packed."""
    import recuerdo

    if backend == "sqlite":
        mem = recuerdo.open("hub", base_dir=where)
    else:
        from recuerdo.store.postgres import PostgresStore

        mem = recuerdo.open("hub", store=PostgresStore(where, "hub_walk_bench"))
    out: dict[str, Any] = {}
    with mem:
        mem.context("lighthouse", depth=2, budget_tokens=200)  # warm: caches, prepared plans
        for name, args in CALLS:
            samples, ids = [], []
            for _ in range(calls):
                start = time.perf_counter()
                reply = mem.context("lighthouse", **args)
                samples.append(time.perf_counter() - start)
                ids = [s["id"] for s in reply["sources"]]
            out[name] = {"samples": samples, "ids": ids, "truncated": reply["truncated"]}
    return out


def timed(src: str, backend: str, where: str, calls: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": src}
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import hub_walk;"
        " print(json.dumps(hub_walk.child(sys.argv[2], sys.argv[3], int(sys.argv[4]))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(Path(__file__).parent), backend, where, str(calls)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--links", type=int, default=40_000)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--database-url", default=os.environ.get("RECUERDO_DATABASE_URL", CI_URL))
    parser.add_argument("--compare-src", default=None, help="another checkout's src, alternated")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    import recuerdo
    from recuerdo.store.postgres import PostgresStore

    ours = str(Path(__file__).resolve().parent.parent / "src")
    trees = {"new": ours, **({"old": args.compare_src} if args.compare_src else {})}
    samples: dict[tuple[str, str, str], list[float]] = {}
    packed: dict[tuple[str, str, str], Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for backend in args.backends.split(","):
            if backend == "sqlite":
                where = tmp
                with recuerdo.open("hub", base_dir=tmp) as mem:
                    build(mem, args.links)
            else:
                where = args.database_url
                PostgresStore(where, "hub_walk_bench").drop()  # one an interrupted run left
                with recuerdo.open("hub", store=PostgresStore(where, "hub_walk_bench")) as mem:
                    build(mem, args.links)
            try:
                for _ in range(args.rounds):
                    for tree, src in trees.items():
                        for name, got in timed(src, backend, where, args.calls).items():
                            samples.setdefault((backend, tree, name), []).extend(got["samples"])
                            packed[(backend, tree, name)] = (got["ids"], got["truncated"])
            finally:
                if backend != "sqlite":
                    PostgresStore(where, "hub_walk_bench").drop()
    results = []
    for (backend, tree, name), got in samples.items():
        ids, truncated = packed[(backend, tree, name)]
        same = packed.get((backend, "old", name), (ids, truncated)) == (ids, truncated)
        results.append(
            {
                "backend": backend,
                "tree": tree,
                "call": name,
                "p50_ms": round(statistics.median(got) * 1000, 1),
                "p95_ms": round(percentile(got, 0.95), 1),
                "sources": len(ids),
                "truncated": truncated,
                "same_pack_as_old": same,
            }
        )
    print(f"\nhub of {args.links:,} links, {args.rounds} rounds x {args.calls} calls per tree")
    print(f"{'backend':<9}{'tree':<5}{'call':<19}{'p50 ms':>8}{'p95 ms':>8}  sources  same  target")
    for r in results:
        met = "met" if r["p50_ms"] <= TARGET_MS else "MISSED"
        print(
            f"{r['backend']:<9}{r['tree']:<5}{r['call']:<19}{r['p50_ms']:>8}{r['p95_ms']:>8}"
            f"  {r['sources']:>7}  {r['same_pack_as_old']!s:<5} p50 <= {TARGET_MS} {met}"
        )
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "hub_walk.json"
    path.write_text(
        json.dumps({"links": args.links, "target_p50_ms": TARGET_MS, "results": results}, indent=2)
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
