"""The HTTP API (and the MCP endpoint) that ``recuerdo serve`` runs, generated from the verb table.

* ``POST /v1/{verb}?memory=NAME``: every verb, its JSON body the verb's parameters;
* ``POST /v1/memory/{verb}``: the Semurg routes, when the server runs that profile;
* ``/mcp``: MCP over streamable HTTP, with the server's profile;
* ``GET /health`` and ``GET /openapi.json`` (request and response schemas of every verb);
* the memory lens (web pages) at ``/``: :mod:`.web`.

Every non-success is ``{ok: false, error, detail}`` with the status of its RecuerdoError:
bodies are read and parsed here (never by the framework), so no input reaches another shape.
:mod:`.guard` checks every request first (headers, Host, Origin, size, token).
"""

# No `from __future__ import annotations` here: FastAPI reads the endpoints' annotations at run
# time.
import contextlib
import decimal
import functools
import json
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from fastapi import FastAPI, Request
from fastapi.openapi.utils import get_openapi
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.routing import Route

from .. import __version__
from ..errors import (
    InvalidInput,
    InvalidJSON,
    MethodNotAllowed,
    PayloadTooLarge,
    RecuerdoError,
    Timeout,
    UnknownRoute,
)
from ..model import exact
from ..security.tokens import Principal, TokenStore
from ..verbs import VERBS, Verb
from . import gateway, schemas
from .guard import LOOPBACK_NAMES, Guard, HostPolicy, error_body, send_error
from .mcp_http import MCPEndpoint
from .profiles import ToolMap, profile

log = logging.getLogger("recuerdo.http")


class ErrorShape(BaseModel):
    model_config = ConfigDict(extra="allow")
    ok: bool
    error: str
    detail: str


ERROR_STATUSES = {
    400: "Bad arguments",
    401: "No valid token",
    403: "Not allowed",
    404: "Not found",
    409: "Conflict",
    413: "Too large",
    415: "Not a document",
    421: "Not this server (Host)",
    422: "Cannot be processed",
    500: "Internal error",
    503: "Store unavailable or damaged",
    504: "Timed out",
    507: "Disk full",
}


MESSAGE_ROUTES = frozenset(
    {"/v1/send_message", "/v1/memory/comms_send", "/v1/import", "/v1/memory/import", "/mcp"}
)
"""Routes that carry a message body (up to 16 MiB) or an export page holding one."""


@dataclass
class ServerConfig:
    base_dir: str | os.PathLike[str] | None = None
    default_memory: str | None = None
    profile: str = "native"
    host: str = "127.0.0.1"
    max_body_bytes: int = 8 * 1024 * 1024
    max_message_body_bytes: int = 64 * 1024 * 1024
    """The limit of the routes that carry messages (``MESSAGE_ROUTES``): room for a body of
    16 MiB escaped as JSON (a client escaping every non-ASCII character as \\uXXXX sends up
    to three times the text's UTF-8 size)."""
    timeout_seconds: float = 60.0
    code_repos: dict[str, str] = field(default_factory=dict)
    """Repositories this server may ingest (name -> local path): on a schedule, and when a
    caller names one to ``code_ingest``."""
    code_interval: float = 300.0
    """Seconds between scheduled ingests of ``code_repos`` (0: only through code_ingest)."""
    mail_domains: list[str] = field(default_factory=list)
    """The domains addresses may be bound in, for tenants that set none (default ``local``)."""
    allowed_hosts: list[str] = field(default_factory=list)
    """Host names this server answers to besides the address it is bound to."""
    ingest_root: str | None = None
    """The folder whose files remote callers may name to ``ingest`` (off: they send bytes)."""
    database_url: str | None = None
    """The PostgreSQL database memories live in (None: files under ``base_dir``)."""

    def hosts(self) -> HostPolicy:
        return HostPolicy.for_binding(self.host, self.allowed_hosts)

    def body_limit(self, path: str) -> int:
        """The largest request body ``path`` takes."""
        return self.max_message_body_bytes if path in MESSAGE_ROUTES else self.max_body_bytes


