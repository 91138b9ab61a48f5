"""What stands in front of every HTTP request, before any route: the checks a hostile client or
a hostile web page meets.

In order: header bytes must be UTF-8 text (``invalid_header``); the ``Host`` must name this
server (DNS rebinding: ``host_not_allowed``, 421); an ``Origin`` must be this server's
(cross-site requests: ``origin_not_allowed``, 403); a declared size over the limit is refused
before the body is read (``payload_too_large``, 413); the bearer token decides the principal
(``unauthorized``, 401). Every refusal is the one error shape.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

from ..errors import (
    HostNotAllowed,
    InvalidHeader,
    OriginNotAllowed,
    PayloadTooLarge,
    RecuerdoError,
    Unauthorized,
)
from ..model import exact, whole_number
from ..security.tokens import LOCAL, Principal, TokenStore

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
OPEN_PATHS = ("/health", "/openapi.json")


class PageAuth(Protocol):
    """How the pages of the memory lens are signed in to: by a session cookie (the API and MCP
    never accept one, so a cookie can never reach them cross-site)."""

    def owns(self, path: str) -> bool: ...

    def principal(self, headers: Mapping[str, str], single_user: bool) -> Principal | None: ...


@dataclass(frozen=True)
class HostPolicy:
    """The host names this server answers to: the address it is bound to (all loopback names
    when it is bound to loopback) and the names given with ``--allowed-host``."""

    names: frozenset[str]

    @classmethod
    def for_binding(cls, host: str, allowed: Iterable[str] = ()) -> HostPolicy:
        names = {_plain(host)}
        if _plain(host) in LOOPBACK_NAMES:
            names.update(LOOPBACK_NAMES)
        names.update(_plain(name) for name in allowed)
        names.discard("")
        return cls(frozenset(name.lower() for name in names))

    def host_allowed(self, host_header: str | None) -> bool:
        if not host_header:
            return False
        return _hostname(host_header) in self.names

    def origin_allowed(
        self, origin: str | None, host_header: str | None, scheme: str = "http"
    ) -> bool:
        """Absent (not a browser, or a same-origin GET) or the same origin as the request:
        a page of this very server (host and port as the request's Host names them)."""
        if origin is None:
            return True
        parts = urlsplit(origin)
        if parts.scheme != scheme or not parts.hostname or not host_header:
            return False  # "null" (a sandboxed page, a file), another scheme, anything else
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            return False
        return (parts.hostname.lower(), port) == _host_and_port(host_header, parts.scheme)

    def sdk_hosts(self) -> list[str]:
        """The same list in the MCP SDK's form (``name`` and ``name:*``)."""
        listed = [f"[{n}]" if ":" in n else n for n in sorted(self.names)]
        return [*listed, *(f"{n}:*" for n in listed)]

    def sdk_origins(self) -> list[str]:
        hosts = [f"[{n}]" if ":" in n else n for n in sorted(self.names)]
        return [
            f"{scheme}://{h}{port}"
            for scheme in ("http", "https")
            for h in hosts
            for port in ("", ":*")
        ]


def _plain(host: str) -> str:
    return host.strip().strip("[]").lower()


def _host_and_port(host_header: str, scheme: str) -> tuple[str, int]:
    value = host_header.strip().lower()
    name = _hostname(value)
    rest = value[value.find("]") + 1 :] if value.startswith("[") else value[len(name) :]
    port = rest[1:] if rest.startswith(":") else ""
    default = 443 if scheme == "https" else 80
    if not port:
        return name, default
    number = whole_number(port, largest=65535)
    # A port that is no port ("²", 4,400 digits, 99999) matches no origin: -1, never a port.
    return name, -1 if number is None else number


def _hostname(host_header: str) -> str:
    """``example.com:80`` -> ``example.com``; ``[::1]:7700`` -> ``::1``."""
    value = host_header.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else ""
    if value.count(":") == 1:
        return value.split(":", 1)[0]
    return value


class Guard:
    """ASGI middleware: the checks of the module docstring, then the app."""

    def __init__(
        self,
        app: Any,
        *,
        hosts: HostPolicy,
        tokens: TokenStore,
        loopback: bool,
        max_body_bytes: int,
        large_body_bytes: int = 0,
        large_paths: frozenset[str] = frozenset(),
        pages: PageAuth | None = None,
    ) -> None:
        self.app = app
        self.pages = pages
        self.hosts = hosts
        self.tokens = tokens
        self.loopback = loopback
        self.max_body_bytes = max_body_bytes
        self.large_body_bytes = large_body_bytes
        """The limit of ``large_paths`` (routes that carry messages)."""
        self.large_paths = large_paths

    def single_user(self) -> bool:
        return self.loopback and not self.tokens.any_active()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            headers = _headers(scope.get("headers", []))
            if not self.hosts.host_allowed(headers.get("host")):
                raise HostNotAllowed(
                    f"this server does not answer to host {headers.get('host')!r}; start it "
                    "with --allowed-host NAME to accept that name"
                )
            origin, host = headers.get("origin"), headers.get("host")
            if not self.hosts.origin_allowed(origin, host, scope.get("scheme", "http")):
                raise OriginNotAllowed(
                    f"requests from pages of {headers.get('origin')!r} are refused "
                    "(only this server's own pages may call it)"
                )
            length = headers.get("content-length")
            path = scope["path"]
            limit = self.large_body_bytes if path in self.large_paths else self.max_body_bytes
            size = None if length is None else whole_number(length)
            if length is not None and (size is None or size > limit):
                raise PayloadTooLarge(f"the request is {length} bytes; the limit is {limit}")
            if path not in OPEN_PATHS:
                principal = self._principal(headers.get("authorization", ""))
                if principal is None and self.pages is not None and self.pages.owns(path):
                    # A page without a session is still served: the lens sends it to log in.
                    principal = self.pages.principal(headers, self.single_user())
                elif principal is None:
                    raise Unauthorized("a valid token is required: Authorization: Bearer <token>")
                scope.setdefault("state", {})["principal"] = principal
        except RecuerdoError as refusal:
            await send_error(send, refusal)
            return
        await self.app(scope, receive, send)

    def _principal(self, authorization: str) -> Principal | None:
        scheme, _, secret = authorization.partition(" ")
        if self.single_user() and not secret:
            return LOCAL
        return self.tokens.verify(secret.strip() if scheme.lower() == "bearer" else None)


def _headers(raw: list[tuple[bytes, bytes]]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for name, value in raw:
        try:
            headers[name.decode("ascii").lower()] = value.decode("utf-8")
        except UnicodeDecodeError:
            shown = name.decode("ascii", "replace")
            raise InvalidHeader(
                f"the {shown!r} header holds bytes that are not UTF-8 text"
            ) from None
    return headers


def error_body(error: RecuerdoError) -> bytes:
    return exact.dumps(error.to_dict(), ensure_ascii=False).encode("utf-8")


async def send_error(send: Any, error: RecuerdoError) -> None:
    body = error_body(error)
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
