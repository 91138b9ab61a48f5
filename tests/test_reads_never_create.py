"""Reads never create a memory: a read verb naming a memory that does not exist answers
``memory_not_found`` (404) with the close names that do exist, through every door, and leaves
no file behind; a write creates the memory."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner

import recuerdo
from recuerdo.doors.cli import cli
from recuerdo.errors import MemoryNotFound

from .conftest import Server, tree


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
    return [name for name in tree(base) if name.endswith(".db")]


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
    result = CliRunner().invoke(
        cli, ["--state-dir", str(existing), "--memory", "shopp", "--json", "recall"]
    )
    shape = json.loads(result.output)
    assert shape["ok"] is False and shape["error"] == "memory_not_found"
    assert shape["suggestions"] == ["shop"]


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


def test_an_http_read_of_a_missing_memory_is_404_and_creates_nothing(
    server: Server, existing: Path
) -> None:
    before = _state(existing)
    status, reply = server.post("/v1/recall", {}, memory="shpo")
    assert status == 404
    assert reply["error"] == "memory_not_found" and reply["suggestions"] == ["shop"]  # type: ignore[index]
    assert _state(existing) == before
    status, _ = server.post("/v1/remember", {"category": "learning", "content": "x"}, memory="new")
    assert status == 200
    assert "new.db" in " ".join(_state(existing))


def test_a_token_never_learns_names_beyond_its_reach(server: Server, existing: Path) -> None:
    """A token limited to `acme-*` asking for a missing `acme-shop` gets no suggestion of `shop`,
    which it may not reach."""
    from .conftest import create_token

    _, secret = create_token(
        existing, "--principal", "bot", "--tenant", "t", "--caps", "memory=acme-*"
    )
    status, reply = server.post("/v1/recall", {}, memory="acme-shop", token=secret)
    assert status == 404 and reply["suggestions"] == []  # type: ignore[index]
    status, reply = server.post("/v1/recall", {}, memory="shpo", token=secret)
    assert status == 403, reply  # beyond its reach: refused before existence is looked at


def test_the_lens_shows_memory_not_found_for_a_typo(server: Server, existing: Path) -> None:
    """`/lens/overview?memory=typo` is a 404 page, and creates no typo.db."""
    before = _state(existing)
    try:
        urllib.request.urlopen(f"{server.url}/lens/overview?memory=shpo", timeout=30)
        raise AssertionError("the page answered 200")
    except urllib.error.HTTPError as error:
        assert error.code == 404
        page = error.read().decode()
    assert "memory_not_found" in page and "shop" in page
    assert _state(existing) == before


def test_an_mcp_read_of_a_missing_memory_is_refused_and_creates_nothing(
    server: Server, existing: Path
) -> None:
    """Over MCP (streamable HTTP, `/mcp?memory=shpo`) a read answers memory_not_found naming
    `shop` and creates nothing; a write then creates the memory."""
    from .test_mcp import http_session

    async def scenario() -> tuple[str, list[str]]:
        async with http_session(server, memory="shpo") as session:
            refused = await session.call_tool("recall", {})
            assert refused.is_error
            after_read = _state(existing)
            written = await session.call_tool("remember", {"category": "learning", "content": "x"})
            assert not written.is_error
            return refused.content[0].text, after_read  # type: ignore[union-attr]

    text, after_read = anyio.run(scenario)
    assert "memory_not_found" in text and "shop" in text
    assert not any("shpo" in name for name in after_read)
    assert any("shpo.db" in name for name in _state(existing))


def test_the_memory_a_server_was_started_with_is_declared(server: Server, existing: Path) -> None:
    """The memory named when the server started (`serve --memory shop`, or `mcp --memory`) is
    declared by whoever started it, as `recuerdo.open` declares one: a server started for a
    memory not yet written answers its reads (empty), as an agent's first call expects."""
    fresh = Server(existing, memory="brand-new")
    try:
        status, reply = fresh.post("/v1/recall", {})
        assert (status, reply) == (200, [])
    finally:
        fresh.stop()


def test_the_mcp_door_refuses_a_bad_name_at_start(existing: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "recuerdo", "--state-dir", str(existing), "mcp", "-m", "a/b"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 1 and "invalid_memory_name" in done.stderr
    assert _state(existing) == [".recuerdo/state/shop.db"]
