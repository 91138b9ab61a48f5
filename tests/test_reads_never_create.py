"""Reads never create a memory: a read verb naming a memory that does not exist answers
``memory_not_found`` (404) with the close names that do exist, through every door (the CLI, the
HTTP API, MCP, the lens, ``recuerdo.open(create=False)``) and on both backends, and leaves no
file, folder, schema or row behind; a write creates the memory. The lens's page is checked in a
browser in ``tests/web/test_lens_missing_memory.py``."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

import recuerdo
from recuerdo.doors.cli import cli
from recuerdo.doors.http import ErrorShape
from recuerdo.errors import MemoryNotFound

from .conftest import Server, create_token, tree
from .forks import recuerdo_command
from .postgres import contract_url, unique_memory
from .test_first_minutes import recuerdo_cli

REMEMBER = {"category": "learning", "content": "x"}


@pytest.fixture
def existing(base: Path) -> Path:
    """A state dir holding one memory, ``shop``."""
    with recuerdo.open("shop", base_dir=base) as memory:
        memory.remember("learning", "API is slow on Mondays")
    return base


@pytest.fixture
def server(existing: Path) -> Iterator[Server]:
    running = Server(existing, memory="shop")
    yield running
    running.stop()


def _state(base: Path) -> list[str]:
    """Every file and folder under the state dir's memories (the server's marker aside)."""
    return [name for name in tree(base) if not name.endswith("server.json")]


def _is_the_error_shape(reply: Any, suggestions: list[str]) -> None:
    """The one JSON error shape of every door, with the close names listed."""
    ErrorShape.model_validate(reply)
    assert reply["ok"] is False and reply["error"] == "memory_not_found"
    assert isinstance(reply["detail"], str) and "a read never creates one" in reply["detail"]
    assert reply["suggestions"] == suggestions


# -- the CLI ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [["summary"], ["recall"], ["search", "slow"], ["get_rules"], ["--json", "overview"]],
)
def test_a_cli_read_of_a_missing_memory_is_memory_not_found(
    existing: Path, args: list[str]
) -> None:
    """`recuerdo --memory shp <read>` exits 1 with memory_not_found naming `shop`, and no
    shp.db appears."""
    before = _state(existing)
    result = CliRunner().invoke(cli, ["--state-dir", str(existing), "--memory", "shp", *args])
    assert result.exit_code == 1, result.output
    assert "memory_not_found" in result.output
    assert "'shop'" in result.output
    assert _state(existing) == before


def test_the_json_error_lists_the_suggestions(existing: Path) -> None:
    before = _state(existing)
    result = CliRunner().invoke(
        cli, ["--state-dir", str(existing), "--memory", "shopp", "--json", "recall"]
    )
    assert result.exit_code == 1, result.output
    _is_the_error_shape(json.loads(result.output), ["shop"])
    assert _state(existing) == before


def test_far_names_are_not_suggested(existing: Path) -> None:
    with pytest.raises(MemoryNotFound) as caught:
        recuerdo.open("zzzzzz", base_dir=existing, create=False)
    assert caught.value.extra["suggestions"] == []
    assert "Did you mean" not in caught.value.detail


def test_a_cli_write_creates_the_memory(existing: Path) -> None:
    result = CliRunner().invoke(
        cli, ["--state-dir", str(existing), "--memory", "fresh", "remember", "learning", "x"]
    )
    assert result.exit_code == 0, result.output
    assert (existing / ".recuerdo" / "state" / "fresh.db").exists()


def test_a_cli_read_through_a_running_server_creates_nothing(
    server: Server, existing: Path
) -> None:
    """While `serve` runs the CLI's verbs go to it: the server refuses the read in turn."""
    before = _state(existing)
    done = recuerdo_cli(existing, "-m", "shpo", "--json", "recall")
    assert done.returncode == 1
    _is_the_error_shape(json.loads(done.stderr or done.stdout), ["shop"])
    assert _state(existing) == before


