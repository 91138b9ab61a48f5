"""A refused write creates nothing (decision 0093). A write on a memory that does not exist
makes it; when the write is refused (a bad category, an id that is not there, an empty title),
the memory it made is removed again: no file, and no name in the memories' listing. README: a
typo'd memory name creates nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import AttackServer, Launcher, assert_error, cli, state_files

REFUSED: list[tuple[str, dict[str, Any], int, str]] = [
    ("remember", {"category": "bogus", "content": "x"}, 400, "invalid_category"),
    ("edit", {"id": 1, "operation": "append", "content": "x"}, 404, "item_not_found"),
    ("delete", {"id": 1}, 404, "item_not_found"),
    ("save", {"title": "", "content": ""}, 400, "empty_title"),
]


@pytest.fixture(scope="module")
def server(launch: Launcher) -> Iterator[AttackServer]:
    yield launch(memory="main")


def listing(base: Path) -> list[str]:
    done = cli("memories", "--json", base=base)
    assert done.returncode == 0, done.stderr
    return sorted(done.stdout.split('"name": "')[1:])


@pytest.mark.parametrize(("verb", "body", "status", "code"), REFUSED, ids=[r[0] for r in REFUSED])
def test_over_http(
    server: AttackServer, verb: str, body: dict[str, Any], status: int, code: str
) -> None:
    files = state_files(server.base)
    names = listing(server.base)
    assert_error(server.call(verb, body, memory=f"typo_{verb}"), status, code)
    assert state_files(server.base) == files
    assert listing(server.base) == names
    # Nothing was left open either: a read of the name is still memory_not_found.
    assert_error(server.call("recall", {}, memory=f"typo_{verb}"), 404, "memory_not_found")


def test_a_write_that_succeeds_still_makes_its_memory(server: AttackServer) -> None:
    server.ok("remember", {"category": "context", "content": "kept"}, memory="made")
    assert (server.base / ".recuerdo" / "state" / "made.db").exists()
    assert server.ok("recall", {"from": "*"}, memory="made")[0]["content"] == "kept"


def test_a_refused_write_then_a_good_one(server: AttackServer) -> None:
    """The memory removed after the refusal is made again by the next write, whole."""
    assert server.call("delete", {"id": 1}, memory="again").status == 404
    server.ok("remember", {"category": "context", "content": "second"}, memory="again")
    assert [e["content"] for e in server.ok("recall", {"from": "*"}, memory="again")] == ["second"]


@pytest.mark.parametrize(("verb", "body", "status", "code"), REFUSED, ids=[r[0] for r in REFUSED])
def test_over_the_cli(
    tmp_path: Path, verb: str, body: dict[str, Any], status: int, code: str
) -> None:
    arguments = {
        "remember": ["remember", "bogus", "x"],
        "edit": ["edit", "1", "append", "x"],
        "delete": ["delete", "1"],
        "save": ["save", "", ""],
    }[verb]
    done = cli("--memory", "typo", *arguments, base=tmp_path)
    assert done.returncode != 0, done.stdout
    assert not list((tmp_path / ".recuerdo" / "state").glob("typo*")), done.stderr
