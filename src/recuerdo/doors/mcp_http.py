"""MCP over streamable HTTP at ``/mcp``, inside ``recuerdo serve``.

The MCP SDK's transport runs statelessly with JSON responses. Its own DNS rebinding protection
is on, with the same host list as the server's guard (defence in depth: the guard refuses
first). A body is read and checked here before the SDK sees it, and any refusal the SDK answers
itself is rewritten into the one error shape, as the MCP specification allows (an HTTP error,
with a body that MAY be a JSON-RPC error).
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio

from ..errors import (
    InvalidInput,
    InvalidJSON,
    MethodNotAllowed,
    PayloadTooLarge,
    RecuerdoError,
    Unauthorized,
    UnknownRoute,
)
from ..security.tokens import Principal
from . import gateway
from .guard import HostPolicy, error_body, send_error

log = logging.getLogger("recuerdo.mcp")

_SDK_REFUSALS: dict[int, Callable[[str], RecuerdoError]] = {
    400: InvalidInput,
    404: UnknownRoute,
    405: MethodNotAllowed,
    413: PayloadTooLarge,
}


def mcp_manager(
    pool: gateway.MemoryPool,
    profile_name: str,
    hosts: HostPolicy,
    memory_of_request: Callable[[Any], str | None],
) -> Any:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings

    from .mcp import build_server

    def principal_of(ctx: Any) -> Principal:
        request = ctx.request
        principal = getattr(getattr(request, "state", None), "principal", None)
        if principal is None:
            raise Unauthorized("a valid token is required")
        return principal  # type: ignore[no-any-return]

    def memory_of(ctx: Any) -> str | None:
        request = ctx.request
        return None if request is None else memory_of_request(request)

    server = build_server(pool, profile_name, principal_of=principal_of, memory_of=memory_of)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts.sdk_hosts(),
        allowed_origins=hosts.sdk_origins(),
    )
    return StreamableHTTPSessionManager(
        app=server, stateless=True, json_response=True, security_settings=security
    )


class LazyMCP:
    """The MCP transport, built at the first request to ``/mcp`` rather than at start.

    Importing the MCP SDK and building its server is most of a server start (about 0.85 s of
    CPU out of 2), and a server that only answers HTTP and the lens never needs it. The SDK's
    session manager must be entered and left in one task, so a task of the server's lifespan
    (``run``) builds it when asked, keeps it running until shutdown, and requests wait for it.
    """

    def __init__(self, build: Callable[[], Any]) -> None:
        self._build = build
        self._wanted: anyio.Event | None = None
        self._ready: anyio.Event | None = None
        self._manager: Any = None
        self._failure: Exception | None = None

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        # Events belong to the running loop: made here, not when the app is built.
        self._wanted, self._ready = anyio.Event(), anyio.Event()
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._serve)
            try:
                yield
            finally:
                tasks.cancel_scope.cancel()

    async def _serve(self) -> None:
        assert self._wanted is not None and self._ready is not None
        await self._wanted.wait()
        try:
            # The import and the build run beside the event loop: other requests go on.
            manager = await anyio.to_thread.run_sync(self._build)
        except Exception as error:  # each request answers it; the rest of the server goes on
            log.exception("the MCP transport could not start")
            self._failure = error
            self._ready.set()
            return
        async with manager.run():
            self._manager = manager
            self._ready.set()
            await anyio.sleep_forever()

    async def handle_request(self, scope: Any, receive: Any, send: Any) -> None:
        if self._manager is None:
            if self._wanted is None or self._ready is None:
                raise RecuerdoError("the MCP transport runs only inside the server's lifespan")
            self._wanted.set()
            await self._ready.wait()
        if self._manager is None:
            raise RecuerdoError(f"the MCP transport could not start: {self._failure!r}")
        await self._manager.handle_request(scope, receive, send)


class MCPEndpoint:
    """An ASGI app (a class, so Starlette hands it the raw request) for the MCP transport."""

    def __init__(self, manager: Any, max_body_bytes: int) -> None:
        self.manager = manager
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        replay = receive
        if scope.get("method") == "POST":
            try:
                body = await self._body(receive)
                _check_json(body)
            except RecuerdoError as refusal:
                await send_error(send, refusal)
                return
            replay = _replaying(body)
        await self.manager.handle_request(scope, replay, _in_our_shape(send))

    async def _body(self, receive: Any) -> bytes:
        parts: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                raise PayloadTooLarge(f"the request is over {self.max_body_bytes} bytes")
            parts.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(parts)


def _check_json(body: bytes) -> None:
    try:
        json.loads(body)
    except RecursionError:
        raise InvalidJSON("the body is nested too deeply to read") from None
    except ValueError as exc:
        raise InvalidJSON(f"the body is not JSON this server can read ({exc})") from None


def _replaying(body: bytes) -> Any:
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    return receive


def _in_our_shape(send: Any) -> Any:
    """Pass the SDK's answers through, except refusals: those become the error shape."""
    refusing: dict[str, Any] = {}

    async def wrapped(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start" and message["status"] >= 400:
            refusing["status"] = message["status"]
            refusing["body"] = b""
            return
        if refusing and message["type"] == "http.response.body":
            refusing["body"] += message.get("body", b"")
            if message.get("more_body", False):
                return
            status = refusing["status"]
            text = bytes(refusing["body"]).decode("utf-8", "replace")[:500]
            make = _SDK_REFUSALS.get(status, InvalidInput if status < 500 else RecuerdoError)
            error = make(f"the MCP transport refused the request: {text}")
            body = error_body(error)
            await send(
                {
                    "type": "http.response.start",
                    "status": status,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await send(message)

    return wrapped
