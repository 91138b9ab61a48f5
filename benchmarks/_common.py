"""Helpers shared by the benchmark scripts: timing, the raw sqlite3 baseline, tables, JSON."""

from __future__ import annotations

import json
import os
import resource
import sqlite3
import statistics
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"


def wait_for_health(port: int, process: Any = None, tries: int = 600) -> bool:
    """Whether a server answered ``/health`` on ``port`` within ``tries`` tenths of a second
    (not waiting on once ``process``, when given, has ended)."""
    for _ in range(tries):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1):
                return True
        except OSError:
            if process is not None and process.poll() is not None:
                return False
            time.sleep(0.1)
    return False


def percentiles(samples: list[float]) -> tuple[float, float]:
    """(p50, p95) in milliseconds of samples in seconds."""
    return statistics.median(samples) * 1000, percentile(samples, 0.95)


def percentile(samples: list[float], share: float) -> float:
    """The sample ``share`` of the way up (nearest rank), in milliseconds of samples in
    seconds."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))] * 1000


def time_calls(call: Callable[..., Any], arguments: list[dict[str, Any]]) -> tuple[float, float]:
    """p50/p95 in ms of ``call(**args)`` over the argument sets."""
    samples = []
    for args in arguments:
        start = time.perf_counter()
        call(**args)
        samples.append(time.perf_counter() - start)
    return percentiles(samples)


def raw_connection(folder: Path) -> sqlite3.Connection:
    """A bare sqlite3 connection with the store's pragmas, on the same disk."""
    conn = sqlite3.connect(folder / "raw.db", isolation_level=None)
    for pragma in ("journal_mode=WAL", "synchronous=FULL", "foreign_keys=ON", "secure_delete=ON"):
        conn.execute(f"PRAGMA {pragma}")
    conn.execute("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, content TEXT NOT NULL)")
    return conn


def durable_rates(
    write: Callable[[int, int], Any], folder: Path, n: int, rounds: int = 8
) -> tuple[float, float]:
    """Median rates of ``write(round, i)`` (one durable write each) and of a raw sqlite3
    insert+commit loop, in alternating rounds so that disk noise hits both alike."""
    conn = raw_connection(folder)
    ours, raw = [], []
    per_round = max(1, n // rounds)
    for r in range(rounds):
        start = time.perf_counter()
        for i in range(per_round):
            write(r, i)
        ours.append(per_round / (time.perf_counter() - start))
        start = time.perf_counter()
        for i in range(per_round):
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO t (content) VALUES (?)", (f"raw write {r}-{i}",))
            conn.execute("COMMIT")
        raw.append(per_round / (time.perf_counter() - start))
    conn.close()
    return statistics.median(ours), statistics.median(raw)


def peak_rss_mib() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def cpu_seconds(pid: int) -> float:
    """CPU seconds a running process used so far, user and system, every thread: a figure that
    the machine's load barely moves."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def threads_cpu_ns(pid: int | str = "self") -> dict[str, int]:
    """CPU nanoseconds so far of each thread of a process, by thread id (Linux; empty where
    ``/proc`` has no such process)."""
    spent: dict[str, int] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return spent
    for tid in tids:
        try:
            spent[tid] = int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0])
        except OSError:
            continue  # a thread that ended meanwhile
    return spent


def folder_mib(folder: Path, pattern: str) -> float:
    return round(sum(p.stat().st_size for p in folder.glob(pattern)) / 2**20, 1)


def print_table(results: list[dict[str, Any]], targets: dict[str, tuple[str, float]]) -> None:
    keys = list(results[0])
    width = max(len(k) for k in keys)
    header = f"{'metric':<{width}}  " + "  ".join(f"{r['size']:>10,}" for r in results)
    print(header + "  target (largest size)")
    for key in keys[1:]:
        target = targets.get(key)
        note = ""
        if target:
            value = results[-1][key]
            ok = value <= target[1] if target[0] == "<=" else value >= target[1]
            note = f"{target[0]} {target[1]}  " + ("met" if ok else "MISSED")
        print(f"{key:<{width}}  " + "  ".join(f"{r[key]:>10}" for r in results) + f"  {note}")


def write_json(
    name: str, out: str | Path, results: list[dict[str, Any]], targets: dict[str, tuple[str, float]]
) -> Path:
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(json.dumps({"results": results, "targets": targets}, indent=2))
    return path
