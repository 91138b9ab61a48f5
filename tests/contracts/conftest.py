"""What the seed contract suites share: real servers, the official MCP client, plain HTTP, and
checks of every reply against the schemas the server publishes.

Promise ids: E Engram, N Notarium, S Semurg, Y Synsema (../shared/spec/<seed>.md), and X for a
native promise every profile relies on, proven through a profile's door.

One server process per profile serves every suite (``servers.get(profile)``, started on first
use); each test works in a memory of its own (a fresh name in ``?memory=``), so tests stay
independent without paying for a process each. Every successful reply a test sees is recorded
per server, so a suite's last test can check them against the tool's ``outputSchema`` and the
route's OpenAPI 200 schema.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from ..conftest import Server, tls_context
from ..forks import recuerdo_command

T = TypeVar("T")
Json = dict[str, Any]
# What a developer's shell may carry that would change what a server process sees.
_HOST_VARIABLES = ("RECUERDO_STATE_DIR", "RECUERDO_MEMORY", "RECUERDO_CAPS")


# -- servers ---------------------------------------------------------------------------------


class Servers:
    """Server processes, one per profile, started on first use."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._started: dict[str, Server] = {}
        self.banners: dict[str, str] = {}

    def get(self, profile: str) -> Server:
        if profile not in self._started:
            base = self.root / profile
            base.mkdir()
            with pytest.MonkeyPatch.context() as patch:
                for variable in _HOST_VARIABLES:
                    patch.delenv(variable, raising=False)
                server = Server(base, memory="default", profile=profile)
            self._started[profile] = server
            self.banners[profile] = _printed_so_far(server)
        return self._started[profile]

    def stop(self) -> None:
        for server in self._started.values():
            server.stop()
        self._started.clear()


def _printed_so_far(server: Server) -> str:
    """What the server printed on start (its banner and client configuration): it is on the pipe
    already, flushed before the server answered /health."""
    assert server.process.stdout is not None
    fd = server.process.stdout.fileno()
    os.set_blocking(fd, False)
    chunks = []
    try:
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    except BlockingIOError:
        pass
    finally:
        os.set_blocking(fd, True)
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.fixture(scope="session")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    registry = Servers(tmp_path_factory.mktemp("contracts"))
    yield registry
    registry.stop()


@pytest.fixture
def name() -> str:
    """A memory nobody has used: each test starts from an empty store."""
    return f"c{uuid.uuid4().hex[:12]}"


@dataclass
class Seen:
    """The successful replies of one profile, for the typed-results checks."""

    tools: list[tuple[str, Json]] = field(default_factory=list)
    routes: list[tuple[str, Any]] = field(default_factory=list)


@pytest.fixture(scope="session")
def recorders() -> dict[str, Seen]:
    return {}


@pytest.fixture(scope="module")
def seen(server: Server, recorders: dict[str, Seen]) -> Seen:
    """What this profile's server has answered so far, in every suite."""
    return recorders.setdefault(server.url, Seen())


# -- HTTP --------------------------------------------------------------------------------------


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: Any


def request(url: str, body: Any = None, *, raw: bytes | None = None, method: str = "POST") -> Reply:
    data = raw if raw is not None else (None if method == "GET" else json.dumps(body).encode())
    req = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=60) as response:
            status, headers, payload = response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        status, headers, payload = error.code, error.headers, error.read()
    return Reply(
        status,
        {key.lower(): value for key, value in headers.items()},
        json.loads(payload) if payload else None,
    )


class Http:
    """Plain HTTP to one memory of a server; 2xx replies are recorded per route."""

    def __init__(self, server: Server, memory: str, seen: Seen) -> None:
        self.server = server
        self.memory = memory
        self.seen = seen

    def post(self, path: str, body: Any = None, *, raw: bytes | None = None) -> Reply:
        reply = request(f"{self.server.url}{path}?memory={self.memory}", body or {}, raw=raw)
        if 200 <= reply.status < 300:
            self.seen.routes.append((path, reply.body))
        return reply

    def ok(self, path: str, body: Any = None) -> Any:
        reply = self.post(path, body)
        assert reply.status == 200, f"{path} {body}: {reply.status} {reply.body}"
        return reply.body

    def native(self, verb: str, body: Any = None) -> Any:
        """The native route of a verb: what the owner (not the profile's agent) does."""
        return self.ok(f"/v1/{verb}", body)


