"""What an MCP search costs the server beyond the verb, measured in process (CPU time).

    python benchmarks/mcp_door.py [--data ../shared/data/locomo/locomo10.json] [--notes 10000]
                                  [--queries 200] [--rounds 5] --store DIR [--profile]

``mcp_workload.py`` times the whole server over a socket, where the machine's load moves the
figures; this script drives the application ``recuerdo serve`` runs (the guard, ``/mcp``, the
MCP SDK's stateless transport, our tools) with ASGI messages, as uvicorn would hand them over,
and counts the process's CPU per request. Each of the same searches (``mcp_workload``'s
queries) goes three ways in turn, so that the machine's load weighs on all three alike:

* ``verb``: ``Verb.call`` on the memory view a door makes (argument checks and the search);
* ``gateway``: ``gateway.call``, what the MCP tool runs in its worker thread (argument
  translation, reach and tenant checks, the view, the verb);
* ``mcp``: a whole ``tools/call`` request on ``/mcp``, its reply read back.

``door_ms`` is ``mcp - verb``, query by query: what a request costs beyond the search. Of
``mcp``, by thread: the event loop's (``mcp_loop_cpu_ms``) and the verb's worker thread's
(``mcp_worker_cpu_ms``); ``upkeep_cpu_ms`` is the upkeep thread's CPU a search (reads' audit
records; it runs beside all three ways). The loop is uvloop when installed, as uvicorn runs
it. ``--profile`` then profiles the ``mcp`` requests (the event loop's thread, in CPU time)
and prints whose code its time goes to: ours, the SDK's, anyio's, the event loop's (inflated
by the profiler, the SDK's many small calls most). The store (``--notes`` LoCoMo turns saved
as notes) is made once in ``--store`` and reused. Prints a table and writes
``mcp_door.json``.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import RESULTS, print_table, threads_cpu_ns, write_json
from locomo import DEFAULT_DATA
from mcp_workload import note_at, notes_from, queries_of

# The body given once, as the door replays it (a private name of the door: read at import, not
# in the measured requests).
from recuerdo.doors.mcp_http import _replaying

HEADERS = [
    (b"host", b"127.0.0.1:7700"),
    (b"accept", b"application/json, text/event-stream"),
    (b"content-type", b"application/json"),
    (b"mcp-protocol-version", b"2025-11-25"),
]


def make_store(store: Path, data: Path, count: int) -> Path:
    """The folder in ``store`` holding the memory ``bench`` of the first ``count`` notes, made
    once: each count has its own, and one is renamed into place only once it is whole, so an
    interrupted build is made again rather than saved on top of."""
    from recuerdo.engine import open_memory

    made = store / f"notes-{count}"
    if made.is_dir():
        return made
    if made.exists():  # the marker of the layout before each count had its folder
        raise SystemExit(f"{made} is a file from an older layout of --store: give a new folder")
    building = Path(tempfile.mkdtemp(dir=store))
    try:
        memory = open_memory("bench", base_dir=building)
        for title, text in stored_notes(data, count):
            memory.save(title=title, content=text)
        memory.close()  # the index upkeep finishes first: every note embedded
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    building.rename(made)
    return made


def stored_notes(data: Path, count: int) -> list[tuple[str, str]]:
    turns = notes_from(data)
    return [note_at(turns, n) for n in range(count)]


def workload_queries(data: Path, notes: int, seed: int, count: int) -> list[str]:
    """The workload's queries over its first ``notes`` notes, as ``mcp_workload.py`` draws them."""
    drawn = queries_of(random.Random(f"{seed}:{notes}"), stored_notes(data, notes), count)
    return [query for query, _source in drawn]


async def asgi_post(app: Any, body: bytes) -> bytes:
    parts: list[bytes] = []
    status: list[int] = []

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])
        else:
            parts.append(message.get("body", b""))

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "root_path": "",
        "query_string": b"memory=bench",
        "headers": [*HEADERS, (b"content-length", str(len(body)).encode())],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 7700),
        "state": {},
    }
    await app(scope, _replaying(body), send)
    if status != [200]:
        raise RuntimeError(f"status {status}: {b''.join(parts)[:300]!r}")
    return b"".join(parts)


