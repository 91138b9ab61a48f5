"""What the lens changes, each confirmed before it runs; and logging in and out.

Every form posts to ``/lens/do`` with its ``action``. The first post shows what will happen and
asks; only a post carrying ``confirmed=yes`` (from that page's own form) runs the verb. Every
post needs its session's CSRF token, and a read-only token is refused before anything runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

import anyio
from fastapi import FastAPI, Request
from fastapi.responses import RedirectResponse, Response

from ...errors import InvalidInput, RecuerdoError
from ..http import read_body
from . import auth
from .lens import Lens, NotSignedIn
from .pages import whole

MAX_FORM_BYTES = 2_000_000


@dataclass(frozen=True)
class Action:
    title: str
    verb: str
    fields: tuple[str, ...]
    arguments: Callable[[Mapping[str, str]], dict[str, Any]]
    then: Callable[[Mapping[str, str]], tuple[str, dict[str, Any]]]
    """Where to go once it ran: (path, query)."""
    destructive: bool = False
    nothing: str | None = None
    """What the page says when the verb answered False (it found nothing to change)."""


def _id(form: Mapping[str, str], name: str = "id") -> int:
    return whole(form.get(name, ""), name)


def _some(form: Mapping[str, str], *names: str) -> dict[str, Any]:
    return {name: form[name] for name in names if form.get(name)}


def _forget_item(form: Mapping[str, str]) -> dict[str, Any]:
    return {"id": _id(form)}


ACTIONS: dict[str, Action] = {
    "edit": Action(
        "Edit the note",
        "edit",
        ("id", "operation", "content", "section", "find", "version_token"),
        lambda f: {
            "id": _id(f),
            "operation": f.get("operation", ""),
            "content": f.get("content", ""),
            **_some(f, "section", "find", "version_token"),
        },
        lambda f: (f"/m/{_id(f)}", {"done": "edited"}),
    ),
    "delete": Action(
        "Delete the note (soft: restorable)",
        "delete",
        ("id",),
        lambda f: {"id": _id(f)},
        lambda f: ("/lens/notes", {"status": "deleted", "done": "deleted"}),
    ),
    "restore": Action(
        "Restore the deleted note",
        "restore",
        ("id",),
        lambda f: {"id": _id(f)},
        lambda f: (f"/m/{_id(f)}", {"done": "restored"}),
    ),
    "mark_reviewed": Action(
        "Mark the note reviewed (still true)",
        "mark_reviewed",
        ("id",),
        lambda f: {"id": _id(f)},
        lambda f: (f"/m/{_id(f)}", {"done": "reviewed"}),
    ),
    "mute": Action(
        "Mute the category (left out of context and the profile; search still finds it)",
        "mute",
        ("category", "axis", "project"),
        lambda f: {"category": f.get("category", ""), **_some(f, "axis", "project")},
        lambda f: ("/lens/overview", {"done": "muted"}),
    ),
    "unmute": Action(
        "Unmute the category (back in context and the profile)",
        "unmute",
        ("category", "axis", "project"),
        lambda f: {"category": f.get("category", ""), **_some(f, "axis", "project")},
        lambda f: ("/lens/overview", {"done": "unmuted"}),
    ),
    "forget_note": Action(
        "Forget the note for good, with every revision",
        "delete",
        ("id",),
        lambda f: {"id": _id(f), "hard": True},
        lambda f: ("/lens/overview", {"done": "forgotten"}),
        destructive=True,
    ),
    "forget_entry": Action(
        "Forget the entry for good",
        "forget",
        ("id",),
        _forget_item,
        lambda f: ("/lens/overview", {"done": "forgotten"}),
        destructive=True,
        nothing="nothing: no such entry here",
    ),
    "forget_passage": Action(
        "Forget the document or message for good",
        "forget_knowledge",
        ("id", "scope"),
        lambda f: {"passage": _id(f), **_some(f, "scope")},
        lambda f: ("/lens/overview", {"done": "forgotten"}),
        destructive=True,
    ),
    "forget_subject": Action(
        "Forget the entity for good: its facts both ways and the passages that mention it",
        "forget_knowledge",
        ("subject", "scope"),
        lambda f: {"subject": f.get("subject", ""), **_some(f, "scope")},
        lambda f: ("/lens/overview", {"done": "forgotten"}),
        destructive=True,
    ),
}


async def read_form(request: Request) -> dict[str, str]:
    raw = await read_body(request, MAX_FORM_BYTES)
    try:
        text = raw.decode("utf-8")
        parsed = parse_qs(text, keep_blank_values=True, errors="strict")
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidInput("the form is not UTF-8 text a browser sends") from exc
    return {name: values[-1] for name, values in parsed.items()}


def safe_next(target: str | None) -> str:
    """Only a path of this server: never another site, nor a scheme-relative //host."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


