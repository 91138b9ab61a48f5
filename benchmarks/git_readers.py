"""Which git reader should the code store use? The same work done three ways, timed.

    python benchmarks/git_readers.py [--commits 10000] [--files 5000]

The work is what an ingest needs from git: the first-parent line of ``main`` oldest first,
each commit's metadata, its changes against its first parent with rename detection, and the
bytes of every blob those changes bring in (each once). Readers: the git command line (two
processes: ``git log --raw`` and ``git cat-file --batch``), dulwich (pure Python) and pygit2
(libgit2). dulwich and pygit2 are only needed to run this comparison
(``pip install dulwich pygit2``). Figures are in docs/decisions/0008-git-reader.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import RESULTS
from _repo import generate

Work = tuple[int, int, int]  # commits, changes, blob bytes


def with_cli(path: Path) -> Work:
    sys.path.insert(0, str(Path(__file__).parent.parent / "src"))
    from recuerdo.code.git import GitRepo

    repo = GitRepo(str(path))
    tip = repo.resolve("main")
    commits = changes = size = 0
    wanted: set[str] = set()
    for commit in repo.line(tip, None):
        commits += 1
        changes += len(commit.changes)
        wanted.update(c.blob for c in commit.changes if c.blob and c.kind_hint != "gitlink")
    for _, data in repo.blobs(sorted(wanted)):
        size += len(data)
    return commits, changes, size


def with_dulwich(path: Path) -> Work:
    from dulwich.diff_tree import RenameDetector, tree_changes
    from dulwich.repo import Repo

    repo = Repo(str(path))
    store = repo.object_store
    line = []
    sha = repo.refs[b"refs/heads/main"]
    while True:
        commit = store[sha]
        line.append(commit)
        if not commit.parents:
            break
        sha = commit.parents[0]
    commits = changes = size = 0
    seen: set[bytes] = set()
    detector = RenameDetector(store)
    for commit in reversed(line):
        parent_tree = store[commit.parents[0]].tree if commit.parents else None
        commits += 1
        _ = (commit.author, commit.author_time, commit.message)
        for change in tree_changes(store, parent_tree, commit.tree, rename_detector=detector):
            changes += 1
            new = change.new
            wanted = new is not None and new.sha is not None and new.mode != 0o160000
            if wanted and new.sha not in seen:
                seen.add(new.sha)
                size += len(store[new.sha].data)
    return commits, changes, size


def with_pygit2(path: Path) -> Work:
    import pygit2

    repo = pygit2.Repository(str(path))
    tip = repo.references["refs/heads/main"].target
    walker = repo.walk(tip, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE)
    walker.simplify_first_parent()
    commits = changes = size = 0
    seen: set[Any] = set()
    for commit in walker:
        commits += 1
        _ = (commit.author.name, commit.author.time, commit.message)
        if commit.parents:
            diff = repo.diff(commit.parents[0], commit)
        else:
            diff = commit.tree.diff_to_tree(swap=True)
        diff.find_similar()
        for delta in diff.deltas:
            changes += 1
            new = delta.new_file
            if delta.status_char() != "D" and new.mode != 0o160000 and new.id not in seen:
                seen.add(new.id)
                size += len(repo[new.id].data)
    return commits, changes, size


READERS = {"git-cli": with_cli, "dulwich": with_dulwich, "pygit2": with_pygit2}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--files", type=int, default=5_000)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        generate(repo, args.commits, args.files)
        for name, reader in READERS.items():
            try:
                start = time.perf_counter()
                commits, changes, size = reader(repo)
                seconds = time.perf_counter() - start
            except ImportError as exc:
                print(f"{name}: not installed ({exc})")
                continue
            rows.append(
                {
                    "reader": name,
                    "seconds": round(seconds, 2),
                    "line_commits": commits,
                    "changes": changes,
                    "blob_mib": round(size / 2**20, 1),
                    "commits_per_s": round(commits / seconds),
                }
            )
    print(f"{'reader':<8} {'seconds':>8} {'commits':>8} {'changes':>8} {'blob MiB':>9} {'c/s':>7}")
    for row in rows:
        print(
            f"{row['reader']:<8} {row['seconds']:>8} {row['line_commits']:>8} {row['changes']:>8}"
            f" {row['blob_mib']:>9} {row['commits_per_s']:>7}"
        )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "git_readers.json").write_text(json.dumps({"results": rows}, indent=2))


if __name__ == "__main__":
    main()
