"""Messaging in process: addresses, messages, inboxes, threads, cursors, limits and refusals."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import recuerdo
from recuerdo.comms.mail import MAX_BODY_BYTES

from .conftest import db_dump
from .forks import python_command
from .meanwhile import WritesMeanwhile


@pytest.fixture
def trio(memory: recuerdo.Memory) -> tuple[recuerdo.Memory, recuerdo.Memory, recuerdo.Memory]:
    """Three agents of one memory with an address each."""
    views = tuple(memory.agent(name) for name in ("alice", "bob", "carol"))
    for view in views:
        view.bind_address(f"{view.principal}@local")
    return views  # type: ignore[return-value]


def test_two_agents_bind_send_reply_and_read(
    trio: tuple[recuerdo.Memory, recuerdo.Memory, recuerdo.Memory],
) -> None:
    """A message reaches its recipient's inbox; a reply joins the same conversation; each side
    reads the other's words exactly as sent."""
    alice, bob, _ = trio
    sent = alice.send_message(["bob@local"], "Launch", "Is the launch on Monday?\n  Thanks.")
    assert sent["new_conversation"] is True and sent["from"] == "alice@local"
    assert sent["joined"] == ["alice@local", "bob@local"] and sent["members"] == 2
    [entry] = bob.inbox()["conversations"]
    assert entry["conversation_id"] == sent["conversation_id"]
    assert (entry["unread"], entry["messages"], entry["members"]) == (1, 1, 2)
    assert entry["from"] == "alice@local" and entry["subject"] == "Launch"
    reply = bob.send_message(["alice@local"], "Re: Launch", "Yes, Monday.", reply_to=sent["id"])
    assert (
        reply["conversation_id"] == sent["conversation_id"] and reply["new_conversation"] is False
    )
    assert reply["reply_to"] == sent["id"] and reply["joined"] == []
    page = alice.thread(sent["conversation_id"])
    assert [m["id"] for m in page["messages"]] == [sent["id"], reply["id"]]  # oldest first
    assert [m["unread"] for m in page["messages"]] == [False, True]  # her own is never unread
    assert alice.read_message(reply["id"])["body"] == "Yes, Monday."
    assert bob.read_message(sent["id"])["body"] == "Is the launch on Monday?\n  Thanks."
    assert alice.inbox()["conversations"][0]["unread"] == 0


def test_binding_is_idempotent_and_an_address_has_one_owner(
    trio: tuple[recuerdo.Memory, recuerdo.Memory, recuerdo.Memory],
) -> None:
    alice, bob, _ = trio
    again = alice.bind_address("Alice@LOCAL")
    assert again["bound"] == "already" and again["address"] == "alice@local"
    with pytest.raises(recuerdo.AddressTaken):
        bob.bind_address("ALICE@local")  # another spelling is the same address
    assert [a["address"] for a in alice.addresses()["addresses"]] == ["alice@local"]
    assert alice.addresses()["domains"] == ["local"]


def test_a_reply_brings_new_recipients_into_the_conversation(
    trio: tuple[recuerdo.Memory, recuerdo.Memory, recuerdo.Memory],
) -> None:
    alice, bob, carol = trio
    first = alice.send_message(["bob@local"], "Plan", "Draft plan attached.")
    with pytest.raises(recuerdo.NotAMember):
        carol.thread(first["conversation_id"])
    reply = bob.send_message(["alice@local", "carol@local"], "", "Adding Carol.", first["id"])
    assert reply["joined"] == ["carol@local"] and reply["members"] == 3
    assert [m["id"] for m in carol.thread(first["conversation_id"])["messages"]] == [
        first["id"],
        reply["id"],
    ]


def test_a_new_message_starts_a_new_conversation_and_sends_from_the_first_address(
    trio: tuple[recuerdo.Memory, recuerdo.Memory, recuerdo.Memory],
) -> None:
    alice, bob, _ = trio
    alice.bind_address("alice.two@local")
    one = alice.send_message(["bob@local"], "A", "first")
    two = alice.send_message(["bob@local"], "B", "second", from_="alice.two@local")
    assert one["conversation_id"] != two["conversation_id"]
    assert (one["from"], two["from"]) == ("alice@local", "alice.two@local")
    assert [c["conversation_id"] for c in bob.inbox()["conversations"]] == [
        two["conversation_id"],
        one["conversation_id"],
    ]  # the most recently active first


