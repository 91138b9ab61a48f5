"""Attack 2: DNS rebinding and cross-site requests from a hostile web page.

A page on ``evil.example`` whose name is rebound to 127.0.0.1 sends ``Host: evil.example``; a
page elsewhere sends its own ``Origin``. Only Host values naming the bound address (plus
``--allowed-host`` names) are answered: others get 421 ``host_not_allowed``, cross-site Origins
403 ``origin_not_allowed``, in the error shape, on ``/v1/*``, ``/v1/memory/*`` and ``/mcp``,
and nothing is stored or revealed.
"""

from __future__ import annotations

import json

import pytest

from .conftest import AttackServer, HeaderItems, Launcher, Reply, assert_error, snapshot

MARK = "Plexorvinrebind"  # stored through an allowed Host; never in a refused answer
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "attacker", "version": "1"},
    },
}


@pytest.fixture(scope="module")
def servers(launch: Launcher, semurg_server: AttackServer) -> list[AttackServer]:
    """Two loopback servers with the semurg profile (they serve /v1/<verb>, /v1/memory/* and
    /mcp): the shared one, and one widened with --allowed-host (twice)."""
    widened = ["--allowed-host", "evil.example", "--allowed-host", "b.example"]
    return [semurg_server, *launch.many({"profile": "semurg", "args": widened})]


def _with_data(server: AttackServer) -> AttackServer:
    server.ready()
    found = server.call("recall", {"search": MARK, "from": "*"})
    if found.status != 200:  # the memory is not written yet (a read never creates it)
        assert_error(found, 404, "memory_not_found")
    if found.status != 200 or not found.json():
        server.ok("remember", {"category": "learning", "content": f"{MARK} stored by the owner"})
    return server


@pytest.fixture(scope="module")
def server(servers: list[AttackServer]) -> AttackServer:
    return _with_data(servers[0])


@pytest.fixture(scope="module")
def widened(servers: list[AttackServer]) -> AttackServer:
    return _with_data(servers[1])


def route(server: AttackServer, path: str, headers: HeaderItems) -> Reply:
    """One request to a route family: a read of the native API, a write of it, a semurg route,
    or an MCP initialize."""
    json_type = ("Content-Type", "application/json")
    if path == "/mcp":
        accept = ("Accept", "application/json, text/event-stream")
        body = json.dumps(INITIALIZE).encode()
        return server.send("POST", "/mcp?memory=m", body, [json_type, accept, *headers])
    if path == "/v1/remember":
        body = json.dumps({"category": "learning", "content": "written by the page"}).encode()
    elif path == "/v1/memory/recall":
        body = json.dumps({"subject": MARK}).encode()
    elif path == "/v1/memory/status":
        body = b"{}"
    else:
        body = json.dumps({"from": "*"}).encode()
    return server.send("POST", f"{path}?memory=m", body, [json_type, *headers])


ROUTES = ["/v1/recall", "/v1/remember", "/v1/memory/recall", "/v1/memory/status", "/mcp"]
BAD_HOSTS = [
    "evil.example",
    "evil.example:{port}",
    "127.0.0.1.evil.example:{port}",
    "localhost.evil.example",
    "192.168.1.20:{port}",
    "0.0.0.0:{port}",
]


@pytest.mark.parametrize("path", ROUTES)
@pytest.mark.parametrize("host", BAD_HOSTS)
def test_a_foreign_host_is_refused(server: AttackServer, path: str, host: str) -> None:
    """Host naming anything but the loopback address: 421 host_not_allowed in the error shape,
    no stored data in the answer, nothing written."""
    before = snapshot(server, scopes=())
    reply = route(server, path, [("Host", host.format(port=server.port))])
    assert_error(reply, 421, "host_not_allowed")
    assert MARK.encode() not in reply.body
    assert snapshot(server, scopes=()) == before


LOOPBACK_HOSTS = [
    "127.0.0.1",
    "127.0.0.1:{port}",
    "localhost",
    "localhost:{port}",
    "[::1]",
    "[::1]:{port}",
]


@pytest.mark.parametrize("path", ["/v1/recall", "/v1/memory/status", "/mcp"])
@pytest.mark.parametrize("host", LOOPBACK_HOSTS)
def test_loopback_hosts_are_served(server: AttackServer, path: str, host: str) -> None:
    """The names of the bound address, with or without the port, are answered as usual."""
    reply = route(server, path, [("Host", host.format(port=server.port))])
    assert reply.status == 200, reply
    if path == "/v1/recall":
        assert MARK.encode() in reply.body


CROSS_ORIGINS = [
    "http://evil.example",
    "http://evil.example:{port}",
    "null",
    "http://127.0.0.1:{other}",
    "http://localhost:{port}",  # a different origin from the Host 127.0.0.1:{port}
    "https://attacker.test",
]


@pytest.mark.parametrize("path", ROUTES)
@pytest.mark.parametrize("origin", CROSS_ORIGINS)
def test_a_cross_site_origin_is_refused(server: AttackServer, path: str, origin: str) -> None:
    """A loopback Host but a cross-site Origin (another host or port, or ``null``): 403
    origin_not_allowed, nothing revealed, nothing written."""
    before = snapshot(server, scopes=())
    value = origin.format(port=server.port, other=server.port + 1)
    reply = route(server, path, [("Origin", value)])
    assert_error(reply, 403, "origin_not_allowed")
    assert MARK.encode() not in reply.body
    assert snapshot(server, scopes=()) == before


@pytest.mark.parametrize("path", ROUTES)
def test_same_origin_and_no_origin_are_served(server: AttackServer, path: str) -> None:
    """A page served by recuerdo itself (same origin) and a non-browser client (no Origin)."""
    same = f"http://127.0.0.1:{server.port}"
    assert route(server, path, [("Origin", same)]).status == 200
    assert route(server, path, []).status == 200


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "b.example:{port}"])
def test_allowed_host_names_are_served(widened: AttackServer, host: str) -> None:
    """``serve --allowed-host NAME`` (repeatable) makes NAME an accepted Host, with or
    without the port, on every route family."""
    value = host.format(port=widened.port)
    for path in ROUTES:
        reply = route(widened, path, [("Host", value)])
        assert reply.status == 200, (path, reply)
    name = value.split(":")[0]
    same = route(widened, "/v1/recall", [("Host", value), ("Origin", f"http://{value}")])
    assert same.status == 200 and MARK.encode() in same.body, (name, same)


def test_allowed_host_does_not_open_other_names(widened: AttackServer) -> None:
    """Widening to evil.example leaves every other foreign name refused."""
    reply = route(widened, "/v1/recall", [("Host", "other.example")])
    assert_error(reply, 421, "host_not_allowed")
    assert MARK.encode() not in reply.body
