"""The lens's shared parts: calling verbs as the visitor, and rendering a page.

The lens is a door like the HTTP API: every read and write is a verb called through
:func:`recuerdo.doors.gateway.run` with the visitor's principal, so tenant rules, read-only
tokens, memory patterns and the secret guard apply to it unchanged.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import anyio
from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape

from ... import __version__
from ...engine import memory_names
from ...errors import CapabilityNotGranted, MemoryNotNamed, RecuerdoError, Timeout
from ...security.tokens import Principal
from ...verbs import VERBS
from .. import gateway
from ..profiles import ToolMap
from . import auth, render

HERE = Path(__file__).resolve().parent
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
        principal: Principal | None = getattr(request.state, "principal", None)
        session = auth.fitting_session(request, self.auth, principal)
        memory = request.query_params.get("memory") or self.pool.default
        context = {
            "request": request,
            "principal": principal,
            "can_write": principal is not None and not principal.read_only,
            "signed_in": principal is not None and not principal.local,
            "csrf": self.auth.keys.csrf(session),
            "memory": memory,
            "url": lambda path, **params: self.url(path, memory, **params),
            **values,
        }
        body = self.templates.get_template(template).render(context)
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