def test_unread_counts_move_only_for_the_reader(
    trio: tuple[recuerdo.Memory, recuerdo.Memory, recuerdo.Memory],
) -> None:
    alice, bob, carol = trio
    first = alice.send_message(["bob@local", "carol@local"], "Team", "one")
    for text in ("two", "three"):
        alice.send_message(["bob@local", "carol@local"], "Team", text, reply_to=first["id"])
    conversation = first["conversation_id"]

    def unread(view: recuerdo.Memory) -> int:
        return int(view.inbox()["conversations"][0]["unread"])

    assert (unread(alice), unread(bob), unread(carol)) == (0, 3, 3)
    page = bob.thread(conversation, limit=2)
    assert page["count"] == 2 and page["unread"] == 1 and page["next"] == page["messages"][1]["id"]
    assert (unread(alice), unread(bob), unread(carol)) == (0, 1, 3)
    bob.thread(conversation, limit=2)  # reading the same page again moves nothing
    assert unread(bob) == 1
    rest = bob.thread(conversation, after=page["next"])
    assert [m["preview"] for m in rest["messages"]] == ["three"] and rest["next"] is None
    assert (unread(alice), unread(bob), unread(carol)) == (0, 0, 3)
    carol.read_message(first["id"])  # reading one message whole leaves the cursor alone
    assert unread(carol) == 3
    bob.send_message(["alice@local"], "", "four", reply_to=first["id"])
    assert (unread(alice), unread(bob), unread(carol)) == (1, 0, 4)


def test_inbox_pages_by_activity(
    trio: tuple[recuerdo.Memory, recuerdo.Memory, recuerdo.Memory],
) -> None:
    alice, bob, _ = trio
    sent = [alice.send_message(["bob@local"], f"s{i}", f"body {i}") for i in range(5)]
    seen: list[str] = []
    after = None
    while True:
        page = bob.inbox(after=after, limit=2)
        seen += [c["conversation_id"] for c in page["conversations"]]
        after = page["next"]
        if after is None:
            break
    assert seen == [s["conversation_id"] for s in reversed(sent)]


