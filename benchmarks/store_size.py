"""Bytes on disk per chunk and per note, by part of the store (issue 17, items 6 and 9).

    python benchmarks/store_size.py [--chunks 100000] [--notes 10000] [--out DIR]
    python benchmarks/store_size.py --chunks 1000000 --notes 0     # on request

Two memories, each indexed to completion (chunks, full-text and trigram indexes, vectors of the
default embedder) and closed (WAL checkpointed) before it is measured:

* ``chunks``: N entries of 200 words (one chunk each) from the Zipf-shaped vocabulary of
  ``search_latency.py``, written with ``remember_many``;
* ``notes``: M notes of about 35 words with a short title, each written by ``save`` (one durable
  write each, as over MCP).

Each file is read with ``dbstat`` (the interpreter's ``sqlite3``: the bundled pysqlite3 is built
without it) and every b-tree is shown in bytes per row of the memory: tables and each index by
name, the shadow tables of one FTS5 index summed under its name, and the pages on the free list.
``text`` is the UTF-8 size of what was written (content and title); ``store_vs_text`` the whole
file against it. Prints a table per memory and writes ``store_size.json``.
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
# The default embedder (search_latency.py would otherwise set MiniLM when imported).
os.environ.setdefault("RECUERDO_EMBEDDER", "static")
from _common import RESULTS, write_json
from search_latency import vocabulary

TARGETS = {"chunks": ("<=", 2500.0), "notes": ("<=", 5.0)}  # bytes/chunk; store / text
FTS_SHADOWS = ("_data", "_idx", "_docsize", "_config", "_content")
CHUNK_WORDS = 200
NOTE_WORDS = 35


def _sentences(rng: random.Random, words: list[str], weights: list[float], n: int) -> str:
    """``n`` words as sentences of 12-25 words; a text of 150 words or more ends with one long
    sentence, so that the chunker (which closes a chunk at 150 words) keeps it one chunk."""
    picked = rng.choices(words, cum_weights=weights, k=n)
    sizes: list[int] = []
    while sum(sizes) < n:
        size = rng.randint(12, 25)
        if n >= 150 and sum(sizes) + size >= 130:
            size = n - sum(sizes)
        sizes.append(min(size, n - sum(sizes)))
    out, at = [], 0
    for size in sizes:
        out.append(" ".join(picked[at : at + size]).capitalize() + ".")
        at += size
    return " ".join(out)


def _index_everything(mem: Any) -> None:
    while mem._upkeep.drain():
        pass


def _vfs_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if p.is_file())


def parts(path: Path) -> tuple[dict[str, int], int]:
    """Bytes of every b-tree of the file by part, and the file's size."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        names = {
            row[0]: (row[1], row[2])
            for row in conn.execute("SELECT name, type, tbl_name FROM sqlite_schema")
        }
        fts = [n for n, (kind, _) in names.items() if kind == "table" and n + "_data" in names]
        sizes: dict[str, int] = {}
        for name, size in conn.execute(
            "SELECT name, sum(pgsize) FROM dbstat WHERE aggregate = TRUE GROUP BY name"
        ):
            part = name
            for table in fts:
                if any(name == table + suffix for suffix in FTS_SHADOWS):
                    part = f"{table} (FTS5)"
            if name.startswith("sqlite_autoindex_"):
                part = f"{names[name][1]} unique key"
            elif names.get(name, ("", ""))[0] == "index":
                part = f"{name} (index)"
            sizes[part] = sizes.get(part, 0) + int(size)
        page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
        # The many tables that hold nothing here take a page each: shown as one line.
        small = [part for part, size in sizes.items() if size <= page_size]
        if small:
            sizes[f"{len(small)} tables/indexes of one page"] = sum(sizes.pop(p) for p in small)
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        if free:
            sizes["(free pages)"] = int(free) * page_size
    finally:
        conn.close()
    return sizes, path.stat().st_size


def measure(kind: str, count: int, seed: int, tmp: str) -> dict[str, Any]:
    import itertools

    import recuerdo

    rng = random.Random(seed)
    words = vocabulary(rng)
    weights = list(itertools.accumulate(1 / (r + 1) ** 1.05 for r in range(len(words))))
    mem = recuerdo.open(f"size-{kind}", base_dir=tmp)
    text = 0
    start = time.perf_counter()
    if kind == "chunks":
        for first in range(0, count, 5000):
            batch = [
                {
                    "category": "learning",
                    "content": _sentences(rng, words, weights, CHUNK_WORDS),
                    "scope": f"project:p{n % 20}",
                }
                for n in range(first, min(first + 5000, count))
            ]
            text += sum(len(e["content"].encode()) for e in batch)
            mem.remember_many(batch)
    else:
        for n in range(count):
            title = " ".join(rng.choices(words, cum_weights=weights, k=3)).capitalize()
            content = _sentences(rng, words, weights, rng.randint(NOTE_WORDS - 8, NOTE_WORDS + 8))
            text += len(title.encode()) + len(content.encode())
            mem.save(title, content, scope=f"project:p{n % 20}")
    written = time.perf_counter() - start
    _index_everything(mem)
    indexed = time.perf_counter() - start - written
    location = Path(mem.location)
    with mem._store.read() as tx:
        rows = int(tx.scalar("SELECT count(*) FROM chunks"))
        vectors = int(tx.scalar("SELECT count(*) FROM embeddings"))
    mem.close()
    sizes, total = parts(location)
    per = max(count, 1)
    return {
        "kind": kind,
        "rows": count,
        "chunks": rows,
        "vectors": vectors,
        "write_s": round(written, 1),
        "index_s": round(indexed, 1),
        "text_bytes": text,
        "file_bytes": total,
        "files_bytes": _vfs_bytes(location),
        "bytes_per_row": round(total / per),
        "text_per_row": round(text / per),
        "store_vs_text": round(total / max(text, 1), 2),
        "parts_per_row": {k: round(v / per) for k, v in sorted(sizes.items(), key=lambda i: -i[1])},
    }


def show(result: dict[str, Any]) -> None:
    unit = "chunk" if result["kind"] == "chunks" else "note"
    print(
        f"\n{result['kind']}: {result['rows']:,} rows, {result['chunks']:,} chunks,"
        f" {result['vectors']:,} vectors (written {result['write_s']} s, indexed"
        f" {result['index_s']} s)"
    )
    width = max(len(k) for k in result["parts_per_row"]) + 2
    print(f"{'part':<{width}} {'bytes/' + unit:>12}")
    for name, value in result["parts_per_row"].items():
        print(f"{name:<{width}} {value:>12,}")
    print(f"{'whole file':<{width}} {result['bytes_per_row']:>12,}")
    print(f"{'text written':<{width}} {result['text_per_row']:>12,}")
    print(f"{'store / text':<{width}} {result['store_vs_text']:>12}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--name", default="store_size", help="the JSON file's name")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    results = []
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR") or Path.cwd()) as tmp:
        for kind, count in (("chunks", args.chunks), ("notes", args.notes)):
            if count:
                results.append(measure(kind, count, args.seed, tmp))
                show(results[-1])
    print()
    for result in results:
        op, limit = TARGETS[result["kind"]]
        value = result["bytes_per_row"] if result["kind"] == "chunks" else result["store_vs_text"]
        verdict = "met" if value <= limit else "MISSED"
        print(f"target {result['kind']}: {value} {op} {limit}  {verdict}")
    for result in results:
        result["size"] = result["rows"]
    write_json(args.name, args.out, results, TARGETS)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