def test_a_workflow_declaring_its_memory_starts_it_through_a_running_server(
    server: Server, existing: Path
) -> None:
    """`recuerdo mirror` declares its memory (as `recuerdo.open` does): its first read (the
    copy's version before a forced push), refused by the running server for a memory not
    written yet, is run here instead, and the push lands."""
    document = existing / "tasks.md"
    document.write_text("# Tasks\n\n- [ ] one\n")
    push = ("mirror", "push", str(document), "--key", "odd/tasks", "--force")
    done = recuerdo_cli(existing, "-m", "work", "--json", *push)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "in_sync"
    assert server.post("/v1/mirror_get", {"key": "odd/tasks"}, memory="work")[0] == 200


# -- the Python API ---------------------------------------------------------------------------


def test_open_without_create_refuses_a_missing_file_memory(existing: Path) -> None:
    before = _state(existing)
    with pytest.raises(MemoryNotFound) as caught:
        recuerdo.open("shpo", base_dir=existing, create=False)
    assert caught.value.extra["suggestions"] == ["shop"]
    assert _state(existing) == before
    with recuerdo.open("shop", base_dir=existing, create=False) as memory:  # it exists: opens
        assert [e["content"] for e in memory.recall()] == ["API is slow on Mondays"]


def test_open_without_create_names_no_folder_that_is_not_there(tmp_path: Path) -> None:
    """A state dir that does not exist yet stays so: not even `.recuerdo/` is made."""
    with pytest.raises(MemoryNotFound):
        recuerdo.open("anything", base_dir=tmp_path, create=False)
    assert list(tmp_path.iterdir()) == []


def _schemas(url: str, name: str) -> list[str]:
    """The database's schemas for the memory ``name`` (created or not, with tables or not)."""
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname = %s", [f"recuerdo_{name}"]
        ).fetchall()
    return [row[0] for row in rows]


def test_open_without_create_refuses_a_missing_postgres_memory() -> None:
    """PostgreSQL: create=False on a name the database does not hold is memory_not_found,
    naming the close memory that it holds, and no schema is created; a plain open creates."""
    url = contract_url()
    real = unique_memory("shop")
    typo = real[:-1] + ("x" if real[-1] != "x" else "y")
    with recuerdo.open(real, url=url, embedder="none") as memory:
        memory.remember("learning", "API is slow on Mondays")
    try:
        with pytest.raises(MemoryNotFound) as caught:
            recuerdo.open(typo, url=url, create=False, embedder="none")
        assert real in caught.value.extra["suggestions"]
        assert _schemas(url, typo) == []
        with recuerdo.open(real, url=url, create=False, embedder="none") as memory:
            assert [e["content"] for e in memory.recall()] == ["API is slow on Mondays"]
        with recuerdo.open(typo, url=url, embedder="none") as memory:
            memory.remember("learning", "created by a write")
        assert _schemas(url, typo) == [f"recuerdo_{typo}"]
    finally:
        _drop(url, real, typo)


