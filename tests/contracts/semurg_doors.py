"""What the two Semurg suites share: the profile's two doors behind one interface, the spec's
Priya example, and readers of recall / context replies."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from .conftest import Http, Json, Mcp, Tools, run_async

T = TypeVar("T")
SCOPE = "team"
VERBS = (
    *("remember", "recall", "context", "relate", "forget"),
    *("document", "export", "import", "status"),
)
PRIYA_TEXT = "Priya Raman joined Acme Corp in March 2021. She leads the billing team."


class Via:
    """One of the profile's two doors: the memory_<verb> tool or POST /v1/memory/<verb>.
    Every call names the scope `team` unless it names another."""

    def __init__(self, http: Http | None = None, tools: Tools | None = None) -> None:
        self.http = http
        self.tools = tools

    async def call(self, verb: str, body: Json) -> tuple[int | None, Json]:
        """(HTTP status, or None for an MCP error result; the reply)."""
        if self.tools is not None:
            failed, content = await self.tools.call(f"memory_{verb}", body)
            return (None if failed else 200), content
        assert self.http is not None
        reply = self.http.post(f"/v1/memory/{verb}", body)
        return reply.status, reply.body

    async def ok(self, verb: str, body: Json) -> Json:
        status, reply = await self.call(verb, {"scope": SCOPE, **body})
        assert status == 200, f"memory_{verb} {body}: {status} {reply}"
        return reply

    async def refused(self, verb: str, body: Json, *codes: str, status: int | None = None) -> Json:
        """Refused in the one error shape with one of ``codes`` (and, over HTTP, ``status``)."""
        got, reply = await self.call(verb, {"scope": SCOPE, **body})
        assert got != 200, f"memory_{verb} {body} was accepted: {reply}"
        assert reply.get("ok") is False and reply.get("error") in codes, reply
        assert isinstance(reply.get("detail"), str) and reply["detail"], reply
        if got is not None and status is not None:
            assert got == status, reply
        return reply

    async def records(self, kind: str, scope: str = SCOPE) -> list[Json]:
        """The exported records of one kind (entity, fact, document) of a scope."""
        page = await self.ok("export", {"scope": scope, "limit": 1024})
        return [record for record in page["records"] if record["record"] == kind]


class Door:
    """Runs an async scenario through one door on the test's own memory."""

    def __init__(self, kind: str, http: Http, mcp: Mcp) -> None:
        self.kind = kind
        self.http = http
        self.mcp = mcp

    def __call__(self, scenario: Callable[[Via], Awaitable[T]]) -> T:
        if self.kind == "http":
            return run_async(lambda: scenario(Via(http=self.http)))
        return self.mcp(lambda tools: scenario(Via(tools=tools)))


async def priya(via: Via, *, moved: bool = True, scope: str = SCOPE) -> Json:
    """The spec's example: Priya works at Acme (from a dated note), later at Globex."""
    stored = await via.ok(
        "remember",
        {
            "scope": scope,
            "content": PRIYA_TEXT,
            "date": "2021-03-01",
            "source": "hr-notes",
            "facts": {
                "entities": [
                    {"name": "Priya Raman", "type": "person"},
                    {"name": "Acme Corp", "type": "company"},
                ],
                "relations": [{"source": "Priya Raman", "target": "Acme Corp", "type": "works_at"}],
            },
        },
    )
    if moved:
        relation = {"from": "Priya Raman", "to": "Globex", "type": "works_at", "replaces": True}
        await via.ok("relate", {**relation, "date": "2023-06-01", "scope": scope})
    return stored


def facts(reply: Json) -> list[Json]:
    """The facts of a context answer (`facts`) or of a recall (its fact items)."""
    if "facts" in reply:
        return list(reply["facts"])
    assert "items" in reply, f"no facts in the reply: {sorted(reply)}"
    return [item for item in reply["items"] if item["kind"] == "fact"]


def passages(reply: Json) -> list[Json]:
    if "passages" in reply:
        return list(reply["passages"])
    assert "items" in reply, f"no passages in the reply: {sorted(reply)}"
    return [item for item in reply["items"] if item["kind"] == "passage"]


def entities(reply: Json) -> list[str]:
    return [item["name"] for item in reply["items"] if item["kind"] == "entity"]


def employers(reply: Json) -> list[str]:
    return [f["object"] for f in facts(reply) if f["relation"] == "works_at" and not f["derived"]]


def found_by(fact: Json) -> Json:
    return dict(fact.get("citation", {}).get("found_by") or fact.get("found_by") or {})
