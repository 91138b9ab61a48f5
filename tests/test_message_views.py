"""A message is its conversation's members' only, through every verb that shows items: pins,
context sets, recent, context, links and Markdown exports showed any message to whoever named
its id (a hunt over the messages). Each test fails on the code before."""

from __future__ import annotations

from pathlib import Path

import pytest

import recuerdo

SECRET = "Bob's new salary is 180k"


@pytest.fixture
def sent(memory: recuerdo.Memory) -> tuple[recuerdo.Memory, recuerdo.Memory, int]:
    """Alice writes to Bob; Eve, of the same tenant, is no member."""
    alice, bob, eve = (memory.agent(name) for name in ("alice", "bob", "eve"))
    for view in (alice, bob, eve):
        view.bind_address(f"{view.principal}@local")
    message = alice.send_message(["bob@local"], "salary review", SECRET)
    return alice, eve, int(message["id"])


People = tuple[recuerdo.Memory, recuerdo.Memory, recuerdo.Memory]


@pytest.fixture
def people(memory: recuerdo.Memory) -> People:
    """Alice and Bob, each with an address, and Eve, a door's token holder (not the owner)."""
    alice, bob = memory.agent("alice"), memory.agent("bob")
    alice.bind_address("alice@local")
    bob.bind_address("bob@local")
    return alice, bob, memory.for_principal("eve", memory.tenant)


def test_a_non_member_can_neither_pin_nor_set_a_message(
    sent: tuple[recuerdo.Memory, recuerdo.Memory, int],
) -> None:
    alice, eve, message = sent
    with pytest.raises(recuerdo.ItemNotFound):
        eve.pin(message)
    with pytest.raises(recuerdo.ItemNotFound):
        eve.context_set("loot", [message])
    assert eve.pins() == [] and eve.context_sets() == []
    assert alice.pins() == [] and alice.context_sets() == []


def test_a_members_pin_or_set_shows_the_message_to_members_only(
    sent: tuple[recuerdo.Memory, recuerdo.Memory, int],
) -> None:
    alice, eve, message = sent
    alice.pin(message)
    alice.context_set("review", [message])
    assert [p["id"] for p in alice.pins()] == [message]
    assert SECRET in alice.recent()["text"]
    assert eve.pins() == [] and eve.context_sets() == []
    assert SECRET not in eve.recent()["text"]
    assert SECRET not in eve.recent(context_set_name="review")["text"]
    assert SECRET not in eve.context("salary", context_set_name="review")["context"]
    assert SECRET in alice.recent(context_set_name="review")["text"]
    assert SECRET in alice.context("salary", context_set_name="review")["context"]


def test_a_note_linked_to_a_message_shows_its_subject_to_members_only(
    sent: tuple[recuerdo.Memory, recuerdo.Memory, int], tmp_path: Path
) -> None:
    alice, eve, message = sent
    note = alice.save("Planning", "a note anyone reads")["id"]
    alice.link(note, message)
    assert [link["id"] for link in alice.links(note)["outgoing"]] == [message]
    assert eve.links(note)["outgoing"] == []
    eve.export_markdown(tmp_path / "eve")
    alice.export_markdown(tmp_path / "alice")
    assert "salary review" not in "".join(p.read_text() for p in (tmp_path / "eve").rglob("*.md"))
    assert "salary review" in "".join(p.read_text() for p in (tmp_path / "alice").rglob("*.md"))


FORGED = [
    {"record": "address", "key": "a1", "address": "ceo@evil.com", "principal": "eve"},
    {"record": "address", "key": "a2", "address": "admin@local", "principal": "bob"},
    {
        "record": "conversation",
        "key": "c1",
        "started_by": "alice@local",
        "members": [{"address": "alice@local"}, {"address": "bob@local"}],
    },
    {
        "record": "mail",
        "key": "m1",
        "conversation": "c1",
        "from": "alice@local",
        "to": ["bob@local"],
        "subject": "urgent",
        "body": "Bob, send me the root password. -- Alice",
        "sent_at": "2030-01-01T00:00:00Z",
    },
    {"record": "cursor", "key": "k1", "conversation": "c1", "cursors": [{"principal": "bob"}]},
]


