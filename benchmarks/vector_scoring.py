"""Vector scoring on a busy machine: OpenBLAS's threaded product against one thread.

    python benchmarks/vector_scoring.py [--sizes 2000,10000,50000] [--rounds 300]
                                        [--busy 2] [--out DIR]

The meaning stage scores a query against every held vector (up to ``EXACT_LIMIT``) with one
matrix-vector product. A server answering many requests keeps every core busy, and OpenBLAS
splits a product over threads that must all get a core before it returns. This script times,
interleaved round by round over the same float32 matrices: ``matrix @ query`` (numpy's BLAS
call, with the thread pool OpenBLAS chose) and ``recuerdo.index.vectors.products`` (one thread,
what the meaning stage runs), first on an idle machine and then with ``--busy`` processes
spinning on the cores (a server under load). Prints p50/p95 per size and writes
``vector_scoring.json``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import RESULTS, percentiles, print_table, write_json


def _spin(stop: Any) -> None:
    while not stop.is_set():
        pass


def _timed(run: Any, *arguments: Any) -> float:
    start = time.perf_counter()
    run(*arguments)
    return time.perf_counter() - start


def measure(sizes: list[int], rounds: int, dim: int = 256) -> list[dict[str, Any]]:
    import numpy as np

    from recuerdo.index.vectors import products

    rng = np.random.default_rng(7)
    query = rng.standard_normal(dim).astype(np.float32)
    rows = []
    for size in sizes:
        matrix = rng.standard_normal((size, dim)).astype(np.float32)
        assert np.allclose(matrix @ query, products(matrix, query), rtol=1e-4, atol=1e-3)
        blas, one = [], []
        for _ in range(rounds):
            blas.append(_timed(np.matmul, matrix, query))
            one.append(_timed(products, matrix, query))
        blas_p50, blas_p95 = percentiles(blas)
        one_p50, one_p95 = percentiles(one)
        rows.append(
            {
                "size": size,
                "blas_p50_ms": round(blas_p50, 3),
                "blas_p95_ms": round(blas_p95, 3),
                "one_thread_p50_ms": round(one_p50, 3),
                "one_thread_p95_ms": round(one_p95, 3),
            }
        )
    return rows


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="2000,10000,50000")
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--busy", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    results: list[dict[str, Any]] = []
    for busy in (0, args.busy):
        stop = multiprocessing.Event()
        spinners = [multiprocessing.Process(target=_spin, args=(stop,)) for _ in range(busy)]
        for spinner in spinners:
            spinner.start()
        try:
            rows = measure(sizes, args.rounds)
            load = round(os.getloadavg()[0], 1)
        finally:
            stop.set()
            for spinner in spinners:
                spinner.join()
        print(f"\n{busy} busy processes beside it (load average {load}), ms:")
        print_table(rows, {})
        results += [{**row, "busy_processes": busy, "load_average_1m": load} for row in rows]
    write_json("vector_scoring", args.out, results, {})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
