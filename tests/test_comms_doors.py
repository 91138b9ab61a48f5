"""Messaging through the doors: real server processes, the official MCP client, the Semurg
profile; and membership enforced like tenants, through every read verb of every door."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio

import recuerdo
from recuerdo.comms.mail import MAX_BODY_BYTES
from recuerdo.verbs import VERBS

from .conftest import Server, create_token
from .test_mcp import http_session, stdio_session

MARK = "Zqxivorn"  # what everyone may ask about
SECRET = "Wuvtrexl"  # a word only the members' messages hold


def reads(ids: dict[str, str]) -> dict[str, dict[str, Any]]:
    """One call of every read verb, aimed at the members' conversation where it takes an id."""
    return {
        "recall": {"from": "*"},
        "summary": {},
        "resume_point": {"task": "t"},
        "progress_percent": {"task": "t"},
        "progress_display": {"task": "t"},
        "get_progress": {"task": "t"},
        "list_progress": {},
        "get_rules": {},
        "get": {"id": int(ids["message"])},
        "history": {"id": int(ids["message"])},
        "revision": {"id": int(ids["message"]), "version": 1},
        "timeline": {"id": int(ids["message"])},
        "links": {"id": int(ids["message"])},
        "conflicts": {"id": int(ids["message"])},
        "list_notes": {},
        "overview": {},
        "profile": {"axis": "user"},
        "suggest_key": {"kind": "k", "title": "t"},
        "recent": {},
        "journal": {},
        "search": {"query": MARK},
        "context": {"query": MARK},
        "ask": {"query": f"who is {MARK} Ann?"},
        "audit": {},
        "index_status": {},
        "about": {"subject": f"{MARK} Ann"},
        "export": {},
        "status": {"scope": "user"},
        "code_status": {"repo": "app"},
        "code_at": {"repo": "app", "path": "x"},
        "code_blame": {"repo": "app", "path": "x"},
        "code_history": {"repo": "app", "path": "x"},
        "code_changes_since": {"repo": "app", "rev": "HEAD"},
        "code_diff": {"repo": "app", "from": "HEAD"},
        "code_verify": {},
        "mirror_get": {"key": "k"},
        "pins": {},
        "context_sets": {},
        "addresses": {},
        "inbox": {},
        "thread": {"conversation_id": ids["conversation"]},
        "read_message": {"message_id": ids["message"]},
    }


def converse(post: Any) -> dict[str, str]:
    """alice and bob exchange two messages holding SECRET, about an entity every member of the
    tenant knows; alice searches, so that the audit holds what her search returned."""
    post(
        "alice",
        "remember_knowledge",
        {
            "content": f"{MARK} Ann runs the lab.",
            "facts": {"entities": [{"name": f"{MARK} Ann", "type": "person"}]},
        },
    )
    for name in ("alice", "bob", "carol"):
        post(name, "bind_address", {"address": f"{name}@local"})
    sent = post(
        "alice",
        "send_message",
        {"to": ["bob@local"], "subject": f"{SECRET} plan", "body": f"{MARK} Ann said {SECRET}."},
    )
    post(
        "bob",
        "send_message",
        {
            "to": ["alice@local"],
            "subject": "Re",
            "body": f"{SECRET} noted.",
            "reply_to": sent["id"],
        },
    )
    assert SECRET in json.dumps(post("alice", "search", {"query": MARK}))
    assert SECRET in json.dumps(post("bob", "about", {"subject": f"{MARK} Ann"}))
    assert SECRET in json.dumps(post("bob", "ask", {"query": f"who is {MARK} Ann?"}))
    return {"message": sent["id"], "conversation": sent["conversation_id"]}


def assert_blind(verb: str, reply: Any, ids: dict[str, str]) -> None:
    """What a non-member's answer may hold: nothing of the messages, not even their ids where
    a listing shows ids."""
    text = json.dumps(reply)
    assert SECRET not in text, verb
    if verb == "journal":
        assert all(row["item_type"] != "mail" for row in reply), reply
    if verb == "overview":
        assert "mail" not in reply["items"], reply
    if verb == "audit":
        assert all(int(ids["message"]) not in row["returned"] for row in reply), reply
    if verb in ("get", "read_message", "thread", "history", "revision", "timeline"):
        assert isinstance(reply, dict) and reply.get("ok") is False, (verb, reply)


