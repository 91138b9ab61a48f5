"""The HTTP API (and the MCP endpoint) that ``recuerdo serve`` runs, generated from the verb table.

* ``POST /v1/{verb}?memory=NAME``: every verb, its JSON body the verb's parameters;
* ``POST /v1/memory/{verb}``: the Semurg routes, when the server runs that profile;
* ``/mcp``: MCP over streamable HTTP, with the server's profile;
* ``GET /health`` and ``GET /openapi.json``.

Every error is ``{ok: false, error, detail}`` with the status of its RecuerdoError. Requests
carry ``Authorization: Bearer <token>`` unless the server runs in single-user loopback mode (no
tokens created, bound to 127.0.0.1 or ::1).
"""

# No `from __future__ import annotations` here: FastAPI reads the endpoints' annotations at run
# time, and each verb's body model is a local variable of the function that builds its route.
import contextlib
import functools
import json
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from fastapi import Body, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict
from starlette.routing import Route

from .. import __version__
from ..errors import InvalidInput, PayloadTooLarge, RecuerdoError, Timeout, Unauthorized
from ..security.tokens import LOCAL, Principal, TokenStore
from ..verbs import VERBS, Verb
from . import gateway
from .profiles import ToolMap, profile

log = logging.getLogger("recuerdo.http")
LOOPBACK = {"127.0.0.1", "::1", "localhost"}
Scope = dict[str, Any]
ASGI = Callable[
    [Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]
]


class ErrorShape(BaseModel):
    model_config = ConfigDict(extra="allow")
    ok: bool
    error: str
    detail: str


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorShape, "description": description}
    for status, description in (
        (400, "Bad arguments"),
        (401, "No valid token"),
        (403, "Not allowed"),
        (404, "Not found"),
        (409, "Conflict"),
        (413, "Too large"),
        (415, "Not a document"),
        (422, "Cannot be processed"),
        (500, "Internal error"),
        (503, "Store unavailable"),
        (504, "Timed out"),
    )
}


@dataclass
class ServerConfig:
    base_dir: str | os.PathLike[str] | None = None
    default_memory: str | None = None
    profile: str = "native"
    host: str = "127.0.0.1"
    max_body_bytes: int = 64 * 1024 * 1024
    """Room for a message body of 16 MiB escaped as JSON (a client escaping every non-ASCII
    character as \\uXXXX sends up to three times the text's UTF-8 size)."""
    timeout_seconds: float = 60.0
    code_repos: dict[str, str] = field(default_factory=dict)
    """Repositories this server may ingest (name -> local path): on a schedule, and when a
    caller names one to ``code_ingest``."""
    code_interval: float = 300.0
    """Seconds between scheduled ingests of ``code_repos`` (0: only through code_ingest)."""
    mail_domains: list[str] = field(default_factory=list)
    """The domains addresses may be bound in, for tenants that set none (default ``local``)."""


def error_response(error: RecuerdoError) -> JSONResponse:
    return JSONResponse(
        json.loads(json.dumps(error.to_dict(), default=str)), status_code=error.status
    )


class Guard:
    """ASGI middleware: request size limit and the caller's principal (or a 401)."""

    def __init__(self, app: ASGI, config: ServerConfig, tokens: TokenStore) -> None:
        self.app = app
        self.config = config
        self.tokens = tokens

    def single_user(self) -> bool:
        return self.config.host in LOOPBACK and not self.tokens.any_active()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] in ("/health", "/openapi.json", "/docs"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope.get("headers", [])}
        length = headers.get("content-length")
        if length and length.isdigit() and int(length) > self.config.max_body_bytes:
            await _send(
                send,
                PayloadTooLarge(
                    f"the request is {length} bytes; the limit is {self.config.max_body_bytes}"
                ),
            )
            return
        principal = self._principal(headers.get("authorization", ""))
        if principal is None:
            await _send(
                send,
                Unauthorized("a valid token is required: Authorization: Bearer <token>"),
            )
            return
        scope.setdefault("state", {})["principal"] = principal
        await self.app(scope, self._limited(receive), send)

    def _principal(self, authorization: str) -> Principal | None:
        scheme, _, secret = authorization.partition(" ")
        if self.single_user() and not secret:
            return LOCAL
        return self.tokens.verify(secret.strip() if scheme.lower() == "bearer" else None)

    def _limited(self, receive: Any) -> Any:
        seen = 0
        limit = self.config.max_body_bytes

        async def counted() -> Any:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > limit:
                raise _TooLarge()
            return message

        return counted


class _TooLarge(Exception):
    pass


