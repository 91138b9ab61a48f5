"""The memory lens in a real browser, on a loopback server in single-user mode (no login):
browsing, searching, editing with confirmation, muting, forgetting, the entity picture, and
the CSRF guard on every form."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from ..conftest import Server
from .conftest import api, refusal_code, start_server, text_of

INJECTION = (
    "Harmless words.\n\n<script>window.__pwned = 1</script>\n\n"
    '<img src=x onerror="window.__pwned = 2">\n\n[click](javascript:window.__pwned=3)'
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = start_server(tmp_path_factory.mktemp("lens"))
    yield running
    running.stop()


@pytest.fixture(scope="module")
def ids(server: Server) -> dict[str, int]:
    found: dict[str, int] = {}
    found["entry"] = api(server, "remember", {"category": "preference", "content": "Oat milk"})
    found["plan"] = api(server, "save", {"title": "Release plan", "content": "# Plan\n\nTag it."})[
        "id"
    ]
    found["other"] = api(
        server, "save", {"title": "Rollback", "content": "Undo with [[Release plan]]."}
    )["id"]
    found["evil"] = api(server, "save", {"title": "Injected", "content": INJECTION})["id"]
    found["doomed"] = api(
        server, "save", {"title": "Doomed note", "content": "Zorblat secret plan text"}
    )["id"]
    found["style"] = api(
        server,
        "remember_about",
        {"axis": "user", "observation": "Answers in Quenya only", "category": "style"},
    )["note_id"]
    api(server, "create_progress", {"task": "import", "steps": ["fetch", "parse", "load"]})
    api(server, "complete_step", {"task": "import", "step": "fetch"})
    api(server, "add_rule", {"name": "discount", "level": "must", "description": "d <= 0.2"})
    api(
        server,
        "remember_knowledge",
        {
            "content": "Alice works at Acme. Acme is located in Lyon. Lyon is located in France.",
            "facts": {
                "relations": [
                    {"source": "Alice", "target": "Acme", "type": "works_at"},
                    {"source": "Acme", "target": "Lyon", "type": "located_in"},
                    {"source": "Lyon", "target": "France", "type": "located_in"},
                ]
            },
            "source": "atlas.txt",
        },
    )
    return found


@pytest.fixture
def page(browser: Any, server: Server, ids: dict[str, int]) -> Iterator[Any]:
    context = browser.new_context(base_url=server.url)
    opened = context.new_page()
    yield opened
    context.close()


PAGES = [
    ("/", "Memories"),
    ("/lens/overview", "Overview of demo"),
    ("/lens/notes", "Notes"),
    ("/lens/search?q=plan", "Search"),
    ("/lens/context?q=plan", "Context pack"),
    ("/lens/entity?name=Acme", "Acme"),
    ("/lens/audit", "Retrieval audit"),
    ("/lens/journal", "Journal"),
]


@pytest.mark.parametrize(("path", "heading"), PAGES)
def test_every_page_opens_labelled_for_screen_readers(page: Any, path: str, heading: str) -> None:
    """Each page answers 200 with its heading, the landmarks (banner, navigation, main,
    contentinfo), and a label for every form field."""
    response = page.goto(path)
    assert response.status == 200
    expect(page.get_by_role("heading", level=1).first).to_have_text(heading)
    for role in ("banner", "navigation", "main", "contentinfo"):
        assert page.get_by_role(role).count() >= 1, role
    unlabelled = page.evaluate(
        """() => [...document.querySelectorAll('input:not([type=hidden]), select, textarea')]
            .filter(el => !(el.labels && el.labels.length) && !el.getAttribute('aria-label'))
            .map(el => el.name)"""
    )
    assert unlabelled == []


def test_the_overview_shows_what_memory_holds(page: Any) -> None:
    """Entries by category and writer, notes by scope and kind, categories, plans with a
    progress bar and resume point, owner rules, and entity types with their members."""
    page.goto("/lens/overview")
    text = text_of(page)
    assert "preference" in text and "Oat" not in text  # counts, not contents
    assert "resume at parse" in text
    assert page.locator("progress").first.get_attribute("value") == "33"
    assert "discount" in text and "d <= 0.2" in text
    assert "Entities: " in text
    page.get_by_role("link", name="Alice").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Alice")


def test_the_memories_page_lists_the_memory_with_counts(page: Any) -> None:
    page.goto("/")
    row = page.get_by_role("row").filter(has_text="demo")
    assert "bytes" in row.inner_text()  # single user: the size on disk is shown
    row.get_by_role("link", name="demo").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Overview of demo")


def test_a_note_renders_markdown_and_script_in_it_is_inert(page: Any, ids: dict[str, int]) -> None:
    """Raw HTML in a note is shown as text: no script runs, no handler fires, no javascript:
    link is made."""
    page.goto(f"/m/{ids['evil']}")
    body = page.locator(".note-text")
    assert "<script>window.__pwned = 1</script>" in body.inner_text()
    assert body.locator("script, img").count() == 0
    assert page.locator("a[href^='javascript:']").count() == 0
    assert page.evaluate("() => window.__pwned") is None


def test_links_show_both_ways(page: Any, ids: dict[str, int]) -> None:
    page.goto(f"/m/{ids['plan']}")
    page.get_by_role("link", name="Rollback").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Rollback")
    assert page.get_by_role("link", name="Release plan").count() == 1


def test_search_and_open_a_result(page: Any) -> None:
    """Results are previews with the meaning state shown; each opens the whole item."""
    page.goto("/lens/search")
    page.get_by_label("Search for").fill("Zorblat")
    page.get_by_role("button", name="Search").click()
    page.wait_for_url("**/lens/search?*q=Zorblat*")
    assert page.locator(".meaning").inner_text() == "not_armed"
    page.get_by_role("link", name="Doomed note").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Doomed note")
    assert "Zorblat secret plan text" in page.locator(".note-text").inner_text()


def test_edit_a_note_then_see_the_new_revision_and_its_diff(
    page: Any, server: Server, ids: dict[str, int]
) -> None:
    """An edit is shown for confirmation first (nothing changes), then runs; the history
    names the new version and the diff shows the added line."""
    note = ids["plan"]
    page.goto(f"/m/{note}")
    page.get_by_role("link", name="Append text at the end").click()
    page.wait_for_url(f"**/lens/edit/{note}?*operation=append*")
    page.get_by_role("textbox", name="Text", exact=True).fill("Announce it on Friday.")
    page.get_by_role("button", name="Review this change…").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Confirm: Edit the note")
    assert api(server, "get", {"id": note})["version"] == 1  # not yet
    page.get_by_role("button", name="Yes, edit the note").click()
    page.wait_for_url(f"**/m/{note}?*done=edited*")
    assert api(server, "get", {"id": note})["version"] == 2
    assert "Announce it on Friday." in page.locator(".note-text").inner_text()
    history = page.get_by_role("table").filter(has_text="Principal")
    assert history.get_by_role("row").nth(1).inner_text().split("\t")[:2] == ["2", "edit"]
    assert page.locator("pre.diff ins").filter(has_text="Announce it on Friday.").count() == 1


def test_mark_reviewed_and_delete_and_restore_are_confirmed(
    page: Any, server: Server, ids: dict[str, int]
) -> None:
    note = ids["other"]
    page.goto(f"/m/{note}")
    page.get_by_role("button", name="Delete (restorable)").click()
    page.get_by_role("button", name="Yes, delete the note (soft: restorable)").click()
    page.wait_for_url("**/lens/notes?*status=deleted*")
    restore = page.get_by_role("button", name="Restore Rollback")
    restore.click()
    page.get_by_role("button", name="Yes, restore the deleted note").click()
    page.wait_for_url(f"**/m/{note}?*")
    assert api(server, "get", {"id": note})["status"] == "active"
    page.get_by_role("button", name="Mark reviewed").click()
    page.get_by_role("button", name="Yes, mark the note reviewed (still true)").click()
    page.wait_for_url(f"**/m/{note}?*done=reviewed*")
    journal = api(server, "journal", {"limit": 50})
    kinds = [row["operation"] for row in journal if row["item_id"] == note]
    assert kinds[:3] == ["review", "restore", "delete"]  # newest first


def test_mute_a_category_and_see_it_leave_the_context(page: Any, server: Server) -> None:
    def in_context() -> bool:
        page.goto("/lens/context?q=Quenya")
        return "Answers in Quenya only" in page.locator("pre.pack").inner_text()

    assert in_context()
    page.goto("/lens/overview")
    page.get_by_role("button", name="Mute category style").click()
    page.get_by_role("button", name="Yes, mute the category", exact=False).click()
    page.wait_for_url("**/lens/overview?*done=muted*")
    assert not in_context()
    reply = api(server, "context", {"query": "Quenya"})
    assert "Quenya" not in reply["context"]
    page.goto("/lens/overview")
    page.get_by_role("button", name="Unmute category style").click()
    page.get_by_role("button", name="Yes, unmute the category", exact=False).click()
    page.wait_for_url("**/lens/overview?*done=unmuted*")
    assert in_context()


def test_forget_shows_what_goes_then_it_is_gone_everywhere(
    page: Any, server: Server, ids: dict[str, int]
) -> None:
    note = ids["doomed"]
    page.goto(f"/lens/forget?id={note}")
    assert "Zorblat secret plan text" in text_of(page)
    assert api(server, "get", {"id": note})["title"] == "Doomed note"  # shown, not yet gone
    page.get_by_role("button", name=f"Yes, forget note {note}").click()
    page.wait_for_url("**/lens/overview?*done=forgotten*")
    page.goto(f"/m/{note}")
    assert refusal_code(page) == "item_not_found"
    page.goto("/lens/search?q=Zorblat")
    assert "Doomed note" not in text_of(page)
    page.goto("/lens/notes?status=deleted")
    assert "Doomed note" not in text_of(page)
    page.goto("/lens/context?q=Zorblat")
    assert "Zorblat" not in text_of(page).replace("Zorblat", "", 1)  # only the query box
    assert server.post("/v1/get", {"id": note})[0] == 404


def test_the_entity_picture_walks_the_graph(page: Any) -> None:
    """Entities are nodes, facts labelled edges, the derived fact dashed; selecting a node
    opens that entity. The date pickers are there for time travel."""
    page.goto("/lens/entity?name=Acme")
    picture = page.locator("svg.graph")
    assert picture.locator("g.edge.derived line").first.get_attribute("stroke-dasharray")
    assert "located_in" in (picture.text_content() or "")
    assert "transitive" in page.locator("#derived-h + ul").inner_text()
    assert page.locator("blockquote.cite mark").count() >= 1
    assert page.get_by_label("Known as of").get_attribute("type") == "datetime-local"
    picture.locator("a.node").filter(has_text="Lyon").click()
    page.wait_for_url("**/lens/entity?*name=Lyon*")
    expect(page.get_by_role("heading", level=1)).to_have_text("Lyon")


def test_audit_and_journal_filter_by_principal(page: Any) -> None:
    page.goto("/lens/journal?principal=nobody")
    assert "No change by nobody" in text_of(page)
    page.goto("/lens/journal")
    page.get_by_role("link", name="main").first.click()  # the local user writes as main
    assert page.locator("tbody tr").count() >= 1
    page.goto("/lens/audit")
    page.get_by_role("textbox", name="Principal").fill("main")
    page.get_by_role("button", name="Filter").click()
    assert "search" in text_of(page)


@pytest.mark.parametrize("csrf", [None, "", "forged-token"])
def test_a_form_post_without_its_csrf_token_is_refused(
    page: Any, server: Server, ids: dict[str, int], csrf: str | None
) -> None:
    """Even from the lens's own origin with its own session cookie: 403 csrf_refused, and the
    note is unchanged."""
    note = ids["plan"]
    page.goto(f"/m/{note}")  # the session cookie exists
    before = api(server, "get", {"id": note})
    form = {"action": "delete", "id": str(note), "confirmed": "yes"}
    if csrf is not None:
        form["csrf"] = csrf
    reply = page.request.post("/lens/do?memory=demo", form=form)
    assert reply.status == 403
    assert "csrf_refused" in reply.text()
    assert api(server, "get", {"id": note}) == before


def test_pages_work_without_javascript(browser: Any, server: Server, ids: dict[str, int]) -> None:
    context = browser.new_context(base_url=server.url, java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto("/lens/search")
        page.get_by_label("Search for").fill("Release")
        page.get_by_label("Search for").press("Enter")
        page.get_by_role("link", name="Release plan").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Release plan")
    finally:
        context.close()


def test_keyboard_reaches_the_main_content_first(page: Any) -> None:
    page.goto("/lens/overview")
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.textContent") == "Skip to content"
    page.keyboard.press("Enter")
    assert page.evaluate("() => location.hash") == "#main"


def test_unknown_routes_keep_the_one_error_shape(server: Server) -> None:
    status, reply = server.post("/lens/nothing-here", {})
    assert status in (404, 405)
    assert isinstance(reply, dict) and reply["ok"] is False


def test_static_files_cannot_reach_outside_their_folder(page: Any) -> None:
    for path in ("/static/..%2f__init__.py", "/static/.hidden.js", "/static/VENDORED.md"):
        assert page.request.get(path).status == 404, path
    assert page.request.get("/static/htmx.min.js").status == 200


def test_the_journal_names_the_keys_of_a_move(page: Any, server: Server) -> None:
    """A move said only ``move``: the owner could not tell which key the note had left."""
    scope = "project:moves"
    api(server, "save", {"title": "Editor", "content": "vim", "key": "editor", "scope": scope})
    moved = {"title": "Editor", "content": "neovim", "key": "shop/editor", "scope": scope}
    api(server, "save", {**moved, "former_key": "editor"})
    page.goto("/lens/journal")
    row = page.locator("tbody tr.op-move")
    expect(row).to_have_count(1)
    assert "move editor → shop/editor" in row.inner_text()
