"""Real git repositories for the code store tests, built with the git command line."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

CREDENTIAL = 'aws_key = "AKIAIOSFODNN7EXAMPLQ"\n'


class Repo:
    """A repository in a temporary folder; commits get increasing, fixed dates."""

    def __init__(self, path: Path, branch: str = "main") -> None:
        self.path = path
        self.clock = 1_700_000_000
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", branch)

    def git(self, *args: str, data: bytes | None = None) -> str:
        stamp = f"@{self.clock} +0000"
        env = {
            **os.environ,
            "GIT_AUTHOR_NAME": "Ada",
            "GIT_AUTHOR_EMAIL": "ada@example.org",
            "GIT_COMMITTER_NAME": "Ada",
            "GIT_COMMITTER_EMAIL": "ada@example.org",
            "GIT_AUTHOR_DATE": stamp,
            "GIT_COMMITTER_DATE": stamp,
        }
        done = subprocess.run(
            ["git", "-C", str(self.path), *args],
            input=data,
            capture_output=True,
            env=env,
            check=True,
        )
        return done.stdout.decode().strip()

    def write(self, name: str, content: str | bytes) -> None:
        target = self.path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)

    def commit(self, message: str, files: dict[str, str | bytes] | None = None) -> str:
        for name, content in (files or {}).items():
            self.write(name, content)
        self.git("add", "-A")
        self.clock += 60
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.head()

    def head(self) -> str:
        return self.git("rev-parse", "HEAD")

    def gitlink(self, path: str, commit: str) -> None:
        """A submodule entry (mode 160000) pointing at ``commit``."""
        self.git("update-index", "--add", "--cacheinfo", f"160000,{commit},{path}")

    def many(self, count: int, name: str = "log.txt") -> None:
        """``count`` commits at once through fast-import, each appending to ``name``."""
        parts = []
        for k in range(count):
            self.clock += 1
            who = f"Ada <ada@example.org> {self.clock} +0000"
            body = f"line {k}\n".encode()
            message = f"step {k}".encode()
            parts.append(
                f"commit refs/heads/main\nauthor {who}\ncommitter {who}\n".encode()
                + b"data %d\n%s\n" % (len(message), message)
                + (f"from {self.head()}\n".encode() if k == 0 else b"")
                + f"M 100644 inline {name}\n".encode()
                + b"data %d\n%s\n" % (len(body), body)
            )
        self.git("fast-import", "--quiet", data=b"".join(parts))
        self.git("reset", "-q", "--hard", "main")


def sample(root: Path) -> Repo:
    """A history with everything the store must handle:

    1 add README, a.txt, a binary, a non-UTF-8 file, a credential file, .env, key.pem
    2 rename a.txt -> b.txt (changed a little), delete old.txt
    3 (side branch) add feature.txt; main: edit README; 4 merge side (a real merge)
    5 add a submodule (gitlink)
    """
    repo = Repo(root / "sample")
    repo.commit(
        "Initial files",
        {
            "README.md": "# Sample\nThe quick brown fox.\n",
            "a.txt": "alpha\nbeta\ngamma\n",
            "old.txt": "to be deleted\n",
            "img.bin": bytes(range(256)) * 4,
            "latin.txt": "caf\xe9 au lait\n".encode("latin-1"),
            "config.py": CREDENTIAL,
            ".env": "DEBUG=1\n",
            "certs/key.pem": "not really a key\n",
        },
    )
    (repo.path / "a.txt").unlink()
    (repo.path / "old.txt").unlink()
    repo.commit("Rename a to b, drop old", {"b.txt": "alpha\nbeta\ngamma\ndelta\n"})
    repo.git("checkout", "-q", "-b", "side")
    repo.commit("Side feature", {"feature.txt": "feature work\n"})
    repo.git("checkout", "-q", "main")
    repo.commit("Edit readme", {"README.md": "# Sample\nThe quick brown fox jumps.\n"})
    repo.clock += 60
    repo.git("merge", "-q", "--no-ff", "-m", "Merge side", "side")
    repo.gitlink("vendor/lib", "0123456789abcdef0123456789abcdef01234567")
    repo.clock += 60
    repo.git("commit", "-q", "-m", "Add submodule")
    return repo