def call_body(n: int, query: str) -> bytes:
    request = {
        "jsonrpc": "2.0",
        "id": n,
        "method": "tools/call",
        "params": {"name": "search", "arguments": {"query": query, "limit": 10}},
    }
    return json.dumps(request).encode()


# Who a function's own time is charged to, by where it is defined; a function of none of
# these (pydantic, json, the standard library, builtins) is charged to its callers.
OWNERS = (
    ("recuerdo/doors/", "ours: door"),
    ("recuerdo/", "ours: below the door"),
    ("mcp_types/", "sdk"),
    ("/mcp/", "sdk"),
    ("/anyio/", "anyio"),
    ("asyncio/", "event loop"),
    ("uvloop", "event loop"),
    ("/starlette/", "starlette"),
    ("mcp_door.py", "this script"),
)
IDLE = ("poll", "select", "run_forever")


def owner_of(function: tuple[str, int, str]) -> str | None:
    filename = function[0]
    for marker, name in OWNERS:
        if marker in filename:
            return name
    return None


def charged(raw: dict[Any, Any]) -> dict[str, float]:
    """Each function's own time, charged to its owner (else to its callers' owners, in
    proportion to the time it spent for each)."""
    shares: dict[Any, dict[str, float]] = {}

    def share(function: Any, seen: frozenset[Any]) -> dict[str, float]:
        if function in shares:
            return shares[function]
        owner = owner_of(function)
        if owner is not None:
            return {owner: 1.0}
        callers = raw[function][4] if function in raw else {}
        weights = {c: edge[2] or edge[0] * 1e-9 for c, edge in callers.items() if c not in seen}
        total = sum(weights.values())
        if not total:
            return {"unattributed": 1.0}
        mixed: dict[str, float] = defaultdict(float)
        for caller, weight in weights.items():
            for name, part in share(caller, seen | {function}).items():
                mixed[name] += part * weight / total
        shares[function] = dict(mixed)
        return shares[function]

    by_owner: dict[str, float] = defaultdict(float)
    for function, (_cc, _nc, tottime, _cum, _callers) in raw.items():
        if any(word in function[2] for word in IDLE):
            continue  # waiting for the worker thread, not work
        for name, part in share(function, frozenset()).items():
            by_owner[name] += tottime * part
    return by_owner


def print_profile(profile: cProfile.Profile, requests: int) -> None:
    """The event loop thread's time a request by owner (profiled: every figure inflated by
    the profiler, the SDK's many small calls most), then the costliest functions."""
    stats = pstats.Stats(profile)
    by_owner = charged(stats.stats)  # type: ignore[attr-defined]
    total = sum(by_owner.values())
    print(f"event loop thread, profiled: {total / requests * 1000:.3f} ms a request")
    for name, seconds in sorted(by_owner.items(), key=lambda item: -item[1]):
        print(f"  {name:24} {seconds / requests * 1000:7.3f} ms  {seconds / total:6.1%}")
    stats.sort_stats("tottime").print_stats(30)


def thread_cpu() -> dict[str, float]:
    """CPU seconds so far of this process's threads, summed by name (Linux: empty elsewhere)."""
    names = {str(thread.native_id): thread.name for thread in threading.enumerate()}
    spent: dict[str, float] = defaultdict(float)
    for tid, nanoseconds in threads_cpu_ns().items():
        spent[names.get(tid, "other")] += nanoseconds / 1e9
    return spent


def uvloop_here() -> bool:
    """Whether uvicorn would run the server on uvloop (its default when installed)."""
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return False
    return True


