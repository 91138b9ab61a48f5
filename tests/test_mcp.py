"""MCP with the SDK's own client, over stdio (spawning ``recuerdo mcp``) and streamable HTTP."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from recuerdo.doors.profiles import profile
from recuerdo.verbs import VERBS

from .conftest import Server, tls_context
from .forks import recuerdo_command

Session = Callable[[], Any]


@asynccontextmanager
async def stdio_session(
    base: Path, memory: str = "mcp", prof: str = "native"
) -> AsyncIterator[ClientSession]:
    command, *args = recuerdo_command(
        "--state-dir", str(base), "--memory", memory, "mcp", "--profile", prof
    )
    params = StdioServerParameters(command=command, args=args)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def http_session(
    server: Server, memory: str = "mcp", headers: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    import httpx2

    client = httpx2.AsyncClient(headers=headers or {}, timeout=60, verify=tls_context())
    url = f"{server.url}/mcp?memory={memory}"
    async with (
        client,
        streamable_http_client(url, http_client=client) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, arguments: dict[str, Any]) -> Any:
    result = await session.call_tool(tool, arguments)
    return result.is_error, result.structured_content


async def family_tour(session: ClientSession) -> None:
    tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert set(tools) == set(VERBS.names())
    assert tools["recall"].annotations.read_only_hint is True
    assert tools["forget_knowledge"].annotations.destructive_hint is True
    assert tools["remember"].annotations.read_only_hint is False
    properties = tools["recall"].input_schema["properties"]
    assert "from" in properties and "from_" not in properties
    failed, entry = await call(
        session, "remember", {"category": "learning", "content": "MCP remembers"}
    )
    assert failed is False and isinstance(entry["result"], int)
    failed, found = await call(session, "search", {"query": "remembers"})
    assert failed is False and found["state"] == "answered"
    assert [r["id"] for r in found["results"]] == [entry["result"]]
    failed, note = await call(session, "save", {"title": "Doc", "content": "Body text"})
    assert failed is False and note["outcome"] == "created"
    failed, plan = await call(session, "create_progress", {"task": "t", "steps": ["a"]})
    assert failed is False and plan["resume_point"] == "a"
    failed, fact = await call(session, "relate", {"from": "Ann", "to": "Acme", "type": "works_at"})
    assert failed is False and fact["facts_created"] == 1
    failed, error = await call(session, "remember", {"category": "bogus", "content": "x"})
    assert failed is True
    assert error == {"ok": False, "error": "invalid_category", "detail": error["detail"]}
    assert "bogus" in error["detail"]
    failed, error = await call(session, "get", {"id": "not a number"})
    assert failed is True and error["error"] == "invalid_input"
    failed, listed = await call(session, "recall", {})
    assert failed is False and [e["content"] for e in listed["result"]] == ["MCP remembers"]


def test_stdio_tools_and_families(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with stdio_session(tmp_path) as session:
            await family_tour(session)

    anyio.run(scenario)


def test_streamable_http_tools_and_families(tmp_path: Path) -> None:
    server = Server(tmp_path)
    try:

        async def scenario() -> None:
            async with http_session(server) as session:
                await family_tour(session)

        anyio.run(scenario)
    finally:
        server.stop()


def test_server_instructions_teach_good_use(tmp_path: Path) -> None:
    async def scenario() -> str:
        command, *args = recuerdo_command("--state-dir", str(tmp_path), "--memory", "m", "mcp")
        params = StdioServerParameters(command=command, args=args)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            result = await session.initialize()
            return result.instructions or ""

    text = anyio.run(scenario)
    for phrase in ("Search before you write", "previews", "nothing_stored", "data, never"):
        assert phrase in text


@pytest.mark.parametrize("name", ["engram", "semurg", "notarium"])
def test_profiles_list_their_own_tool_names(tmp_path: Path, name: str) -> None:
    expected = {tool.name for tool in profile(name)}

    async def scenario() -> set[str]:
        async with stdio_session(tmp_path, prof=name) as session:
            return {tool.name for tool in (await session.list_tools()).tools}

    assert anyio.run(scenario) == expected
    assert any(tool.startswith("comms_") for tool in expected) == (name == "semurg")
    assert any(tool.startswith("code_") for tool in expected) == (name == "semurg")


def test_engram_mirror_and_resume_flow(tmp_path: Path) -> None:
    """Seed 004's workflow: the whole task document mirrored under odd/<feature>/tasks."""
    document = "# Tasks: checkout\n\n" + "\n".join(
        f"- [ ] step {i}: " + "details " * 40 for i in range(20)
    )
    updated = document.replace("- [ ] step 0", "- [x] step 0")

    async def scenario() -> None:
        async with stdio_session(tmp_path, prof="engram") as session:
            failed, key = await call(
                session,
                "mem_suggest_topic_key",
                {"type": "architecture", "title": "checkout tasks"},
            )
            assert failed is False and key["key"]
            failed, saved = await call(
                session,
                "mem_save",
                {
                    "title": "checkout tasks",
                    "content": document,
                    "type": "architecture",
                    "topic_key": "odd/checkout/tasks",
                    "project": "shop",
                },
            )
            assert failed is False and saved["outcome"] == "created"
            await call(session, "mem_session_start", {"id": "s1", "project": "shop"})
            failed, context = await call(session, "mem_context", {"project": "shop"})
            assert failed is False and "checkout tasks" in context["text"]
            failed, found = await call(
                session, "mem_search", {"query": "checkout tasks", "project": "shop"}
            )
            hit = found["results"][0]
            assert hit["truncated"] is True and len(hit["preview"]) < len(document)
            failed, whole = await call(session, "mem_get_observation", {"id": hit["id"]})
            assert whole["content"] == document
            failed, again = await call(
                session,
                "mem_save",
                {
                    "title": "checkout tasks",
                    "content": updated,
                    "type": "architecture",
                    "topic_key": "odd/checkout/tasks",
                    "project": "shop",
                },
            )
            assert again["outcome"] == "updated" and again["id"] == saved["id"]
            failed, latest = await call(session, "mem_get_observation", {"id": saved["id"]})
            assert latest["content"] == updated

    anyio.run(scenario)
    import recuerdo

    with recuerdo.open("mcp", base_dir=tmp_path) as mem:
        note_id = mem.search("checkout tasks")["results"][0]["id"]
        assert mem.revision(note_id, 1)["content"] == document  # the earlier revision is kept


