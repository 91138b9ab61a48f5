"""Two tenants with the same scope names: nothing of one reaches the other through any door."""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from recuerdo.verbs import VERBS

from .conftest import Server, create_token
from .forks import recuerdo_command
from .gitrepo import Repo
from .test_mcp import http_session

MARK = "Zqxivorn"  # the name both tenants use (B asks for it)
SECRET = "Wuvtrexl"  # a word only tenant A ever writes; B's answers must never hold it


def write_everything(server: Server, token: str) -> dict[str, int]:
    def post(verb: str, body: dict[str, Any]) -> Any:
        status, reply = server.post(f"/v1/{verb}", body, token=token)
        assert status == 200, (verb, reply)
        return reply

    ids = {
        "entry": post(
            "remember",
            {
                "category": "learning",
                "content": f"{MARK} {SECRET} entry",
                "tags": ["t"],
                "scope": "shared",
            },
        )
    }
    ids["note"] = post(
        "save",
        {
            "title": f"{MARK} {SECRET} note",
            "content": f"{MARK} {SECRET} body",
            "key": "k",
            "scope": "shared",
            "session": "s1",
        },
    )["id"]
    post(
        "remember_about", {"axis": "user", "observation": f"{MARK} {SECRET} likes", "category": "c"}
    )
    post("mirror_push", {"key": "odd/x/tasks", "content": f"- [ ] {MARK} {SECRET} task"})
    post(
        "add_messages",
        {
            "conversation": "c1",
            "scope": "shared",
            "messages": [{"speaker": "Ann", "text": f"{MARK} {SECRET} said hi"}],
        },
    )
    post(
        "remember_knowledge",
        {
            "content": f"{MARK} Ann works at Acme with {SECRET}.",
            "scope": "shared",
            "facts": {
                "relations": [{"source": f"{MARK} Ann", "target": "Acme", "type": "works_at"}]
            },
        },
    )
    ids["doc"] = post(
        "ingest",
        {
            "content_base64": base64.b64encode(f"{MARK} {SECRET} handbook text".encode()).decode(),
            "name": f"{MARK}.md",
            "scope": "shared",
        },
    )["doc_id"]
    post("create_progress", {"task": f"{MARK}-task", "steps": [f"{SECRET}-step"]})
    post("add_rule", {"name": f"{MARK}-rule", "level": "must", "description": f"x <= 1 {SECRET}"})
    post("session_start", {"id": "s1", "project": "shared"})
    post("bind_address", {"address": "alice@local"})
    sent = post(
        "send_message",
        {"to": ["alice@local"], "subject": f"{MARK} {SECRET}", "body": f"{MARK} {SECRET} mail"},
    )
    ids["mail"] = int(sent["id"])
    post("code_ingest", {"repo": "app"})
    post("pin", {"id": ids["note"]})
    post("context_set", {"name": MARK, "ids": [ids["note"], ids["entry"]]})
    return ids


READ_ARGS: dict[str, dict[str, Any]] = {
    "recall": {"from": "*"},
    "summary": {},
    "resume_point": {"task": f"{MARK}-task"},
    "progress_percent": {"task": f"{MARK}-task"},
    "progress_display": {"task": f"{MARK}-task"},
    "get_progress": {"task": f"{MARK}-task"},
    "list_progress": {},
    "get_rules": {},
    "get": {"id": 0},
    "history": {"id": 0},
    "revision": {"id": 0, "version": 1},
    "timeline": {"id": 0},
    "links": {"id": 0},
    "conflicts": {"id": 0},
    "list_notes": {},
    "overview": {},
    "profile": {"axis": "user"},
    "suggest_key": {"kind": "k", "title": "t"},
    "recent": {"context_set_name": MARK},
    "pins": {},
    "context_sets": {},
    "journal": {},
    "search": {"query": MARK},
    "context": {"query": MARK},
    "audit": {},
    "index_status": {},
    "about": {"subject": f"{MARK} Ann", "scope": "shared"},
    "ask": {"query": f"who is {MARK} Ann?", "scope": "shared"},
    "export": {"scope": "shared"},
    "status": {"scope": "shared"},
    "addresses": {},
    "inbox": {},
    "thread": {"conversation_id": "1"},
    "read_message": {"message_id": "0"},
    "code_status": {"repo": "app"},
    "code_at": {"repo": "app", "path": f"{MARK}.txt"},
    "code_blame": {"repo": "app", "path": f"{MARK}.txt"},
    "code_history": {"repo": "app", "path": f"{MARK}.txt"},
    "code_changes_since": {"repo": "app", "rev": "HEAD"},
    "code_diff": {"repo": "app", "from": "HEAD"},
    "code_verify": {},
    "mirror_get": {"key": "odd/x/tasks"},
}


def aimed(args: dict[str, Any], ids: dict[str, int]) -> dict[str, Any]:
    """The arguments, with item ids pointed at what the other tenant wrote."""
    if "id" in args:
        args = {**args, "id": ids["note"]}
    if "message_id" in args:
        args = {**args, "message_id": str(ids["mail"])}
    return args