@pytest.fixture
def http(server: Server, name: str, seen: Seen) -> Http:
    return Http(server, name, seen)


def openapi(server: Server) -> Json:
    reply = request(f"{server.url}/openapi.json", method="GET")
    assert reply.status == 200
    return reply.body  # type: ignore[no-any-return]


# -- MCP ---------------------------------------------------------------------------------------


class Tools:
    """One MCP session through the official client; every success is recorded."""

    def __init__(self, session: ClientSession, seen: Seen, instructions: str) -> None:
        self.session = session
        self.seen = seen
        self.instructions = instructions

    async def call(self, tool: str, arguments: Json) -> tuple[bool, Json]:
        result = await self.session.call_tool(tool, arguments)
        content = result.structured_content
        assert isinstance(content, dict), f"{tool}: no structured content ({result.content})"
        if not result.is_error:
            self.seen.tools.append((tool, content))
        return bool(result.is_error), content

    async def ok(self, tool: str, arguments: Json) -> Json:
        failed, content = await self.call(tool, arguments)
        assert not failed, f"{tool} {arguments} was refused: {content}"
        return content

    async def refused(self, tool: str, arguments: Json, *codes: str) -> Json:
        """The call is an error result in the one error shape, with one of ``codes``."""
        failed, content = await self.call(tool, arguments)
        assert failed, f"{tool} {arguments} was accepted: {content}"
        assert content.get("ok") is False, content
        assert content.get("error") in codes, content
        assert isinstance(content.get("detail"), str) and content["detail"], content
        return content

    async def listed(self) -> dict[str, Any]:
        return {tool.name: tool for tool in (await self.session.list_tools()).tools}


@asynccontextmanager
async def http_tools(url: str, memory: str, seen: Seen) -> AsyncIterator[Tools]:
    import httpx2

    client = httpx2.AsyncClient(timeout=60, verify=tls_context())
    async with (
        client,
        streamable_http_client(f"{url}/mcp?memory={memory}", http_client=client) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        started = await session.initialize()
        yield Tools(session, seen, started.instructions or "")


@asynccontextmanager
async def stdio_tools(base: Path, memory: str, profile: str, seen: Seen) -> AsyncIterator[Tools]:
    """``recuerdo mcp --profile <profile>``: what a desktop agent launches."""
    command, *args = recuerdo_command(
        "--state-dir", str(base), "--memory", memory, "mcp", "--profile", profile
    )
    params = StdioServerParameters(
        command=command,
        args=args,
        env={k: v for k, v in os.environ.items() if k not in _HOST_VARIABLES},
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        started = await session.initialize()
        yield Tools(session, seen, started.instructions or "")


class Mcp:
    """Runs an async scenario in one MCP session (streamable HTTP) on a test's own memory."""

    def __init__(self, server: Server, memory: str, seen: Seen) -> None:
        self.server = server
        self.memory = memory
        self.seen = seen

    def __call__(self, scenario: Callable[[Tools], Awaitable[T]]) -> T:
        async def run() -> T:
            async with http_tools(self.server.url, self.memory, self.seen) as tools:
                return await scenario(tools)

        return run_async(run)


def run_async(function: Callable[[], Awaitable[T]]) -> T:
    """anyio.run, re-raising the failure itself rather than the task groups wrapped round it."""
    try:
        return anyio.run(function)
    except BaseExceptionGroup as group:
        leaf: BaseException = group
        while isinstance(leaf, BaseExceptionGroup):
            leaf = leaf.exceptions[0]
        raise leaf from None


@pytest.fixture
def mcp(server: Server, name: str, seen: Seen) -> Mcp:
    return Mcp(server, name, seen)


# -- programs --------------------------------------------------------------------------------


def run_program(folder: Path, source: str, *, env: dict[str, str] | None = None) -> Any:
    """Run ``source`` as the program ``folder/shop_bot.py`` from its own folder, in a clean
    environment plus ``env``; it prints one JSON value last, returned here."""
    script = folder / "shop_bot.py"
    script.write_text(source)
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("RECUERDO_", "SYNSEMA_"))}
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        cwd=folder,
        env={**clean, **(env or {})},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- reading replies ---------------------------------------------------------------------------


