"""Code store benchmark: a generated repository of 10,000 commits and 5,000 files.

    python benchmarks/code.py [--commits 10000] [--files 5000] [--queries 300]

The repository is written with ``git fast-import`` (``_repo.py``: small changes to one to three
files a commit, additions, deletions, renames, a merged side branch every 50 steps) and packed
with ``git gc``. Measured: the first ingest (commits/s, MB/s of blob bytes read), the store's
size against ``.git``, ``code_at`` (random paths at random revisions), ``code_history``,
``code_changes_since`` scanning a full window of 2,000 commits (a path prefix keeps the page from
filling early), and an incremental ingest of 10 new commits. Prints a table and writes
``code.json``.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import RESULTS, peak_rss_mib, percentiles, print_table, write_json
from _repo import extend, generate, git_dir_bytes

os.environ.setdefault("RECUERDO_EMBEDDER", "none")  # the store, not the model, is measured
TARGETS = {
    "code_at_p95_ms": ("<=", 5.0),
    "code_history_p95_ms": ("<=", 10.0),
    "changes_since_2000_p95_ms": ("<=", 100.0),
    "incremental_10_s": ("<=", 1.0),
}


def _timed(call: Any, arguments: list[dict[str, Any]]) -> float:
    samples = []
    for args in arguments:
        start = time.perf_counter()
        call(**args)
        samples.append(time.perf_counter() - start)
    return round(percentiles(samples)[1], 2)


def run(commits: int, files: int, queries: int, seed: int) -> dict[str, Any]:
    import recuerdo

    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        repo = Path(tmp) / "repo"
        start = time.perf_counter()
        generate(repo, commits, files)
        subprocess.run(["git", "-C", str(repo), "gc", "--quiet"], check=True)
        generated = time.perf_counter() - start
        mem = recuerdo.open("code", base_dir=tmp)
        start = time.perf_counter()
        done = mem.code_ingest_path(repo, "bench")
        mem._upkeep.drain()  # chunk watermark and tail: part of making the text searchable
        seconds = time.perf_counter() - start
        mem._store.reclaim()
        store_bytes = sum(
            p.stat().st_size for p in (Path(tmp) / ".recuerdo" / "state").glob("code.db*")
        )
        status = mem.code_status("bench")
        tip = status["ingested_through"]["ordinal"]
        paths = [
            p
            for p in subprocess.run(
                ["git", "-C", str(repo), "ls-files"], capture_output=True, text=True, check=True
            ).stdout.split()
        ]
        line = [
            c["commit"]
            for page in range(0, tip, 500)
            for c in mem.code_changes_since("bench", "HEAD~" + str(tip - 1), limit=500, after=page)[
                "commits"
            ]
        ]
        at_args = [
            {"repo": "bench", "path": rng.choice(paths), "rev": rng.choice(line[-4000:])}
            for _ in range(queries)
        ]
        history_args = [{"repo": "bench", "path": rng.choice(paths)} for _ in range(queries)]
        since_args = [
            {
                "repo": "bench",
                "rev": line[rng.randrange(0, len(line) - 2100)],
                "limit": 500,
                "path_prefix": f"src/pkg{rng.randrange(50)}/",
            }
            for _ in range(max(20, queries // 5))
        ]
        at_p95 = _timed(mem.code_at, at_args)
        history_p95 = _timed(mem.code_history, history_args)
        since_p95 = _timed(mem.code_changes_since, since_args)
        scanned = mem.code_changes_since(**since_args[0])["scanned"]
        extend(repo, 10)
        start = time.perf_counter()
        more = mem.code_ingest_path(repo, "bench")
        incremental = time.perf_counter() - start
        hits = mem.search("value index", repo="bench")["count"]
        mem.close()
        git_bytes = git_dir_bytes(repo)
    return {
        "size": commits,
        "files": files,
        "generate_s": round(generated, 1),
        "line_commits": done["new_commits"],
        "side_commits": done["side_commits"],
        "ingest_s": round(seconds, 1),
        "ingest_commits_per_s": round(done["new_commits"] / seconds),
        "ingest_all_commits_per_s": round(commits / seconds),
        "ingest_mb_per_s": round(done["bytes_added"] / 2**20 / seconds, 2),
        "blob_mib": round(done["bytes_added"] / 2**20, 1),
        "store_mib": round(store_bytes / 2**20, 1),
        "git_dir_mib": round(git_bytes / 2**20, 1),
        "store_vs_git": round(store_bytes / git_bytes, 2),
        "code_at_p95_ms": at_p95,
        "code_history_p95_ms": history_p95,
        "changes_since_2000_p95_ms": since_p95,
        "changes_since_scanned": scanned,
        "incremental_10_s": round(incremental, 3),
        "incremental_commits": more["new_commits"],
        "search_hits": hits,
        "peak_rss_mib": peak_rss_mib(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--files", type=int, default=5_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    results = [run(args.commits, args.files, args.queries, args.seed)]
    print_table(results, TARGETS)
    print(f"wrote {write_json('code', args.out, results, TARGETS)}")


if __name__ == "__main__":
    main()