def test_python_door_non_members_see_nothing(base: Path) -> None:
    with recuerdo.open("club", base_dir=base) as memory:
        views = {name: memory.agent(name) for name in ("alice", "bob", "carol")}

        def post(name: str, verb: str, args: dict[str, Any]) -> Any:
            return VERBS[verb].call(views[name], args)

        ids = converse(post)
        calls = reads(ids)
        assert set(calls) == {v.name for v in VERBS if v.mode == "read"}
        for who in ("carol", "main"):
            viewer = views.get(who, memory)
            for verb, args in calls.items():
                try:
                    reply = VERBS[verb].call(viewer, args)
                except recuerdo.RecuerdoError as error:
                    reply = error.to_dict()
                assert_blind(verb, reply, ids)
        assert SECRET in json.dumps(views["bob"].read_message(ids["message"]))


def test_http_and_mcp_doors_non_members_see_nothing(tmp_path: Path) -> None:
    tokens = {
        name: create_token(tmp_path, "--principal", name, "--tenant", "acme")[1]
        for name in ("alice", "bob", "carol")
    }
    server = Server(tmp_path)
    try:

        def post(name: str, verb: str, args: dict[str, Any]) -> Any:
            status, reply = server.post(f"/v1/{verb}", args, token=tokens[name])
            assert status == 200, (verb, reply)
            return reply

        ids = converse(post)
        calls = reads(ids)
        assert set(calls) == {v.name for v in VERBS if v.mode == "read"}
        for verb, args in calls.items():
            status, reply = server.post(f"/v1/{verb}", args, token=tokens["carol"])
            assert status in (200, 403, 404), (verb, status, reply)
            assert_blind(verb, reply, ids)
        status, reply = server.post("/v1/thread", calls["thread"], token=tokens["carol"])
        assert (status, reply["error"]) == (403, "not_a_member")  # type: ignore[index]
        status, reply = server.post("/v1/get", calls["get"], token=tokens["bob"])
        assert status == 200 and SECRET in json.dumps(reply)

        async def over_mcp() -> list[tuple[str, Any]]:
            seen = []
            headers = {"Authorization": f"Bearer {tokens['carol']}"}
            async with http_session(server, memory="shared", headers=headers) as session:
                for verb, args in calls.items():
                    result = await session.call_tool(verb, args)
                    content = result.structured_content or {}
                    seen.append((verb, content.get("result", content)))
            return seen

        for verb, reply in anyio.run(over_mcp):
            assert_blind(verb, reply, ids)
    finally:
        server.stop()


SEMURG_READS = {
    "memory_recall": {"subject": f"{MARK} Ann"},
    "memory_context": {"query": MARK},
    "memory_export": {},
    "memory_status": {"scope": "user"},
    "comms_inbox": {},
}


def test_semurg_profile_non_members_see_nothing(tmp_path: Path) -> None:
    """Over the Semurg tools (MCP on stdio runs as main, a non-member here) and routes."""
    tokens = {
        name: create_token(tmp_path, "--principal", name, "--tenant", "local")[1]
        for name in ("alice", "bob", "carol")
    }
    server = Server(tmp_path, memory="mcp", profile="semurg")
    try:

        def post(name: str, verb: str, args: dict[str, Any]) -> Any:
            status, reply = server.post(f"/v1/{verb}", args, token=tokens[name])
            assert status == 200, (verb, reply)
            return reply

        ids = converse(post)
        calls = {
            **SEMURG_READS,
            "comms_thread": {"conversation_id": ids["conversation"]},
            "comms_read": {"message_id": ids["message"]},
        }
        paths = {"memory_recall": "recall", "memory_context": "context"}
        for tool, args in calls.items():
            path = paths.get(tool, tool.removeprefix("memory_"))
            status, reply = server.post(f"/v1/memory/{path}", args, token=tokens["carol"])
            assert status in (200, 403), (tool, status, reply)
            assert SECRET not in json.dumps(reply), tool
            status, reply = server.post(f"/v1/memory/{path}", args, token=tokens["bob"])
            assert status == 200, (tool, reply)
    finally:
        server.stop()

    async def as_main() -> list[str]:
        async with stdio_session(tmp_path, memory="mcp", prof="semurg") as session:
            return [
                json.dumps((await session.call_tool(tool, args)).structured_content)
                for tool, args in calls.items()
            ]

    assert all(SECRET not in text for text in anyio.run(as_main))