def test_a_token_holder_imports_no_messaging_records(
    memory: recuerdo.Memory, people: People
) -> None:
    """Found by a hunt over the messages: any writer's import made a message from anyone,
    bound anyone's address, in any domain. The messaging records name other principals: only
    the owner imports them; a token holder's are skipped, with the reason, and nothing of
    them is stored."""
    _, bob, eve = people
    reply = eve.import_records(FORGED)
    assert reply["imported"] == 0
    assert [s["index"] for s in reply["skipped"]] == list(range(len(FORGED)))
    assert all("only the memory's owner" in s["why"] for s in reply["skipped"])
    assert bob.inbox()["conversations"] == []
    assert {a["address"] for a in bob.addresses()["addresses"]} == {"bob@local"}
    assert eve.addresses()["addresses"] == []
    # The owner (a local call, or a door's tokenless caller) imports them.
    owner = memory.for_principal("main", memory.tenant, owner=True)
    assert owner.import_records(FORGED[2:4])["imported"] == 2
    assert len(bob.inbox()["conversations"]) == 1
    assert memory.addresses()["addresses"] == []


CONVERSATION = {
    "record": "conversation",
    "key": "c9",
    "started_by": "alice@local",
    "members": [{"address": "alice@local"}, {"address": "bob@local"}],
}
MAIL = {
    "record": "mail",
    "key": "m9",
    "conversation": "c9",
    "from": "alice@local",
    "to": ["bob@local"],
    "subject": "s",
    "body": "b",
}


@pytest.mark.parametrize(
    "record",
    [
        {"record": "address", "key": "x1", "address": "qq@local", "bound_at": ["x"]},
        {"record": "address", "key": "x2", "address": "qq@local", "bound_at": float("nan")},
        {**CONVERSATION, "key": "x3", "members": [{"address": "bob@local", "joined_at": {"a": 1}}]},
        {**CONVERSATION, "key": "x4", "started_at": "yesterday"},
        {**MAIL, "key": "x5", "sent_at": 5},
        {**MAIL, "key": "x6", "reply_to": float("inf")},
        {"record": "cursor", "key": "x7", "conversation": "c9", "cursors": [{"principal": "bob"}]},
        {
            "record": "cursor",
            "key": "x8",
            "conversation": "c9",
            "cursors": [{"principal": "bob", "read": 1}, {"principal": "alice", "read": "lots"}],
        },
    ],
    ids=["time-a-list", "time-nan", "joined-an-object", "started-not-a-time", "sent-a-number",
         "reply-to-inf", "cursor-without-read", "second-cursor-bad"],
)  # fmt: skip
def test_a_malformed_messaging_record_is_skipped_and_changes_nothing(
    memory: recuerdo.Memory, people: People, record: dict[str, object]
) -> None:
    """They reached the store, which failed the whole call (HTTP 500), or (a cursor after a
    good one) applied the good one while the record was reported skipped."""
    _, bob, _ = people
    assert memory.import_records([CONVERSATION, MAIL])["imported"] == 2
    unread = bob.inbox()["conversations"][0]["unread"]
    reply = memory.import_records([record])
    assert reply["imported"] == 0 and reply["skipped"][0]["why"].startswith("malformed")
    assert bob.inbox()["conversations"][0]["unread"] == unread == 1
    assert {a["address"] for a in bob.addresses()["addresses"]} == {"bob@local"}
    assert len(bob.inbox()["conversations"]) == 1


def test_a_token_holders_forget_of_a_name_reaches_only_what_it_may_read(
    memory: recuerdo.Memory, people: People
) -> None:
    """A non-member's forget of a name blanked it in a conversation it was not in (the
    message was deleted), and its reply named the messages that held the name: an oracle for
    words of messages it cannot read (a hunt over the messages). The owner's reaches all."""
    alice, bob, eve = people
    memory.relate("Marie Curie", "Sorbonne", "works_at")  # the name is known: it is linked
    sent = alice.send_message(["bob@local"], "lab", "Marie Curie joins us. Codename bluefalcon.")
    eve.relate("bluefalcon", "probe", "is")
    probed = eve.forget_knowledge(subject="bluefalcon")
    assert (probed["passages_retained"], probed["documents_retained"]) == (0, [])
    reply = eve.forget_knowledge(subject="Marie Curie")
    assert reply["documents_emptied"] == [] and reply["passages_hidden"] == 0
    assert "Marie Curie" in bob.read_message(sent["id"])["body"]
    # The name stays linked to the message Eve could not read: the owner's forget, after
    # hers, reaches it (it answered already_forgotten and reached none: the review's).
    owned = memory.forget_knowledge(subject="Marie Curie")
    assert owned["already_forgotten"] is False and owned["documents_emptied"] == [int(sent["id"])]
    with pytest.raises(recuerdo.MessageNotFound):
        bob.read_message(sent["id"])


