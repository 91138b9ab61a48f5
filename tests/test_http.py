"""The HTTP API on a real server process: every verb, every error status, one error shape."""

from __future__ import annotations

import base64
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from recuerdo.verbs import VERBS

from .conftest import Server, create_token
from .forks import recuerdo_command
from .gitrepo import Repo

NOTE_TEXT = "## Tasks\n\n- one\n- two\n\n## Notes\n\nSome notes."

# One valid call of every verb, in an order where each finds what it needs.
CALLS: list[tuple[str, dict[str, Any]]] = [
    (
        "remember",
        {"category": "learning", "content": "The API is slow on Mondays", "tags": ["api"]},
    ),
    ("remember_many", {"entries": [{"category": "rule", "content": "Ship on Tuesdays"}]}),
    ("recall", {"from": "*", "limit": 5}),
    ("summary", {}),
    ("create_progress", {"task": "import", "steps": ["ingest", "load"]}),
    ("start_step", {"task": "import", "step": "ingest"}),
    ("complete_step", {"task": "import", "step": "ingest", "result": "ok"}),
    ("fail_step", {"task": "import", "step": "load", "error": "bad row"}),
    ("skip_step", {"task": "import", "step": "load"}),
    ("resume_point", {"task": "import"}),
    ("progress_percent", {"task": "import"}),
    ("progress_display", {"task": "import"}),
    ("get_progress", {"task": "import"}),
    ("list_progress", {}),
    ("add_rule", {"name": "cap", "level": "must", "description": "discount <= 0.2"}),
    ("check_rules", {"context": {"discount": 0.5}}),
    ("get_rules", {}),
    ("remove_rule", {"name": "cap"}),
    (
        "save",
        {"title": "Plan", "content": NOTE_TEXT, "key": "plan", "kind": "decision", "session": "s1"},
    ),
    ("get", {"id": 3}),
    ("bind_address", {"address": "ann@local"}),
    ("addresses", {}),
    ("send_message", {"to": ["ann@local"], "subject": "Hi", "body": "A note to self."}),
    ("inbox", {}),
    ("thread", {"conversation_id": "1"}),
    ("read_message", {"message_id": "4"}),  # the item after the note saved above
    ("history", {"id": 3}),
    ("revision", {"id": 3, "version": 1}),
    ("timeline", {"id": 3}),
    ("links", {"id": 3}),
    ("conflicts", {"id": 3}),
    ("list_notes", {"sort": "created"}),
    ("overview", {}),
    ("edit", {"id": 3, "operation": "append", "content": "More."}),
    ("remember_about", {"axis": "user", "observation": "Prefers tea", "category": "taste"}),
    ("profile", {"axis": "user"}),
    ("mute", {"category": "taste"}),
    ("unmute", {"category": "taste"}),
    ("review", {"action": "list"}),
    ("mark_reviewed", {"id": 3}),
    ("capture_passive", {"text": "## Key Learnings\n1. Always run migrations before tests."}),
    ("suggest_key", {"kind": "decision", "title": "Use Postgres"}),
    ("session_start", {"id": "s2", "project": "shop"}),
    ("session_end", {"id": "s2", "summary": "Done."}),
    ("pin", {"id": 3}),
    ("pins", {}),
    ("context_set", {"name": "start", "ids": [3]}),
    ("context_sets", {}),
    ("recent", {"max_bytes": 2000, "context_set_name": "start"}),
    ("unpin", {"id": 3}),
    ("journal", {"limit": 5}),
    ("configure", {"note_limit_bytes": 60000}),
    ("search", {"query": "slow api"}),
    ("context", {"query": "tasks", "budget_tokens": 500, "context_set_name": "start"}),
    ("add_messages", {"conversation": "c1", "messages": [{"speaker": "Ann", "text": "Hi"}]}),
    ("link", {"from_id": 3, "to_id": 1}),
    ("index_status", {}),
    ("audit", {"limit": 5}),
    (
        "remember_knowledge",
        {
            "content": "Ann works at Acme.",
            "facts": {"relations": [{"source": "Ann", "target": "Acme", "type": "works_at"}]},
        },
    ),
    ("relate", {"from": "Ann", "to": "Bob", "type": "knows"}),
    ("about", {"subject": "Ann"}),
    ("ask", {"query": "where does Ann work?"}),
    (
        "ingest",
        {"content_base64": base64.b64encode(b"# Title\n\nSome text.").decode(), "name": "t.md"},
    ),
    ("export", {"limit": 10}),
    ("import", {"records": [{"record": "entity", "key": "k-zed", "name": "Zed"}], "scope": "copy"}),
    ("status", {"scope": "user"}),
    ("forget_knowledge", {"subject": "Bob"}),
    ("delete", {"id": 3}),
    ("restore", {"id": 3}),
    ("forget", {"id": 1}),
    ("forget_conversation", {"conversation_id": "1"}),
    ("code_ingest", {"repo": "app"}),
    ("code_status", {"repo": "app"}),
    ("code_at", {"repo": "app", "path": "README.md"}),
    ("code_blame", {"repo": "app", "path": "README.md"}),
    ("code_history", {"repo": "app", "path": "README.md"}),
    ("code_changes_since", {"repo": "app", "rev": "HEAD~1"}),
    ("code_diff", {"repo": "app", "from": "HEAD~1", "patch": "README.md"}),
    ("code_verify", {"repo": "app"}),
    ("mirror_push", {"key": "odd/auth/tasks", "content": "- [ ] one", "locator": "odd/auth.md"}),
    ("mirror_get", {"key": "odd/auth/tasks"}),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("http")
    repo = Repo(folder / "app")
    repo.commit("one", {"README.md": "one\n"})
    repo.commit("two", {"README.md": "two\n"})
    running = Server(folder, args=("--code-repo", f"app={repo.path}", "--code-interval", "0"))
    yield running
    running.stop()


def test_every_verb_is_callable_over_http(server: Server) -> None:
    assert {name for name, _ in CALLS} == set(VERBS.names())
    for name, body in CALLS:
        status, reply = server.post(f"/v1/{name}", body)
        assert status == 200, (name, reply)
    status, reply = server.post("/v1/get", {"id": 3})
    assert status == 200 and reply["content"].startswith("## Tasks")  # type: ignore[index]


def test_fractions_keep_their_digits_over_http(server: Server) -> None:
    """A JSON fraction is read as an exact decimal: a typed attribute keeps every digit, and a
    rule compares it as the number it is."""
    attributes = b'{"revenue": 12345678901234567.89, "margin": 0.25}'
    raw = b'{"scope": "dec", "facts": {"entities": [{"name": "Acme", "attributes": %s}]}}'
    status, _ = server.post("/v1/remember_knowledge", raw=raw % attributes)
    assert status == 200
    status, about = server.post("/v1/about", {"subject": "Acme", "scope": "dec"})
    values = about["items"][0]["attributes"]  # type: ignore[index]
    assert values["revenue"] == {"type": "decimal", "value": "12345678901234567.89"}
    assert values["margin"] == {"type": "decimal", "value": "0.25"}
    rule = {"name": "dec-cap", "level": "must", "description": "discount <= 0.2"}
    assert server.post("/v1/add_rule", rule)[0] == 200
    try:
        status, found = server.post("/v1/check_rules", raw=b'{"context": {"discount": 0.25}}')
        assert status == 200 and [v["rule"] for v in found] == ["dec-cap"]  # type: ignore[union-attr]
    finally:
        server.post("/v1/remove_rule", {"name": "dec-cap"})


def test_a_facts_fractions_keep_their_digits_over_http(server: Server) -> None:
    """A fact's attributes are untyped: a fraction comes back as the JSON number it was sent
    as, every digit kept (it came back as a float, 1.8 and 1.2345678901234567e+19; written as
    text, it would have been a string)."""
    import urllib.request

    attributes = b'{"weight": 1.80, "big": 12345678901234567890.123, "tiny": [0.1]}'
    raw = b'{"from": "Ann", "to": "Acme", "type": "works_at", "scope": "decf", "attributes": %s}'
    assert server.post("/v1/relate", raw=raw % attributes)[0] == 200
    request = urllib.request.Request(
        f"{server.url}/v1/about",
        data=b'{"subject": "Ann", "scope": "decf", "hops": 1}',
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        body = response.read()
    assert b'"attributes":{"big":12345678901234567890.123,"tiny":[0.1],"weight":1.80}' in body


def stored(server: Server, token: str | None = None) -> list[Any]:
    """Everything the memory holds, as its export and its entries show it (timestamps of the
    export itself left out)."""
    status, page = server.post("/v1/export", {"limit": 1024}, token=token)
    assert status == 200 and page["next"] is None  # type: ignore[index]
    records = [r for r in page["records"] if r["record"] != "export"]  # type: ignore[index]
    status, entries = server.post("/v1/recall", {"from": "*", "limit": 100_000}, token=token)
    assert status == 200
    return [records, entries]


@pytest.mark.parametrize(
    ("path", "body", "status", "code"),
    [
        ("/v1/remember", {"category": "nope", "content": "x"}, 400, "invalid_category"),
        ("/v1/remember", {"content": 5}, 400, "invalid_input"),
        ("/v1/get", {"id": 999_999}, 404, "item_not_found"),
        ("/v1/remember_knowledge", {"facts": {"relations": [{"source": "A"}]}}, 422, "facts_shape"),
        (
            "/v1/ingest",
            {"content_base64": base64.b64encode(bytes(range(256))).decode()},
            415,
            "unsupported_media_type",
        ),
        (
            "/v1/edit",
            {"id": 999_999, "operation": "rewrite", "content": "x"},
            400,
            "invalid_operation",
        ),
    ],
)
def test_error_statuses_and_shape(
    server: Server, path: str, body: dict[str, Any], status: int, code: str
) -> None:
    before = stored(server)
    got, reply = server.post(path, body)
    assert got == status
    assert isinstance(reply, dict) and reply["ok"] is False and reply["error"] == code
    assert isinstance(reply["detail"], str) and reply["detail"]
    assert stored(server) == before


def test_conflict_is_409_with_both_versions(server: Server) -> None:
    server.post("/v1/save", {"title": "K", "content": "v1", "key": "conflicted"})
    server.post("/v1/save", {"title": "K", "content": "v2", "key": "conflicted"})
    status, reply = server.post(
        "/v1/save", {"title": "K", "content": "v3", "key": "conflicted", "expected_version": 1}
    )
    assert status == 409 and reply["error"] == "conflict"  # type: ignore[index]
    assert reply["conflict_revision_id"] != reply["current_revision_id"]  # type: ignore[index]


def test_a_write_reply_says_what_the_guard_replaced(server: Server) -> None:
    """A note naming a private key's BEGIN marker in prose loses the rest of its text: the
    reply says so over HTTP as in process."""
    content = "Keys start with -----BEGIN RSA PRIVATE KEY-----\n\n## Later\nMore."
    status, reply = server.post("/v1/save", {"title": "Keys", "content": content})
    assert status == 200 and reply["redacted"] == {"content": ["PRIVATE_KEY"]}  # type: ignore[index]
    status, reply = server.post("/v1/save", {"title": "Plain", "content": "Nothing to hide."})
    assert status == 200 and reply["redacted"] == {}  # type: ignore[index]


def test_oversized_request_is_413(server: Server) -> None:
    import http.client
    import json

    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    connection.putrequest("POST", "/v1/remember")
    connection.putheader("Content-Type", "application/json")
    connection.putheader("Content-Length", str(9_000_000))
    connection.endheaders()  # the body never comes: the size alone is refused
    response = connection.getresponse()
    reply = json.loads(response.read())
    connection.close()
    assert response.status == 413 and reply["error"] == "payload_too_large"


def test_unknown_memory_name_is_refused(server: Server) -> None:
    status, reply = server.post("/v1/recall", {}, memory="../etc")
    assert status == 400 and reply["error"] == "invalid_memory_name"  # type: ignore[index]


def test_tokens_401_and_403(tmp_path: Path) -> None:
    _, writer = create_token(tmp_path, "--principal", "bot", "--tenant", "acme")
    _, reader = create_token(tmp_path, "--principal", "viewer", "--tenant", "acme", "--read-only")
    _, narrow = create_token(
        tmp_path, "--principal", "shop-bot", "--tenant", "acme", "--caps", "memory=shop-*"
    )
    server = Server(tmp_path)
    try:
        body = {"category": "learning", "content": "x"}
        assert server.post("/v1/remember", body)[0] == 401
        status, reply = server.post("/v1/remember", body, token="rcd_wrong")
        assert status == 401 and reply["error"] == "unauthorized"  # type: ignore[index]
        assert server.post("/v1/remember", body, token=writer)[0] == 200
        status, reply = server.post("/v1/remember", body, token=reader)
        assert status == 403 and reply["error"] == "capability_not_granted"  # type: ignore[index]
        assert server.post("/v1/recall", {}, token=reader)[0] == 200
        assert server.post("/v1/recall", {}, token=narrow)[0] == 403
        # Within its reach, but not written yet: its caps do not make it exist, and reads
        # never create it.
        status, reply = server.post("/v1/recall", {}, token=narrow, memory="shop-eu")
        assert status == 404 and reply["error"] == "memory_not_found"  # type: ignore[index]
        assert server.post("/v1/remember", body, token=narrow, memory="shop-eu")[0] == 200
        assert server.post("/v1/recall", {}, token=narrow, memory="shop-eu")[0] == 200
        # only the writer's call stored anything
        [_, entries] = stored(server, token=writer)
        assert [e["content"] for e in entries] == ["x"]
    finally:
        server.stop()


def test_serving_beyond_loopback_without_tokens_is_refused(tmp_path: Path) -> None:
    done = subprocess.run(
        recuerdo_command(
            "--state-dir", str(tmp_path), "serve", "--host", "0.0.0.0", "--port", "7799"
        ),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and "refusing to serve" in done.stderr


def test_the_cli_runs_verbs_on_a_server(server: Server, tmp_path: Path) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            recuerdo_command("--server", server.url, "--memory", "remote", "--json", *args),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            cwd=tmp_path,
        )

    assert cli("remember", "decision", "Decided remotely").returncode == 0
    done = cli("recall", "--from", "*")
    assert done.returncode == 0 and "Decided remotely" in done.stdout
    refused = cli("remember", "nope", "x")
    assert refused.returncode == 1 and '"invalid_category"' in refused.stdout
    assert list(tmp_path.iterdir()) == []  # nothing was written on this side


def test_graceful_shutdown_keeps_acknowledged_writes(tmp_path: Path) -> None:
    server = Server(tmp_path, memory="durable")
    ids = [
        server.post("/v1/remember", {"category": "context", "content": f"n{i}"})[1]
        for i in range(50)
    ]
    err = server.stop()
    # uvicorn shuts down gracefully, then re-raises SIGTERM so the exit status tells why
    assert server.process.returncode in (0, -15) and "Traceback" not in err, err
    import recuerdo

    with recuerdo.open("durable", base_dir=tmp_path) as mem:
        assert {e["id"] for e in mem.recall(limit=100)} == set(ids)  # type: ignore[arg-type]


def test_mcp_answers_in_the_error_shape_when_its_transport_cannot_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``/mcp`` goes from the guard straight to the MCP transport (not through FastAPI's
    router and handlers): a transport that fails to start still answers in the one error
    shape, request after request, and the rest of the server goes on answering."""
    from starlette.testclient import TestClient

    from recuerdo.doors import mcp_http
    from recuerdo.doors.http import ServerConfig, create_app, wrap

    def broken(*args: Any) -> Any:
        raise ImportError("no MCP SDK here")

    monkeypatch.setattr(mcp_http, "mcp_manager", broken)
    config = ServerConfig(base_dir=tmp_path, default_memory="demo")
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"accept": "application/json, text/event-stream"}
    with TestClient(wrap(create_app(config), config), base_url="http://127.0.0.1") as client:
        for _ in range(2):
            reply = client.post("/mcp", json=body, headers=headers)
            assert reply.status_code == 500
            shape = reply.json()
            assert shape["ok"] is False and "could not start" in shape["detail"], shape
        assert client.post("/v1/summary", json={}).json()["text"].startswith("Agent Memory")
        refused = client.post("/mcp", content=b"{not json", headers=headers)
        assert refused.status_code == 400 and refused.json()["error"] == "invalid_json"


def test_the_cli_sends_a_fraction_to_a_server_as_a_number(server: Server, tmp_path: Path) -> None:
    """The CLI reads a JSON fraction as an exact decimal; through --server it went as a string
    ("0.25"): an entity attribute typed string, a fact's attribute a string."""

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            recuerdo_command("--server", server.url, "--memory", "fractions", "--json", *args),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            cwd=tmp_path,
        )

    facts = '{"entities": [{"name": "Acme", "attributes": {"margin": 0.25, "big": 1e400}}]}'
    assert cli("remember_knowledge", "--facts", facts).returncode == 0
    share = '{"share": 0.5}'
    assert cli("relate", "Ann", "Acme", "works_at", "--attributes", share).returncode == 0
    status, about = server.post("/v1/about", {"subject": "Acme"}, memory="fractions")
    assert status == 200
    entity, fact = about["items"][:2]  # type: ignore[index]
    assert entity["attributes"] == {
        "margin": {"type": "decimal", "value": "0.25"},
        "big": {"type": "decimal", "value": "1E+400"},
    }
    assert fact["attributes"] == {"share": 0.5}
