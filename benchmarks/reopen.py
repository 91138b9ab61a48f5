"""Reopening a large memory: the first hybrid search of a new process, with the HNSW index
rebuilt (before: what every reopen did) and mapped from the saved file (after).

    python benchmarks/reopen.py [--sizes 100000,1000000] [--out DIR]

Per size, a memory of N short notes is written with ``remember_many`` and chunked; then every
chunk gets a random unit vector, inserted directly under the default model's name (embedding a
million chunks would take hours: the HNSW's cost depends on how many vectors there are and
their size, not on what they mean). The memory is closed, and each measurement runs in a new
process that opens it, loads the model (timed apart), and times its first ``search`` (lexical
and meaning stages; the query is embedded by the real model):

* ``before``: the saved index folder is deleted first, so the HNSW is built from every stored
  vector (and then saved in the background: ``save_s`` is how long closing waited for it);
* ``after``: the index saved by the previous process is checked and memory-mapped;
* then, in that process: a search warm (p50 of 20), a forget that rewrites the index file
  (``forget_s``), and writing a new generation with 200 vectors stored since (``merge_s``).

Prints a table and writes ``reopen.json`` to ``--out``. Figures depend on the page cache: the
files were just written, so they are read warm, as a server restarted on the same machine would.
``--keep DIR`` keeps each memory (``DIR/<size>``) and measures it again on a later run instead
of building it anew.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import RESULTS, print_table, write_json

os.environ.setdefault("RECUERDO_EMBEDDER", "static")  # the default embedder
TARGETS = {"after_first_search_s": ("<=", 2.0)}
BATCH = 10_000
MERGED = 200  # vectors stored after the saved index when a new generation is written


def vocabulary(rng: random.Random, size: int = 20_000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(3, 10))))
    return sorted(words)


def build(base: Path, size: int, seed: int) -> dict[str, Any]:
    """The memory, with random vectors; how long each part took."""
    import numpy as np

    import recuerdo
    from recuerdo.index import chunks, vectors
    from recuerdo.index.embed import load_embedder

    rng = random.Random(seed)
    words = vocabulary(rng)
    embedder = load_embedder()
    assert embedder is not None, "install recuerdo[embed] to run this benchmark"
    memory = recuerdo.open("reopen", base_dir=base)
    memory._upkeep.stop(drain=False)  # everything is indexed below, in the foreground
    start = time.perf_counter()
    for first in range(0, size, BATCH):
        memory.remember_many(
            [
                {"category": "learning", "content": " ".join(rng.choices(words, k=12)) + "."}
                for _ in range(first, min(first + BATCH, size))
            ]
        )
    written = time.perf_counter() - start
    start = time.perf_counter()
    while True:
        with memory._store.write() as tx:
            if not chunks.chunk_backlog(tx):
                break
    while True:
        with memory._store.write() as tx:
            if not tx.substrings.catch_up():
                break
    indexed = time.perf_counter() - start
    start = time.perf_counter()
    noise = np.random.default_rng(seed)
    after = 0
    while True:
        with memory._store.write() as tx:
            part = tx.all(
                "SELECT id, hash FROM chunks WHERE id > ? ORDER BY id LIMIT ?", (after, BATCH)
            )
            if not part:
                break
            after = part[-1]["id"]
            picks = noise.normal(size=(len(part), embedder.dim)).astype(np.float32)
            picks /= np.linalg.norm(picks, axis=1, keepdims=True)
            tx.executemany(
                "INSERT INTO embeddings (model, hash, vector) VALUES (?, ?, ?)"
                " ON CONFLICT DO NOTHING",
                [
                    (embedder.name, row["hash"], vectors.encode(v))
                    for row, v in zip(part, picks, strict=True)
                ],
            )
            tx.execute(
                "INSERT INTO index_marks (name, upto) VALUES (?, ?) ON CONFLICT (name)"
                " DO UPDATE SET upto = excluded.upto",
                (vectors.mark_name(embedder.name), after),
            )
    vectored = time.perf_counter() - start
    memory._upkeep.stop(drain=False)
    memory._store.close()
    return {
        "write_s": round(written, 1),
        "chunk_s": round(indexed, 1),
        "vectors_s": round(vectored, 1),
        "query": " ".join(words[500:502]),
        "words": words[300:2000],
    }


def child(base: Path, query: str, words: list[str], extras: bool) -> dict[str, Any]:
    """One new process's view: open, load the model, first search, and the rest."""
    import recuerdo
    from _common import peak_rss_mib
    from recuerdo.index import vector_file, vectors

    rng = random.Random(7)
    start = time.perf_counter()
    memory = recuerdo.open("reopen", base_dir=base)
    opened = time.perf_counter() - start
    start = time.perf_counter()
    embedder = memory._meaning.embedder
    assert embedder is not None
    model = time.perf_counter() - start
    start, cpu = time.perf_counter(), time.process_time()
    reply = memory.search(query)
    first, first_cpu = time.perf_counter() - start, time.process_time() - cpu
    assert reply["results"], "the first search found nothing"
    out: dict[str, Any] = {
        "open_s": round(opened, 3),
        "model_load_s": round(model, 3),
        "first_search_s": round(first, 3),
        "first_search_cpu_s": round(first_cpu, 3),
        "stats": dict(vectors.STATS),
    }
    index = base / ".recuerdo" / "state" / "reopen.db-vectors"
    if extras and index.is_dir():  # the file check, the part of a reopen that grows with N
        [data] = [p for p in index.iterdir() if p.suffix == ".hnsw"]
        start, cpu = time.perf_counter(), time.process_time()
        vector_file.file_crc(data)
        out["crc_s"] = round(time.perf_counter() - start, 3)
        out["crc_cpu_s"] = round(time.process_time() - cpu, 3)
    if extras:
        samples = []
        for _ in range(20):
            ask = " ".join(rng.sample(words, 2))
            began = time.perf_counter()
            memory.search(ask)
            samples.append(time.perf_counter() - began)
        out["warm_search_ms"] = round(statistics.median(samples) * 1000, 2)
        victim = memory.remember("learning", "a note to be forgotten " + " ".join(words[:5]))
        memory._upkeep.drain()
        vector_set = memory._meaning.vectors(embedder)
        memory.search("a note to be forgotten")
        began = time.perf_counter()
        vector_set.write_generation()  # it holds that note's vector now
        out["save_s"] = round(time.perf_counter() - began, 3)
        began = time.perf_counter()
        memory.forget(victim)
        memory._upkeep.drain()  # the orphaned vector is collected, and erased from the file
        out["forget_s"] = round(time.perf_counter() - began, 3)
        memory.remember_many(
            [{"category": "learning", "content": f"added {n} " + ask} for n in range(MERGED)]
        )
        memory._upkeep.drain()
        memory.search("added")
        began = time.perf_counter()
        vector_set.write_generation()
        out["merge_s"] = round(time.perf_counter() - began, 3)
        out["stats"] = dict(vectors.STATS)
    began = time.perf_counter()
    memory.close()  # waits for a generation being saved in the background
    out["close_s"] = round(time.perf_counter() - began, 3)
    out["peak_rss_mib"] = peak_rss_mib()
    return out


