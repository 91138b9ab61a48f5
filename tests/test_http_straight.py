"""A verb's ``POST`` route goes from the guard straight to the verb (``http.Straight``), past
FastAPI's router and middleware, and answers exactly as FastAPI's route for it does."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from recuerdo.doors.http import ServerConfig, create_app, wrap
from recuerdo.engine import memory_names
from recuerdo.verbs import VERBS

TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[.\d]*(Z|[+-]\d\d:\d\d)?")
LIMIT = 4000  # bytes of a request body, on both servers

# (path, what is sent: a JSON value, raw bytes, or chunks sent without a length, headers)
REQUESTS: list[tuple[str, Any, dict[str, str]]] = [
    ("/v1/remember", {"category": "learning", "content": "Tea at five"}, {}),
    (
        "/v1/remember_many",
        {"entries": [{"category": "rule", "content": f"Rule {n}"} for n in range(4)]},
        {},
    ),
    ("/v1/recall", {"from": "*", "limit": 2}, {}),  # a cut list: X-Recuerdo-More
    ("/v1/search", {"query": "tea"}, {}),
    ("/v1/get", {"id": 1}, {}),
    ("/v1/get", {"id": 999}, {}),
    ("/v1/summary", b"", {}),
    ("/v1/summary", b"{not json", {}),
    ("/v1/summary", b"[1, 2]", {}),
    ("/v1/summary", b"\xff\xfe", {}),
    ("/v1/remember", {"category": "learning", "content": "x", "bogus": 1}, {}),
    ("/v1/remember", {"category": "nonsense", "content": "x"}, {}),
    ("/v1/summary?memory=nowhere", {}, {}),
    ("/v1/summary", {}, {"x-recuerdo-memory": "nowhere"}),
    ("/v1/remember?memory=Bad%20Name", {"category": "learning", "content": "x"}, {}),
    ("/v1/remember", [b'{"category": "learning", "content": "', b"y" * LIMIT, b'"}'], {}),
    ("/v1/nope", {}, {}),
    ("/v1/summary/", {}, {}),  # FastAPI's redirect to the route, followed
]


def _plain(value: Any) -> Any:
    """A reply without what differs between two stores written a moment apart."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, str):
        return TIME.sub("<time>", value)
    return value


def _send(
    client: TestClient, path: str, sent: Any, headers: dict[str, str]
) -> tuple[int, dict[str, str], Any]:
    if isinstance(sent, list):  # chunked: the size is only known as it arrives
        reply = client.post(path, content=iter(sent), headers=headers)
    elif isinstance(sent, bytes):
        reply = client.post(path, content=sent, headers=headers)
    else:
        reply = client.post(path, json=sent, headers=headers)
    kept = {
        name: value
        for name, value in reply.headers.items()
        if name not in ("date", "server", "content-length")
    }
    return reply.status_code, kept, _plain(reply.json())


@pytest.fixture
def twins(tmp_path: Path) -> Iterator[tuple[TestClient, TestClient]]:
    """The server as served, and the same server with the guard in front of FastAPI alone."""
    apps = []
    for name in ("straight", "routed"):
        config = ServerConfig(base_dir=tmp_path / name, default_memory="demo", max_body_bytes=LIMIT)
        apps.append(wrap(create_app(config), config))
    routed = apps[1]
    routed.app = routed.app.app  # the guard, then FastAPI's router: no straight path
    with (
        TestClient(apps[0], base_url="http://127.0.0.1") as straight,
        TestClient(routed, base_url="http://127.0.0.1") as through_fastapi,
    ):
        yield straight, through_fastapi


def test_a_verb_route_answers_as_fastapis_route_for_it(
    twins: tuple[TestClient, TestClient], tmp_path: Path
) -> None:
    straight, routed = twins
    answers = []
    for path, sent, headers in REQUESTS:
        one = _send(straight, path, sent, headers)
        other = _send(routed, path, sent, headers)
        assert one == other, (path, sent)
        answers.append(one)
    statuses = [status for status, _, _ in answers]
    # The table reaches what it means to: successes, a cut list, and each kind of refusal.
    assert statuses.count(200) == 7 and {400, 404, 413} <= set(statuses), statuses
    assert answers[2][1].get("x-recuerdo-more") == "3"
    errors = {body["error"] for status, _, body in answers if status != 200}
    assert {"invalid_json", "invalid_input", "unknown_argument", "payload_too_large"} <= errors
    assert {"memory_not_found", "invalid_memory_name", "unknown_route", "item_not_found"} <= errors
    # Each refusal left both stores as they were: the two writes that were taken, nothing else,
    # and no memory made by a read of one that does not exist.
    kept = {"Tea at five", *(f"Rule {n}" for n in range(4))}
    for client in (straight, routed):
        status, _, listed = _send(client, "/v1/recall", {"from": "*", "limit": 100}, {})
        assert status == 200 and {entry["content"] for entry in listed} == kept
    for name in ("straight", "routed"):
        assert memory_names(tmp_path / name) == ["demo"]


