"""Reads never create a memory: a CLI read verb naming a memory that does not exist answers
``memory_not_found`` (404) with the close names that do exist, and leaves no file behind; a
write creates the memory."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

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