def _words(size: int) -> str:
    """Text of exactly ``size`` UTF-8 bytes, with accents, tabs, line breaks and odd spacing
    (and nothing the secret guard would take for a credential)."""
    pieces = ["año", "niño\t", "façade", "über\n", "zebra  ", "x", "日本", "\r\n", "end."]
    cycle = "".join(piece + " " for piece in pieces)
    whole = max(0, (size - 16) // len(cycle.encode()) - 1)  # whole cycles at once (16 MiB)
    out: list[str] = [cycle * whole]
    total = whole * len(cycle.encode())
    i = 0
    while total < size - 16:
        piece = pieces[i % len(pieces)] + " "
        out.append(piece)
        total += len(piece.encode())
        i += 1
    text = "".join(out)
    return text + "q" * (size - len(text.encode()))


def test_a_sixteen_mib_body_round_trips_byte_identical(file_memory: recuerdo.Memory) -> None:
    """The largest body is stored whole, read back byte for byte, shown in threads as a
    truncated preview with its size, and cut into passages that search reaches."""
    alice, bob = file_memory.agent("alice"), file_memory.agent("bob")
    alice.bind_address("alice@local")
    bob.bind_address("bob@local")
    tail = " Quenterbly ends it."
    body = _words(MAX_BODY_BYTES - len(tail)) + tail
    assert len(body.encode()) == MAX_BODY_BYTES
    sent = alice.send_message(["bob@local"], "Big", body)
    assert sent["bytes"] == MAX_BODY_BYTES and sent["passages"] > 1000
    whole = bob.read_message(sent["id"])
    assert whole["body"].encode() == body.encode() and whole["bytes"] == MAX_BODY_BYTES
    [shown] = bob.thread(sent["conversation_id"], preview_chars=100)["messages"]
    assert shown["truncated"] is True and len(shown["preview"]) == 100
    assert (shown["bytes"], shown["chars"]) == (MAX_BODY_BYTES, len(body))
    found = bob.search("Quenterbly", types=["mail"])["results"]
    assert [hit["id"] for hit in found] == [int(sent["id"])]
    with pytest.raises(recuerdo.BodyTooLarge):
        alice.send_message(["bob@local"], "Bigger", body + "!")


Refusal = Callable[[dict[str, recuerdo.Memory], dict[str, str]], Any]

REFUSALS: dict[str, tuple[type[recuerdo.RecuerdoError], Refusal]] = {
    "address_invalid: no @": (
        recuerdo.AddressInvalid,
        lambda v, ids: v["carol"].bind_address("carol.local"),
    ),
    "address_invalid: two @": (
        recuerdo.AddressInvalid,
        lambda v, ids: v["carol"].bind_address("carol@x@local"),
    ),
    "address_invalid: a space": (
        recuerdo.AddressInvalid,
        lambda v, ids: v["carol"].bind_address("car ol@local"),
    ),
    "address_invalid: not ASCII": (
        recuerdo.AddressInvalid,
        lambda v, ids: v["carol"].bind_address("caról@local"),
    ),
    "domain_not_ours": (
        recuerdo.DomainNotOurs,
        lambda v, ids: v["carol"].bind_address("carol@example.com"),
    ),
    "address_taken": (
        recuerdo.AddressTaken,
        lambda v, ids: v["carol"].bind_address("alice@local"),
    ),
    "kind_invalid": (
        recuerdo.KindInvalid,
        lambda v, ids: v["carol"].bind_address("carol@local", "robot"),
    ),
    "address_unknown": (
        recuerdo.AddressUnknown,
        lambda v, ids: v["alice"].send_message(["bob@local", "x@local", "y@local"], "s", "b"),
    ),
    "address_invalid in to": (
        recuerdo.AddressInvalid,
        lambda v, ids: v["alice"].send_message(["bob@local", "nobody"], "s", "b"),
    ),
    "recipients_too_many": (
        recuerdo.RecipientsTooMany,
        lambda v, ids: v["alice"].send_message([f"u{i}@local" for i in range(4097)], "s", "b"),
    ),
    "subject_too_long": (
        recuerdo.SubjectTooLong,
        lambda v, ids: v["alice"].send_message(["bob@local"], "é" * 513, "b"),  # 1026 bytes
    ),
    "empty body": (
        recuerdo.EmptyContent,
        lambda v, ids: v["alice"].send_message(["bob@local"], "s", "  \n "),
    ),
    "address_not_bound": (
        recuerdo.AddressNotBound,
        lambda v, ids: v["dave"].send_message(["bob@local"], "s", "b"),
    ),
    "address_not_bound: not yours": (
        recuerdo.AddressNotBound,
        lambda v, ids: v["alice"].send_message(["bob@local"], "s", "b", from_="bob@local"),
    ),
    "reply_to message_not_found": (
        recuerdo.MessageNotFound,
        lambda v, ids: v["alice"].send_message(["bob@local"], "s", "b", reply_to="999999"),
    ),
    "reply_to not_a_member": (
        recuerdo.NotAMember,
        lambda v, ids: v["carol"].send_message(["bob@local"], "s", "b", reply_to=ids["message"]),
    ),
    "inbox page_cursor_invalid": (
        recuerdo.PageCursorInvalid,
        lambda v, ids: v["bob"].inbox(after="yesterday"),
    ),
    "thread conversation_not_found": (
        recuerdo.ConversationNotFound,
        lambda v, ids: v["bob"].thread("999"),
    ),
    "thread not_a_member": (
        recuerdo.NotAMember,
        lambda v, ids: v["carol"].thread(ids["conversation"]),
    ),
    "thread page_cursor_invalid": (
        recuerdo.PageCursorInvalid,
        lambda v, ids: v["bob"].thread(ids["conversation"], after="-1"),
    ),
    "read message_not_found": (
        recuerdo.MessageNotFound,
        lambda v, ids: v["bob"].read_message("999999"),
    ),
    "read not_a_member": (
        recuerdo.NotAMember,
        lambda v, ids: v["carol"].read_message(ids["message"]),
    ),
    "forget not_a_member": (
        recuerdo.NotAMember,
        lambda v, ids: v["carol"].forget_conversation(ids["conversation"]),
    ),
    "forget conversation_not_found": (
        recuerdo.ConversationNotFound,
        lambda v, ids: v["bob"].forget_conversation("999"),
    ),
}


@pytest.fixture
def settled(file_memory: recuerdo.Memory) -> Iterator[tuple[dict[str, recuerdo.Memory], dict]]:  # type: ignore[type-arg]
    views = {name: file_memory.agent(name) for name in ("alice", "bob", "carol", "dave")}
    for name in ("alice", "bob", "carol"):
        views[name].bind_address(f"{name}@local")
    sent = views["alice"].send_message(["bob@local"], "Hello", "Hello Bob")
    file_memory._upkeep.drain()
    yield views, {"message": sent["id"], "conversation": sent["conversation_id"]}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_every_refusal_has_its_code_and_changes_nothing(
    settled: tuple[dict[str, recuerdo.Memory], dict[str, str]], case: str
) -> None:
    views, ids = settled
    error, call = REFUSALS[case]
    location = views["alice"].location
    before = db_dump(location)
    with pytest.raises(error) as caught:
        call(views, ids)
    assert caught.value.code == error.code and caught.value.detail
    assert db_dump(location) == before


def test_an_unknown_recipient_is_named_with_every_other_one(
    settled: tuple[dict[str, recuerdo.Memory], dict[str, str]],
) -> None:
    views, _ = settled
    with pytest.raises(recuerdo.AddressUnknown) as caught:
        views["alice"].send_message(["x@local", "bob@local", "Y@local"], "s", "b")
    assert caught.value.extra["unknown"] == ["x@local", "y@local"]
    assert "x@local" in caught.value.detail and "y@local" in caught.value.detail
    assert caught.value.status == 404


def test_mail_domains_are_set_per_tenant(memory: recuerdo.Memory) -> None:
    assert memory.configure(mail_domains=["Example.com", "corp.example"])["mail_domains"] == [
        "example.com",
        "corp.example",
    ]
    assert memory.bind_address("ops@corp.example")["bound"] == "new"
    with pytest.raises(recuerdo.DomainNotOurs) as caught:
        memory.bind_address("ops@local")
    assert caught.value.extra["domains"] == ["example.com", "corp.example"]
    other = memory.for_tenant("other")
    assert other.addresses()["domains"] == ["local"]  # another tenant keeps the default
    memory.configure(mail_domains=[])
    assert memory.addresses()["domains"] == ["local"]
    with pytest.raises(recuerdo.InvalidInput):
        memory.configure(mail_domains=["not a domain"])


def test_members_find_messages_by_search_context_and_about(
    trio: tuple[recuerdo.Memory, recuerdo.Memory, recuerdo.Memory],
) -> None:
    alice, bob, carol = trio
    alice.remember_knowledge(
        "Priya Raman leads billing.", facts={"entities": [{"name": "Priya Raman"}]}
    )
    sent = alice.send_message(["bob@local"], "Billing", "Priya Raman moves the Vornak deadline.")
    hits = bob.search("Vornak", types=["mail"], kind="alice@local")["results"]
    assert [h["id"] for h in hits] == [int(sent["id"])]
    assert (
        hits[0]["conversation"] == sent["conversation_id"] and hits[0]["speaker"] == "alice@local"
    )
    assert "Vornak" in bob.context("Vornak deadline")["context"]
    passages = [i for i in bob.about("Priya Raman")["items"] if i["kind"] == "passage"]
    assert any("Vornak" in p["text"] for p in passages)
    assert bob.get(int(sent["id"]))["content"] == "Priya Raman moves the Vornak deadline."
    hits = carol.search("Vornak")["results"]
    assert all(h["item_type"] != "mail" and "Vornak" not in str(h) for h in hits)
    assert "Vornak" not in str(carol.about("Priya Raman"))


def _store_bytes(folder: Path) -> bytes:
    return b"".join(path.read_bytes() for path in sorted(folder.iterdir()) if path.is_file())


@pytest.mark.parametrize("form", ["conversation", "all"])
def test_forgetting_a_conversation_leaves_no_byte_of_it(base: Path, form: str) -> None:
    marker = "Zqvixmoth"
    mem = recuerdo.open("erase", base_dir=base)
    alice, bob = mem.agent("alice"), mem.agent("bob")
    alice.bind_address("alice@local")
    bob.bind_address("bob@local")
    for number in range(30):  # enough pages that deleted rows would linger if not erased
        alice.send_message(["bob@local"], "noise", f"Ordinary message number {number}.")
    kept = alice.send_message(["bob@local"], "kept", "This conversation stays.")
    secret = alice.send_message(
        ["bob@local"], f"{marker} plans", f"The {marker} codename is secret. " * 50, scope="vault"
    )
    bob.send_message(["alice@local"], "Re", f"Understood about {marker}.", reply_to=secret["id"])
    bob.thread(secret["conversation_id"])
    mem._upkeep.drain()  # passages, full-text entries and cursors all hold it now
    state = base / ".recuerdo" / "state"
    assert marker.encode() in _store_bytes(state)
    if form == "conversation":
        gone = bob.forget_conversation(secret["conversation_id"])
        assert (gone["messages_removed"], gone["members_removed"]) == (2, 2)
        assert bob.forget_conversation(secret["conversation_id"])["already_forgotten"] is True
    else:
        assert alice.forget_knowledge(all=True, scope="vault")["conversations_removed"] == 1
    open_files = _store_bytes(state)  # while the memory is open: the WAL is still there
    mem.close()
    for raw in (open_files, _store_bytes(state)):
        for needle in (marker, marker.lower()):
            assert needle.encode() not in raw, needle
    with recuerdo.open("erase", base_dir=base) as again:
        bob = again.agent("bob")
        assert marker not in str(bob.search(marker)["results"])
        ids = [c["conversation_id"] for c in bob.inbox(limit=100)["conversations"]]
        assert kept["conversation_id"] in ids and secret["conversation_id"] not in ids
        with pytest.raises(recuerdo.ConversationNotFound):
            bob.thread(secret["conversation_id"])


def _export_all(view: recuerdo.Memory, scope: str, limit: int) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = view.export(scope=scope, cursor=cursor, limit=limit)
        records += page["records"]
        cursor = page["next"]
        if cursor is None:
            return records


def test_export_and_import_carry_addresses_conversations_members_and_cursors(
    base: Path,
) -> None:
    source = recuerdo.open("source", base_dir=base)
    alice, bob, carol = (source.agent(n) for n in ("alice", "bob", "carol"))
    for view in (alice, bob, carol):
        view.bind_address(f"{view.principal}@local", "user" if view is carol else "agent")
    first = alice.send_message(["bob@local"], "Plan", "Step one.\nStep two.", scope="team")
    reply = bob.send_message(["alice@local"], "Re: Plan", "Agreed.", reply_to=first["id"])
    bob.thread(first["conversation_id"])  # bob has read both; alice has not read the reply
    alice.send_message(["bob@local", "carol@local"], "Other", "Second thread.", scope="team")
    records = _export_all(alice, "team", limit=3)  # small pages cross every phase boundary
    kinds = [r["record"] for r in records]
    assert kinds.count("address") == 3 and kinds.count("conversation") == 2
    assert kinds.count("mail") == 3 and kinds.count("cursor") == 2
    theirs = _export_all(carol, "team", 50)  # carol is a member of the second one only
    assert [r["body"] for r in theirs if r["record"] == "mail"] == ["Second thread."]
    source.close()

    target = recuerdo.open("target", base_dir=base)
    done = target.import_records(records, scope="team")
    assert done["imported"] == len(records) - 1 and done["skipped"] == []
    assert target.import_records(records, scope="team")["imported"] == 0  # nothing twice
    alice2, bob2, carol2 = (target.agent(n) for n in ("alice", "bob", "carol"))
    assert carol2.addresses()["addresses"][0]["kind"] == "user"
    inbox = {c["subject"]: c for c in alice2.inbox()["conversations"]}
    assert (inbox["Re: Plan"]["unread"], inbox["Re: Plan"]["messages"]) == (1, 2)
    assert {c["subject"]: c["unread"] for c in bob2.inbox()["conversations"]} == {
        "Re: Plan": 0,
        "Other": 1,
    }
    page = bob2.thread(inbox["Re: Plan"]["conversation_id"])
    assert [m["preview"] for m in page["messages"]] == ["Step one.\nStep two.", "Agreed."]
    assert page["messages"][1]["reply_to"] == page["messages"][0]["id"]
    assert page["members"] == ["alice@local", "bob@local"]
    assert page["messages"][1]["subject"] == reply["subject"]
    assert [c["members"] for c in carol2.inbox()["conversations"]] == [3]
    assert bob2.search("Agreed", types=["mail"])["results"][0]["id"] == int(
        page["messages"][1]["id"]
    )
    target.close()


def test_an_export_lists_only_the_addresses_its_records_need(memory: recuerdo.Memory) -> None:
    """Every address of the tenant, with the principal it belongs to, went to any caller's
    export, a token limited to one scope too, while addresses() shows a caller its own only
    (a hunt over what a caller may reach)."""
    views = {n: memory.agent(n) for n in ("alice", "bob", "carol", "dave")}
    for name, view in views.items():
        view.bind_address(f"{name}@local")
    views["alice"].send_message(["bob@local"], "Plan", "Step one.", scope="project:a")
    views["carol"].send_message(["dave@local"], "Secret", "Elsewhere.", scope="project:b")
    limited = memory.for_principal("alice", memory.tenant, scopes=["project:a"])
    for exporter in (views["alice"], limited):
        records = _export_all(exporter, "project:a", 50)
        listed = sorted(r["address"] for r in records if r["record"] == "address")
        assert listed == ["alice@local", "bob@local"]
    carols = _export_all(views["carol"], "project:a", 50)  # no conversation of hers there
    assert [r["address"] for r in carols if r["record"] == "address"] == ["carol@local"]


AGENT = """
import sys
import recuerdo

name, base, shared = sys.argv[1], sys.argv[2], sys.argv[3]
with recuerdo.open("busy", base_dir=base) as memory:
    me = memory.agent(name)
    for i in range(20):
        me.send_message(["hub@local"], f"{name} {i}", f"{name} starts {i}")
        me.send_message(["hub@local"], "", f"{name} replies {i}", reply_to=shared)
"""


@pytest.mark.slow
def test_eight_agents_sending_concurrently_lose_nothing(base: Path) -> None:
    """Eight processes send into one memory file at once, new conversations and replies to one
    shared conversation alike: every message arrives, once, in its conversation."""
    import os
    import subprocess

    names = [f"agent{i}" for i in range(8)]
    with recuerdo.open("busy", base_dir=base) as memory:
        hub = memory.agent("hub")
        hub.bind_address("hub@local")
        for name in names:
            memory.agent(name).bind_address(f"{name}@local")
        shared = hub.send_message([f"{n}@local" for n in names], "All hands", "Report here.")
    env = {**os.environ, "RECUERDO_EMBEDDER": "none"}
    workers = [
        subprocess.Popen(
            python_command(AGENT, name, str(base), shared["id"]),
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in names
    ]
    for worker in workers:
        _, err = worker.communicate(timeout=300)
        assert worker.returncode == 0, err
    with recuerdo.open("busy", base_dir=base) as memory:
        hub = memory.agent("hub")
        conversations = hub.inbox(limit=4096)["conversations"]
        assert len(conversations) == 1 + 8 * 20
        started = sorted(c["preview"] for c in conversations if c["messages"] == 1)
        assert started == sorted(f"{n} starts {i}" for n in names for i in range(20))
        thread = hub.thread(shared["conversation_id"], limit=4096)["messages"]
        replies = sorted(m["preview"] for m in thread[1:])
        assert replies == sorted(f"{n} replies {i}" for n in names for i in range(20))
        assert len({m["id"] for m in thread}) == 1 + 8 * 20
        assert sum(c["unread"] for c in conversations) == 2 * 8 * 20  # read before the thread


def test_a_body_is_cut_before_the_memory_is_locked_for_writing(
    trio: tuple[recuerdo.Memory, recuerdo.Memory, recuerdo.Memory],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Cutting a body into passages holds no other writer back: it was cut inside the send's
    write, and a MiB took a second while every writer of the memory waited (decision 0140). A
    write from another thread while the body is cut is done before the cut ends."""
    from recuerdo.comms import mail

    alice, bob, _ = trio
    meanwhile = WritesMeanwhile(alice, mail.passages_of)
    monkeypatch.setattr(mail, "passages_of", meanwhile)
    sent = alice.send_message(["bob@local"], "plan", "Ship on Friday. Then rest.")
    meanwhile.finish()
    assert meanwhile.during == [True] and meanwhile.written
    assert sent["passages"] >= 1
    assert bob.read_message(sent["id"])["body"] == "Ship on Friday. Then rest."
