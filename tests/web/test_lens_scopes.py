"""The lens of a token limited to scopes (decision 0130): every page reads within the token's
scopes, naming one to each verb as the doors ask, and shows nothing of another scope.

Before, a confined token's lens was refused almost everywhere (its pages called verbs without
a scope, and the by-id verbs took none), and the page of memories listed none. The pages are
read over real HTTP (every page, and what it must never hold), and in the browser where a page's
behaviour is at stake (the scope chooser)."""

from __future__ import annotations

import http.client
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from playwright.sync_api import expect

from ..conftest import Server, create_token
from .conftest import api, start_server

SECRET = "Zorblax"  # only project:b holds it
ALPHA = "Alphaco"  # project:a
CHARLIE = "Charlie ledger"  # project:c


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("scopes")


@pytest.fixture(scope="module")
def tokens(base: Path) -> dict[str, str]:
    made = {
        "owner": create_token(base, "--principal", "boss", "--tenant", "t"),
        "one": create_token(base, "--principal", "alice", "--tenant", "t", "--scopes", "project:a"),
        "two": create_token(
            base,
            "--principal",
            "carol",
            "--tenant",
            "t",
            "--scopes",
            "project:a",
            "--scopes",
            "project:c",
        ),
    }
    return {name: secret for name, (_, secret) in made.items()}


@pytest.fixture(scope="module")
def server(base: Path, tokens: dict[str, str]) -> Iterator[Server]:
    running = start_server(base)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def ids(server: Server, tokens: dict[str, str]) -> dict[str, int]:
    """What the owner keeps in project a, b and c: notes (one deleted in b), entries, a
    category of each project, knowledge, a plan, a rule, a link from a's note to b's, and a
    search of b in the retrieval audit."""
    owner = tokens["owner"]

    def call(verb: str, **args: Any) -> Any:
        return api(server, verb, args, owner)

    a = call("save", title=f"{ALPHA} plan", content="common words", scope="project:a")["id"]
    call("edit", id=a, operation="append", content="second version")
    b = call("save", title=f"{SECRET} note", content=f"{SECRET} common", scope="project:b")["id"]
    gone = call("save", title=f"{SECRET} gone", content="x", scope="project:b")["id"]
    call("delete", id=gone)
    c = call("save", title=CHARLIE, content="common ledger", scope="project:c")["id"]
    call("link", from_id=a, to_id=b)
    call("remember", category="context", content=f"{SECRET} entry", scope="project:b")
    call("remember", category="context", content=f"{ALPHA} entry", scope="project:a")
    call("remember_about", axis="project", project="b", observation=f"{SECRET} habit")
    call("remember_about", axis="project", project="a", observation=f"{ALPHA} habit")
    call("remember_about", axis="project", project="c", observation=f"{CHARLIE} habit")
    call("relate", **{"from": SECRET, "to": "Quux", "type": "owns", "scope": "project:b"})
    call("relate", **{"from": ALPHA, "to": "Widget", "type": "owns", "scope": "project:a"})
    call("create_progress", task=f"{SECRET} rollout", steps=["one"])
    call("add_rule", name=f"{SECRET}-rule", level="must", description="pay before the fifth")
    call("search", query=SECRET, scope="project:b")
    return {"a": a, "b": b, "c": c, "gone": gone}


class Visitor:
    """A browser's part in the lens, over plain HTTP: a session cookie, logged in once."""

    def __init__(self, server: Server, secret: str) -> None:
        self.port = server.port
        self.cookie = ""
        status, body = self.get("/login")
        form = {"csrf": self.csrf(body), "token": secret, "next": "/"}
        status, body = self.send("POST", "/login", urlencode(form))
        assert status == 303, body

    def send(self, method: str, path: str, form: str | None = None) -> tuple[int, str]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        headers = {"Cookie": f"recuerdo_lens={self.cookie}"} if self.cookie else {}
        if form is not None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        try:
            connection.request(method, path, body=form, headers=headers)
            reply = connection.getresponse()
            set_cookie = reply.getheader("set-cookie") or ""
            if found := re.search(r"recuerdo_lens=([^;]+)", set_cookie):
                self.cookie = found.group(1)
            location = reply.getheader("location") or ""
            return reply.status, location + reply.read().decode()
        finally:
            connection.close()

    def get(self, path: str) -> tuple[int, str]:
        return self.send("GET", path)

    @staticmethod
    def csrf(body: str) -> str:
        found = re.search(r'name="csrf" value="([^"]+)"', body)
        assert found, body
        return found.group(1)

    def do(self, page: str, query: str, **form: str) -> tuple[int, str]:
        """A form of the lens posted from ``page``, confirmed."""
        _, body = self.get(page)
        fields = {"csrf": self.csrf(body), "confirmed": "yes", **form}
        return self.send("POST", f"/lens/do?{query}", urlencode(fields))