def rows(reply: Any) -> list[Any]:
    """The list a reply carries: a bare list, MCP's ``{"result": [...]}``, or the reply's one
    list-valued field."""
    if isinstance(reply, list):
        return reply
    assert isinstance(reply, dict), reply
    if isinstance(reply.get("result"), list):
        return reply["result"]  # type: ignore[no-any-return]
    lists = [value for value in reply.values() if isinstance(value, list)]
    assert len(lists) == 1, f"expected one list in {reply}"
    return lists[0]  # type: ignore[no-any-return]


def find_key(value: Any, key: str) -> list[Any]:
    """Every value stored under ``key`` anywhere in a JSON value."""
    found: list[Any] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if k == key:
                found.append(v)
            found += find_key(v, key)
    elif isinstance(value, list):
        for item in value:
            found += find_key(item, key)
    return found


def report(found: Any) -> str:
    """A failure list in full (pytest shortens a dict or list given as the message)."""
    return json.dumps(found, indent=1, default=str, ensure_ascii=False)


def names_argument(reply: Json, argument: str) -> bool:
    return reply.get("error") == "unknown_argument" and argument in str(reply.get("detail"))


# -- schemas -----------------------------------------------------------------------------------

# A schema that says something about the value (FastAPI's default for an untyped result is a
# bare {"title": ...}, which every value satisfies).
_SAYS_SOMETHING = {"type", "$ref", "properties", "anyOf", "oneOf", "allOf", "items", "enum"}


def says_something(schema: Any) -> bool:
    return isinstance(schema, dict) and bool(_SAYS_SOMETHING & set(schema))


def schema_problems(schema: Json, instance: Any, root: Json | None = None) -> list[str]:
    """Validation errors of ``instance``; ``root`` supplies OpenAPI's ``components``."""
    full = schema if root is None else {**schema, "components": root.get("components", {})}
    validator = _validator(json.dumps(full, sort_keys=True))
    return [error.message for error in validator.iter_errors(instance)][:3]


@functools.cache
def _validator(schema_text: str) -> Any:
    """A validator of this schema, checked against its metaschema once: a module checks
    hundreds of replies against a few dozen schemas, and checking a schema costs more than
    using it."""
    from jsonschema.validators import validator_for

    schema = json.loads(schema_text)
    cls = validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def response_schema(document: Json, path: str) -> Any:
    operation = document["paths"].get(path, {}).get("post", {})
    content = operation.get("responses", {}).get("200", {}).get("content", {})
    return content.get("application/json", {}).get("schema")


async def check_output_schemas(tools: Tools, seen: Seen) -> None:
    """Every tool publishes an outputSchema and every reply seen in this module fits it."""
    listed = await tools.listed()
    missing = sorted(
        name for name, tool in listed.items() if not says_something(tool.output_schema)
    )
    assert not missing, f"tools without an outputSchema: {missing}"
    assert seen.tools, "no tool reply was seen: nothing to check against the schemas"
    failures = []
    for tool, content in seen.tools:
        problems = schema_problems(listed[tool].output_schema, content)
        if problems:
            failures.append(f"{tool}: {problems}")
    assert not failures, report(failures)


def check_route_schemas(server: Server, seen: Seen, prefix: str) -> None:
    """Every POST route under ``prefix`` publishes a 200 schema; every reply seen fits it."""
    document = openapi(server)
    routes = [path for path, ops in document["paths"].items() if path.startswith(prefix)]
    routes = [path for path in routes if "post" in document["paths"][path]]
    assert routes, f"no routes under {prefix}"
    missing = sorted(path for path in routes if not says_something(response_schema(document, path)))
    assert not missing, f"routes without a 200 response schema: {missing}"
    failures = []
    for path, body in seen.routes:
        if path.startswith(prefix):
            problems = schema_problems(response_schema(document, path), body, document)
            if problems:
                failures.append(f"{path}: {problems}")
    assert not failures, report(failures)