SchemaFill = Callable[[dict[str, Any]], None]
"""Writes one route's request and reply schemas into its OpenAPI entry, hoisting the models
they name into the shared components."""


def error_response(error: RecuerdoError) -> Response:
    return Response(error_body(error), status_code=error.status, media_type="application/json")


def create_app(config: ServerConfig) -> FastAPI:
    pool = gateway.MemoryPool(
        config.base_dir,
        config.default_memory,
        config.code_repos,
        config.mail_domains,
        remote=True,
        ingest_root=config.ingest_root,
        database_url=config.database_url,
    )
    from .mcp_http import LazyMCP, mcp_manager

    hosts = config.hosts()
    manager = LazyMCP(lambda: mcp_manager(pool, config.profile, hosts, _memory_name))

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if pool.default:
            # The server's own memory is declared by whoever started it: created now, so a
            # fresh server answers reads on it (empty) and lists it among its memories. One
            # that cannot be opened (damaged, beyond the host ceiling) does not stop the
            # server: each call on it answers why.
            try:
                await anyio.to_thread.run_sync(pool.get, pool.default)
            except RecuerdoError as error:
                log.warning("memory %s: %s (%s)", pool.default, error.detail, error.code)
        schedule = gateway.CodeSchedule(pool, config.code_interval, _single_user(config))
        schedule.start()
        try:
            async with manager.run():
                yield
        finally:
            schedule.stop()
        pool.close()  # graceful shutdown: upkeep finished, every acknowledged write on disk

    app = FastAPI(
        title="recuerdo",
        version=__version__,
        lifespan=lifespan,
        description="Persistent memory for AI agents. Every route is a verb.",
        docs_url=None,  # the interactive docs load scripts from a CDN: no network at run time
        redoc_url=None,
    )
    app.state.pool = pool
    app.state.verb_routes = {}

    @app.exception_handler(RecuerdoError)
    async def recuerdo_error(request: Request, error: RecuerdoError) -> Response:
        return error_response(error)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, error: HTTPException) -> Response:
        if error.status_code == 404:
            return error_response(UnknownRoute(f"no route {request.url.path!r}"))
        if error.status_code == 405:
            return error_response(
                MethodNotAllowed(f"{request.method} is not allowed on {request.url.path!r}")
            )
        refusal = RecuerdoError(str(error.detail))
        return Response(
            error_body(refusal), status_code=error.status_code, media_type="application/json"
        )

    @app.exception_handler(Exception)
    async def unexpected(request: Request, error: Exception) -> Response:
        log.exception("unexpected error on %s", request.url.path)
        return error_response(RecuerdoError(f"internal error: {type(error).__name__}"))

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"ok": True, "version": __version__, "profile": config.profile}

    schema_fills: list[SchemaFill] = []
    for verb in VERBS:
        schema_fills.append(_native_route(app, verb, pool, config))
    if config.profile == "semurg":
        for entry in profile("semurg"):
            schema_fills.append(_profile_route(app, entry, pool, config))
    app.state.mcp = MCPEndpoint(manager, config.body_limit("/mcp"))
    app.router.routes.append(
        Route("/mcp", endpoint=app.state.mcp, methods=["GET", "POST", "DELETE"])
    )
    from .web import mount  # the memory lens: pages at /, on the same verbs

    mount(app, pool, config.base_dir, config.timeout_seconds)
    _publish_schemas(app, schema_fills)
    return app