PAGES = [
    "/",
    "/lens/overview",
    "/lens/notes",
    "/lens/notes?status=deleted",
    "/m/{a}",
    "/m/{a}?a=1&b=2",
    "/lens/edit/{a}",
    "/lens/search?q=common",
    "/lens/context?q=common",
    f"/lens/entity?name={ALPHA}",
    "/lens/forget?id={a}",
    f"/lens/forget?subject={ALPHA}",
    "/lens/audit",
    "/lens/journal",
]


@pytest.mark.parametrize("token", ["one", "two"])
@pytest.mark.parametrize("path", PAGES)
def test_every_page_answers_within_the_tokens_scopes(
    server: Server, tokens: dict[str, str], ids: dict[str, int], token: str, path: str
) -> None:
    status, body = Visitor(server, tokens[token]).get(path.format(**ids))
    assert status == 200, body
    assert "error-code" not in body
    assert SECRET not in body
    assert "project:b" not in body
    assert CHARLIE not in body  # the second token shows its first scope until it chooses
    if path not in ("/", "/lens/journal", "/lens/audit", "/lens/notes?status=deleted"):
        assert ALPHA in body


@pytest.mark.parametrize(
    "path",
    ["/lens/overview?scope=project:c", "/lens/notes?scope=project:c", "/m/{c}?scope=project:c"],
)
def test_the_second_scope_is_shown_when_chosen(
    server: Server, tokens: dict[str, str], ids: dict[str, int], path: str
) -> None:
    status, body = Visitor(server, tokens["two"]).get(path.format(**ids))
    assert status == 200, body
    assert CHARLIE in body and ALPHA not in body and SECRET not in body


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("/m/{b}", "item_not_found"),
        ("/m/{c}", "item_not_found"),
        ("/lens/edit/{b}", "item_not_found"),
        ("/lens/forget?id={b}", "item_not_found"),
        ("/lens/overview?scope=project:b", "capability_not_granted"),
        ("/lens/notes?scope=project:b", "capability_not_granted"),
        ("/m/{b}?scope=project:b", "capability_not_granted"),
    ],
)
def test_what_is_beyond_the_token_is_refused_and_not_shown(
    server: Server, tokens: dict[str, str], ids: dict[str, int], path: str, code: str
) -> None:
    status, body = Visitor(server, tokens["one"]).get(path.format(**ids))
    assert status in (403, 404), body
    assert f'class="error-code">{code}<' in body
    assert SECRET not in body


def test_a_change_runs_within_the_scope_and_never_beyond(
    server: Server, tokens: dict[str, str], ids: dict[str, int]
) -> None:
    owner = tokens["owner"]
    visitor = Visitor(server, tokens["one"])
    done, where = visitor.do(
        f"/m/{ids['a']}",
        "memory=demo",
        action="edit",
        id=str(ids["a"]),
        operation="append",
        content="from the lens",
    )
    assert done == 303, where
    assert where.startswith(f"/m/{ids['a']}?") and "scope=project%3Aa" in where
    assert api(server, "get", {"id": ids["a"]}, owner)["content"].endswith("from the lens")
    before = api(server, "get", {"id": ids["b"]}, owner)
    refused, body = visitor.do(
        "/lens/overview", "memory=demo", action="forget_note", id=str(ids["b"])
    )
    assert refused == 404 and "item_not_found" in body and SECRET not in body
    assert api(server, "get", {"id": ids["b"]}, owner) == before


