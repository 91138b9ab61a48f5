"""The cost of a read of one project's notes of ``user`` (decision 0148, its review; m046).

    python benchmarks/note_projects.py build  --name NAME [--notes 50000] [--database-url URL]
    python benchmarks/note_projects.py measure --name NAME [--calls 200] [--database-url URL]

``build`` saves ``--notes`` notes of ``user``, each of one of 20 projects: ``five`` holds 5%,
and the project ``empty`` none. ``measure`` prints p50 and p95 of ``recent(scope=user,
project=...)`` (16 KiB) and ``search("zebra", scope=user, project=...)`` (every note holds the
word) with no project, the project holding none and the one holding 5%, and of a search with a
tag keeping none (the cost any selective filter has). A memory in ``--base`` (SQLite), else on
``--database-url`` (PostgreSQL). To compare two versions, build with the older (a store it
wrote, opened by the newer, is migrated), copy it, and run ``measure`` with each version's
``PYTHONPATH`` in turn, alternating.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from typing import Any

import recuerdo


def _open(args: argparse.Namespace) -> recuerdo.Memory:
    os.environ["RECUERDO_EMBEDDER"] = "none"
    if args.database_url:
        return recuerdo.open(args.name, url=args.database_url)
    return recuerdo.open(args.name, base_dir=args.base)


def build(args: argparse.Namespace) -> None:
    rng = random.Random(7)
    words = [f"w{i}" for i in range(3000)]
    started = time.perf_counter()
    with _open(args) as memory:
        for i in range(args.notes):
            project = "five" if i % 20 == 0 else f"p{i % 20}"
            text = " ".join(rng.choice(words) for _ in range(40)) + " zebra"
            memory.save(f"note {i}", text, project=project)
        memory._upkeep.drain()
    print(f"built {args.notes} notes in {time.perf_counter() - started:.1f} s")


def _timed(call: Any, calls: int) -> str:
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    times = sorted(times[2:])
    p50, p95 = times[len(times) // 2] * 1000, times[int(len(times) * 0.95)] * 1000
    return f"p50 {p50:7.2f} p95 {p95:7.2f} ms"


def measure(args: argparse.Namespace) -> None:
    with _open(args) as memory:
        for label, project in (("no project", None), ("none", "empty"), ("5%", "five")):
            print(
                f"recent {label:10}",
                _timed(
                    lambda p=project: memory.recent(scope="user", project=p, max_bytes=16384),
                    args.calls,
                ),
            )
            print(
                f"search {label:10}",
                _timed(
                    lambda p=project: memory.search("zebra", scope="user", project=p),
                    max(args.calls // 4, 10),
                ),
            )
        print(
            "search tag none ",
            _timed(
                lambda: memory.search("zebra", scope="user", tags=["nope"]),
                max(args.calls // 4, 10),
            ),
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=["build", "measure"])
    parser.add_argument("--name", default="projects")
    parser.add_argument("--notes", type=int, default=50_000)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--base", default=".")
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()
    (build if args.mode == "build" else measure)(args)


if __name__ == "__main__":
    main()
