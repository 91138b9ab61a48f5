"""A token limited to a project's scope reads what a door chose to read for that project
(decision 0173).

Since 0167 and 0172 the Engram door reads a project named with no scope as the project's scope
and ``user``, and Notarium's ``recall(project=...)`` has always read both. A token limited to
``project:a`` was refused such calls for a scope it never named. That included
``mem_context(project="a")``, the most ordinary call of a session start, and every Notarium
``recall``, which takes no scope at all. Such a token now reads the scopes it reaches, and the
reply names the others (``scopes_out_of_reach``). A scope the caller names is still checked as
before.

The tests go through a real server and the SDK's MCP client, which also checks each reply
against the tool's published output schema. Each test of a narrowed call fails on the code
before, where the call was refused."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, get_type_hints

import anyio
import pytest

from recuerdo.doors.profiles import PROFILES, profile

from .conftest import Server, boss_and_lim
from .test_mcp import http_session

MEMORY = "shared"
Setting = tuple[Server, dict[str, str], dict[str, int]]


def _bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def _served(
    factory: pytest.TempPathFactory, name: str, saves: list[tuple[str, str, dict[str, Any]]]
) -> Iterator[Setting]:
    """A server of profile ``name``, the owner's ``saves`` (label, tool, arguments: each
    reply's id kept under its label), and the secrets of boss (unlimited) and lim (limited to
    project:a)."""
    base = factory.mktemp(name)
    boss, lim = boss_and_lim(base)
    server = Server(base, memory=MEMORY, profile=name)

    async def fill() -> dict[str, int]:
        ids = {}
        async with http_session(server, MEMORY, _bearer(boss)) as session:
            for label, tool, arguments in saves:
                result = await session.call_tool(tool, arguments)
                assert not result.is_error, result.content
                reply = result.structured_content or {}
                ids[label] = int(reply.get("id", reply.get("note_id", 0)))
        return ids

    try:
        yield server, {"boss": boss, "lim": lim}, anyio.run(fill)
    finally:
        server.stop()


@pytest.fixture(scope="module")
def engram(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setting]:
    """Project a's own observation and a personal one of a, and a personal one of b."""
    saves = [
        (label, "mem_save", {"title": label, "content": f"zebra {label} text", **where})
        for label, where in [
            ("rule", {"project": "a"}),
            ("mine", {"project": "a", "scope": "personal"}),
            ("theirs", {"project": "b", "scope": "personal"}),
        ]
    ]
    yield from _served(tmp_path_factory, "engram", saves)


@pytest.fixture(scope="module")
def notarium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setting]:
    """A fact of project a, one of project b, and one about the user."""
    saves = [
        ("rule", "remember_about_project", {"project": "a", "observation": "zebra rule of a"}),
        ("other", "remember_about_project", {"project": "b", "observation": "zebra rule of b"}),
        ("mine", "remember_about_user", {"observation": "zebra the user likes"}),
    ]
    yield from _served(tmp_path_factory, "notarium", saves)


def ask(setting: Setting, who: str, tool: str, **arguments: Any) -> tuple[bool, dict[str, Any]]:
    server, secrets, _ = setting
    if tool in ("mem_search", "recall"):
        arguments = {"query": "zebra", **arguments}

    async def run() -> tuple[bool, dict[str, Any]]:
        async with http_session(server, MEMORY, _bearer(secrets[who])) as session:
            result = await session.call_tool(tool, arguments)
            return result.is_error, result.structured_content or {}

    return anyio.run(run)


def hits(tool: str, reply: dict[str, Any]) -> set[int]:
    if tool == "mem_context":
        return set(reply["ids"])
    if tool == "recall":
        return {source["id"] for source in reply["sources"]}
    return {hit["id"] for hit in reply["results"]}


@pytest.mark.parametrize("tool", ["mem_context", "mem_search"])
def test_a_confined_token_reads_its_engram_project_and_is_told_what_it_does_not_reach(
    engram: Setting, tool: str
) -> None:
    ids = engram[2]
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
    engram: Setting, tool: str, arguments: dict[str, Any], refused: bool
) -> None:
    failed, reply = ask(engram, "lim", tool, **arguments)
    assert failed is refused, reply
    if refused:
        assert reply["error"] == "capability_not_granted"
        assert "zebra" not in str(reply)
    else:
        assert hits(tool, reply) == {engram[2]["rule"]} and "scopes_out_of_reach" not in reply


def test_a_confined_token_recalls_its_notarium_project(notarium: Setting) -> None:
    ids = notarium[2]
    failed, reply = ask(notarium, "lim", "recall", project="a")
    assert not failed, reply
    assert hits("recall", reply) == {ids["rule"]}
    assert "the user likes" not in reply["context"] and "rule of b" not in reply["context"]
    assert reply["scopes_out_of_reach"] == ["user"]
    failed, whole = ask(notarium, "boss", "recall", project="a")
    assert not failed and hits("recall", whole) == {ids["rule"], ids["mine"]}
    assert "scopes_out_of_reach" not in whole


@pytest.mark.parametrize("arguments", [{"project": "b"}, {}])
def test_a_notarium_recall_out_of_reach_is_refused_as_before(
    notarium: Setting, arguments: dict[str, Any]
) -> None:
    """Project b reaches no scope of lim's; no project reads every scope, which a token
    limited to scopes is never given."""
    failed, reply = ask(notarium, "lim", "recall", **arguments)
    assert failed and reply["error"] == "capability_not_granted"
    assert "zebra" not in str(reply)


@pytest.mark.parametrize(
    "tool",
    [tool for name in PROFILES for tool in profile(name) if tool.scopes_of_its_own],
    ids=lambda tool: tool.name,
)
def test_a_tool_that_narrows_declares_the_field_it_tells_it_in(tool: Any) -> None:
    """The gateway names the scopes left out in the reply's ``scopes_out_of_reach``: a tool
    narrowed for a token must have a reply that declares it (else a narrowed reply would fail
    its published output schema, or say nothing of what it left out)."""
    assert tool.present is None
    assert "scopes_out_of_reach" in get_type_hints(tool.result)
