"""The lens never creates a memory by looking at it: a page of a memory that does not exist
(`?memory=dmeo`, a typo) is a 404 page saying memory_not_found, with links to the close names,
and no file appears; a write through the lens (a confirmed form) creates the memory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..conftest import Server
from .conftest import api, refusal_code, start_server, text_of


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = start_server(tmp_path_factory.mktemp("lens-missing"))
    api(running, "remember", {"category": "preference", "content": "Oat milk"})
    api(
        running,
        "remember_about",
        {"axis": "user", "observation": "Answers tersely", "category": "style"},
    )
    yield running
    running.stop()


@pytest.fixture
def page(browser: Any, server: Server) -> Iterator[Any]:
    context = browser.new_context(base_url=server.url)
    opened = context.new_page()
    yield opened
    context.close()


def _memories(server: Server) -> list[str]:
    return sorted(path.name for path in (server.base / ".recuerdo" / "state").iterdir())


@pytest.mark.parametrize("path", ["/lens/overview", "/lens/notes", "/lens/search?q=milk"])
def test_a_page_of_a_missing_memory_is_memory_not_found(
    page: Any, server: Server, path: str
) -> None:
    before = _memories(server)
    joiner = "&" if "?" in path else "?"
    response = page.goto(f"{path}{joiner}memory=dmeo")
    assert response.status == 404
    assert refusal_code(page) == "memory_not_found"
    assert "'demo'" in text_of(page)
    assert _memories(server) == before
    page.click("a.suggestion")  # the close name, one click away
    page.wait_for_url("**/lens/overview?memory=demo")
    assert "Overview of demo" in text_of(page)


def test_a_write_through_the_lens_creates_the_memory(page: Any, server: Server) -> None:
    """The lens's forms go through the same doors: a confirmed mute (a write verb) posted to
    `fresh` opens it, creating it, and is then answered by the verb (`fresh` holds no such
    category yet), not by memory_not_found; its overview then opens."""
    state = Path(server.base) / ".recuerdo" / "state"
    page.goto("/lens/overview")
    csrf = page.get_attribute("input[name=csrf]", "value")
    form = {"action": "mute", "category": "style", "confirmed": "yes", "csrf": csrf}
    assert page.goto("/lens/overview?memory=fresh").status == 404
    assert not (state / "fresh.db").exists()
    reply = page.request.post("/lens/do?memory=fresh", form=form)
    assert reply.status == 404 and "item_not_found" in reply.text(), reply.text()
    assert (state / "fresh.db").exists()
    assert page.goto("/lens/overview?memory=fresh").status == 200
    reply = page.request.post("/lens/do?memory=demo", form=form)  # where it exists: done
    assert reply.status == 200 and "muted" in reply.url, reply.text()
