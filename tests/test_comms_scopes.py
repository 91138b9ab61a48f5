"""Messages kept to a scope: the messaging reads take a ``scope`` (a filter, and what lets a token
limited to scopes read what it may send), and an inbox pages through conversations that share
an activity (imported with no message yet). Each test fails on the code before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import recuerdo

from .conftest import Server, create_token

Pair = tuple[recuerdo.Memory, recuerdo.Memory]


@pytest.fixture
def pair(memory: recuerdo.Memory) -> Pair:
    """Alice and Bob, each with an address: one conversation in project:a, one in project:b."""
    alice, bob = memory.agent("alice"), memory.agent("bob")
    alice.bind_address("alice@local")
    bob.bind_address("bob@local")
    alice.send_message(["bob@local"], "about a", "kept in a", scope="project:a")
    alice.send_message(["bob@local"], "about b", "kept in b", scope="project:b")
    return alice, bob


def test_an_inbox_keeps_to_the_scope_it_names(pair: Pair) -> None:
    _, bob = pair
    assert [c["subject"] for c in bob.inbox()["conversations"]] == ["about b", "about a"]
    kept = bob.inbox(scope="project:a")
    assert [(c["subject"], c["scope"]) for c in kept["conversations"]] == [("about a", "project:a")]
    assert bob.inbox(scope="project:c")["state"] == "nothing_stored"


def test_a_thread_of_another_scope_is_not_found_and_no_cursor_moves(pair: Pair) -> None:
    _, bob = pair
    other = next(c for c in bob.inbox()["conversations"] if c["scope"] == "project:b")
    with pytest.raises(recuerdo.ConversationNotFound, match="in scope 'project:a'") as refused:
        bob.thread(other["conversation_id"], scope="project:a")
    assert refused.value.code == "conversation_not_found"
    assert bob.inbox(scope="project:b")["conversations"][0]["unread"] == 1
    page = bob.thread(other["conversation_id"], scope="project:b")
    assert [m["subject"] for m in page["messages"]] == ["about b"] and page["unread"] == 0


def test_a_message_of_another_scope_is_not_found(pair: Pair) -> None:
    _, bob = pair
    newest = bob.inbox(scope="project:b")["conversations"][0]["last_message_id"]
    with pytest.raises(recuerdo.MessageNotFound, match="in scope 'project:a'"):
        bob.read_message(newest, scope="project:a")
    assert bob.read_message(newest, scope="project:b")["body"] == "kept in b"


def test_forgetting_a_conversation_of_another_scope_erases_nothing(pair: Pair) -> None:
    alice, bob = pair
    other = bob.inbox(scope="project:b")["conversations"][0]["conversation_id"]
    with pytest.raises(recuerdo.ConversationNotFound):
        alice.forget_conversation(other, scope="project:a")
    assert [m["preview"] for m in bob.thread(other)["messages"]] == ["kept in b"]
    assert alice.forget_conversation(other, scope="project:b")["messages_removed"] == 1
    assert bob.inbox(scope="project:b")["state"] == "nothing_stored"


def test_a_bad_scope_is_refused_by_name(pair: Pair) -> None:
    _, bob = pair
    with pytest.raises(recuerdo.InvalidInput, match="scope"):
        bob.inbox(scope="")


def _empty_conversation(key: str, members: list[str]) -> dict[str, Any]:
    at = "2026-01-01T00:00:00Z"
    return {
        "record": "conversation",
        "key": key,
        "started_by": members[0],
        "started_at": at,
        "members": [{"address": address, "joined_at": at} for address in members],
    }


def test_an_inbox_pages_through_conversations_with_no_message_yet(memory: recuerdo.Memory) -> None:
    """Imported conversations with no message share an activity of 0: a page ending among
    them skipped the rest."""
    alice, bob = memory.agent("alice"), memory.agent("bob")
    alice.bind_address("alice@local")
    bob.bind_address("bob@local")
    alice.send_message(["bob@local"], "live", "a message")
    records = [_empty_conversation(f"k{n:02d}", ["alice@local", "bob@local"]) for n in range(5)]
    assert memory.import_records(records, scope="user")["imported"] == 5
    everything = bob.inbox()["conversations"]
    assert len(everything) == 6
    seen, after = [], None
    for _ in range(10):  # a broken cursor must not loop forever
        page = bob.inbox(after=after, limit=2)
        seen += [c["conversation_id"] for c in page["conversations"]]
        after = page["next"]
        if after is None:
            break
    assert seen == [c["conversation_id"] for c in everything]
    assert len(set(seen)) == 6


def test_an_earlier_pages_cursor_still_reads(pair: Pair) -> None:
    """Pages gave out the activity alone before; such a cursor reads below it."""
    _, bob = pair
    first, second = bob.inbox()["conversations"]
    older = bob.inbox(after=first["last_message_id"])["conversations"]
    assert [c["conversation_id"] for c in older] == [second["conversation_id"]]
    for bad in ("1.x", "1.2.3", ".", "-1.2"):
        with pytest.raises(recuerdo.PageCursorInvalid):
            bob.inbox(after=bad)


def test_a_token_limited_to_a_scope_messages_within_it(tmp_path: Path) -> None:
    """It could send (send_message takes a scope) but neither bind an address, list its own,
    nor read a reply: every read was refused for want of a scope."""
    tokens = {
        name: create_token(tmp_path, "--principal", name, "--tenant", "t", *extra)[1]
        for name, extra in (("lim", ("--scopes", "project:a")), ("bob", ()))
    }
    server = Server(tmp_path)
    try:

        def post(name: str, verb: str, args: dict[str, Any]) -> tuple[int, Any]:
            status, reply = server.post(f"/v1/{verb}", args, token=tokens[name])
            return status, reply

        assert post("lim", "bind_address", {"address": "lim@local"})[0] == 200
        assert post("lim", "addresses", {})[1]["addresses"][0]["address"] == "lim@local"
        assert post("bob", "bind_address", {"address": "bob@local"})[0] == 200
        status, sent = post(
            "lim",
            "send_message",
            {"to": ["bob@local"], "subject": "s", "body": "b", "scope": "project:a"},
        )
        assert status == 200, sent
        status, _ = post(
            "bob",
            "send_message",
            {"to": ["lim@local"], "subject": "s", "body": "b", "scope": "user"},
        )
        assert status == 200
        status, inbox = post("lim", "inbox", {"scope": "project:a"})
        assert status == 200 and [c["scope"] for c in inbox["conversations"]] == ["project:a"]
        for scope in (None, "user"):
            status, refused = post("lim", "inbox", {} if scope is None else {"scope": scope})
            assert (status, refused["error"]) == (403, "capability_not_granted"), scope
        conversation = inbox["conversations"][0]["conversation_id"]
        status, page = post(
            "lim", "thread", {"conversation_id": conversation, "scope": "project:a"}
        )
        assert status == 200 and page["messages"][0]["id"] == sent["id"]
        status, whole = post(
            "lim", "read_message", {"message_id": sent["id"], "scope": "project:a"}
        )
        assert status == 200 and whole["body"] == "b"
        status, refused = post("lim", "thread", {"conversation_id": conversation})
        assert status == 403 and refused["error"] == "capability_not_granted"
    finally:
        server.stop()