async def _send(send: Any, error: RecuerdoError) -> None:
    body = json.dumps(error.to_dict()).encode()
    await send(
        {
            "type": "http.response.start",
            "status": error.status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def create_app(config: ServerConfig) -> FastAPI:
    pool = gateway.MemoryPool(
        config.base_dir, config.default_memory, config.code_repos, config.mail_domains
    )
    mcp_manager = _mcp_manager(pool, config)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        schedule = gateway.CodeSchedule(pool, config.code_interval, _single_user(config))
        schedule.start()
        try:
            async with mcp_manager.run():
                yield
        finally:
            schedule.stop()
        pool.close()  # graceful shutdown: upkeep finished, every acknowledged write on disk

    app = FastAPI(
        title="recuerdo",
        version=__version__,
        lifespan=lifespan,
        description="Persistent memory for AI agents. Every route is a verb.",
    )
    app.state.pool = pool

    @app.exception_handler(RecuerdoError)
    async def recuerdo_error(request: Request, error: RecuerdoError) -> JSONResponse:
        return error_response(error)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, error: RequestValidationError) -> JSONResponse:
        parts = [
            f"{'.'.join(str(p) for p in e['loc'][1:]) or 'body'}: {e['msg']}"
            for e in error.errors()
        ]
        return error_response(InvalidInput("; ".join(parts) or "bad request"))

    @app.exception_handler(_TooLarge)
    async def too_large(request: Request, error: _TooLarge) -> JSONResponse:
        return error_response(PayloadTooLarge(f"the request is over {config.max_body_bytes} bytes"))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, error: Exception) -> JSONResponse:
        log.exception("unexpected error on %s", request.url.path)
        return error_response(RecuerdoError(f"internal error: {type(error).__name__}"))

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"ok": True, "version": __version__, "profile": config.profile}

    for verb in VERBS:
        _native_route(app, verb, pool, config)
    if config.profile == "semurg":
        for entry in profile("semurg"):
            _profile_route(app, entry, pool, config)
    app.router.routes.append(
        Route("/mcp", endpoint=_MCPEndpoint(mcp_manager), methods=["GET", "POST", "DELETE"])
    )
    return app


def _single_user(config: ServerConfig) -> bool:
    return config.host in LOOPBACK and not TokenStore(config.base_dir).any_active()


async def _invoke(config: ServerConfig, call: Callable[[], Awaitable[Any]]) -> Any:
    try:
        with anyio.fail_after(config.timeout_seconds):
            return await call()
    except TimeoutError as exc:
        raise Timeout(
            f"no answer within {config.timeout_seconds:g} s; a write may still complete, so "
            "read before retrying"
        ) from exc


_NO_BODY = Body(default=None)


def _json(value: Any) -> Response:
    """Results are plain JSON values already: serialise them directly (FastAPI's generic
    encoder costs more than the verb on small memories)."""
    body = json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))
    return Response(body.encode("utf-8"), media_type="application/json")


def _memory_name(request: Request) -> str | None:
    return request.query_params.get("memory") or request.headers.get("x-recuerdo-memory")


def _native_route(app: FastAPI, verb: Verb, pool: gateway.MemoryPool, config: ServerConfig) -> None:
    entry = ToolMap(
        name=verb.name,
        verb=verb.name,
        description=verb.description,
        schema={},
        read_only=verb.mode == "read",
        destructive=verb.destructive,
    )
    model = verb.params

    async def endpoint(request: Request, body: model = _NO_BODY) -> Any:  # type: ignore[valid-type]
        arguments: dict[str, Any] = (
            {} if body is None else body.model_dump(by_alias=True, exclude_unset=True)
        )
        principal: Principal = request.state.principal
        return _json(
            await _invoke(
                config,
                functools.partial(
                    gateway.run, pool, principal, _memory_name(request), entry, arguments
                ),
            )
        )

    app.post(
        f"/v1/{verb.name}",
        name=verb.name,
        summary=verb.description.split(". ")[0],
        description=verb.description,
        responses=ERROR_RESPONSES,
        tags=[verb.family],
    )(endpoint)


def _profile_route(
    app: FastAPI, entry: ToolMap, pool: gateway.MemoryPool, config: ServerConfig
) -> None:
    async def endpoint(request: Request, body: dict[str, Any] = Body(default=None)) -> Any:  # noqa: B008
        principal: Principal = request.state.principal
        return _json(
            await _invoke(
                config,
                functools.partial(
                    gateway.run, pool, principal, _memory_name(request), entry, body or {}
                ),
            )
        )

    app.post(
        f"/v1/memory/{entry.http_path}",
        name=entry.name,
        summary=entry.description,
        responses=ERROR_RESPONSES,
        tags=["semurg"],
    )(endpoint)


def _mcp_manager(pool: gateway.MemoryPool, config: ServerConfig) -> Any:
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
        return None if request is None else _memory_name(request)

    server = build_server(pool, config.profile, principal_of=principal_of, memory_of=memory_of)
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return StreamableHTTPSessionManager(
        app=server, stateless=True, json_response=True, security_settings=security
    )


class _MCPEndpoint:
    """An ASGI app (a class, so Starlette hands it the raw request) for the MCP transport."""

    def __init__(self, manager: Any) -> None:
        self.manager = manager

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        await self.manager.handle_request(scope, receive, send)


def wrap(app: FastAPI, config: ServerConfig) -> Guard:
    """The application as served: the guard in front of FastAPI."""
    return Guard(app, config, TokenStore(config.base_dir))


CONFIG_ENV = "RECUERDO_SERVER_CONFIG"


def app_from_env() -> Guard:
    """The application of one worker process when ``serve --workers N`` starts several: the
    configuration travels in the environment."""
    raw = json.loads(os.environ[CONFIG_ENV])
    config = ServerConfig(**raw)
    return wrap(create_app(config), config)
