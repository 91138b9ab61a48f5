"""The peers' workload, driven through recuerdo's own MCP tools with the official client.

    python benchmarks/mcp_workload.py [--data ../shared/data/locomo/locomo10.json]
                                      [--sizes 1000 10000] [--queries 200] [--out DIR]

Issue 17, item 9 compared memory servers on one workload; this script runs it against a real
``recuerdo serve`` (default embedder, single-user loopback mode) over MCP (streamable HTTP, one
session), growing one memory to each size in turn:

* LoCoMo turns are saved as notes (tool ``save``: the speaker and turn as the title, the text as
  the content); past the 5,882 turns they come round again with a suffix. ``write`` p50/p95 is
  taken over the writes that brought the memory to this size;
* 200 queries of one or two words, each taken from a stored note (words of four letters or more):
  ``search`` p50/p95; the CPU time each search cost the server and the client (the official
  client checks every reply against the tool's outputSchema), figures that move far less with
  the machine's load than the latencies do; and ``source_top10``: how many of the 200 have
  their source note in the first 10 results. The same queries are answered, over the same
  notes, by two baselines in this process: ``plain_bm25_top10`` (an FTS5 table with its
  default tokenizer, the words ANDed, ordered by ``bm25()``, as basic-memory searches) and
  ``substring_top10`` (the notes holding the query as written, in the order they were stored,
  as the reference MCP memory server does);
* 200 reads (tool ``get``) of stored notes: p50;
* ``backlog_s``: after the last write, how long until ``index_status`` shows every chunk embedded;
* the server's peak RSS (``VmHWM``), and the store on disk against the text saved: right after
  the reads (``store_vs_text``, the write-ahead log at its high mark) and once the server has
  been idle long enough for its upkeep to give the log's space back (``store_at_rest_vs_text``,
  decision 0185; at most ``REST_WAIT_S`` is waited).

LoCoMo is CC BY-NC 4.0: evaluation only; nothing of it is written into the project. Prints a
table and writes ``mcp_workload.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import RESULTS, cpu_seconds, percentiles, print_table, write_json
from doors import start_server, stop
from locomo import DEFAULT_DATA, turns_of

TARGETS = {
    "search_p50_ms": ("<=", 5.0),
    "search_p95_ms": ("<=", 15.0),
    "server_peak_rss_mib": ("<=", 200.0),
    "store_vs_text": ("<=", 5.0),
    "store_at_rest_vs_text": ("<=", 5.0),
    "backlog_s": ("<=", 30.0),
}
WORD = re.compile(r"[A-Za-z]{4,}")


def notes_from(data: Path) -> list[tuple[str, str]]:
    """(title, content) of every LoCoMo turn, in order."""
    conversations = json.loads(data.read_text())
    found = []
    for conversation in conversations:
        for turn in turns_of(conversation):
            found.append((f"{turn['speaker']} {turn['ref']}", turn["text"]))
    return found


def note_at(turns: list[tuple[str, str]], n: int) -> tuple[str, str]:
    title, text = turns[n % len(turns)]
    rounds = n // len(turns)
    return (f"{title} #{rounds}", f"{text} (again {rounds})") if rounds else (title, text)


def queries_of(
    rng: random.Random, stored: list[tuple[str, str]], count: int
) -> list[tuple[str, int]]:
    """(query, index of its source note) for ``count`` random stored notes with usable words."""
    picked: list[tuple[str, int]] = []
    while len(picked) < count:
        index = rng.randrange(len(stored))
        words = WORD.findall(stored[index][1])
        if not words:
            continue
        if len(words) >= 2 and rng.random() < 0.5:
            first = rng.randrange(len(words) - 1)
            picked.append((f"{words[first]} {words[first + 1]}", index))
        else:
            picked.append((rng.choice(words), index))
    return picked


def plain_bm25(stored: list[tuple[str, str]], queries: list[tuple[str, int]]) -> int:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE notes USING fts5(title, content)")
    conn.executemany(
        "INSERT INTO notes (rowid, title, content) VALUES (?, ?, ?)",
        [(n, title, text) for n, (title, text) in enumerate(stored)],
    )
    found = 0
    for query, source in queries:
        expression = " ".join('"' + word.replace('"', '""') + '"' for word in query.split())
        rows = conn.execute(
            "SELECT rowid FROM notes WHERE notes MATCH ? ORDER BY bm25(notes) LIMIT 10",
            (expression,),
        ).fetchall()
        found += source in {row[0] for row in rows}
    conn.close()
    return found


def substring_scan(stored: list[tuple[str, str]], queries: list[tuple[str, int]]) -> int:
    found = 0
    lowered = [f"{title} {text}".lower() for title, text in stored]
    for query, source in queries:
        needle = query.lower()
        first = [n for n, text in enumerate(lowered) if needle in text][:10]
        found += source in first
    return found


def peak_rss(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def store_bytes(base: Path) -> int:
    return sum(p.stat().st_size for p in base.rglob("*") if p.is_file())


REST_WAIT_S = 10.0


def store_at_rest(base: Path) -> int:
    """The store's bytes once its write-ahead log is empty (an idle server's upkeep folds it),
    or after ``REST_WAIT_S``."""
    deadline = time.monotonic() + REST_WAIT_S
    while time.monotonic() < deadline:
        if not any(p.stat().st_size for p in base.rglob("*.db-wal")):
            break
        time.sleep(0.1)
    return store_bytes(base)


def run(data: Path, sizes: list[int], count: int, seed: int) -> list[dict[str, Any]]:
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    turns = notes_from(data)
    results: list[dict[str, Any]] = []

    async def call(session: ClientSession, tool: str, arguments: dict[str, Any]) -> Any:
        reply = await session.call_tool(tool, arguments)
        if reply.is_error:
            raise RuntimeError(f"{tool}: {reply.content}")
        return reply.structured_content

    async def drive(port: int, pid: int, base: Path) -> None:
        async with (
            streamable_http_client(f"http://127.0.0.1:{port}/mcp?memory=bench") as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            stored: list[tuple[str, str]] = []
            ids: list[int] = []
            for size in sizes:
                writes = []
                for n in range(len(stored), size):
                    title, text = note_at(turns, n)
                    start = time.perf_counter()
                    reply = await call(session, "save", {"title": title, "content": text})
                    writes.append(time.perf_counter() - start)
                    stored.append((title, text))
                    ids.append(int(reply["id"]))
                waited = time.perf_counter()
                while True:
                    status = await call(session, "index_status", {})
                    if not status["items_waiting"] and not status.get("chunks_waiting_for_vectors"):
                        break
                    await anyio.sleep(0.05)
                backlog = time.perf_counter() - waited
                # Each size draws from a stream of its own: `--sizes 10000` alone asks the same
                # queries and reads at 10,000 notes as `--sizes 1000 10000` does.
                rng = random.Random(f"{seed}:{size}")
                queries = queries_of(rng, stored, count)
                searches, found = [], 0
                server_cpu, client_cpu = cpu_seconds(pid), time.process_time()
                for query, source in queries:
                    start = time.perf_counter()
                    reply = await call(session, "search", {"query": query, "limit": 10})
                    searches.append(time.perf_counter() - start)
                    found += ids[source] in {hit["id"] for hit in reply["results"]}
                server_cpu = (cpu_seconds(pid) - server_cpu) / len(queries)
                client_cpu = (time.process_time() - client_cpu) / len(queries)
                reads = []
                for _ in range(count):
                    start = time.perf_counter()
                    await call(session, "get", {"id": rng.choice(ids)})
                    reads.append(time.perf_counter() - start)
                text_bytes = sum(len(t.encode()) + len(c.encode()) for t, c in stored)
                busy_store = store_bytes(base)
                rested_store = store_at_rest(base)
                write_p50, write_p95 = percentiles(writes)
                search_p50, search_p95 = percentiles(searches)
                results.append(
                    {
                        "size": size,
                        "write_p50_ms": round(write_p50, 2),
                        "write_p95_ms": round(write_p95, 2),
                        "read_p50_ms": round(percentiles(reads)[0], 2),
                        "search_p50_ms": round(search_p50, 2),
                        "search_p95_ms": round(search_p95, 2),
                        "search_server_cpu_ms": round(server_cpu * 1000, 2),
                        "search_client_cpu_ms": round(client_cpu * 1000, 2),
                        "source_top10": found,
                        "plain_bm25_top10": plain_bm25(stored, queries),
                        "substring_top10": substring_scan(stored, queries),
                        "queries": len(queries),
                        "backlog_s": round(backlog, 1),
                        "server_peak_rss_mib": peak_rss(pid),
                        "store_mib": round(busy_store / 2**20, 1),
                        "text_mib": round(text_bytes / 2**20, 2),
                        "store_vs_text": round(busy_store / text_bytes, 1),
                        "store_at_rest_mib": round(rested_store / 2**20, 1),
                        "store_at_rest_vs_text": round(rested_store / text_bytes, 1),
                        "load_average_1m": round(os.getloadavg()[0], 1),
                    }
                )

    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        process, port = start_server(tmp)
        try:
            anyio.run(drive, port, process.pid, Path(tmp))
        finally:
            stop([process])
    return results


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    if not args.data.exists():
        parser.error(f"no LoCoMo data at {args.data} (give --data)")
    results = run(args.data, sorted(args.sizes), args.queries, args.seed)
    print_table(results, TARGETS)
    write_json("mcp_workload", args.out, results, TARGETS)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