def _publish_schemas(app: FastAPI, fills: list[SchemaFill]) -> None:
    """The OpenAPI document, made at its first request. Its schemas were half of a server's
    start (some 0.5 s of CPU for 81 verbs) and most servers are never asked for them."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            components: dict[str, Any] = {"ErrorShape": ErrorShape.model_json_schema()}
            for fill in fills:
                fill(components)
            document = get_openapi(
                title=app.title,
                version=app.version,
                description=app.description,
                routes=app.routes,
            )
            document.setdefault("components", {}).setdefault("schemas", {}).update(components)
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _loopback(config: ServerConfig) -> bool:
    """Bound to loopback: only this machine's processes reach it (no token needed until the
    first one is created)."""
    return config.host.strip("[]") in LOOPBACK_NAMES


def _single_user(config: ServerConfig) -> bool:
    return _loopback(config) and not TokenStore(config.base_dir).any_active()


async def _invoke(config: ServerConfig, call: Callable[[], Awaitable[Any]]) -> Any:
    try:
        with anyio.fail_after(config.timeout_seconds):
            return await call()
    except TimeoutError as exc:
        raise Timeout(
            f"no answer within {config.timeout_seconds:g} s; a write may still complete, so "
            "read before retrying"
        ) from exc


async def read_body(request: Request, limit: int) -> bytes:
    """The body, refused (413) as soon as it passes ``limit`` (chunked bodies included)."""
    size = 0
    parts = []
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(f"the request is over {limit} bytes")
        parts.append(chunk)
    return b"".join(parts)


def parse_object(raw: bytes) -> dict[str, Any]:
    """A JSON object from request bytes; anything else is refused by name. Fractions are read
    as exact decimals (``12345678901234567.89`` keeps every digit); verbs take them as numbers."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw, parse_float=decimal.Decimal)
    except RecursionError:
        raise InvalidJSON("the body is nested too deeply to read") from None
    except ValueError as exc:  # not UTF-8, not JSON, a number of thousands of digits
        raise InvalidJSON(f"the body is not JSON this server can read ({exc})") from None
    if not isinstance(value, dict):
        raise InvalidInput("the body is a JSON object holding the verb's arguments")
    return value


def _json(value: Any) -> Response:
    """Results are plain JSON values already: serialise them directly (FastAPI's generic
    encoder costs more than the verb on small memories)."""
    body = exact.dumps(value, ensure_ascii=False, separators=(",", ":"))
    headers = {}
    more = getattr(value, "more", None)
    if isinstance(value, list) and isinstance(more, int):
        headers["X-Recuerdo-More"] = str(more)  # a cut list says how many more there are
    return Response(body.encode("utf-8"), media_type="application/json", headers=headers)


class VerbRoute:
    """One verb's (or one profile tool's) ``POST`` route: the body read and parsed, the verb
    run through the gateway, the result encoded. FastAPI routes to :meth:`endpoint` (and
    documents it in the OpenAPI document); :class:`Straight` calls the route as an ASGI
    application, with the same request and response objects."""

    def __init__(
        self, pool: gateway.MemoryPool, config: ServerConfig, entry: ToolMap, limit: int
    ) -> None:
        self.pool, self.config, self.entry, self.limit = pool, config, entry, limit

    async def endpoint(self, request: Request) -> Response:
        principal: Principal = request.state.principal
        arguments = parse_object(await read_body(request, self.limit))
        call = functools.partial(
            gateway.run, self.pool, principal, _memory_name(request), self.entry, arguments
        )
        return _json(await _invoke(self.config, call))

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        try:
            response = await self.endpoint(Request(scope, receive))
        except ClientDisconnect:
            return  # the client went away before its body arrived: nobody to answer
        await response(scope, receive, send)


def _memory_name(request: Request) -> str | None:
    return request.query_params.get("memory") or request.headers.get("x-recuerdo-memory")


def _error_responses() -> dict[int | str, dict[str, Any]]:
    shape = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorShape"}}}
    return {
        status: {"description": description, "content": shape}
        for status, description in ERROR_STATUSES.items()
    }


def _native_route(
    app: FastAPI,
    verb: Verb,
    pool: gateway.MemoryPool,
    config: ServerConfig,
) -> SchemaFill:
    entry = ToolMap(
        name=verb.name,
        verb=verb.name,
        description=verb.description,
        schema={},
        read_only=verb.mode == "read",
        destructive=verb.destructive,
    )

    path = f"/v1/{verb.name}"
    route = VerbRoute(pool, config, entry, config.body_limit(path))
    app.state.verb_routes[path] = route

    reply: dict[str, Any] = {}
    request_body: dict[str, Any] = {}
    responses = _error_responses()
    responses[200] = {
        "description": "The verb's result",
        "content": {"application/json": {"schema": reply}},
    }
    app.post(
        path,
        name=verb.name,
        summary=verb.description.split(". ")[0],
        description=verb.description,
        responses=responses,
        tags=[verb.family],
        openapi_extra={
            "requestBody": {
                "required": False,
                "content": {"application/json": {"schema": request_body}},
            }
        },
    )(route.endpoint)

    def fill(components: dict[str, Any]) -> None:
        reply.update(schemas.result_schema(verb, components))
        request_body.update(schemas.params_schema(verb, components))

    return fill


