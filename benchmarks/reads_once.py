"""Verbs that did work more often than their answer needs, against the code before (``--old``):
``add_messages`` appending to a long conversation whose turns carry refs, ``session_end`` with
a summary, ``send_message`` with a scope, ``search`` (the query's words read once).

    python benchmarks/reads_once.py --old /path/to/old/src [--turns 5000] [--notes 10000]
        [--calls 200] [--rounds 4]

A memory is built once with this checkout (no embedder: what differs is reading, not meaning):
a conversation of ``--turns`` turns with refs, ``--notes`` notes, two agents with addresses.
Each round runs one new process per code, alternating which goes first; each process copies
the memory and times ``--calls`` calls of each verb (p50 in microseconds). The median of the
rounds' p50 is printed per verb and code.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

NEW = Path(__file__).resolve().parent.parent / "src"
QUERY = "when did the harbour crew repair the north pier lights"


def build(base: Path, turns: int, notes: int) -> None:
    import recuerdo

    with recuerdo.open("bench", base_dir=base, embedder="none") as memory:
        for start in range(0, turns, 1000):
            memory.add_messages(
                "standup",
                [
                    {"speaker": "ana" if n % 2 else "bo", "text": f"turn {n} of the standup",
                     "ref": f"t{n}"}
                    for n in range(start, min(turns, start + 1000))
                ],
            )  # fmt: skip
        words = ["harbour", "crew", "pier", "lights", "repair", "north", "tide", "boat", "rope"]
        memory.remember_many(
            [
                {"category": "context",
                 "content": f"note {n}: the {words[n % 9]} and the {words[(n * 7) % 9]} "
                 f"on day {n % 365}"}
                for n in range(notes)
            ]
        )  # fmt: skip
        alice, bob = memory.agent("alice"), memory.agent("bob")
        alice.bind_address("alice@local")
        bob.bind_address("bob@local")
        memory._upkeep.drain()


def child(base: Path, calls: int) -> dict[str, float]:
    import recuerdo

    out: dict[str, float] = {}

    def timed(verb: str, calls_of: Any) -> None:
        """p50 of the wall time and of this thread's CPU time (what waiting for the disk or
        for another process's turn on a shared machine leaves out), in microseconds."""
        wall, cpu = [], []
        for n in range(calls):
            prepare, call = calls_of(n)
            prepare()
            start, start_cpu = time.perf_counter(), time.thread_time()
            call()
            cpu.append(time.thread_time() - start_cpu)
            wall.append(time.perf_counter() - start)
        out[f"{verb} wall"] = statistics.median(wall) * 1e6
        out[f"{verb} cpu"] = statistics.median(cpu) * 1e6

    def nothing() -> None:
        pass

    with recuerdo.open("bench", base_dir=base, embedder="none") as memory:
        memory._upkeep.stop(drain=False)  # the indexes' work is not what is timed
        alice = memory.agent("alice")
        timed("add_messages", lambda n: (nothing, lambda: memory.add_messages(
            "standup", [{"speaker": "ana", "text": f"a later turn {n}", "ref": f"late{n}"}]
        )))  # fmt: skip
        timed("session_end", lambda n: (
            lambda: memory.session_start(f"s{n}", project="shop"),
            lambda: memory.session_end(f"s{n}", summary=f"session {n} shipped the pier lights"),
        ))  # fmt: skip
        timed("send_message", lambda n: (nothing, lambda: alice.send_message(
            ["bob@local"], f"Plan {n}", "Friday?", scope="project:x"
        )))  # fmt: skip
        timed("search", lambda n: (nothing, lambda: memory.search(QUERY, stages=["lexical"])))
    return out


def words_alone(rounds: int = 7, n: int = 20_000) -> dict[str, float]:
    """The query's words as the search read them before (three readings) and now (one), in
    this process: microseconds per search."""
    import timeit

    from recuerdo.index import words

    def before() -> None:
        words.terms(QUERY)
        words.written_words(QUERY)
        len(words._distinct_terms(QUERY)) > words.MAX_TERMS  # noqa: B015 - what it computed

    now = min(timeit.repeat(lambda: words.query_words(QUERY), number=n, repeat=rounds)) / n
    old = min(timeit.repeat(before, number=n, repeat=rounds)) / n
    return {"three readings": old * 1e6, "one reading": now * 1e6}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--old", type=Path)
    parser.add_argument("--turns", type=int, default=5000)
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--child", type=Path)
    options = parser.parse_args()
    if options.child:
        print(json.dumps(child(options.child, options.calls)))
        return
    sys.path.insert(0, str(NEW))
    for name, value in words_alone().items():
        print(f"query words, {name}: {value:.1f} us")
    with tempfile.TemporaryDirectory() as folder:
        built = Path(folder) / "built"
        start = time.perf_counter()
        build(built, options.turns, options.notes)
        print(f"built in {time.perf_counter() - start:.1f} s")
        codes = {"old": options.old.resolve(), "new": NEW}
        results: dict[tuple[str, str], list[float]] = {}
        for r in range(options.rounds):
            for name in ("old", "new") if r % 2 == 0 else ("new", "old"):
                copy = Path(folder) / f"{r}-{name}"
                shutil.copytree(built, copy)
                done = subprocess.run(
                    [sys.executable, __file__, "--child", str(copy), "--calls", str(options.calls)],
                    capture_output=True, text=True, check=True,
                    env={**os.environ, "PYTHONPATH": str(codes[name])},
                )  # fmt: skip
                got: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
                for verb, value in got.items():
                    results.setdefault((verb, name), []).append(value)
                shutil.rmtree(copy)
        for (verb, name), values in sorted(results.items()):
            print(
                f"{verb:17} {name}: median p50 {statistics.median(values):8.0f} us"
                f" ({', '.join(f'{v:.0f}' for v in values)})"
            )


if __name__ == "__main__":
    main()