def run_child(base: Path, query: str, words: list[str], extras: bool) -> dict[str, Any]:
    args = [sys.executable, __file__, "--child", str(base), "--query", query]
    if extras:
        args.append("--extras")
    done = subprocess.run(
        args, input=json.dumps(words), capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"the measuring process failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def run_size(
    size: int, seed: int, keep: Path | None = None, after_only: bool = False
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        base = Path(tmp) if keep is None else keep / str(size)
        made_file = base / "made.json"
        if made_file.exists():  # built by an earlier run with --keep: measured again
            made = json.loads(made_file.read_text())
        else:
            made = build(base, size, seed)
            if keep is not None:
                made_file.write_text(json.dumps(made))
        state = base / ".recuerdo" / "state"
        index = state / "reopen.db-vectors"
        if after_only and index.is_dir():  # a kept memory's saved index is measured again
            skipped = "-"
            before = dict.fromkeys(
                ("first_search_s", "first_search_cpu_s", "close_s", "peak_rss_mib"), skipped
            )
        else:
            shutil.rmtree(index, ignore_errors=True)
            before = run_child(base, made["query"], made["words"], extras=False)
            assert before["stats"].get("built") == 1, before
        files = sorted(p for p in index.iterdir() if p.suffix == ".hnsw")
        index_mib = round(sum(p.stat().st_size for p in files) / 2**20, 1)
        after = run_child(base, made["query"], made["words"], extras=True)
        # Opened at the first search, and again after the forget rewrote the file.
        assert not after["stats"].get("built") and after["stats"].get("opened"), after
        db_mib = round((state / "reopen.db").stat().st_size / 2**20, 1)
    print(json.dumps({"size": size, "build": made | {"words": None}, "before": before}))
    print(json.dumps({"size": size, "after": after}))
    return {
        "size": size,
        "before_first_search_s": before["first_search_s"],
        "after_first_search_s": after["first_search_s"],
        "before_first_search_cpu_s": before["first_search_cpu_s"],
        "after_first_search_cpu_s": after["first_search_cpu_s"],
        "crc_check_s": after["crc_s"],
        "crc_check_cpu_s": after["crc_cpu_s"],
        "model_load_s": after["model_load_s"],
        "after_open_s": after["open_s"],
        "warm_search_ms": after["warm_search_ms"],
        "save_in_background_s": before["close_s"],
        "save_s": after["save_s"],
        "forget_s": after["forget_s"],
        "merge_200_s": after["merge_s"],
        "index_mib": index_mib,
        "db_mib": db_mib,
        "before_peak_rss_mib": before["peak_rss_mib"],
        "after_peak_rss_mib": after["peak_rss_mib"],
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument(
        "--keep",
        type=Path,
        help="keep each built memory under this folder, and measure one found there again "
        "instead of building it (a 1M memory takes long to build: measure it when the "
        "machine is quiet)",
    )
    parser.add_argument(
        "--after-only",
        action="store_true",
        help="with --keep, measure a kept memory's saved index only (no rebuild first)",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--query", help=argparse.SUPPRESS)
    parser.add_argument("--extras", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        words = json.loads(sys.stdin.read())
        print(json.dumps(child(Path(args.child), args.query, words, args.extras)))
        return 0
    results = [
        run_size(int(s), args.seed, args.keep, args.after_only) for s in args.sizes.split(",") if s
    ]
    print_table(results, TARGETS)
    write_json("reopen", args.out, results, TARGETS)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