def _profile_route(
    app: FastAPI,
    entry: ToolMap,
    pool: gateway.MemoryPool,
    config: ServerConfig,
) -> SchemaFill:
    path = f"/v1/memory/{entry.http_path}"
    route = VerbRoute(pool, config, entry, config.body_limit(path))
    app.state.verb_routes[path] = route

    reply: dict[str, Any] = {}
    responses = _error_responses()
    responses[200] = {
        "description": "The tool's reply",
        "content": {"application/json": {"schema": reply}},
    }
    app.post(
        path,
        name=entry.name,
        summary=entry.description,
        responses=responses,
        tags=["semurg"],
        openapi_extra={
            "requestBody": {
                "required": False,
                "content": {"application/json": {"schema": entry.schema}},
            }
        },
    )(route.endpoint)

    def fill(components: dict[str, Any]) -> None:
        reply.update(schemas.tool_reply_schema(entry, components))

    return fill


def wrap(app: FastAPI, config: ServerConfig) -> Guard:
    """The application as served: the guard in front of FastAPI."""
    from .web import LensAuth

    return Guard(
        Straight(app),
        hosts=config.hosts(),
        tokens=TokenStore(config.base_dir),
        loopback=_loopback(config),
        max_body_bytes=config.max_body_bytes,
        large_body_bytes=config.max_message_body_bytes,
        large_paths=MESSAGE_ROUTES,
        pages=LensAuth(config.base_dir),
    )


class Straight:
    """``/mcp`` and every ``POST`` of a verb's route go from the guard straight to their
    handler, past FastAPI's router and middleware, which do nothing for them: the handlers
    answer every refusal in the one error shape. Matching the path against every verb's route
    and Starlette's layers were about a third of an MCP request's time on the event loop
    (py-spy, 10,000 notes), and most of a small verb's (a ``get``) over HTTP (decision 0043).
    Every other request (pages, ``/health``, ``/openapi.json``, a verb's route with another
    method) goes to FastAPI."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app
        self.mcp: MCPEndpoint = app.state.mcp
        self.routes: dict[str, VerbRoute] = app.state.verb_routes

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        handler: Any = None
        if scope["type"] == "http":
            path = _route_path(scope)
            if path == "/mcp":
                handler = self.mcp
            elif scope["method"] == "POST":
                handler = self.routes.get(path)
        if handler is None:
            await self.app(scope, receive, send)
            return
        started = False

        async def sending(message: dict[str, Any]) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await handler(scope, receive, sending)
        except RecuerdoError as error:
            if not started:
                await send_error(send, error)
        except Exception as error:  # as the app's own handler of the unexpected
            log.exception("unexpected error on %s", scope["path"])
            if not started:  # else the client has its status already: the reply is cut short
                await send_error(send, RecuerdoError(f"internal error: {type(error).__name__}"))


def _route_path(scope: dict[str, Any]) -> str:
    """The path a route is matched against, as Starlette's router takes it: without the
    ``root_path`` an embedding application mounted this one under."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if not root or not path.startswith(root):
        return path
    if path == root:
        return ""
    return path[len(root) :] if path[len(root)] == "/" else path


CONFIG_ENV = "RECUERDO_SERVER_CONFIG"


def app_from_env() -> Guard:
    """The application of one worker process when ``serve --workers N`` starts several: the
    configuration travels in the environment."""
    raw = json.loads(os.environ[CONFIG_ENV])
    config = ServerConfig(**raw)
    return wrap(create_app(config), config)