def _drop(url: str, *names: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for name in names:
            conn.execute(f'DROP SCHEMA IF EXISTS "recuerdo_{name}" CASCADE')


# -- HTTP -------------------------------------------------------------------------------------


def test_an_http_read_of_a_missing_memory_is_404_and_creates_nothing(
    server: Server, existing: Path
) -> None:
    before = _state(existing)
    status, reply = server.post("/v1/recall", {}, memory="shpo")
    assert status == 404
    _is_the_error_shape(reply, ["shop"])
    assert _state(existing) == before
    status, _ = server.post("/v1/remember", REMEMBER, memory="shpo")
    assert status == 200
    assert ".recuerdo/state/shpo.db" in _state(existing)
    assert server.post("/v1/recall", {}, memory="shpo")[0] == 200


def test_a_token_never_learns_or_makes_names_beyond_its_reach(
    server: Server, existing: Path
) -> None:
    """A token limited to `acme-*` asking for a missing `acme-shop` gets no suggestion of
    `shop`, which it may not reach; a name beyond its reach is refused before existence is
    looked at, and even its write creates nothing there."""
    _, secret = create_token(
        existing, "--principal", "bot", "--tenant", "t", "--caps", "memory=acme-*"
    )
    restarted = Server(existing, memory="shop")  # tokens are read when the server starts
    try:
        status, reply = restarted.post("/v1/recall", {}, memory="acme-shop", token=secret)
        assert status == 404
        _is_the_error_shape(reply, [])
        status, reply = restarted.post("/v1/recall", {}, memory="shpo", token=secret)
        assert status == 403, reply
        before = _state(existing)
        status, reply = restarted.post("/v1/remember", REMEMBER, memory="other", token=secret)
        assert status == 403, reply
        assert _state(existing) == before
    finally:
        restarted.stop()


def test_the_memory_a_server_was_started_with_is_declared(existing: Path) -> None:
    """The memory named when the server started (`serve --memory X`) is declared by whoever
    started it, as `recuerdo.open` declares one: created at start, so a fresh server answers
    reads on it (empty), as an agent's first call expects."""
    fresh = Server(existing, memory="brand-new")
    try:
        assert ".recuerdo/state/brand-new.db" in _state(existing)
        status, reply = fresh.post("/v1/recall", {})
        assert (status, reply) == (200, [])
    finally:
        fresh.stop()


@pytest.mark.slow
def test_a_postgres_server_refuses_a_read_of_a_missing_memory() -> None:
    """`serve --database-url`: the close names come from the database, and neither the read
    nor the refusal makes a schema; a write does."""
    url = contract_url()
    real, other = unique_memory("desk"), unique_memory("desk")
    typo = real[:-1] + ("x" if real[-1] != "x" else "y")
    with recuerdo.open(other, url=url, embedder="none"):
        pass
    running = Server(Path("."), memory=real, args=("--database-url", url))
    try:
        assert _schemas(url, real) == [f"recuerdo_{real}"]  # the server's own: made at start
        status, reply = running.post("/v1/recall", {}, memory=typo)
        assert status == 404, reply
        assert real in reply["suggestions"]  # type: ignore[index]
        assert _schemas(url, typo) == []
        assert running.post("/v1/recall", {}, memory=other)[0] == 200  # it exists: answered
        assert running.post("/v1/remember", REMEMBER, memory=typo)[0] == 200
        assert _schemas(url, typo) == [f"recuerdo_{typo}"]
    finally:
        running.stop()
        _drop(url, real, other, typo)


# -- MCP --------------------------------------------------------------------------------------


def test_an_mcp_read_of_a_missing_memory_is_refused_and_creates_nothing(
    server: Server, existing: Path
) -> None:
    """Over MCP (streamable HTTP, `/mcp?memory=shpo`) a read answers memory_not_found naming
    `shop` and creates nothing; a write then creates the memory."""
    from .test_mcp import http_session

    async def scenario() -> tuple[Any, list[str]]:
        async with http_session(server, memory="shpo") as session:
            refused = await session.call_tool("recall", {})
            assert refused.is_error
            after_read = _state(existing)
            written = await session.call_tool("remember", REMEMBER)
            assert not written.is_error
            return refused, after_read

    refused, after_read = anyio.run(scenario)
    _is_the_error_shape(json.loads(refused.content[0].text), ["shop"])
    assert not any("shpo" in name for name in after_read)
    assert ".recuerdo/state/shpo.db" in _state(existing)


def test_the_stdio_mcp_memory_is_declared(existing: Path) -> None:
    """`recuerdo mcp --memory NAME` (what an agent launches) declares its memory: a first
    read on a new one answers empty, and the memory now exists."""
    from .test_mcp import stdio_session

    async def scenario() -> Any:
        async with stdio_session(existing, memory="agent-desk") as session:
            return await session.call_tool("recall", {})

    answered = anyio.run(scenario)
    assert not answered.is_error, answered.content
    assert ".recuerdo/state/agent-desk.db" in _state(existing)


def test_the_mcp_door_refuses_a_bad_name_at_start(existing: Path) -> None:
    done = subprocess.run(
        recuerdo_command("--state-dir", str(existing), "mcp", "-m", "a/b"),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 1 and "invalid_memory_name" in done.stderr
    assert [n for n in _state(existing) if n.endswith(".db")] == [".recuerdo/state/shop.db"]
