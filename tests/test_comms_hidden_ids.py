"""A non-member of a conversation cannot tell its messages' ids, or that they were stored, from
what does not exist: the audit, forget_knowledge(passage=) and index_status answered otherwise
(the review of messaging). Each case is asked of the owner's agent and of a token holder."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import recuerdo

from .conftest import db_dump

WORD = "Zebulonique"  # only the message holds it
MISSING = "Quorblatnik"  # nothing holds it
Viewer = Callable[[recuerdo.Memory], recuerdo.Memory]
VIEWERS: dict[str, Viewer] = {
    "agent": lambda memory: memory.agent("eve"),
    "token holder": lambda memory: memory.for_principal("eve", memory.tenant),
}


def _send(memory: recuerdo.Memory) -> tuple[recuerdo.Memory, int]:
    alice, bob = memory.agent("alice"), memory.agent("bob")
    alice.bind_address("alice@local")
    bob.bind_address("bob@local")
    sent = alice.send_message(["bob@local"], "plans", f"The {WORD} plan stands.")
    return bob, int(sent["id"])


@pytest.mark.parametrize("who", list(VIEWERS))
def test_the_audit_shows_a_non_member_no_find_of_a_hidden_message(
    memory: recuerdo.Memory, who: str
) -> None:
    bob, _ = _send(memory)
    eve = VIEWERS[who](memory)
    assert bob.search(WORD)["results"]
    bob.search(MISSING)
    records = {r["query"]: r for r in eve.audit(principal="bob")}
    assert (records[WORD]["returned"], records[WORD]["found"]) == ([], False)
    assert records[MISSING]["found"] is False
    assert {r["query"]: r["found"] for r in bob.audit(principal="bob")}[WORD] is True


@pytest.mark.parametrize("who", list(VIEWERS))
def test_forgetting_a_hidden_message_as_a_passage_answers_as_a_missing_id(
    file_memory: recuerdo.Memory, who: str
) -> None:
    bob, message = _send(file_memory)
    eve = VIEWERS[who](file_memory)
    file_memory._upkeep.drain()
    before = db_dump(file_memory.location)
    refusals = []
    for passage in (message, 999_999):
        with pytest.raises(recuerdo.RecuerdoError) as caught:
            eve.forget_knowledge(passage=passage)
        refusals.append((caught.value.code, caught.value.detail.replace(str(passage), "N")))
    assert refusals[0] == refusals[1] and refusals[0][0] == "item_not_found"
    assert db_dump(file_memory.location) == before
    assert WORD in bob.read_message(message)["body"]


@pytest.mark.parametrize("who", list(VIEWERS))
def test_index_status_counts_no_passage_of_a_hidden_message(
    memory: recuerdo.Memory, who: str
) -> None:
    memory.remember("learning", "the API is slow on Mondays")
    memory._upkeep.drain()
    eve = VIEWERS[who](memory)
    before = eve.index_status()["chunks"]
    bob, _ = _send(memory)
    memory._upkeep.drain()
    assert eve.index_status()["chunks"] == before
    assert bob.index_status()["chunks"] > before


@pytest.mark.parametrize("who", list(VIEWERS))
def test_a_non_member_naming_scopes_learns_no_conversation_s_scope(
    memory: recuerdo.Memory, who: str
) -> None:
    """Asked with a scope, a non-member got "not found in scope" for every scope but the one
    the conversation is kept in, and not_a_member for that one: its scope, told."""
    bob, message_id = _send(memory)
    conversation = bob.read_message(message_id)["conversation_id"]
    kept = bob.read_message(message_id)["scope"]
    eve = VIEWERS[who](memory)
    for scope in (kept, "project:elsewhere"):
        for call in (
            lambda s: eve.thread(conversation, scope=s),
            lambda s: eve.read_message(message_id, scope=s),
            lambda s: eve.forget_conversation(conversation, scope=s),
        ):
            with pytest.raises(recuerdo.NotAMember):
                call(scope)
    with pytest.raises(recuerdo.ConversationNotFound):  # a member is told
        bob.thread(conversation, scope="project:elsewhere")
    assert int(bob.read_message(message_id)["id"]) == message_id
