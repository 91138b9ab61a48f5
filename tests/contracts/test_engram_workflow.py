"""Engram's promises (../shared/spec/engram.md), second part: versions and conflicts (the
seed's mirror workflow), refusals by name and the doors, kept by ``--profile engram`` over MCP.
See test_engram.py for saving, finding, context, sessions and review."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from ..conftest import Server
from .conftest import (
    Http,
    Json,
    Mcp,
    Seen,
    Servers,
    Tools,
    check_output_schemas,
    http_tools,
    names_argument,
    report,
    rows,
    run_async,
    stdio_tools,
)
from .test_engram import journal, save, search


@pytest.fixture(scope="module")
def server(servers: Servers) -> Server:
    return servers.get("engram")


# -- versions and conflicts (the seed's mirror workflow) ----------------------------------------


def test_E27_a_stale_expected_version_is_a_conflict_that_keeps_both(mcp: Mcp) -> None:
    """E27 mem_save with a stale expected_version is a conflict that keeps both versions: A's
    task is not lost, B's text is kept as a conflict revision, and the reply names both."""

    async def scenario(tools: Tools) -> None:
        key = {"topic_key": "odd/pay/tasks", "project": "shop", "title": "pay tasks"}
        first = await save(tools, content="v1", **key)
        read = await save(tools, content="v2", **key)  # both parents read version 2
        a = await save(tools, content="v3 from A", expected_version=read["version"], **key)
        assert a["version"] == 3
        b = await tools.refused(
            "mem_save", {**key, "content": "v3 from B", "expected_version": 2}, "conflict"
        )
        assert b["current_version"] == 3
        conflict = b["conflict_revision_id"]
        whole = await tools.ok("mem_get_observation", {"id": first["id"]})
        assert whole["content"] == "v3 from A" and whole["version"] == 3
        history = rows(await tools.ok("mem_history", {"id": first["id"]}))
        assert any(row["version"] == 3 for row in history)
        assert any(row["revision_id"] == conflict for row in history)
        kept = await tools.ok("mem_revision", {"id": first["id"], "revision_id": conflict})
        assert kept["content"] == "v3 from B"

    mcp(scenario)


def test_E35_concurrent_agents_lose_no_save(server: Server, name: str, seen: Seen) -> None:
    """E35 several agents saving at once (Engram's users hit SQLITE_BUSY and dropped
    connections) all succeed, and every observation is there."""

    async def agent(i: int) -> None:
        async with http_tools(server.url, name, seen) as tools:
            for j in range(3):
                await save(tools, title=f"agent {i} step {j}", content="parallel work")

    async def scenario() -> None:
        async with anyio.create_task_group() as group:
            for i in range(6):
                group.start_soon(agent, i)
        async with http_tools(server.url, name, seen) as tools:
            found = await tools.ok("mem_search", {"query": "parallel work", "limit": 20})
            assert len(found["results"]) == 18

    run_async(scenario)


def test_E28_history_tools_are_described_in_the_server_instructions(mcp: Mcp) -> None:
    """E28 mem_history and mem_revision (our extensions) are listed and described in the
    server's instructions."""

    async def scenario(tools: Tools) -> None:
        listed = await tools.listed()
        assert {"mem_history", "mem_revision"} <= set(listed)
        assert "mem_history" in tools.instructions and "mem_revision" in tools.instructions

    mcp(scenario)


def test_E29_capture_prompt_false_is_accepted(mcp: Mcp) -> None:
    """E29 the mirror contract asks mem_save for capture_prompt: false; it is accepted."""

    async def scenario(tools: Tools) -> None:
        saved = await save(
            tools, topic_key="odd/x/tasks", project="shop", content="mirror", capture_prompt=False
        )
        assert saved["outcome"] == "created"

    mcp(scenario)


def test_E30_project_names_are_normalised(mcp: Mcp) -> None:
    """E30 project names are trimmed and lower-cased once: saved under "ShopAPI", found under
    " shopapi " (search, context, and the same topic)."""

    async def scenario(tools: Tools) -> None:
        saved = await save(tools, title="gateway", content="rate limits", project="ShopAPI")
        assert [hit["id"] for hit in await search(tools, query="rate", project=" shopapi ")] == [
            saved["id"]
        ]
        context = await tools.ok("mem_context", {"project": "shopapi"})
        assert "gateway" in context["text"]
        first = await save(tools, topic_key="k/1", project="ShopAPI", content="one")
        second = await save(tools, topic_key="k/1", project=" shopapi", content="two")
        assert second["id"] == first["id"] and second["outcome"] == "updated"

    mcp(scenario)


