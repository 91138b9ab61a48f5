"""What a process pays to start and stop: a CLI call, a ``recuerdo serve`` up to its first
``/health`` answer and through a graceful stop (issue 12, item 6: the test suite starts some
60 servers and 110 CLI processes; every user pays the same at each command).

    python benchmarks/start_cost.py [--rounds 10] [--source SRC ...] [--out DIR]

Each ``--source`` is a ``src`` folder put first on ``PYTHONPATH`` (two checkouts compare old
and new code in one run; default: this checkout's). Rounds alternate between the sources, so
the machine's load falls on each alike. Figures are CPU seconds of the child process (user +
system, all its threads, from ``/proc`` and ``wait4``), which move far less with the load than
wall time; wall time is printed beside them. Every process uses the embedder ``--embedder`` (default
``none``: no model loading is counted; ``static`` adds what a server pays to load the default
table when it embeds its first write). One uncounted round comes first (bytecode, caches).
The last rows are the CPU seconds of opening and closing a new memory, inside one process.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import RESULTS, cpu_seconds

HERE = Path(__file__).resolve().parent.parent / "src"


EMBEDDER = "none"


def _env(source: Path, base: str) -> dict[str, str]:
    # Bytecode is cached as an installed package's is (some machines set the variable).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return env | {"PYTHONPATH": str(source), "RECUERDO_STATE_DIR": base,
                  "RECUERDO_EMBEDDER": EMBEDDER}  # fmt: skip


def _waited(process: subprocess.Popen[bytes]) -> float:
    """Wait for the process; its CPU seconds over its whole life."""
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime


def cli_call(source: Path, base: str) -> tuple[float, float]:
    """(CPU, wall) of one ``recuerdo remember`` from launch to exit."""
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "recuerdo", "--memory", "bench", "remember", "learning",
         "a start-cost probe"],
        env=_env(source, base), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    cpu = _waited(process)
    if process.returncode != 0:
        raise RuntimeError(f"the CLI failed ({process.returncode})")
    return cpu, time.perf_counter() - start


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _post(port: int, verb: str, body: bytes) -> None:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/{verb}", data=body, method="POST",
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    with urllib.request.urlopen(request, timeout=60) as reply:
        reply.read()


def server_round(source: Path, base: str) -> dict[str, float]:
    """CPU and wall of a server: launch to its first ``/health`` answer, then one write and one
    search, then SIGTERM to exit (a graceful stop: upkeep finished, the store closed)."""
    port = _port()
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "recuerdo", "--memory", "bench", "serve", "--port", str(port)],
        env=_env(source, base), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1):
                break
        except OSError:
            if process.poll() is not None:
                raise RuntimeError("the server exited before answering") from None
            time.sleep(0.02)
    ready_wall, ready_cpu = time.perf_counter() - start, cpu_seconds(process.pid)
    _post(port, "remember", b'{"category": "learning", "content": "a start-cost probe"}')
    _post(port, "search", b'{"query": "probe"}')
    served_cpu = cpu_seconds(process.pid)
    stop = time.perf_counter()
    process.send_signal(signal.SIGTERM)
    total_cpu = _waited(process)
    return {
        "ready_cpu": ready_cpu,
        "ready_wall": ready_wall,
        "stop_cpu": total_cpu - served_cpu,
        "stop_wall": time.perf_counter() - stop,
        "total_cpu": total_cpu,
    }


# Run in a child process with the source first on the path: the CPU seconds of opening and
# closing new memories, after one uncounted (the first builds what a process keeps).
_NEW_MEMORIES = """
import json, sys, tempfile, time
import recuerdo
opens = int(sys.argv[1])
found = {}
with tempfile.TemporaryDirectory() as folder:
    recuerdo.open("warm", base_dir=folder).close()
    for kind in ("file", "in_memory"):
        start = time.process_time()
        for n in range(opens):
            recuerdo.open(f"m{n}", base_dir=folder, in_memory=kind == "in_memory").close()
        found[kind] = (time.process_time() - start) / opens
print(json.dumps(found))
"""


def new_memories(source: Path, base: str, opens: int = 20) -> dict[str, float]:
    """CPU seconds per new memory opened and closed (a file, and in memory): what a new tenant,
    a restore into a new file and every test store pay once."""
    done = subprocess.run(
        [sys.executable, "-c", _NEW_MEMORIES, str(opens)],
        env=_env(source, base), capture_output=True, text=True, check=True,
    )  # fmt: skip
    found = json.loads(done.stdout)
    return {"new_memory_file_cpu": found["file"], "new_memory_in_memory_cpu": found["in_memory"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--source", type=Path, action="append", default=[])
    parser.add_argument("--embedder", default="none")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    global EMBEDDER
    EMBEDDER = args.embedder
    sources = [path.resolve() for path in args.source] or [HERE]
    samples: dict[Path, dict[str, list[float]]] = {source: {} for source in sources}
    with tempfile.TemporaryDirectory() as base:
        for source in sources:  # warm-up, not counted
            cli_call(source, base)
            server_round(source, base)
        for _ in range(args.rounds):
            for source in sources:
                cpu, wall = cli_call(source, base)
                found = samples[source]
                found.setdefault("cli_cpu", []).append(cpu)
                found.setdefault("cli_wall", []).append(wall)
                for name, value in server_round(source, base).items():
                    found.setdefault(f"server_{name}", []).append(value)
                for name, value in new_memories(source, base).items():
                    found.setdefault(name, []).append(value)
    rows: list[dict[str, Any]] = []
    for source, found in samples.items():
        row: dict[str, Any] = {"source": str(source)}
        for name, values in found.items():
            row[f"{name}_median"] = round(statistics.median(values), 3)
            row[f"{name}_max"] = round(max(values), 3)
        rows.append(row)
    metrics = ["cli_cpu", "cli_wall", "server_ready_cpu", "server_ready_wall",
               "server_stop_cpu", "server_stop_wall", "server_total_cpu",
               "new_memory_file_cpu", "new_memory_in_memory_cpu"]  # fmt: skip
    print(
        f"median (max) of {args.rounds} rounds, seconds; embedder {EMBEDDER}; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    for number, row in enumerate(rows):
        print(f"[{number}] {row['source']}")
    print(f"{'metric':<26}" + "".join(f"{f'[{n}]':>18}" for n in range(len(rows))))
    for metric in metrics:
        cells = [f"{row[metric + '_median']:.3f} ({row[metric + '_max']:.3f})" for row in rows]
        print(f"{metric:<26}" + "".join(f"{cell:>18}" for cell in cells))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "start_cost.json").write_text(
        json.dumps({"rounds": args.rounds, "embedder": EMBEDDER, "rows": rows}, indent=2)
    )


if __name__ == "__main__":
    main()