def test_under_a_root_path_a_verb_route_answers_as_fastapis_route(tmp_path: Path) -> None:
    """An application that mounts the server under a prefix (``root_path``): the verb routes
    are matched without it, as FastAPI's router matches them."""
    answers: dict[str, list[tuple[int, str]]] = {}
    for name in ("straight", "routed"):
        config = ServerConfig(base_dir=tmp_path / name, default_memory="demo")
        app = wrap(create_app(config), config)
        if name == "routed":
            app.app = app.app.app
        with TestClient(app, base_url="http://127.0.0.1", root_path="/v1") as client:
            answers[name] = [
                (reply.status_code, reply.json().get("error", "ok"))
                for reply in (
                    client.post(path, json={})
                    for path in ("/v1/v1/summary", "/v1/summary", "/v1", "/v1x/summary")
                )
            ]
    assert answers["straight"] == answers["routed"]
    assert answers["straight"][0] == (200, "ok") and answers["straight"][1][0] == 404


def test_a_reply_cut_short_is_not_answered_twice(tmp_path: Path) -> None:
    """A failure once the reply has started (the client went away while its body was sent)
    sends no second status: ASGI allows one."""
    import anyio

    config = ServerConfig(base_dir=tmp_path, default_memory="demo")
    app = wrap(create_app(config), config)
    sent: list[str] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message["type"])
        if message["type"] == "http.response.body":
            raise OSError("connection reset")

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v1/summary",
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json")],
        "scheme": "http",
    }
    anyio.run(app, scope, receive, send)
    app.app.app.state.pool.close()
    assert sent == ["http.response.start", "http.response.body"]


async def _set_profile(hook: Any) -> None:
    sys.setprofile(hook)


def test_a_verb_call_is_not_routed_by_fastapi(twins: tuple[TestClient, TestClient]) -> None:
    """Which modules' functions run for one call, on the thread that serves requests (verbs
    run on worker threads: the door's own work is all on this one)."""
    straight, routed = twins
    entered: set[str] = set()

    def record(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            entered.add(frame.f_code.co_filename)

    def modules_entered(client: TestClient, path: str, body: dict[str, Any]) -> set[str]:
        entered.clear()
        portal = client.portal  # the thread the application runs on
        assert portal is not None
        portal.call(_set_profile, record)
        try:
            reply = client.post(path, json=body)
        finally:
            portal.call(_set_profile, None)
        assert reply.status_code == 200, reply.text
        return {name.replace("\\", "/") for name in entered}

    def fastapi_routing(files: set[str]) -> set[str]:
        return {f for f in files if f.endswith(("fastapi/routing.py", "starlette/routing.py"))}

    for client in (straight, routed):
        client.post("/v1/remember", json={"category": "learning", "content": "Tea at five"})
    assert fastapi_routing(modules_entered(routed, "/v1/get", {"id": 1}))  # the probe sees it
    assert not fastapi_routing(modules_entered(straight, "/v1/get", {"id": 1}))
    # Pages and the server's own routes still go through FastAPI.
    assert straight.get("/health").json()["ok"] is True
    assert straight.get("/v1/get").json()["error"] == "method_not_allowed"


def test_every_verb_route_takes_the_straight_path(tmp_path: Path) -> None:
    for profile_name in ("native", "semurg"):
        config = ServerConfig(base_dir=tmp_path, default_memory="demo", profile=profile_name)
        app = create_app(config)
        straight = set(wrap(app, config).app.routes)
        posted = {
            path
            for route in app.routes
            if "POST" in (getattr(route, "methods", None) or ())
            and (path := getattr(route, "path", "")).startswith("/v1/")
        }
        assert {f"/v1/{verb.name}" for verb in VERBS} <= straight
        assert straight == posted
        assert any(path.startswith("/v1/memory/") for path in straight) is (
            profile_name == "semurg"
        )
        app.state.pool.close()
