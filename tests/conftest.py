from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import recuerdo
from recuerdo.store.engine import sqlite3

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test sees the developer's environment or writes outside its own folder."""
    for name in ("RECUERDO_STATE_DIR", "RECUERDO_MEMORY", "RECUERDO_CAPS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def base(tmp_path: Path) -> Path:
    folder = tmp_path / "base"
    folder.mkdir()
    return folder


@pytest.fixture(params=["file", "in_memory"])
def memory(request: pytest.FixtureRequest, base: Path) -> Iterator[recuerdo.Memory]:
    """The same behaviour is expected of the file store and the in-memory store."""
    mem = recuerdo.open("test-memory", base_dir=base, in_memory=request.param == "in_memory")
    yield mem
    mem.close()


@pytest.fixture
def file_memory(base: Path) -> Iterator[recuerdo.Memory]:
    mem = recuerdo.open("test-memory", base_dir=base)
    yield mem
    mem.close()


def db_dump(path: str | Path) -> list[str]:
    """Every row of every table, through a separate connection (what is really on disk)."""
    conn = sqlite3.connect(path)
    try:
        lines = []
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
        ]
        for table in tables:
            if table.startswith("sqlite_"):
                continue
            try:
                rows = conn.execute(f'SELECT * FROM "{table}"').fetchall()
            except sqlite3.DatabaseError:
                continue  # virtual tables answer only through their module
            lines += [f"{table}: {row!r}" for row in sorted(rows, key=repr)]
        return lines
    finally:
        conn.close()


def tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def run_python(
    code: str, *, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd,
        timeout=timeout,
        check=False,
    )
