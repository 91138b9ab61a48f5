"""Attack 6: a store written by a newer recuerdo.

A store whose ``_migrations`` holds a step this version does not know, or whose
``PRAGMA user_version`` is above the one this version writes, is refused on every door with
``store_too_new`` (503) naming both versions, and its bytes are never changed.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import recuerdo
from recuerdo.store.sqlite import sqlite3
from recuerdo.store.sqlite.schema import SCHEMA

from ..forks import recuerdo_command
from .conftest import FAST_ENV, Launcher, Reply, assert_error, local_memory

FUTURE_STEP = "m999_from_the_future"


def _open_here(base: Path, name: str) -> dict[str, object]:
    """``recuerdo.open(name)`` in this process: what it raised (or that it opened)."""
    try:
        with local_memory(base, name):
            return {"opened": True}
    except Exception as error:
        return {
            "code": getattr(error, "code", None),
            "status": getattr(error, "status", None),
            "detail": str(error),
            "type": type(error).__name__,
        }


def files(state: Path, name: str) -> dict[str, str]:
    """The store's files and a digest of each (a -wal or -shm that appears counts)."""
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(state.glob(f"{name}.db*"))
        if path.stat().st_size
    }


@dataclass(repr=False)  # a failure report shows the test's own message, not every reply
class Future:
    base: Path
    current: int  # the user_version this version writes
    future: int
    before: dict[str, dict[str, str]] = field(default_factory=dict)
    replies: dict[str, list[Reply]] = field(default_factory=dict)
    after_http: dict[str, dict[str, str]] = field(default_factory=dict)
    cli: dict[str, subprocess.CompletedProcess[str]] = field(default_factory=dict)
    opened: dict[str, dict[str, object]] = field(default_factory=dict)
    after_all: dict[str, dict[str, str]] = field(default_factory=dict)


NAMES = ("future-step", "future-version")


@pytest.fixture(scope="module")
def future(launch: Launcher, tmp_path_factory: pytest.TempPathFactory) -> Future:
    base = tmp_path_factory.mktemp("newer")
    env = {**os.environ, **FAST_ENV}
    for name in ("future-step", "future-version", "fresh"):
        with local_memory(base, name) as memory:
            memory.remember("learning", "written by this version")
    state = base / ".recuerdo" / "state"
    conn = sqlite3.connect(state / "fresh.db")
    current = int(conn.execute("PRAGMA user_version").fetchone()[0])
    conn.close()
    conn = sqlite3.connect(state / "future-step.db")
    conn.execute(
        "INSERT INTO _migrations (name, applied_at) VALUES (?, '2099-01-01T00:00:00Z')",
        (FUTURE_STEP,),
    )
    conn.commit()
    conn.close()
    conn = sqlite3.connect(state / "future-version.db")
    conn.execute(f"PRAGMA user_version = {current + 1}")
    conn.close()
    seen = Future(base, current, current + 1)
    seen.before = {name: files(state, name) for name in NAMES}
    server = launch(base)
    for name in NAMES:
        seen.replies[name] = [
            server.call("recall", {}, memory=name),
            server.call("remember", {"category": "learning", "content": "newer?"}, memory=name),
        ]
    server.stop()
    seen.after_http = {name: files(state, name) for name in NAMES}
    started = {
        name: subprocess.Popen(
            recuerdo_command("--state-dir", str(base), "--memory", name,
             "remember", "learning", "written by an older CLI"),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )
        for name in NAMES
    }  # fmt: skip
    for name in NAMES:
        seen.opened[name] = _open_here(base, name)
    for name, process in started.items():
        out, err = process.communicate(timeout=120)
        seen.cli[name] = subprocess.CompletedProcess(process.args, process.returncode, out, err)
    seen.after_all = {name: files(state, name) for name in NAMES}
    return seen


def _names_both_versions(future: Future, name: str, detail: str) -> bool:
    if name == "future-version":
        return str(future.future) in detail and str(future.current) in detail
    known = (SCHEMA.names()[-1], str(future.current), recuerdo.__version__)
    return FUTURE_STEP in detail and any(version in detail for version in known)


@pytest.mark.parametrize("name", NAMES)
def test_http_refuses_a_newer_store(future: Future, name: str) -> None:
    """A read and a write over HTTP: 503 store_too_new whose detail names the store's version
    and this one's."""
    for reply in future.replies[name]:
        shape = assert_error(reply, 503, "store_too_new")
        assert _names_both_versions(future, name, shape["detail"]), shape


@pytest.mark.parametrize("name", NAMES)
def test_the_cli_refuses_a_newer_store(future: Future, name: str) -> None:
    """A CLI write: non-zero exit, one line ``error: store_too_new: ...``, no traceback."""
    done = future.cli[name]
    assert done.returncode != 0, done
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: store_too_new: "), done.stderr[-2000:]
    assert _names_both_versions(future, name, lines[0])


@pytest.mark.parametrize("name", NAMES)
def test_the_python_api_refuses_a_newer_store(future: Future, name: str) -> None:
    """``recuerdo.open(name)`` raises an error with code store_too_new and status 503."""
    seen = future.opened[name]
    assert seen.get("code") == "store_too_new" and seen.get("status") == 503, seen
    assert _names_both_versions(future, name, str(seen["detail"])), seen


@pytest.mark.parametrize("name", NAMES)
def test_a_newer_store_is_never_written(future: Future, name: str) -> None:
    """The .db's bytes are as they were, and no -wal with pages appeared: after the server's
    requests, and after the CLI and the Python API tried too."""
    assert future.after_http[name] == future.before[name]
    assert future.after_all[name] == future.before[name]