def add_actions(app: FastAPI, lens: Lens) -> None:
    @app.post("/lens/do", include_in_schema=False)
    async def do(request: Request) -> Response:
        try:
            lens.principal(request)
            form = await read_form(request)
            auth.check_csrf(request, lens.auth, form)
            lens.check_writer(request)
            action = ACTIONS.get(form.get("action", ""))
            if action is None:
                raise InvalidInput(f"action must be one of {', '.join(ACTIONS)}")
            arguments = action.arguments(form)
            in_scope = lens.scope(request)
            if in_scope is not None:
                # A token limited to scopes names one to every verb: the page's, unless the
                # form names its own (checked by the doors as any scope is).
                arguments = {"scope": in_scope, **arguments}
            if form.get("confirmed") != "yes":
                shown = {name: form[name] for name in action.fields if form.get(name)}
                return lens.page(
                    request,
                    "confirm.html",
                    action=action,
                    name=form["action"],
                    shown=shown,
                    hidden={k: v for k, v in form.items() if k not in ("csrf", "confirmed")},
                )
            result = await lens.call(request, action.verb, **arguments)
            path, query = action.then(form)
            if result is False and action.nothing is not None:
                query = {**query, "done": action.nothing}  # never "forgotten" for nothing
            kept = {} if in_scope is None else {"scope": in_scope}
            target = lens.url(path, request.query_params.get("memory"), **kept, **query)
            return RedirectResponse(target, status_code=303)
        except NotSignedIn:
            return lens.to_login(request)
        except RecuerdoError as error:
            return lens.error(request, error)

    @app.get("/login", include_in_schema=False)
    async def login_page(request: Request) -> Response:
        if getattr(request.state, "principal", None) is not None:
            return RedirectResponse(safe_next(request.query_params.get("next")), status_code=303)
        return lens.page(request, "login.html", next=request.query_params.get("next", "/"))

    @app.post("/login", include_in_schema=False)
    async def login(request: Request) -> Response:
        try:
            form = await read_form(request)
            auth.check_csrf(request, lens.auth, form)
        except RecuerdoError as error:
            return lens.error(request, error)
        principal = lens.auth.tokens.verify(form.get("token", "").strip() or None)
        if principal is None:
            return lens.page(
                request,
                "login.html",
                status=401,
                next=form.get("next", "/"),
                failed=True,
            )
        response = RedirectResponse(safe_next(form.get("next")), status_code=303)
        assert principal.token_id is not None
        auth.set_cookie(response, request, lens.auth.keys.issue("token", principal.token_id))
        return response

    @app.post("/logout", include_in_schema=False)
    async def logout(request: Request) -> Response:
        try:
            form = await read_form(request)
            auth.check_csrf(request, lens.auth, form)
        except RecuerdoError as error:
            return lens.error(request, error)
        ending = auth.session_of(request, lens.auth)
        if ending is not None and ending.kind == "token":
            # Off the event loop: a write to the token store.
            await anyio.to_thread.run_sync(
                lens.auth.tokens.end_session, ending.nonce, ending.expires
            )
        response = RedirectResponse("/login", status_code=303)
        auth.set_cookie(response, request, lens.auth.keys.issue("anon"))
        return response
