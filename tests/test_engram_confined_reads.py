"""A token limited to a project's scope reads Engram's context and search of that project
(decision 0173). Since 0167 and 0172 the Engram door reads a project named with no scope as
the project's scope and ``user``; a token limited to ``project:a`` was then refused the most
ordinary call of a session start, ``mem_context(project="a")``, for a scope it never named.
It now reads the scopes it reaches, and the reply names the others (``scopes_out_of_reach``).
A scope the caller names is still checked as before. Through a real server, with the SDK's
MCP client, which also checks each reply against the tool's published output schema. Each
test fails on the code before (the call was refused)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from .conftest import Server, boss_and_lim
from .test_mcp import http_session

MEMORY = "shared"


def hits(tool: str, reply: dict[str, Any]) -> set[int]:
    if tool == "mem_context":
        return set(reply["ids"])
    return {hit["id"] for hit in reply["results"]}


@pytest.fixture(scope="module")
def engram(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A server of the Engram profile, the owner's observations of project a (its own and a
    personal one), a personal one of project b, and the two tokens' secrets."""
    base = tmp_path_factory.mktemp("engram_confined")
    boss, lim = boss_and_lim(base)
    server = Server(base, memory=MEMORY, profile="engram")

    async def fill() -> dict[str, int]:
        made = {
            "rule": {"project": "a"},
            "mine": {"project": "a", "scope": "personal"},
            "theirs": {"project": "b", "scope": "personal"},
        }
        ids = {}
        async with http_session(server, MEMORY, _bearer(boss)) as session:
            for name, where in made.items():
                result = await session.call_tool(
                    "mem_save", {"title": name, "content": f"zebra {name} text", **where}
                )
                assert not result.is_error, result.content
                ids[name] = result.structured_content["id"]
        return ids

    try:
        ids = anyio.run(fill)
        yield server, {"boss": boss, "lim": lim}, ids
    finally:
        server.stop()


def _bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def ask(engram: Any, who: str, tool: str, **arguments: Any) -> tuple[bool, dict[str, Any]]:
    server, secrets, _ = engram
    if tool == "mem_search":
        arguments = {"query": "zebra", **arguments}

    async def run() -> tuple[bool, dict[str, Any]]:
        async with http_session(server, MEMORY, _bearer(secrets[who])) as session:
            result = await session.call_tool(tool, arguments)
            text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
            return result.is_error, (result.structured_content or {"text": text})

    return anyio.run(run)


@pytest.mark.parametrize("tool", ["mem_context", "mem_search"])
def test_a_confined_token_reads_its_project_and_is_told_what_it_does_not_reach(
    engram: Any, tool: str
) -> None:
    _, _, ids = engram
    failed, reply = ask(engram, "lim", tool, project="a")
    assert not failed, reply
    assert hits(tool, reply) == {ids["rule"]}
    assert reply["scopes_out_of_reach"] == ["user"]
    # The owner's same call reads both scopes, and has nothing out of its reach.
    failed, whole = ask(engram, "boss", tool, project="a")
    assert not failed and hits(tool, whole) == {ids["rule"], ids["mine"]}
    assert "scopes_out_of_reach" not in whole


@pytest.mark.parametrize("tool", ["mem_context", "mem_search"])
@pytest.mark.parametrize(
    ("arguments", "refused"),
    [
        # A scope the caller names is checked as it always was.
        ({"project": "a", "scope": "personal"}, True),
        ({"project": "a", "scope": "project"}, False),
        # No scope of the call's reading is reached: refused, nothing narrowed to nothing.
        ({"project": "b"}, True),
    ],
)
def test_a_scope_named_or_out_of_reach_is_checked_as_before(
    engram: Any, tool: str, arguments: dict[str, Any], refused: bool
) -> None:
    _, _, ids = engram
    failed, reply = ask(engram, "lim", tool, **arguments)
    assert failed is refused, reply
    if refused:
        assert reply["error"] == "capability_not_granted"
        assert "zebra" not in str(reply)
    else:
        assert hits(tool, reply) == {ids["rule"]} and "scopes_out_of_reach" not in reply