def test_two_agents_message_over_the_semurg_tools(tmp_path: Path) -> None:
    """Bind, send, read and reply through comms_* over MCP and the /v1/memory routes; a refusal
    over HTTP has its status and code and changes nothing."""
    _, alice = create_token(tmp_path, "--principal", "alice", "--tenant", "t")
    _, bob = create_token(tmp_path, "--principal", "bob", "--tenant", "t")
    server = Server(tmp_path, memory="mcp", profile="semurg")
    try:
        for token, address in ((alice, "alice@local"), (bob, "bob@local")):
            status, bound = server.post(
                "/v1/memory/comms_bind_address", {"address": address}, token=token
            )
            assert status == 200 and bound["bound"] == "new"  # type: ignore[index]
        body = "Dinner at 8?\n\tBring the map."

        async def alice_sends() -> dict[str, Any]:
            headers = {"Authorization": f"Bearer {alice}"}
            async with http_session(server, memory="mcp", headers=headers) as session:
                tools = {t.name: t for t in (await session.list_tools()).tools}
                assert tools["comms_inbox"].annotations.read_only_hint is True
                assert tools["comms_send"].annotations.read_only_hint is False
                result = await session.call_tool("comms_send", {"to": ["bob@local"], "body": body})
                assert result.is_error is False, result.structured_content
                return dict(result.structured_content or {})

        sent = anyio.run(alice_sends)
        assert sent["subject"] == "" and sent["from"] == "alice@local"
        # Shown as Semurg shows every reply: its state and whether meaning is armed.
        assert sent["state"] == "answered" and sent["meaning"] in ("armed", "not_armed", "queued")
        status, inbox = server.post("/v1/memory/comms_inbox", {}, token=bob)
        assert status == 200 and inbox["conversations"][0]["unread"] == 1  # type: ignore[index]
        status, page = server.post(
            "/v1/memory/comms_thread", {"conversation_id": sent["conversation_id"]}, token=bob
        )
        assert page["messages"][0]["preview"] == body  # type: ignore[index]
        status, whole = server.post("/v1/memory/comms_read", {"message_id": sent["id"]}, token=bob)
        assert status == 200 and whole["body"] == body  # type: ignore[index]
        status, reply = server.post(
            "/v1/memory/comms_send",
            {"to": ["alice@local"], "body": "Yes.", "reply_to": sent["id"]},
            token=bob,
        )
        assert reply["conversation_id"] == sent["conversation_id"]  # type: ignore[index]
        before = server.post("/v1/export", {"limit": 1024}, token=alice)[1]["records"][1:]  # type: ignore[index]
        status, refused = server.post(
            "/v1/memory/comms_send", {"to": ["bob@local", "ghost@local"], "body": "x"}, token=alice
        )
        assert status == 404 and refused["error"] == "address_unknown"  # type: ignore[index]
        assert refused["unknown"] == ["ghost@local"]  # type: ignore[index]
        assert server.post("/v1/export", {"limit": 1024}, token=alice)[1]["records"][1:] == before  # type: ignore[index]
        status, inbox = server.post("/v1/memory/comms_inbox", {}, token=alice)
        assert inbox["conversations"][0]["unread"] == 1  # type: ignore[index]
        status, inbox = server.post("/v1/memory/comms_inbox", {}, token=bob)
        assert inbox["conversations"][0]["unread"] == 0  # type: ignore[index]
    finally:
        server.stop()


def test_sixteen_mib_over_http_and_the_server_mail_domains(tmp_path: Path) -> None:
    """A 16 MiB body goes through the HTTP door and back byte for byte; one byte more is
    refused; addresses bind in the domains the server was started with."""
    server = Server(tmp_path, args=("--mail-domain", "Example.com", "--mail-domain", "corp.test"))
    try:
        status, refused = server.post("/v1/bind_address", {"address": "me@local"})
        assert status == 422 and refused["error"] == "domain_not_ours"  # type: ignore[index]
        assert refused["domains"] == ["example.com", "corp.test"]  # type: ignore[index]
        assert server.post("/v1/bind_address", {"address": "me@corp.test"})[0] == 200
        # Long words: the full-text index, not the door, would dominate the time otherwise.
        unit = "Ünïcodéwörterohneende\tsiebzehnneunzehnzwanzig\r\n"
        body = unit * (MAX_BODY_BYTES // len(unit.encode()))
        body += "x" * (MAX_BODY_BYTES - len(body.encode()))

        def send(text: str) -> tuple[int, Any]:
            raw = json.dumps({"to": ["me@corp.test"], "subject": "big", "body": text})
            return server.post("/v1/send_message", raw=raw.encode())

        status, sent = send(body)
        assert status == 200 and sent["bytes"] == MAX_BODY_BYTES  # type: ignore[index]
        status, whole = server.post("/v1/read_message", {"message_id": sent["id"]})  # type: ignore[index]
        assert status == 200 and whole["body"].encode() == body.encode()  # type: ignore[index]
        status, refused = send(body + "y")
        assert status == 413 and refused["error"] == "body_too_large"  # type: ignore[index]
    finally:
        server.stop()
