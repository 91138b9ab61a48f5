"""The pages that find and trace memory: search, context, an entity, forget, the retrieval
audit and the journal."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response

from ...errors import InvalidInput
from . import render
from .lens import Lens
from .pages import number, page_route

SEARCH_TYPES = ("", "note", "entry", "document", "message")


def add_finding(app: FastAPI, lens: Lens) -> None:
    get = page_route(app, lens)

    @get("/lens/search")
    async def search(request: Request) -> Response:
        query = request.query_params.get("q", "")
        kind = request.query_params.get("type") or None
        if kind is not None and kind not in SEARCH_TYPES:
            raise InvalidInput(f"type must be one of {', '.join(SEARCH_TYPES[1:])}")
        found = None
        if query.strip():
            found = await lens.call(
                request, "search", query=query, types=kind, limit=20, scope=lens.scope(request)
            )
        return lens.page(request, "search.html", q=query, type=kind or "", found=found)

    @get("/lens/context")
    async def context(request: Request) -> Response:
        query = request.query_params.get("q", "")
        pack = (
            await lens.call(request, "context", query=query, scope=lens.scope(request))
            if query.strip()
            else None
        )
        return lens.page(request, "context.html", q=query, pack=pack)

    @get("/lens/entity")
    async def entity(request: Request) -> Response:
        query = request.query_params
        name = (query.get("name") or "").strip()
        scope = lens.scope(request) or query.get("scope") or None
        as_of, valid_at = query.get("as_of") or None, query.get("valid_at") or None
        hops = number(request, "hops", 2)
        about = None
        picture = None
        passages: dict[int, list[str]] = {}
        if name:
            about = await lens.call(
                request,
                "about",
                subject=name,
                scope=scope,
                as_of=as_of,
                valid_at=valid_at,
                hops=hops,
                k=60,
            )
            seeds = [s["matched"] for s in about.get("seeding", []) if s.get("matched")]
            center = seeds[0] if seeds else name
            picture = render.neighbourhood_svg(
                center,
                render.facts_of(about["items"]),
                lambda other: lens.url(
                    "/lens/entity",
                    request.query_params.get("memory"),
                    name=other,
                    scope=scope,
                    as_of=as_of,
                    valid_at=valid_at,
                ),
            )
            for item in about["items"]:
                if item.get("kind") == "passage" and item.get("doc_id") is not None:
                    passages.setdefault(item["doc_id"], []).append(item["text"])
        facts = (
            {}
            if about is None
            else {i["id"]: i for i in about["items"] if i.get("kind") == "fact" and i.get("id")}
        )
        return lens.page(
            request,
            "entity.html",
            name=name,
            scope=scope or "",
            as_of=as_of or "",
            valid_at=valid_at or "",
            hops=hops,
            about=about,
            picture=picture,
            facts=facts,
            passage_for=lambda citation: _passage_for(citation, passages),
        )

    @get("/lens/forget")
    async def forget(request: Request) -> Response:
        lens.check_writer(request)
        query = request.query_params
        subject = (query.get("subject") or "").strip()
        scope = lens.scope(request) or query.get("scope") or None
        item = None
        about = None
        extra: dict[str, Any] = {}
        if subject:
            about = await lens.call(request, "about", subject=subject, scope=scope, hops=1)
        else:
            item_id = number(request, "id")
            if item_id is None:
                raise InvalidInput("name what to forget: ?id=ITEM or ?subject=NAME")
            shown = lens.scope(request)
            item = await lens.call(request, "get", id=item_id, scope=shown)
            if item["item_type"] == "note":
                extra["history"] = await lens.call(request, "history", id=item_id, scope=shown)
                extra["links"] = await lens.call(request, "links", id=item_id, scope=shown)
        return lens.page(
            request,
            "forget.html",
            subject=subject,
            scope=scope or "",
            about=about,
            item=item,
            **extra,
        )

    @get("/lens/audit")
    async def audit(request: Request) -> Response:
        principal = request.query_params.get("principal") or None
        records = await lens.call(
            request, "audit", principal=principal, limit=200, scope=lens.scope(request)
        )
        return lens.page(request, "audit.html", records=records, who=principal or "")

    @get("/lens/journal")
    async def journal(request: Request) -> Response:
        principal = request.query_params.get("principal") or None
        rows = await lens.call(
            request, "journal", principal=principal, limit=200, scope=lens.scope(request)
        )
        return lens.page(request, "journal.html", rows=rows, who=principal or "")


def _passage_for(citation: dict[str, Any] | None, passages: dict[int, list[str]]) -> Any:
    """The cited quote highlighted inside a passage of its document that holds it (else the
    quote alone, marked)."""
    if not citation or not citation.get("span"):
        return None
    quote = citation["span"]["text"]
    doc = (citation.get("source") or {}).get("doc_id")
    for text in passages.get(doc, []) if doc is not None else []:
        if quote in text:
            return render.highlight(text, quote)
    return render.highlight(quote, quote)