def test_E31_the_mirror_and_resume_workflow(mcp: Mcp) -> None:
    """E31 the seed's workflow: the whole task document mirrored under odd/<feature>/tasks; resume
    is context -> search by project and feature (a preview) -> get (the whole document); an
    update reads first and writes the merged whole document with the version it read."""
    document = "# Tasks: checkout\n\n" + "\n".join(
        f"- [ ] step {i}: " + "details " * 30 for i in range(15)
    )

    async def scenario(tools: Tools) -> None:
        key = {"topic_key": "odd/checkout/tasks", "project": "shop", "title": "checkout tasks"}
        await tools.ok("mem_save", {**key, "content": document, "capture_prompt": False})
        context = await tools.ok("mem_context", {"project": "shop"})
        assert "checkout tasks" in context["text"]
        hit = (await search(tools, query="checkout tasks", project="shop"))[0]
        assert hit["truncated"] is True
        current = await tools.ok("mem_get_observation", {"id": hit["id"]})
        assert current["content"] == document
        merged = current["content"].replace("- [ ] step 0", "- [x] step 0")
        written = await tools.ok(
            "mem_save",
            {**key, "content": merged, "expected_version": current["version"]},
        )
        assert written["id"] == hit["id"] and written["outcome"] == "updated"
        back = await tools.ok("mem_get_observation", {"id": hit["id"]})
        assert back["content"] == merged

    mcp(scenario)


# -- refusals by name --------------------------------------------------------------------------

# One valid call of every tool; {id} is an observation of the test's memory.
CALLS: dict[str, Json] = {
    "mem_save": {"title": "t", "content": "c"},
    "mem_update": {"id": "{id}", "content": "c2"},
    "mem_delete": {"id": "{id}"},
    "mem_search": {"query": "c"},
    "mem_get_observation": {"id": "{id}"},
    "mem_context": {"project": "default"},
    "mem_timeline": {"observation_id": "{id}"},
    "mem_session_start": {"id": "s1"},
    "mem_session_end": {"id": "s1"},
    "mem_session_summary": {"session_id": "s1", "content": "done"},
    "mem_capture_passive": {"content": "## Key Learnings\n1. Always check the logs first"},
    "mem_suggest_topic_key": {"type": "decision", "title": "Use Postgres"},
    "mem_review": {"action": "list"},
    "mem_save_prompt": {"content": "add refunds"},
    "mem_history": {"id": "{id}"},
    "mem_revision": {"id": "{id}", "version": 1},
    "mem_restore": {"id": "{id}"},
}


def _filled(arguments: Json, note_id: int) -> Json:
    return {key: note_id if value == "{id}" else value for key, value in arguments.items()}


def test_E32_unknown_arguments_are_refused_by_name(mcp: Mcp, http: Http) -> None:
    """E32 an argument a tool does not take is refused by name (unknown_argument), never
    dropped, and the store is unchanged: every mem_* tool."""

    async def scenario(tools: Tools) -> None:
        listed = {tool.name for tool in (await tools.session.list_tools()).tools}
        assert set(CALLS) == listed  # every tool is tried
        await tools.ok("mem_session_start", {"id": "s1"})
        note_id = int((await save(tools, title="kept", content="kept text"))["id"])
        wrong: dict[str, Any] = {}
        for tool in sorted(CALLS, key=lambda name: name == "mem_delete"):
            before = journal(http)
            failed, reply = await tools.call(
                tool, {**_filled(CALLS[tool], note_id), "bogus_param": 1}
            )
            if not failed or not names_argument(reply, "bogus_param"):
                wrong[tool] = reply.get("error") or "accepted"
            elif journal(http) != before:
                wrong[tool] = "the store changed"
        assert not wrong, report(wrong)

    mcp(scenario)


def test_E33_an_unknown_tool_is_refused_by_name(mcp: Mcp) -> None:
    """E33 a tool the profile does not have is refused as unknown_tool, naming it."""

    async def scenario(tools: Tools) -> None:
        reply = await tools.refused("mem_nonexistent", {}, "unknown_tool")
        assert "mem_nonexistent" in reply["detail"]

    mcp(scenario)


# -- the doors ---------------------------------------------------------------------------------


def test_E34_stdio_door_serves_the_same_tools(mcp: Mcp, tmp_path: Path, seen: Seen) -> None:
    """E34 `recuerdo mcp --profile engram` (what a desktop agent launches) serves over stdio the
    same mem_* tools as /mcp, and they work."""

    async def over_http(tools: Tools) -> set[str]:
        return set(await tools.listed())

    expected = mcp(over_http)

    async def scenario() -> None:
        async with stdio_tools(tmp_path, "desk", "engram", seen) as tools:
            assert set(await tools.listed()) == expected
            saved = await save(tools, title="stdio", content="over a pipe")
            whole = await tools.ok("mem_get_observation", {"id": saved["id"]})
            assert whole["content"] == "over a pipe"

    run_async(scenario)


def test_X3_every_engram_tool_publishes_its_result_schema(mcp: Mcp, seen: Seen) -> None:
    """X3 typed results: every mem_* tool publishes an outputSchema, and every reply this module
    saw validates against it."""

    async def scenario(tools: Tools) -> None:
        saved = await save(tools, title="typed", content="typed reply")
        await tools.ok("mem_get_observation", {"id": saved["id"]})
        await tools.ok("mem_search", {"query": "typed"})
        await check_output_schemas(tools, seen)

    mcp(scenario)