def run(args: argparse.Namespace) -> dict[str, Any]:
    import anyio

    from recuerdo.doors import gateway
    from recuerdo.doors.http import ServerConfig, create_app, wrap
    from recuerdo.doors.profiles import profile
    from recuerdo.security.tokens import LOCAL
    from recuerdo.verbs import VERBS

    store = make_store(args.store, args.data, args.notes)
    queries = workload_queries(args.data, args.notes, args.seed, args.queries)
    config = ServerConfig(base_dir=str(store), default_memory="bench")
    fastapi = create_app(config)
    app = wrap(fastapi, config)
    entry = next(tool for tool in profile("native") if tool.name == "search")
    samples: dict[str, list[float]] = defaultdict(list)

    async def drive() -> None:
        async with fastapi.router.lifespan_context(fastapi):
            pool = fastapi.state.pool
            view = pool.get("bench").for_principal("main", LOCAL.tenant, owner=True)
            search = VERBS["search"]
            for n, query in enumerate(queries[:20]):  # the SDK's import and build, caches
                await asgi_post(app, call_body(n, query))

            # Each query goes the three ways one after the other, so that the machine's load
            # (it moves CPU times by more than the door costs) weighs on all three alike; the
            # first way a query goes finds its pages colder, so each way goes first in turn.
            async def way(name: str, n: int, query: str) -> None:
                arguments = {"query": query, "limit": 10}
                if name == "verb":
                    search.call(view, arguments)
                elif name == "gateway":
                    gateway.call(pool, LOCAL, None, entry, arguments)
                else:
                    reply = json.loads(await asgi_post(app, call_body(n, query)))
                    if reply["result"].get("isError"):
                        raise RuntimeError(reply)

            ways = ("verb", "gateway", "mcp")
            for _ in range(args.rounds):
                spent: dict[str, float] = defaultdict(float)
                threads_before = thread_cpu()
                for n, query in enumerate(queries):
                    for name in ways[n % 3 :] + ways[: n % 3]:
                        start, loop_start = time.process_time(), time.thread_time()
                        await way(name, n, query)
                        spent[name] += time.process_time() - start
                        if name == "mcp":
                            spent["loop"] += time.thread_time() - loop_start
                threads = thread_cpu()
                for name, seconds in threads.items():
                    seconds -= threads_before.get(name, 0.0)
                    if name == "recuerdo-upkeep":  # each way's search gives it its audit
                        spent["upkeep"] += seconds / 3
                    elif name == "AnyIO worker thread":  # the mcp way's verb, and its door
                        spent["worker"] += seconds
                for name, seconds in spent.items():
                    samples[name].append(seconds / len(queries))
                samples["door"].append((spent["mcp"] - spent["verb"]) / len(queries))
            if args.profile:
                profiler = cProfile.Profile(time.thread_time_ns, 1e-9)  # CPU, not waits
                profiler.enable()
                for n, query in enumerate(queries):
                    await asgi_post(app, call_body(n, query))
                profiler.disable()
                Path(args.out).mkdir(parents=True, exist_ok=True)
                profiler.dump_stats(Path(args.out) / "mcp_door.prof")
                print_profile(profiler, len(queries))

    anyio.run(drive, backend_options={"use_uvloop": uvloop_here()})
    median = {name: statistics.median(values) * 1000 for name, values in samples.items()}
    return {
        "size": args.notes,
        "verb_cpu_ms": round(median["verb"], 3),
        "gateway_cpu_ms": round(median["gateway"], 3),
        "mcp_cpu_ms": round(median["mcp"], 3),
        "mcp_loop_cpu_ms": round(median["loop"], 3),
        "mcp_worker_cpu_ms": round(median.get("worker", float("nan")), 3),
        "upkeep_cpu_ms": round(median.get("upkeep", float("nan")), 3),
        "door_ms": round(median["door"], 3),
        "rounds": args.rounds,
        "load_average_1m": round(os.getloadavg()[0], 1),
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--notes", type=int, default=10000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    if not args.data.exists():
        parser.error(f"no LoCoMo data at {args.data} (give --data)")
    args.store.mkdir(parents=True, exist_ok=True)
    result = run(args)
    print_table([result], {})
    write_json("mcp_door", args.out, [result], {})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
