"""Who is looking at the lens, and whether a form really came from the lens.

* Single-user mode (loopback, no token yet): no login; the guard names the local principal.
* With tokens: ``/login`` takes a token once; the browser keeps a signed session cookie
  (HttpOnly, SameSite=Strict) naming the token's id, never its secret
  (:mod:`recuerdo.security.sessions`). Revoking the token ends the session.
* Every visitor gets a session (an anonymous one before logging in), and every form carries
  that session's CSRF token: a POST without it, or with another session's, is refused
  (``csrf_refused``, 403) before anything runs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from http.cookies import CookieError, SimpleCookie

from fastapi import Request
from fastapi.responses import Response

from ...errors import CsrfRefused
from ...security.sessions import SESSION_SECONDS, Session, SessionKeys
from ...security.tokens import LOCAL, Principal, TokenStore

COOKIE = "recuerdo_lens"
CSRF_FIELD = "csrf"
PAGE_PATHS = ("/", "/login", "/logout", "/favicon.ico")
PAGE_PREFIXES = ("/static/", "/m/", "/lens/")


class LensAuth:
    """The guard's :class:`~recuerdo.doors.guard.PageAuth` for the lens: which paths are pages,
    and the principal a page request's session cookie stands for."""

    def __init__(self, base_dir: str | os.PathLike[str] | None) -> None:
        self.keys = SessionKeys(base_dir)
        self.tokens = TokenStore(base_dir)

    def owns(self, path: str) -> bool:
        return path in PAGE_PATHS or path.startswith(PAGE_PREFIXES)

    def principal(self, headers: Mapping[str, str], single_user: bool) -> Principal | None:
        session = self.keys.read(cookie_value(headers.get("cookie", "")))
        if session is None:
            return None
        if session.kind == "local":
            return LOCAL if single_user else None
        if session.kind == "token":
            return self.tokens.principal_of_session(session.subject, session.nonce)
        return None


def cookie_value(header: str) -> str | None:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(header)
    except CookieError:
        return None
    morsel = jar.get(COOKIE)
    return None if morsel is None else morsel.value


def session_of(request: Request, auth: LensAuth) -> Session | None:
    return auth.keys.read(request.cookies.get(COOKIE))


def fitting_session(request: Request, auth: LensAuth, principal: Principal | None) -> Session:
    """The request's session when it fits who is asking; else a new one to set (an anonymous
    visitor, or the local user in single-user mode)."""
    session = session_of(request, auth)
    wanted = "anon" if principal is None else "local" if principal.local else "token"
    if session is not None and session.kind == wanted:
        return session
    if wanted == "token" and principal is not None and principal.token_id:
        return auth.keys.issue("token", principal.token_id)
    return auth.keys.issue("local" if wanted == "local" else "anon")


def set_cookie(response: Response, request: Request, session: Session) -> None:
    response.set_cookie(
        COOKIE,
        session.value,
        max_age=SESSION_SECONDS,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )


def clear_cookie(response: Response) -> None:
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")


def check_csrf(request: Request, auth: LensAuth, form: Mapping[str, str]) -> Session:
    session = session_of(request, auth)
    if session is None or not auth.keys.csrf_matches(session, form.get(CSRF_FIELD)):
        raise CsrfRefused(
            "this form did not come from this lens session (no valid CSRF token): reload the "
            "page and submit it again"
        )
    return session
