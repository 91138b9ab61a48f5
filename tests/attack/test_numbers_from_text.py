"""Numbers written as text: ids in a JSON string, a lens path, a query or a form, page cursors,
a Host header's port. Each is read by one parser (``core.text.whole_number``: ASCII digits,
within 64 bits). ``str.isdigit`` let "²" through to ``int``, which refused it; ``int`` refused
over 4,300 digits; a store refused past 64 bits: each was an HTTP 500 (JSON "internal" on the
API and the lens, bare text/plain from the guard) instead of the caller's 400."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import quote

import pytest

from recuerdo.doors.guard import HostPolicy

from .conftest import AttackServer, Launcher, assert_error

HUGE = "9" * 4_400  # past int()'s 4,300 digits
PAST_64_BITS = "9" * 20
SUPERSCRIPT = "\u00b2"  # "²": isdigit() is true, int() refuses it
ARABIC_THREE = "\u0663"  # "٣": isdigit() is true, int() reads 3
NOT_NUMBERS = [HUGE, PAST_64_BITS, SUPERSCRIPT, ARABIC_THREE]


@pytest.fixture(scope="module")
def server(launch: Launcher) -> Iterator[AttackServer]:
    """A single-user server whose memory ``m`` holds one note (id 1) and one conversation."""
    started = launch()
    started.ok("save", {"title": "a note", "content": "one\ntwo"})
    yield started


@pytest.mark.parametrize("raw", NOT_NUMBERS, ids=["4400 digits", "20 digits", "²", "٣"])
@pytest.mark.parametrize(
    ("verb", "field", "code"),
    [
        ("read_message", "message_id", "invalid_input"),
        ("thread", "conversation_id", "invalid_input"),
        ("forget_conversation", "conversation_id", "invalid_input"),
        ("inbox", "after", "page_cursor_invalid"),
    ],
)
def test_ids_and_cursors_in_json_strings(
    server: AttackServer, verb: str, field: str, code: str, raw: str
) -> None:
    before = server.ok("recall", {"from": "*"})
    assert_error(server.call(verb, {field: raw}), 400, code)
    assert server.ok("recall", {"from": "*"}) == before


@pytest.mark.parametrize(
    "cursor", [f"{HUGE}.1", f"1.{HUGE}", f"{SUPERSCRIPT}.1", f"1.{PAST_64_BITS}"]
)
def test_inbox_cursors_of_two_numbers(server: AttackServer, cursor: str) -> None:
    assert_error(server.call("inbox", {"after": cursor}), 400, "page_cursor_invalid")


def lens_refusal(server: AttackServer, path: str) -> str:
    """A lens page that must be the lens's own refusal page (HTML, status 400); its code."""
    reply = server.send("GET", path)
    assert reply.status == 400, reply
    assert reply.headers["content-type"].startswith("text/html"), reply
    found = re.search(rb'class="error-code">([a-z_]+)<', reply.body)
    assert found, reply
    return found.group(1).decode()


@pytest.mark.parametrize("raw", NOT_NUMBERS, ids=["4400 digits", "20 digits", "²", "٣"])
@pytest.mark.parametrize(
    "path",
    [
        "/m/{}?memory=m",
        "/m/1?memory=m&a={}",
        "/m/1?memory=m&b={}",
        "/lens/edit/{}?memory=m",
        "/lens/forget?memory=m&id={}",
        "/lens/entity?memory=m&name=x&hops={}",
    ],
)
def test_lens_paths_and_queries(server: AttackServer, path: str, raw: str) -> None:
    assert lens_refusal(server, path.format(quote(raw))) == "invalid_input"


@pytest.mark.parametrize("raw", NOT_NUMBERS, ids=["4400 digits", "20 digits", "²", "٣"])
def test_lens_form_ids(server: AttackServer, raw: str) -> None:
    page = server.send("GET", "/m/1?memory=m")
    cookie = re.search(r"recuerdo_lens=([^;]+)", page.headers["set-cookie"])
    csrf = re.search(rb'name="csrf" value="([^"]+)"', page.body)
    assert cookie and csrf, page
    form = f"csrf={csrf.group(1).decode()}&action=forget_note&id={quote(raw)}&confirmed=yes"
    reply = server.send(
        "POST",
        "/lens/do?memory=m",
        form.encode(),
        [
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("Cookie", f"recuerdo_lens={cookie.group(1)}"),
        ],
    )
    assert reply.status == 400, reply
    assert b'class="error-code">invalid_input<' in reply.body, reply
    assert server.ok("get", {"id": 1})["title"] == "a note"  # nothing forgotten


@pytest.mark.parametrize("port", [SUPERSCRIPT, HUGE, "99999", "8o"])
def test_a_host_port_that_is_no_number(server: AttackServer, port: str) -> None:
    """A Host whose port is no port names no origin: with an Origin, the guard refuses the
    request in the one JSON shape (it was a bare text/plain 500 for "²" and 4,400 digits)."""
    reply = server.send(
        "GET",
        "/health",
        headers=[("Host", f"localhost:{port}".encode()), ("Origin", "http://localhost")],
    )
    assert_error(reply, 403, "origin_not_allowed")


@pytest.mark.parametrize(
    ("host", "origin", "allowed"),
    [
        ("localhost", "http://localhost", True),
        ("localhost:80", "http://localhost", True),
        ("localhost:7700", "http://localhost:7700", True),
        ("[::1]:7700", "http://[::1]:7700", True),
        ("localhost:7700", "http://localhost", False),
        (f"localhost:{SUPERSCRIPT}", "http://localhost", False),
        ("localhost:", "http://localhost", True),  # an empty port is the scheme's (RFC 3986)
    ],
)
def test_the_origin_check_reads_the_port_as_a_number(host: str, origin: str, allowed: bool) -> None:
    policy = HostPolicy.for_binding("127.0.0.1")
    assert policy.origin_allowed(origin, host) is allowed
