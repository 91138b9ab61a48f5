"""``user_id`` (an end user inside the tenant) is a Semurg feature (decisions 0006, 0094): only
a tool whose schema declares it takes it. A native verb, whose schema does not name it, refuses
it as unknown_argument over HTTP and MCP, like any other argument it does not take; it once
moved the call into the tenant ``<tenant>:<user_id>`` silently."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .conftest import AttackServer, Launcher, assert_error, mcp_call, snapshot

WRITE = {"category": "context", "content": "where does this land", "user_id": "u1"}


@pytest.fixture(scope="module")
def server(launch: Launcher) -> Iterator[AttackServer]:
    started = launch()
    started.ok("remember", {"category": "context", "content": "already here"})
    yield started


@pytest.mark.parametrize(
    ("verb", "body"), [("remember", WRITE), ("recall", {"user_id": "u1"})], ids=["write", "read"]
)
def test_native_verbs_over_http(server: AttackServer, verb: str, body: dict[str, object]) -> None:
    before = snapshot(server)
    shape = assert_error(server.call(verb, body), 400, "unknown_argument")
    assert "'user_id'" in shape["detail"]
    assert snapshot(server) == before


def test_native_tools_over_mcp(server: AttackServer) -> None:
    before = snapshot(server)
    failed, content = mcp_call(server, "remember", WRITE)
    assert failed and content["error"] == "unknown_argument", content
    assert snapshot(server) == before


def test_the_semurg_tools_still_take_it(semurg_server: AttackServer) -> None:
    """The profile that declares it keeps it: two end users of one key never meet."""
    note = {"from": "Ann", "to": "Acme", "type": "works_at", "user_id": "u1"}
    semurg_server.ok("relate", note, prefix="/v1/memory/")
    mine = semurg_server.ok("recall", {"subject": "Ann", "user_id": "u1"}, prefix="/v1/memory/")
    theirs = semurg_server.ok("recall", {"subject": "Ann", "user_id": "u2"}, prefix="/v1/memory/")
    assert mine["state"] == "answered" and theirs["state"] == "nothing_stored"
    # Its native routes are native verbs: they refuse it.
    assert_error(semurg_server.call("remember", WRITE), 400, "unknown_argument")