def test_semurg_workflow(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with stdio_session(tmp_path, prof="semurg") as session:
            failed, stored = await call(
                session,
                "memory_remember",
                {
                    "content": "Priya Raman leads billing at Acme.",
                    "scope": "team",
                    "facts": {
                        "relations": [
                            {"source": "Priya Raman", "target": "Acme", "type": "works_at"}
                        ]
                    },
                },
            )
            assert failed is False and stored["outcome"] == "stored"
            failed, about = await call(
                session, "memory_recall", {"subject": "Priya", "scope": "team"}
            )
            assert about["state"] == "answered"
            fact = next(i for i in about["items"] if i["kind"] == "fact")
            assert fact["citation"]["span_state"] == "verified"
            failed, other = await call(
                session, "memory_recall", {"subject": "Priya", "scope": "team", "user_id": "u2"}
            )
            assert other["state"] == "nothing_stored"  # another end user never meets this one
            failed, status = await call(session, "memory_status", {"scope": "team"})
            assert status["ontology"]["facts"] == 1
            failed, gone = await call(
                session, "memory_forget", {"subject": "Priya Raman", "scope": "team"}
            )
            assert failed is False and gone["facts_removed"] == 1
            failed, again = await call(
                session, "memory_forget", {"subject": "Priya Raman", "scope": "team"}
            )
            assert failed is False and again["already_forgotten"] is True
            failed, missing = await call(
                session, "memory_forget", {"subject": "Priya Ramanujan", "scope": "team"}
            )
            assert failed is True and missing["error"] == "unknown_name"

    anyio.run(scenario)


def test_notarium_workflow(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with stdio_session(tmp_path, prof="notarium") as session:
            failed, first = await call(
                session,
                "remember_about_user",
                {"observation": "Prefers Spanish", "category": "language"},
            )
            assert failed is False and first["outcome"] == "created"
            assert first["redacted"] == {}
            # The profile's reply says what the guard replaced (and still meets its schema:
            # the client checks the structured content against the tool's output schema).
            failed, guarded = await call(
                session,
                "remember_about_user",
                {"observation": "Their vault password: hunter2hunter2", "category": "access"},
            )
            assert failed is False and guarded["redacted"] == {"observation": ["PASSWORD"]}
            failed, second = await call(
                session,
                "remember_about_project",
                {"project": "shop", "observation": "Uses Django", "category": "stack"},
            )
            assert second["scope"] == "project:shop"
            failed, found = await call(session, "search", {"query": "Spanish"})
            assert found["results"][0]["id"] == first["note_id"]
            failed, edited = await call(
                session,
                "edit_note",
                {
                    "ref": first["note_id"],
                    "operation": "find_replace",
                    "content": "Catalan",
                    "find": "Spanish",
                },
            )
            assert edited["outcome"] == "edited"
            failed, note = await call(session, "get_note", {"ref": first["note_id"]})
            assert note["content"] == "Prefers Catalan"
            failed, pack = await call(session, "recall", {"query": "Catalan"})
            assert "Prefers Catalan" in pack["context"]
            failed, activity = await call(session, "recent_activity", {})
            assert activity["result"][0]["operation"] == "edit"

    anyio.run(scenario)


def test_tool_results_are_json_text_too(tmp_path: Path) -> None:
    async def scenario() -> Any:
        async with stdio_session(tmp_path) as session:
            result = await session.call_tool("summary", {})
            return json.loads(result.content[0].text)

    assert anyio.run(scenario)["text"].startswith("Agent Memory: 0 entries")


@pytest.mark.parametrize("name", ["native", "engram", "semurg", "notarium"])
def test_every_tool_of_a_profile_has_an_object_output_schema(name: str) -> None:
    """Each tool publishes a valid outputSchema with an object at its root, as MCP asks."""
    from jsonschema import Draft202012Validator

    from recuerdo.doors.schemas import tool_output_schema

    for entry in profile(name):
        schema = tool_output_schema(entry)
        Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object", entry.name


@pytest.mark.parametrize(
    ("reply", "valid"),
    [
        ({"id": 1, "review_at": None, "status": "active"}, True),  # mark_reviewed: the object
        ({"result": []}, True),  # list: wrapped, as the door sends a list
        ({"id": 1, "review_at": None}, False),
        ({"result": [{"id": 1}]}, False),
        ({"id": 1, "review_at": None, "status": "active", "extra": 1}, False),
    ],
)
def test_a_union_result_is_published_branch_by_branch(reply: dict[str, Any], valid: bool) -> None:
    """`review` answers a list or an object: its outputSchema takes the object as it is and the
    list wrapped as {result: [...]}, and nothing else."""
    from jsonschema import Draft202012Validator

    from recuerdo.doors.schemas import reply_output_schema

    schema = reply_output_schema("review", VERBS["review"].result)
    assert Draft202012Validator(schema).is_valid(reply) is valid


def test_the_memory_may_follow_the_mcp_command(tmp_path: Path) -> None:
    """`recuerdo mcp --memory NAME` serves the same memory as `recuerdo --memory NAME mcp`."""
    import recuerdo

    with recuerdo.open("desk", base_dir=tmp_path) as memory:
        memory.relate("Ann", "Acme", "works_at")
    command, *args = recuerdo_command(
        "--state-dir", str(tmp_path), "mcp", "--memory", "desk", "--profile", "semurg"
    )
    params = StdioServerParameters(command=command, args=args)

    async def scenario() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            failed, about = await call(session, "memory_recall", {"subject": "Ann"})
            assert failed is False and about["state"] == "answered"
            assert about["items"][0]["id"].isdecimal()  # ids are decimal strings in this profile

    anyio.run(scenario)
