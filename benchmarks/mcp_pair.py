"""Two servers' MCP searches side by side: the code of two source trees, in the same moments.

    python benchmarks/mcp_pair.py --src OLD_SRC --src NEW_SRC --store DIR [--rounds 8]
                                  [--data ../shared/data/locomo/locomo10.json] [--notes 10000]

On a machine shared with other jobs, CPU times move with the load by more than a door's change
costs, so two runs of ``mcp_workload.py`` one after the other compare two loads as much as two
codes. Here a ``recuerdo serve`` is started from each source tree (``PYTHONPATH``), each on its
own copy of the store ``mcp_door.py`` makes in ``--store``, and one official MCP client sends
``mcp_workload``'s queries to both, query by query, the order alternating. For each round of
the queries and each server: its CPU per search (every thread), its event loop thread's share
(``loop``), and the searches' p50/p95. Prints the rounds, their medians and the CPU's mean over
every round (``pooled``: a round's process CPU is whole 10 ms clock ticks, and over the rounds
their edges fall anywhere); writes ``mcp_pair.json``. The process's own count keeps what ended
threads spent: CPU figures from before it (a sum over the living threads) are not comparable.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import RESULTS, cpu_seconds, percentiles, threads_cpu_ns, write_json
from doors import start_server, stop
from locomo import DEFAULT_DATA
from mcp_door import make_store, workload_queries


def cpu_ns(pid: int) -> tuple[int, int]:
    """(the process's, its main thread's) CPU nanoseconds so far. The whole is the process's
    own count, which keeps what threads that have ended spent (the upkeep's worker and the
    SDK's ends after a pause); a sum over the living threads lost it. It counts clock ticks
    (10 ms): 0.05 ms a search over a round of 200."""
    return round(cpu_seconds(pid) * 1e9), threads_cpu_ns(pid).get(str(pid), 0)


def run(args: argparse.Namespace, work: Path) -> list[dict[str, Any]]:
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    store = make_store(args.store, args.data, args.notes)
    queries = workload_queries(args.data, args.notes, args.seed, args.queries)
    servers = []
    try:
        for n, src in enumerate(args.src):
            copy = work / f"store{n}"
            shutil.copytree(store, copy)
            servers.append(start_server(str(copy), env={"PYTHONPATH": src}))
        rows: list[dict[str, Any]] = [{"src": src, "rounds": []} for src in args.src]

        async def drive() -> None:
            from contextlib import AsyncExitStack

            async with AsyncExitStack() as stack:
                sessions = []
                for _process, port in servers:
                    url = f"http://127.0.0.1:{port}/mcp?memory=bench"
                    streams = await stack.enter_async_context(streamable_http_client(url))
                    session = await stack.enter_async_context(ClientSession(streams[0], streams[1]))
                    await session.initialize()
                    for query in queries[:30]:  # imports, caches, the first snapshot
                        await session.call_tool("search", {"query": query, "limit": 10})
                    sessions.append(session)
                for round_number in range(args.rounds):
                    before = [cpu_ns(process.pid) for process, _port in servers]
                    waits: list[list[float]] = [[] for _ in servers]
                    order = list(range(len(servers)))
                    for n, query in enumerate(queries):
                        for side in order if n % 2 == 0 else order[::-1]:
                            start_at = time.perf_counter()
                            reply = await sessions[side].call_tool(
                                "search", {"query": query, "limit": 10}
                            )
                            waits[side].append(time.perf_counter() - start_at)
                            if reply.is_error:
                                raise RuntimeError(reply.content)
                    shown = []
                    load = os.getloadavg()[0]
                    for side, (process, _port) in enumerate(servers):
                        total, main = cpu_ns(process.pid)
                        p50, p95 = percentiles(waits[side])
                        figures = {
                            "cpu_ms": (total - before[side][0]) / len(queries) / 1e6,
                            "loop_cpu_ms": (main - before[side][1]) / len(queries) / 1e6,
                            "p50_ms": p50,
                            "p95_ms": p95,
                            "load_average_1m": load,
                        }
                        rows[side]["rounds"].append(figures)
                        shown.append(
                            f"CPU {figures['cpu_ms']:.3f} (loop {figures['loop_cpu_ms']:.3f}) "
                            f"p50 {p50:.2f} p95 {p95:.2f}"
                        )
                    print(
                        f"round {round_number}: " + " | ".join(shown),
                        f"| load {load:.1f}",
                        flush=True,
                    )

        anyio.run(drive)
    finally:
        stop(process for process, _port in servers)
    for row in rows:
        for key in ("cpu_ms", "loop_cpu_ms", "p50_ms", "p95_ms"):
            row[f"median_{key}"] = round(statistics.median(r[key] for r in row["rounds"]), 3)
        row["pooled_cpu_ms"] = round(statistics.fmean(r["cpu_ms"] for r in row["rounds"]), 3)
    return rows


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", action="append", required=True, help="a source tree (twice)")
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--notes", type=int, default=10000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    if len(args.src) != 2:
        parser.error("give --src exactly twice: the old tree, then the new")
    if not args.data.exists():
        parser.error(f"no LoCoMo data at {args.data} (give --data)")
    args.store.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        rows = run(args, Path(tmp))
    for row in rows:
        medians = ", ".join(f"{k[7:]} {v}" for k, v in row.items() if k.startswith("median_"))
        print(f"{row['src']}: medians {medians}; pooled cpu_ms {row['pooled_cpu_ms']}")
    write_json("mcp_pair", args.out, rows, {})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
