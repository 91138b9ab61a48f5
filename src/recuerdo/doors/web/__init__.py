"""The memory lens: web pages to see, search, correct and forget memory, served by
``recuerdo serve`` at ``/``.

A door like the others: every page reads and writes through the verb table as the visitor's
principal (:mod:`.lens`). Pages are rendered on the server (Jinja2) and work without JavaScript;
a vendored htmx (``static/``) only makes them feel quicker. How a visitor signs in: :mod:`.auth`.
"""

from __future__ import annotations

import os
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, Response

from ...errors import UnknownRoute
from .. import gateway
from .actions import add_actions
from .auth import LensAuth
from .finding import add_finding
from .lens import Lens
from .pages import add_pages

STATIC = Path(__file__).resolve().parent / "static"
_TYPES = {".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}

__all__ = ["LensAuth", "mount"]


def mount(
    app: FastAPI,
    pool: gateway.MemoryPool,
    base_dir: str | os.PathLike[str] | None,
    timeout_seconds: float,
) -> Lens:
    """Add the lens's routes to the server's application."""
    lens = Lens(pool, base_dir, timeout_seconds)
    add_pages(app, lens)
    add_finding(app, lens)
    add_actions(app, lens)

    @app.get("/static/{name}", include_in_schema=False)
    async def static(name: str, request: Request) -> Response:
        path = STATIC / name
        if "/" in name or name.startswith(".") or path.suffix not in _TYPES or not path.is_file():
            raise UnknownRoute(f"no route {request.url.path!r}")
        return FileResponse(
            path,
            media_type=_TYPES[path.suffix],
            headers={"Cache-Control": "max-age=3600", "X-Content-Type-Options": "nosniff"},
        )

    return lens
