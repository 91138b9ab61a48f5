"""The pages that show a memory: the memories, an overview, the notes, and one note."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response

from ...engine import state_size
from ...errors import CapabilityNotGranted, InvalidInput, RecuerdoError
from ...model import whole_number
from . import render
from .lens import Lens, NotSignedIn, off_loop

Handler = Callable[[Request], Awaitable[Response]]


def handled(lens: Lens, handler: Handler) -> Handler:
    """A page handler whose refusals become pages: no session -> the login page; a refusal ->
    an error page with its code and status."""

    @functools.wraps(handler)
    async def page(request: Request) -> Response:
        try:
            return await handler(request)
        except NotSignedIn:
            return lens.to_login(request)
        except RecuerdoError as error:
            return lens.error(request, error)

    return page


def number(request: Request, name: str, default: int | None = None) -> int | None:
    raw = request.query_params.get(name)
    if raw in (None, ""):
        return default
    return whole(raw, name)


def whole(raw: str, name: str) -> int:
    """A number from a path, a query or a form (``whole_number``: ASCII digits, within a
    store's 64 bits), else the lens's 400 page."""
    value = whole_number(raw)
    if value is None:
        raise InvalidInput(f"{name} must be a whole number, got {raw[:40]!r}")
    return value


def page_route(app: FastAPI, lens: Lens) -> Callable[[str], Callable[[Handler], Handler]]:
    """``@get(path)``: a GET page of the lens, its refusals shown as pages."""

    def get(path: str) -> Callable[[Handler], Handler]:
        def register(handler: Handler) -> Handler:
            app.get(path, include_in_schema=False)(handled(lens, handler))
            return handler

        return register

    return get


def add_pages(app: FastAPI, lens: Lens) -> None:
    get = page_route(app, lens)

    @get("/")
    async def memories(request: Request) -> Response:
        principal = lens.principal(request)
        # A token limited to scopes counts what they hold, all of them (None: every scope).
        scopes = None if principal.scopes is None else list(principal.scopes)
        rows = []
        for name in lens.memory_names():
            try:
                counts = await lens.call(request, "overview", memory=name, scope=scopes)
            except CapabilityNotGranted:
                continue  # beyond this token's memories: not even its name is shown
            size = state_size(name, lens.pool.base_dir) if principal.local else None
            rows.append({"name": name, "counts": counts, "file_bytes": size})
        return lens.page(request, "memories.html", rows=rows)

    @get("/lens/overview")
    async def overview(request: Request) -> Response:
        shown = lens.scope(request)
        counts = await lens.call(request, "overview", scope=shown)
        # Plans and rules are kept in no scope: a token limited to scopes is refused them.
        confined = shown is not None
        plans = None if confined else await lens.call(request, "list_progress")
        rules = None if confined else await lens.call(request, "get_rules")
        in_view: list[str] = (
            [shown] if shown is not None else sorted({n["scope"] for n in counts["notes"]})
        )
        axes: list[tuple[str, str | None]] = (
            [] if confined and shown != "user" else [("user", None)]
        )
        axes += [
            ("project", scope.removeprefix("project:"))
            for scope in in_view
            if scope.startswith("project:")
        ]
        categories = []
        for axis, project in axes:
            for row in await lens.call(
                request, "profile", axis=axis, project=project, include_muted=True, scope=shown
            ):
                categories.append({**row, "axis": axis, "project": project})
        knowledge = []
        described_scopes = (
            [{"scope": shown, "entities": True}]
            if confined
            else (await lens.call(request, "status"))["scopes"]
        )
        for scope in described_scopes:
            if not scope["entities"]:
                continue  # no knowledge to describe: not asked about (a call per scope was
                # seconds at 100,000 items in 50 scopes)
            described = await lens.call(request, "status", scope=scope["scope"])
            ontology = described["ontology"]
            if confined and not ontology["entities"]:
                continue  # the scope of a confined visitor, asked whatever it holds
            page = await lens.call(request, "export", scope=scope["scope"], limit=256)
            names = [r["name"] for r in page["records"] if r.get("record") == "entity"]
            knowledge.append({"scope": scope["scope"], "ontology": ontology, "names": names})
        return lens.page(
            request,
            "overview.html",
            counts=counts,
            plans=plans,
            rules=rules,
            categories=categories,
            knowledge=knowledge,
        )

    @get("/lens/notes")
    async def notes(request: Request) -> Response:
        query = request.query_params
        status = query.get("status") or None
        listed = await lens.call(
            request,
            "list_notes",
            scope=lens.scope(request) or query.get("scope") or None,
            kind=query.get("kind") or None,
            status=status,
            sort=query.get("sort") or "modified",
        )
        return lens.page(request, "notes.html", listed=listed, wanted=status, query=query)

    @get("/m/{item_id}")
    async def note(request: Request) -> Response:
        item_id = whole(request.path_params["item_id"], "an item id")
        shown = lens.scope(request)
        item = await lens.call(request, "get", id=item_id, scope=shown)
        if item["item_type"] != "note":
            return lens.page(request, "item.html", item=item)
        history = await lens.call(request, "history", id=item_id, scope=shown)
        versions = [r["version"] for r in history if r["version"] is not None]
        links = await lens.call(request, "links", id=item_id, scope=shown)
        conflicts = await lens.call(request, "conflicts", id=item_id, scope=shown)
        old = number(request, "a", versions[-2] if len(versions) > 1 else None)
        new = number(request, "b", versions[-1] if versions else None)
        pair = None
        if old is not None and new is not None:
            before = await lens.call(request, "revision", id=item_id, version=old, scope=shown)
            after = await lens.call(request, "revision", id=item_id, version=new, scope=shown)
            pair = (old, before["content"], new, after["content"])
        # Diffs and the page grow with the note: worked out off the event loop (decision 0092).
        compared, sides = await off_loop(diffs, item["content"], conflicts, pair)
        return await lens.page_off_loop(
            request,
            "note.html",
            item=item,
            history=history,
            versions=versions,
            compared=compared,
            links=links,
            conflicts=sides,
            conflicts_compared=CONFLICTS_COMPARED,
            done=request.query_params.get("done"),
            operations=EDIT_OPERATIONS,
        )

    @get("/lens/edit/{item_id}")
    async def edit_form(request: Request) -> Response:
        item_id = whole(request.path_params["item_id"], "an item id")
        lens.check_writer(request)
        item = await lens.call(request, "get", id=item_id, scope=lens.scope(request))
        operation = request.query_params.get("operation") or "append"
        if operation not in EDIT_OPERATIONS:
            raise InvalidInput(f"operation must be one of {', '.join(EDIT_OPERATIONS)}")
        return lens.page(request, "edit.html", item=item, operation=operation)


def diffs(
    current: str, conflicts: list[dict[str, Any]], pair: tuple[int, str, int, str] | None
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The two revisions compared (``pair``: version and text of each, when asked), and each
    conflict revision against the current text."""
    compared = None
    if pair is not None:
        old, before, new, after = pair
        compared = {"a": old, "b": new, "diff": render.diff(before, after)}
    # The newest conflicts are compared; each costs a diff and the page's size, and a stale
    # writer can pile them up (20 conflicts of a 7.6 KB note rendered for 37 s: the review of
    # 0092). The older ones are listed, their text in the revision history.
    compared_from = max(0, len(conflicts) - CONFLICTS_COMPARED)
    sides = [
        {**c, "diff": render.diff(current, c["content"]) if n >= compared_from else None}
        for n, c in enumerate(conflicts)
    ]
    return compared, sides


CONFLICTS_COMPARED = 5


EDIT_OPERATIONS: dict[str, str] = {
    "append": "Append text at the end",
    "prepend": "Prepend text at the start",
    "replace": "Replace the whole note",
    "replace_section": "Replace one section (by its heading)",
    "find_replace": "Find a unique passage and replace it",
}