@pytest.mark.parametrize(
    ("token", "counted"),
    [("owner", ["2", "6", "0", "0", "1", "1"]), ("one", ["1", "2", "0", "0", "0", "0"])],
)
def test_the_memories_page_counts_what_the_token_may_read(
    server: Server, tokens: dict[str, str], ids: dict[str, int], token: str, counted: list[str]
) -> None:
    """Entries, notes, documents, messages, plans and rules of the memory: every scope's for
    an unlimited token, its own scopes' for a confined one (which was shown no memory)."""
    status, body = Visitor(server, tokens[token]).get("/")
    assert status == 200, body
    row = re.search(r">demo</a></th>(.*?)</tr>", body, re.S)
    assert row, body
    assert re.findall(r"<td>(\d+)</td>", row.group(1)) == counted


@pytest.mark.parametrize("path", ["/lens/overview", "/m/{b}", "/lens/search?q=common"])
def test_an_unlimited_token_still_sees_every_scope(
    server: Server, tokens: dict[str, str], ids: dict[str, int], path: str
) -> None:
    status, body = Visitor(server, tokens["owner"]).get(path.format(**ids))
    assert status == 200, body
    assert SECRET in body
    assert 'id="view-scope"' not in body  # no scope chooser


# -- in the browser ---------------------------------------------------------------------


@pytest.fixture
def context(browser: Any, server: Server, ids: dict[str, int]) -> Iterator[Any]:
    opened = browser.new_context(base_url=server.url)
    yield opened
    opened.close()


def log_in(context: Any, secret: str, target: str) -> Any:
    page = context.new_page()
    page.goto(target)
    page.get_by_label("Token").fill(secret)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("button", name="Log out")).to_be_visible()
    return page


def test_a_token_of_one_scope_is_shown_it_without_a_choice(
    context: Any, tokens: dict[str, str]
) -> None:
    page = log_in(context, tokens["one"], "/lens/notes")
    expect(page.locator("header .scope-shown")).to_have_text("Scope project:a")
    assert page.locator("header select").count() == 0
    # The notes filter offers the token's scope only, chosen.
    assert page.locator("#f-scope option").all_inner_texts() == ["project:a"]
    expect(page.get_by_role("link", name=f"{ALPHA} plan")).to_be_visible()


def test_a_token_of_several_scopes_chooses_among_them_and_its_links_keep_the_choice(
    context: Any, tokens: dict[str, str]
) -> None:
    page = log_in(context, tokens["two"], "/lens/overview")
    chooser = page.get_by_label("Scope", exact=True).first
    assert page.locator("#view-scope option").all_inner_texts() == ["project:a", "project:c"]
    expect(page.locator("#view-scope")).to_have_value("project:a")
    chooser.select_option("project:c")
    page.locator("header").get_by_role("button", name="Show").click()
    page.wait_for_url("**scope=project%3Ac**")
    expect(page.locator("#view-scope")).to_have_value("project:c")
    page.get_by_role("navigation").get_by_role("link", name="Notes").click()
    expect(page.get_by_role("link", name=CHARLIE)).to_be_visible()
    assert ALPHA not in page.content() and SECRET not in page.content()
    page.get_by_role("link", name=CHARLIE).click()
    expect(page.get_by_role("heading", level=1)).to_have_text(CHARLIE)


@pytest.mark.parametrize("token", ["owner", "one"])
def test_a_forget_that_found_nothing_never_says_forgotten(
    server: Server, tokens: dict[str, str], ids: dict[str, int], token: str
) -> None:
    """``forget`` answers False for an entry that is not there (or not in the caller's
    scopes): the page said "Done: forgotten" all the same."""
    visitor = Visitor(server, tokens[token])
    done, where = visitor.do("/lens/overview", "memory=demo", action="forget_entry", id="987654")
    assert done == 303, where
    assert "done=forgotten" not in where and "done=nothing" in where
    status, body = visitor.get(where)  # a redirect has no body: ``where`` is its location
    assert status == 200 and "Done: nothing: no such entry here." in body