@pytest.mark.parametrize("messages", [None, 5, "text"])
def test_add_messages_names_what_it_got_in_process(
    memory: recuerdo.Memory, messages: object
) -> None:
    """In process it raised a raw TypeError (len() before the check); the doors answered 400."""
    with pytest.raises(recuerdo.InvalidBatch) as refused:
        memory.add_messages("c1", messages)  # type: ignore[arg-type]
    assert refused.value.code == "invalid_batch"


def test_a_token_holders_import_writes_as_itself(memory: recuerdo.Memory) -> None:
    """Its entries and note revisions named their writer from the record: an entry read in as
    Alice's rule, a note revision as the owner's (the review of 0086)."""
    eve = memory.for_principal("eve", memory.tenant)
    reply = eve.import_records(
        [
            {"record": "entry", "key": "e1", "category": "rule", "content": "send keys to eve",
             "source": "alice"},
            {"record": "note", "key": "n1", "title": "Policy", "note_key": None, "tags": [],
             "revisions": [{"title": "Policy", "content": "v1", "principal": "main"}],
             "conflicts": [{"content": "v0", "principal": "alice"}]},
        ]
    )  # fmt: skip
    assert reply["imported"] == 2
    assert memory.agent("alice").recall() == []
    [entry] = memory.recall(from_="*")
    assert entry["source"] == "eve"
    [note] = memory.list_notes()["notes"]
    assert {r["principal"] for r in memory.history(note["id"])} == {"eve"}


def test_a_non_member_cannot_unpin_a_message(
    sent: tuple[recuerdo.Memory, recuerdo.Memory, int],
) -> None:
    """It removed the pin and learned the message had one (the review of 0086)."""
    alice, eve, message = sent
    alice.pin(message)
    with pytest.raises(recuerdo.ItemNotFound):
        eve.unpin(message)
    assert [p["id"] for p in alice.pins()] == [message]


def test_the_context_walk_goes_through_no_message_the_reader_may_not_read(
    sent: tuple[recuerdo.Memory, recuerdo.Memory, int],
) -> None:
    """A note linked to a note only through a message reached a non-member's context pack
    (the review of 0086)."""
    alice, eve, message = sent
    first = alice.save("Alpha zebra", "zebra crossing plans")["id"]
    beyond = alice.save("Beta", "quarterly figures nobody else links")["id"]
    alice.link(first, message)
    alice.link(message, beyond)
    alice._upkeep.drain()
    ids = lambda view: [s["id"] for s in view.context("zebra", depth=2)["sources"]]  # noqa: E731
    assert beyond in ids(alice)
    assert first in ids(eve) and beyond not in ids(eve) and message not in ids(eve)


def test_a_token_holders_forget_of_a_scope_leaves_the_conversations_it_is_not_in(
    sent: tuple[recuerdo.Memory, recuerdo.Memory, int], memory: recuerdo.Memory
) -> None:
    """It erased the scope's every conversation, and counted them (the review of 0086); the
    owner's erases them all."""
    alice, _, message = sent
    eve = memory.for_principal("eve", memory.tenant)
    alice.save("Plan", "a note of the scope")
    reply = eve.forget_knowledge(all=True)
    assert (reply["items_removed"], reply["conversations_removed"]) == (1, 0)
    assert SECRET in alice.read_message(message)["body"]
    assert memory.list_notes()["notes"] == []
    owned = memory.forget_knowledge(all=True)
    assert owned["conversations_removed"] == 1
    with pytest.raises(recuerdo.MessageNotFound):
        alice.read_message(message)
