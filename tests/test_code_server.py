"""The code store through a real server (Semurg profile, MCP client, HTTP) and the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import time
import zlib
from pathlib import Path

import anyio
import pytest

from recuerdo.store.sqlite import sqlite3

from .conftest import Server
from .forks import recuerdo_command
from .gitrepo import Repo, sample
from .test_mcp import call, http_session

CODE_TOOLS = {
    "code_status",
    "code_at",
    "code_blame",
    "code_changes_since",
    "code_diff",
    "code_history",
}


def _wait_for_ingest(server: Server) -> dict[str, object]:
    """The server ingests its repositories on start (a schedule, in the background)."""
    deadline = time.monotonic() + 60
    while True:
        status, body = server.post("/v1/memory/code_status", {"repo": "app"})
        if status == 200 or time.monotonic() > deadline:
            assert status == 200, body
            return body  # type: ignore[return-value]
        time.sleep(0.2)


@pytest.mark.slow
def test_semurg_server_serves_the_code_tools(base: Path, tmp_path: Path) -> None:
    repo = sample(tmp_path)
    server = Server(base, memory="m", profile="semurg", args=("--code-repo", f"app={repo.path}"))
    try:
        status = _wait_for_ingest(server)
        assert status["commits"] == 5 and status["lag"] == 0
        assert status["ingested_through"]["commit"] == repo.head()  # type: ignore[index]

        code, body = server.post("/v1/memory/code_at", {"repo": "app", "path": "README.md"})
        assert code == 200 and body["content"].startswith("# Sample")  # type: ignore[index]
        code, body = server.post("/v1/memory/code_at", {"repo": "nope", "path": "x"})
        assert code == 404 and body["error"] == "repo_not_ingested"  # type: ignore[index]

        repo.commit("New", {"new.txt": "fresh\n"})
        code, body = server.post("/v1/memory/code_status", {"repo": "app"})
        assert body["lag"] == 1  # type: ignore[index]
        code, body = server.post("/v1/code_ingest", {"repo": "app"}, memory="m")
        assert code == 200 and body["new_commits"] == 1  # type: ignore[index]
        code, body = server.post("/v1/code_ingest", {"repo": "other"}, memory="m")
        assert code == 404 and body["error"] == "repo_not_served"  # type: ignore[index]

        async def through_mcp() -> None:
            async with http_session(server, memory="m") as session:
                tools = {t.name: t for t in (await session.list_tools()).tools}
                assert set(tools) >= CODE_TOOLS
                assert tools["code_at"].annotations.read_only_hint is True
                failed, got = await call(
                    session, "code_history", {"repo": "app", "path": "new.txt"}
                )
                assert not failed and got["history"][0]["subject"] == "New"
                failed, got = await call(
                    session, "code_diff", {"repo": "app", "from": "HEAD~1", "patch": "new.txt"}
                )
                assert not failed and got["patch"]["after"]["content"] == "fresh\n"
                failed, got = await call(session, "code_blame", {"repo": "app", "path": "zzz"})
                assert not failed and got["state"] == "nothing_stored"
                failed, got = await call(session, "code_status", {"repo": "nope"})
                assert failed and got["error"] == "repo_not_ingested"

        anyio.run(through_mcp)
    finally:
        server.stop()


def _cli(base: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        recuerdo_command("--state-dir", str(base), "--memory", "m", *args),
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "RECUERDO_EMBEDDER": "none"},
        check=False,
    )


def test_cli_ingest_and_verify(base: Path, tmp_path: Path) -> None:
    """code ingest prints what it did; code verify exits 1 once a blob was tampered with."""
    repo = Repo(tmp_path / "cli")
    repo.commit("one", {"f.txt": "hello " * 100})
    done = _cli(base, "--json", "code", "ingest", str(repo.path), "--repo", "cli")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["new_commits"] == 1
    checked = _cli(base, "--json", "code", "verify")
    assert checked.returncode == 0 and json.loads(checked.stdout)["ok"] is True
    db = base / ".recuerdo" / "state" / "m.db"
    conn = sqlite3.connect(db)
    conn.execute("UPDATE code_blobs SET content = ?", (zlib.compress(b"evil"),))
    conn.commit()
    conn.close()
    broken = _cli(base, "--json", "code", "verify", "--repo", "cli")
    assert broken.returncode == 1
    assert json.loads(broken.stdout)["corrupt"][0]["paths"] == ["cli:f.txt"]
    served = _cli(base, "--json", "code_at", "cli", "f.txt")
    assert served.returncode == 1 and json.loads(served.stdout)["error"] == "blob_corrupt"
    missing = _cli(base, "code", "ingest", str(tmp_path), "--repo", "x")
    assert missing.returncode == 1 and "git_unreadable" in missing.stderr
