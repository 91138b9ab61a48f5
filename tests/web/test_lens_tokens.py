"""The memory lens on a server with tokens, in a real browser: logging in, sessions that never
carry the token, read-only visitors, and tenants that never see each other."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from ..conftest import Server, create_token
from ..forks import recuerdo_command
from .conftest import api, refusal_code, start_server, text_of

SECRET = "Vexquorin"  # only tenant A ever writes it


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tokens")


@pytest.fixture(scope="module")
def tokens(base: Path) -> dict[str, tuple[str, str]]:
    return {
        "alice": create_token(base, "--principal", "alice-bot", "--tenant", "a"),
        "reader": create_token(base, "--principal", "auditor", "--tenant", "a", "--read-only"),
        "bob": create_token(base, "--principal", "bob-bot", "--tenant", "b"),
        "revoked": create_token(base, "--principal", "gone", "--tenant", "a"),
    }


@pytest.fixture(scope="module")
def server(base: Path, tokens: dict[str, tuple[str, str]]) -> Iterator[Server]:
    running = start_server(base)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def note(server: Server, tokens: dict[str, tuple[str, str]]) -> int:
    alice = tokens["alice"][1]
    api(server, "remember_about", {"axis": "user", "observation": f"{SECRET} tea"}, alice)
    api(server, "remember", {"category": "context", "content": f"{SECRET} entry"}, alice)
    reply = api(server, "save", {"title": f"{SECRET} diary", "content": f"{SECRET} text"}, alice)
    return int(reply["id"])


@pytest.fixture
def context(browser: Any, server: Server, note: int) -> Iterator[Any]:
    opened = browser.new_context(base_url=server.url)
    yield opened
    opened.close()


def log_in(context: Any, secret: str, target: str = "/") -> Any:
    page = context.new_page()
    page.goto(target)
    page.wait_for_url("**/login*")
    page.get_by_label("Token").fill(secret)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("button", name="Log out")).to_be_visible()
    return page


def test_pages_ask_to_log_in_first(context: Any) -> None:
    page = context.new_page()
    page.goto("/lens/overview")
    expect(page.get_by_role("heading", level=1)).to_have_text("Log in")
    assert page.get_by_role("navigation").count() == 0


def test_log_in_with_a_token_and_land_where_you_were_going(
    context: Any, tokens: dict[str, tuple[str, str]], note: int
) -> None:
    page = log_in(context, tokens["alice"][1], f"/m/{note}")
    expect(page.get_by_role("heading", level=1)).to_have_text(f"{SECRET} diary")
    assert "alice-bot" in page.locator("header").inner_text()


def test_the_session_cookie_is_httponly_strict_and_holds_no_token(
    context: Any, tokens: dict[str, tuple[str, str]]
) -> None:
    token_id, secret = tokens["alice"]
    page = log_in(context, secret)
    [cookie] = [c for c in context.cookies() if c["name"] == "recuerdo_lens"]
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert secret not in cookie["value"] and secret[4:] not in cookie["value"]
    assert cookie["value"].startswith(f"token.{token_id}.")
    assert page.evaluate("() => document.cookie") == ""  # scripts cannot read it


def test_a_wrong_token_is_refused_and_nothing_opens(context: Any) -> None:
    page = context.new_page()
    page.goto("/login")
    page.get_by_label("Token").fill("rcd_not-a-real-token")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("alert")).to_contain_text("not valid")
    page.goto("/lens/overview")
    expect(page.get_by_role("heading", level=1)).to_have_text("Log in")


def test_the_api_never_accepts_the_lens_cookie(
    context: Any, server: Server, tokens: dict[str, tuple[str, str]]
) -> None:
    """A cookie reaches the pages only: the JSON API still wants a bearer token, so no other
    site can ride on a signed-in browser."""
    page = log_in(context, tokens["alice"][1])
    reply = page.request.post("/v1/search?memory=demo", data={"query": SECRET})
    assert reply.status == 401
    assert reply.json()["error"] == "unauthorized"


def test_a_read_only_token_sees_no_edit_controls_and_its_posts_get_403(
    context: Any, server: Server, tokens: dict[str, tuple[str, str]], note: int
) -> None:
    page = log_in(context, tokens["reader"][1], f"/m/{note}")
    expect(page.get_by_role("heading", level=1)).to_have_text(f"{SECRET} diary")
    assert "read-only" in page.locator("header").inner_text()
    assert page.get_by_role("heading", name="Change this note").count() == 0
    assert page.locator("main form[method=post]").count() == 0
    page.goto("/lens/overview")
    assert page.get_by_role("button", name="Mute", exact=False).count() == 0
    page.goto(f"/lens/edit/{note}")
    assert refusal_code(page) == "capability_not_granted"


def test_a_read_only_post_with_a_valid_csrf_token_is_still_refused(
    context: Any, server: Server, tokens: dict[str, tuple[str, str]], note: int
) -> None:
    alice = tokens["alice"][1]
    page = log_in(context, tokens["reader"][1])
    csrf = page.locator("form[action='/logout'] input[name=csrf]").get_attribute("value")
    before = api(server, "get", {"id": note}, alice)
    form = {"csrf": csrf, "action": "delete", "id": str(note), "confirmed": "yes"}
    reply = page.request.post("/lens/do?memory=demo", form=form)
    assert reply.status == 403
    assert "capability_not_granted" in reply.text()
    assert api(server, "get", {"id": note}, alice) == before


def test_another_tenant_sees_none_of_the_first_tenants_data(
    context: Any, tokens: dict[str, tuple[str, str]], note: int
) -> None:
    page = log_in(context, tokens["bob"][1])
    for path in ("/", "/lens/overview", "/lens/notes", "/lens/journal", "/lens/audit"):
        page.goto(path)
        assert SECRET not in page.content(), path
    page.goto(f"/m/{note}")
    assert refusal_code(page) == "item_not_found"
    assert SECRET not in page.content()
    page.goto(f"/lens/search?q={SECRET}")
    assert SECRET not in page.locator("#results").inner_text()
    assert "Nothing found" in text_of(page)
    page.goto(f"/lens/context?q={SECRET}")
    assert page.locator(".state").inner_text() == "nothing_stored"
    assert SECRET not in page.locator("pre.pack").inner_text()


def test_log_out_ends_the_session(
    browser: Any, server: Server, context: Any, tokens: dict[str, tuple[str, str]]
) -> None:
    """Everywhere: a copy of the cookie taken before logging out kept working for its 12 hours
    (logging out only replaced it in this browser: a hunt over the doors)."""
    page = log_in(context, tokens["alice"][1])
    kept = [c for c in context.cookies() if c["name"] == "recuerdo_lens"]
    page.get_by_role("button", name="Log out").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Log in")
    page.goto("/lens/overview")
    expect(page.get_by_role("heading", level=1)).to_have_text("Log in")
    elsewhere = browser.new_context(base_url=server.url)
    try:
        elsewhere.add_cookies(kept)
        copy = elsewhere.new_page()
        copy.goto("/lens/overview")
        expect(copy.get_by_role("heading", level=1)).to_have_text("Log in")
    finally:
        elsewhere.close()


def test_revoking_the_token_ends_its_sessions(
    context: Any, base: Path, tokens: dict[str, tuple[str, str]]
) -> None:
    token_id, secret = tokens["revoked"]
    page = log_in(context, secret)
    subprocess.run(
        recuerdo_command("--state-dir", str(base), "token", "revoke", token_id),
        check=True,
        capture_output=True,
        timeout=60,
    )
    page.goto("/lens/overview")
    expect(page.get_by_role("heading", level=1)).to_have_text("Log in")


def test_the_login_form_needs_its_csrf_token(
    context: Any, tokens: dict[str, tuple[str, str]]
) -> None:
    page = context.new_page()
    page.goto("/login")
    reply = page.request.post("/login", form={"token": tokens["alice"][1], "next": "/"})
    assert reply.status == 403
    assert "csrf_refused" in reply.text()
    assert not [c for c in context.cookies() if c["value"].startswith("token.")]
