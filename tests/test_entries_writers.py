"""Writer namespaces of entries: who may forget an entry, and which names an agent may take."""

from __future__ import annotations

from pathlib import Path

import pytest

import recuerdo
from recuerdo.profiles.synsema import Program
from recuerdo.security.tokens import TokenStore


def _contents(memory: recuerdo.Memory) -> list[tuple[str, str]]:
    return sorted((e["source"], e["content"]) for e in memory.recall(from_="*"))


def test_an_agent_cannot_forget_another_writers_entry(memory: recuerdo.Memory) -> None:
    alice, bob = memory.agent("alice"), memory.agent("bob")
    of_alice = alice.remember("learning", "alice's fact")
    of_owner = memory.remember("decision", "the owner's fact")
    before = _contents(memory)
    for entry_id in (of_alice, of_owner):
        with pytest.raises(recuerdo.NotTheWriter) as refused:
            bob.forget(entry_id)
        assert refused.value.code == "not_the_writer"
        assert str(entry_id) in refused.value.detail
    assert _contents(memory) == before


def test_a_writer_forgets_its_own_and_the_owner_forgets_any(memory: recuerdo.Memory) -> None:
    alice, bob = memory.agent("alice"), memory.agent("bob")
    first, second = alice.remember("learning", "one"), alice.remember("learning", "two")
    assert alice.forget(first) is True
    assert memory.forget(second) is True
    assert bob.forget(first) is False  # gone: nothing to refuse
    assert _contents(memory) == []


def test_a_token_holder_forgets_only_its_own_entries(memory: recuerdo.Memory) -> None:
    owner_entry = memory.remember("learning", "the owner's")
    holder = memory.for_principal("ci-bot", memory.tenant)
    own = holder.remember("learning", "the bot's")
    with pytest.raises(recuerdo.NotTheWriter):
        holder.forget(owner_entry)
    assert holder.forget(own) is True
    assert _contents(memory) == [("main", "the owner's")]
    # The owner at a door (the local caller) keeps the owner's right.
    assert memory.for_principal("main", memory.tenant, owner=True).forget(owner_entry) is True


# Each reads as the owner's writer: accepted before decision 0136 but for the first three.
LOOK_ALIKES = {
    "fullwidth": "\uff4d\uff41\uff49\uff4e",
    "mathematical bold": "\U0001d426\U0001d41a\U0001d422\U0001d427",
    "Cyrillic M": "\u041cAIN",
    "Cyrillic a": "m\u0430in",
    "Greek iota": "MA\u0399N",
    "Cyrillic palochka": "ma\u04c0n",
    "zero-width space": "ma\u200bin",
    "soft hyphen": "mai\u00adn",
    "combining mark": "mai\u0308n",
    # Accepted by the first rule of 0136 too: drawn as main, by other letters or blanks.
    "small capitals": "\u1d0d\u1d00\u026a\u0274",
    "Latin alpha": "m\u0251in",
    "Hangul filler": "main\u3164",
    "braille blank": "\u2800main",
    "hair space": "ma\u200ain",
}
OWNERS = {"plain": "main", "capital": "Main", "upper, spaced": " MAIN ", **LOOK_ALIKES}


@pytest.mark.parametrize("name", list(OWNERS.values()), ids=list(OWNERS))
def test_an_agent_cannot_take_the_owners_writer(memory: recuerdo.Memory, name: str) -> None:
    owner_entry = memory.remember("learning", "the owner's")
    with pytest.raises(recuerdo.ReservedWriterName) as refused:
        memory.agent(name)
    assert refused.value.code == "reserved_writer_name"
    assert _contents(memory) == [("main", "the owner's")]
    assert memory.recall(from_="main")[0]["id"] == owner_entry


@pytest.mark.parametrize("name", ["*", "\uff0a", "\ufe61"], ids=["star", "fullwidth", "small"])
def test_no_agent_is_named_as_every_writer(memory: recuerdo.Memory, name: str) -> None:
    """``＊`` (fullwidth) and ``﹡`` (small) were accepted, listed as ``*`` (0136)."""
    with pytest.raises(recuerdo.InvalidInput) as refused:
        memory.agent(name)
    assert refused.value.code == "invalid_input"


@pytest.mark.parametrize("name", ["main", *LOOK_ALIKES.values()], ids=["plain", *LOOK_ALIKES])
def test_a_token_principal_cannot_be_main(
    memory: recuerdo.Memory, tmp_path: Path, name: str
) -> None:
    with pytest.raises(recuerdo.ReservedWriterName) as refused:
        memory.for_principal(name, memory.tenant)
    assert refused.value.code == "reserved_writer_name"
    tokens = TokenStore(tmp_path)
    with pytest.raises(recuerdo.ReservedWriterName):
        tokens.create(principal=name.title(), tenant="local")
    assert not tokens.any_active()


# Names of people and agents in Greek and Cyrillic that hold letters of the table of 0136 but
# do not read as main as a whole: each is a writer of its own.
NAMES_OF_THEIR_OWN = ["мама", "Μαρία", "Мария", "Ιωάννης", "Маин", "ΜΑΙΝΑ", "Mainz", "Ma In"]


@pytest.mark.parametrize("name", NAMES_OF_THEIR_OWN)
def test_a_name_that_only_holds_letters_of_main_is_a_writer(
    memory: recuerdo.Memory, tmp_path: Path, name: str
) -> None:
    agent = memory.agent(name)
    written = agent.remember("learning", "its own")
    assert [e["id"] for e in agent.recall()] == [written]
    assert memory.recall(from_=name)[0]["source"] == name
    assert memory.for_principal(name, memory.tenant).remember("learning", "a token's") > written
    TokenStore(tmp_path).create(principal=name, tenant="local")


NEAR_NAMES = {
    "case": ("Bob", "bob"),
    "fullwidth": ("\uff42\uff4f\uff42", "bob"),
    "Cyrillic o": ("b\u043eb", "bob"),
}


@pytest.mark.parametrize("pair", list(NEAR_NAMES.values()), ids=list(NEAR_NAMES))
def test_agents_whose_names_differ_only_in_form_are_two_writers(
    memory: recuerdo.Memory, pair: tuple[str, str]
) -> None:
    """Only the owner's name is folded (decision 0136): each other name is a writer of its own
    as written, wherever a writer is named (an agent, a token's principal), as before."""
    first, second = (memory.agent(name) for name in pair)
    written = first.remember("learning", "the first one's")
    assert second.recall() == [] and [e["id"] for e in first.recall()] == [written]
    with pytest.raises(recuerdo.NotTheWriter):
        second.forget(written)
    holder = memory.for_principal(pair[1], memory.tenant)
    with pytest.raises(recuerdo.NotTheWriter):
        holder.forget(written)
    assert memory.recall(from_=pair[0])[0]["source"] == pair[0]


def test_the_synsema_agent_block_refuses_main(tmp_path: Path) -> None:
    program = Program(base_dir=tmp_path)
    program.require_memory("shop", in_memory=True)
    program.remember("learning", "top-level fact")
    with pytest.raises(recuerdo.ReservedWriterName), program.agent("main"):
        pass
    with program.agent("helper"):
        helper_id = program.remember("learning", "helper fact")
        [entry] = program.recall(**{"from": "main"})
        with pytest.raises(recuerdo.NotTheWriter):
            program.forget_memory(entry["id"])
    assert [e["content"] for e in program.recall()] == ["helper fact", "top-level fact"]
    assert program.forget_memory(helper_id) is True
    program.release()
