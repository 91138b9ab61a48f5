"""A generated git repository for the code benchmarks, written with ``git fast-import``.

``generate(path, commits, files)`` builds a ``main`` branch: a first commit adding ``files``
files of Python-like text (about 40 lines each), then commits that each change a few lines of
one to three files, now and then adding, deleting or renaming a file; every ``merge_every``-th
step is a side branch of two commits merged back (a real merge commit). ``commits`` counts every
commit, side ones included. ``extend`` adds commits on top of the branch afterwards.
"""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

WORDS = [
    "value",
    "index",
    "result",
    "count",
    "name",
    "items",
    "total",
    "store",
    "query",
    "limit",
    "offset",
    "cursor",
    "buffer",
    "record",
    "entry",
    "token",
]
IDENT = {"name": "Bench", "email": "bench@example.org"}


def _line(rng: random.Random) -> str:
    a, b, c = rng.choice(WORDS), rng.choice(WORDS), rng.choice(WORDS)
    return f"    {a}_{rng.randrange(1000)} = {b}({c}, {rng.randrange(100)})"


def _file(rng: random.Random, n: int) -> list[str]:
    head = [f'"""Module {n}: {rng.choice(WORDS)} handling."""', "", f"def handle_{n}(value):"]
    return head + [_line(rng) for _ in range(rng.randrange(30, 50))] + ["    return value", ""]


class _Stream:
    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.mark = 0
        self.clock = 1_600_000_000

    def data(self, text: str) -> None:
        raw = text.encode()
        self.parts.append(b"data %d\n%s\n" % (len(raw), raw))

    def commit(
        self,
        ref: str,
        message: str,
        ops: list[str | tuple[str, str]],
        parent: int | None,
        merge: int | None = None,
    ) -> int:
        self.mark += 1
        self.clock += 60
        who = f"{IDENT['name']} <{IDENT['email']}> {self.clock} +0000"
        self.parts.append(
            f"commit {ref}\nmark :{self.mark}\nauthor {who}\ncommitter {who}\n".encode()
        )
        self.data(message)
        if parent is not None:
            self.parts.append(f"from :{parent}\n".encode())
        if merge is not None:
            self.parts.append(f"merge :{merge}\n".encode())
        for op in ops:
            if isinstance(op, tuple):  # (path, content): a file written
                self.parts.append(f"M 100644 inline {op[0]}\n".encode())
                self.data(op[1])
            else:
                self.parts.append(op.encode() + b"\n")
        return self.mark


def _run_import(path: Path, stream: _Stream) -> None:
    subprocess.run(
        ["git", "-C", str(path), "fast-import", "--quiet", "--force"],
        input=b"".join(stream.parts),
        check=True,
    )


class _Model:
    """The files of the branch, to write believable changes."""

    def __init__(self, rng: random.Random, files: int) -> None:
        self.rng = rng
        self.tree = {f"src/pkg{n % 50}/mod_{n}.py": _file(rng, n) for n in range(files)}
        self.next_file = files

    def change(self, count: int) -> list[str | tuple[str, str]]:
        ops: list[str | tuple[str, str]] = []
        roll = self.rng.random()
        if roll < 0.03:  # add a file
            n = self.next_file
            self.next_file += 1
            path = f"src/pkg{n % 50}/mod_{n}.py"
            self.tree[path] = _file(self.rng, n)
            return [(path, "\n".join(self.tree[path]))]
        if roll < 0.05 and len(self.tree) > 10:  # delete one
            path = self.rng.choice(sorted(self.tree))
            del self.tree[path]
            return [f"D {path}"]
        if roll < 0.07 and len(self.tree) > 10:  # rename one, changing it a little
            path = self.rng.choice(sorted(self.tree))
            lines = self.tree.pop(path)
            new = path.replace(".py", f"_r{self.rng.randrange(10**6)}.py")
            lines[self.rng.randrange(3, len(lines) - 2)] = _line(self.rng)
            self.tree[new] = lines
            return [f"D {path}", (new, "\n".join(lines))]
        for path in self.rng.sample(sorted(self.tree), count):
            lines = self.tree[path]
            for _ in range(3):
                lines[self.rng.randrange(3, len(lines) - 2)] = _line(self.rng)
            ops.append((path, "\n".join(lines)))
        return ops


def generate(path: Path, commits: int, files: int, *, seed: int = 7, merge_every: int = 50) -> None:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    rng = random.Random(seed)
    model = _Model(rng, files)
    stream = _Stream()
    tip = stream.commit(
        "refs/heads/main",
        "Initial import",
        [(p, "\n".join(lines)) for p, lines in model.tree.items()],
        None,
    )
    made = 1
    step = 0
    while made < commits:
        step += 1
        if step % merge_every == 0 and commits - made >= 3:
            side = tip
            changed: dict[str, str] = {}
            for k in range(2):
                ops = model.change(1)
                side = stream.commit("refs/heads/side", f"Side work {step}.{k}", ops, side)
                for op in ops:
                    if isinstance(op, tuple):
                        changed[op[0]] = op[1]
                    else:
                        changed[op[2:]] = ""
            merge_ops: list[str | tuple[str, str]] = [
                (p, c) if p in model.tree else f"D {p}" for p, c in changed.items()
            ]
            tip = stream.commit("refs/heads/main", f"Merge side {step}", merge_ops, tip, merge=side)
            made += 3
            continue
        ops = model.change(rng.randrange(1, 4))
        tip = stream.commit("refs/heads/main", f"Change {step}: tune {rng.choice(WORDS)}", ops, tip)
        made += 1
    _run_import(path, stream)
    subprocess.run(["git", "-C", str(path), "branch", "-q", "-D", "side"], check=False)
    subprocess.run(["git", "-C", str(path), "reset", "-q", "--hard", "main"], check=True)


def extend(path: Path, commits: int, *, seed: int = 11) -> None:
    """``commits`` more commits on main, each changing one existing file."""
    rng = random.Random(seed)
    for k in range(commits):
        files = subprocess.run(
            ["git", "-C", str(path), "ls-files", "src"], capture_output=True, text=True, check=True
        ).stdout.split()
        target = path / rng.choice(files)
        target.write_text(target.read_text() + f"\n# extended {k} {rng.randrange(10**6)}\n")
        subprocess.run(["git", "-C", str(path), "add", "-A"], check=True)
        subprocess.run(
            [
                "git",
                "-C",
                str(path),
                "-c",
                "user.name=B",
                "-c",
                "user.email=b@x",
                "commit",
                "-qm",
                f"Extend {k}",
            ],
            check=True,
        )


def git_dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in (path / ".git").rglob("*") if p.is_file())
