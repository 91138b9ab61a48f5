"""Native promises that every profile relies on (issue 11, "Native"), through the native doors
of a real ``recuerdo serve``: the MCP tools (official client) and ``POST /v1/<verb>``."""

from __future__ import annotations

from typing import Any

import pytest

from ..conftest import Server
from .conftest import (
    Http,
    Mcp,
    Seen,
    Servers,
    Tools,
    check_output_schemas,
    check_route_schemas,
    names_argument,
    rows,
)


@pytest.fixture(scope="module")
def server(servers: Servers) -> Server:
    return servers.get("native")


def journal(http: Http) -> list[Any]:
    return rows(http.native("journal", {"limit": 1000}))


def test_X1_a_conflict_revision_is_listed_and_read_by_its_revision_id(mcp: Mcp) -> None:
    """X1 a stale save keeps the incoming text as a conflict revision: history lists it with its
    revision_id, and revision(id, revision_id=N) reads it whole."""

    async def scenario(tools: Tools) -> None:
        saved = await tools.ok("save", {"title": "Plan", "content": "v1", "key": "plan"})
        await tools.ok("save", {"title": "Plan", "content": "v2", "key": "plan"})
        stale = {"title": "Plan", "content": "stale", "key": "plan", "expected_version": 1}
        conflict = await tools.refused("save", stale, "conflict")
        revision_id = conflict["conflict_revision_id"]
        history = rows(await tools.ok("history", {"id": saved["id"]}))
        assert [row["operation"] for row in history if row["revision_id"] == revision_id] == [
            "conflict"
        ]
        kept = await tools.ok("revision", {"id": saved["id"], "revision_id": revision_id})
        assert kept["content"] == "stale"
        assert (await tools.ok("get", {"id": saved["id"]}))["content"] == "v2"

    mcp(scenario)


def test_X8_an_unknown_argument_is_refused_by_name(mcp: Mcp, http: Http) -> None:
    """X8 an unknown argument is refused by name (unknown_argument; HTTP 400) on the native doors
    too, and nothing is stored."""

    async def scenario(tools: Tools) -> None:
        body = {"title": "t", "content": "c", "bogus_param": 1}
        reply = await tools.refused("save", body, "unknown_argument")
        assert names_argument(reply, "bogus_param"), reply

    mcp(scenario)
    refused = http.post("/v1/save", {"title": "t", "content": "c", "bogus_param": 1})
    assert refused.status == 400 and names_argument(refused.body, "bogus_param"), refused.body
    assert journal(http) == []


def test_X9_an_unknown_tool_is_refused_by_name(mcp: Mcp) -> None:
    """X9 a tool that does not exist is refused as unknown_tool, naming it."""

    async def scenario(tools: Tools) -> None:
        reply = await tools.refused("remember_everything", {}, "unknown_tool")
        assert "remember_everything" in reply["detail"]

    mcp(scenario)


def test_X7_native_replies_are_typed(server: Server, mcp: Mcp, http: Http, seen: Seen) -> None:
    """X7 typed results: every native tool publishes an outputSchema and every /v1/<verb> route
    a 200 response schema; every reply seen from this server validates against them."""
    http.post("/v1/remember", {"category": "learning", "content": "typed"})
    http.post("/v1/recall", {})
    http.post("/v1/save", {"title": "typed", "content": "typed note"})

    async def scenario(tools: Tools) -> None:
        await tools.ok("summary", {})
        await tools.ok("search", {"query": "typed"})
        await check_output_schemas(tools, seen)

    mcp(scenario)
    check_route_schemas(server, seen, "/v1/")