def test_every_read_verb_is_blind_to_the_other_tenant(tmp_path: Path) -> None:
    _, alice = create_token(tmp_path, "--principal", "alice-bot", "--tenant", "alice")
    _, bob = create_token(tmp_path, "--principal", "bob-bot", "--tenant", "bob")
    repo = Repo(tmp_path / "app")
    repo.commit(SECRET, {f"{MARK}.txt": f"{MARK} {SECRET} code\n"})
    server = Server(tmp_path, args=("--code-repo", f"app={repo.path}", "--code-interval", "0"))
    try:
        ids = write_everything(server, alice)
        read_verbs = {v.name for v in VERBS if v.mode == "read"}
        assert read_verbs == set(READ_ARGS), read_verbs ^ set(READ_ARGS)
        for verb, args in READ_ARGS.items():
            args = aimed(args, ids)
            status, reply = server.post(f"/v1/{verb}", args, token=bob)
            assert SECRET not in json.dumps(reply), verb
            assert status in (200, 404), (verb, status, reply)
        for item in ids.values():
            assert server.post("/v1/get", {"id": item}, token=bob)[0] == 404
            assert server.post("/v1/get", {"id": item}, token=alice)[0] == 200
        assert SECRET in json.dumps(server.post("/v1/search", {"query": MARK}, token=alice)[1])
        # check_rules keeps its violations (a write): the other tenant's rules never apply.
        assert server.post("/v1/check_rules", {"context": {"x": 5}}, token=bob) == (200, [])
        [broken] = server.post("/v1/check_rules", {"context": {"x": 5}}, token=alice)[1]
        assert broken["rule"] == f"{MARK}-rule"

        async def over_mcp() -> list[str]:
            seen = []
            async with http_session(
                server, memory="shared", headers={"Authorization": f"Bearer {bob}"}
            ) as session:
                for verb, args in READ_ARGS.items():
                    result = await session.call_tool(verb, aimed(args, ids))
                    seen.append(json.dumps(result.structured_content))
            return seen

        assert all(SECRET not in text for text in anyio.run(over_mcp))
    finally:
        server.stop()


def test_revoked_tokens_stop_working_at_once(tmp_path: Path) -> None:
    token_id, secret = create_token(tmp_path, "--principal", "temp", "--tenant", "t")
    server = Server(tmp_path)
    try:
        assert server.post("/v1/recall", {}, token=secret)[0] == 200
        subprocess.run(
            recuerdo_command("--state-dir", str(tmp_path), "token", "revoke", token_id),
            check=True,
            capture_output=True,
            timeout=60,
        )
        status, reply = server.post("/v1/recall", {}, token=secret)
        assert status == 401 and reply["error"] == "unauthorized"  # type: ignore[index]
    finally:
        server.stop()


def test_a_first_token_works_at_once_on_a_server_that_had_none(tmp_path: Path) -> None:
    """The README's order: a server in single-user mode answers a request (and so has looked
    for tokens and found none), then the owner creates a token and uses it. The server used to
    trust its "no token file" for a second, and refused the new token as unauthorized."""
    server = Server(tmp_path)
    try:
        assert server.post("/v1/recall", {})[0] == 200
        _, secret = create_token(tmp_path, "--principal", "bot", "--tenant", "t")
        status, reply = server.post("/v1/recall", {}, token=secret)
        assert status == 200, reply
    finally:
        server.stop()


def test_tokens_are_stored_as_hashes_and_listed_without_secrets(tmp_path: Path) -> None:
    token_id, secret = create_token(
        tmp_path, "--principal", "p", "--tenant", "t", "--scopes", "project:a"
    )
    raw = b"".join(p.read_bytes() for p in (tmp_path / ".recuerdo").glob("tokens.db*"))
    assert secret.encode() not in raw
    listed = subprocess.run(
        recuerdo_command("--state-dir", str(tmp_path), "--json", "token", "list"),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    rows = json.loads(listed)
    assert rows[0]["id"] == token_id and secret not in listed
    assert rows[0]["scopes"] == ["project:a"]


@pytest.mark.parametrize(("scope", "status"), [("project:a", 200), ("project:b", 403), (None, 403)])
def test_scope_limited_tokens(tmp_path: Path, scope: str | None, status: int) -> None:
    _, secret = create_token(tmp_path, "--principal", "p", "--tenant", "t", "--scopes", "project:a")
    server = Server(tmp_path)
    try:
        body: dict[str, Any] = {"title": "T", "content": "c"}
        if scope:
            body["scope"] = scope
        assert server.post("/v1/save", body, token=secret)[0] == status
    finally:
        server.stop()


def test_a_scope_limited_token_reads_a_list_of_scopes_only_if_it_holds_each(
    tmp_path: Path,
) -> None:
    """scope as a list (context over a project and the user) needs every scope in the token."""
    _, secret = create_token(tmp_path, "--principal", "p", "--tenant", "t", "--scopes", "project:a")
    server = Server(tmp_path)
    try:
        for scope, status in (
            (["project:a"], 200),
            (["project:a", "user"], 403),
            (["user"], 403),
            ([], 403),
        ):
            reply = server.post("/v1/context", {"query": "q", "scope": scope}, token=secret)
            assert reply[0] == status, (scope, reply)
    finally:
        server.stop()
