"""MCP over streamable HTTP at ``/mcp``, inside ``recuerdo serve``.

The MCP SDK's transport runs statelessly with JSON responses. Its own DNS rebinding protection
is on, with the same host list as the server's guard (defence in depth: the guard refuses
first). A body is read and checked here before the SDK sees it, and any refusal the SDK answers
itself is rewritten into the one error shape, as the MCP specification allows (an HTTP error,
with a body that MAY be a JSON-RPC error).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

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
