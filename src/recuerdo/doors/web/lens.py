"""The lens's shared parts: calling verbs as the visitor, and rendering a page.

The lens is a door like the HTTP API: every read and write is a verb called through
:func:`recuerdo.doors.gateway.run` with the visitor's principal, so tenant rules, read-only
tokens, memory patterns and the secret guard apply to it unchanged.
"""

from __future__ import annotations

import asyncio
import functools
import os
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlencode

import anyio
from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape

from ... import __version__
from ...engine import memory_names
from ...errors import CapabilityNotGranted, MemoryNotNamed, RecuerdoError, Timeout
from ...security.sessions import Session
from ...security.tokens import Principal
from ...verbs import VERBS, check_reach
from .. import gateway
from ..profiles import ToolMap
from . import auth, render

HERE = Path(__file__).resolve().parent
T = TypeVar("T")
TOOLS = {
    verb.name: ToolMap(
        name=verb.name,
        verb=verb.name,
        description=verb.description,
        schema={},
        read_only=verb.mode == "read",
        destructive=verb.destructive,
        native=True,
    )
    for verb in VERBS
}


# Per event loop (a limiter belongs to the loop it was first used in): one thread renders the
# lens's heavy pages, apart from the verbs' lanes (gateway.run), so a long page neither holds
# up the event loop nor queues ahead of a verb.
_render_lanes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, anyio.CapacityLimiter] = (
    weakref.WeakKeyDictionary()
)


async def off_loop(work: Callable[..., T], *args: Any) -> T:
    """``work(*args)`` in the lens's rendering thread."""
    loop = asyncio.get_running_loop()
    lane = _render_lanes.get(loop)
    if lane is None:
        lane = _render_lanes.setdefault(loop, anyio.CapacityLimiter(1))
    return await anyio.to_thread.run_sync(functools.partial(work, *args), limiter=lane)


class NotSignedIn(Exception):
    """A page was asked for without a session: the visitor is sent to log in."""


class Lens:
    def __init__(
        self,
        pool: gateway.MemoryPool,
        base_dir: str | os.PathLike[str] | None,
        timeout_seconds: float,
    ) -> None:
        self.pool = pool
        self.auth = auth.LensAuth(base_dir)
        self.timeout_seconds = timeout_seconds
        self.templates = Environment(
            loader=FileSystemLoader(HERE / "templates"),
            autoescape=select_autoescape(default=True, default_for_string=True),
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.templates.filters["markdown"] = render.markdown
        self.templates.globals["version"] = __version__
        self.templates.globals["diff_limit"] = render.MAX_MATCHED_LINES

    # -- who and which memory ------------------------------------------------------------

    @staticmethod
    def principal(request: Request) -> Principal:
        principal: Principal | None = getattr(request.state, "principal", None)
        if principal is None:
            raise NotSignedIn
        return principal

    def memory(self, request: Request) -> str:
        name = request.query_params.get("memory") or self.pool.default
        if not name:
            raise MemoryNotNamed(
                "name the memory (?memory=NAME, or start the server with --memory NAME)"
            )
        return name

    def memory_names(self) -> list[str]:
        return memory_names(self.pool.base_dir)

    def scope(self, request: Request) -> str | None:
        """The scope a page shows a visitor whose token is limited to scopes: the one it names
        (``?scope=``, which must be one of them) or else its first; None for every other
        visitor, whose pages read every scope as they always did. Each page names it to every
        verb it calls, as such a token must at the doors (decision 0130)."""
        scopes = self.principal(request).scopes
        if scopes is None:
            return None
        named = request.query_params.get("scope") or scopes[0]
        check_reach(scopes, True, named)
        return named

    # -- verbs ---------------------------------------------------------------------------

    async def call(
        self, request: Request, verb: str, memory: str | None = None, **args: Any
    ) -> Any:
        """A verb, as the visitor, on the request's memory (or ``memory``)."""
        principal = self.principal(request)
        name = memory or self.memory(request)
        given = {key: value for key, value in args.items() if value is not None}
        try:
            with anyio.fail_after(self.timeout_seconds):
                return await gateway.run(self.pool, principal, name, TOOLS[verb], given)
        except TimeoutError as exc:
            raise Timeout(
                f"no answer within {self.timeout_seconds:g} s; a write may still complete"
            ) from exc

    def check_writer(self, request: Request) -> Principal:
        principal = self.principal(request)
        if principal.read_only:
            raise CapabilityNotGranted("Capability not granted: this token is read-only")
        return principal

    # -- pages ---------------------------------------------------------------------------

    def page(
        self, request: Request, template: str, status: int = 200, **values: Any
    ) -> HTMLResponse:
        session, context = self._context(request, values)
        body = self.templates.get_template(template).render(context)
        return self._response(request, session, body, status)

    async def page_off_loop(
        self, request: Request, template: str, status: int = 200, **values: Any
    ) -> HTMLResponse:
        """:meth:`page`, its template rendered in a worker thread: for pages whose size grows
        with a note's (a diff of thousands of lines), so that rendering one never holds up the
        event loop and with it /health, /v1 and /mcp."""
        session, context = self._context(request, values)
        body = await off_loop(self.templates.get_template(template).render, context)
        return self._response(request, session, body, status)

    def _context(
        self, request: Request, values: Mapping[str, Any]
    ) -> tuple[Session, dict[str, Any]]:
        principal: Principal | None = getattr(request.state, "principal", None)
        session = auth.fitting_session(request, self.auth, principal)
        memory = request.query_params.get("memory") or self.pool.default
        scopes = None if principal is None else principal.scopes
        shown = None
        if scopes is not None:
            named = request.query_params.get("scope")
            shown = named if named in scopes else scopes[0]
        # A confined visitor's links and forms keep its scope, as they keep the memory.
        kept = {} if shown is None else {"scope": shown}
        context = {
            "request": request,
            "principal": principal,
            "can_write": principal is not None and not principal.read_only,
            "signed_in": principal is not None and not principal.local,
            "csrf": self.auth.keys.csrf(session),
            "memory": memory,
            "scopes": scopes,
            "view_scope": shown,
            "chooser_path": _chooser_path(request.url.path),
            "url": lambda path, **params: self.url(
                path, params.pop("memory", memory), **{**kept, **params}
            ),
            **values,
        }
        return session, context

    def _response(self, request: Request, session: Session, body: str, status: int) -> HTMLResponse:
        response = HTMLResponse(body, status_code=status, headers=SECURITY_HEADERS)
        if session.value != request.cookies.get(auth.COOKIE):
            auth.set_cookie(response, request, session)
        return response

    @staticmethod
    def url(path: str, memory: str | None, **params: Any) -> str:
        query = {"memory": memory} if memory else {}
        query.update({k: v for k, v in params.items() if v not in (None, "")})
        return f"{path}?{urlencode(query)}" if query else path

    def error(self, request: Request, error: RecuerdoError) -> Response:
        return self.page(request, "error.html", status=error.status, error=error)

    def to_login(self, request: Request) -> Response:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(self.url("/login", None, next=target), status_code=303)


def _chooser_path(path: str) -> str:
    """Where the scope chooser goes: the same page, but for one item's pages (kept in one
    scope) the overview."""
    return "/lens/overview" if path.startswith(("/m/", "/lens/edit/", "/lens/forget")) else path


SECURITY_HEADERS: Mapping[str, str] = {
    # Only this server's own files: no inline script, no other origin, no framing.
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
        " object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
