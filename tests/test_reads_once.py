"""Work a verb did more often than its answer needs, done once, with the same answers:
``session_end`` looked up the summary note even when given the summary (its save looks it up),
``send_message`` checked its scope at each place it used it, ``add_messages`` brought back every
turn of the conversation to find the refs it was given, and ``search`` read the query's words
three times (its terms, its words as written, and whether terms were left out).

The reads are counted as they happen (statements on their way to the store, rows on their way
back, calls on their way to the real function); nothing is replaced."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import recuerdo
from recuerdo.comms import mail
from recuerdo.errors import AddressUnknown, InvalidInput
from recuerdo.index import words as words_module
from recuerdo.index.words import MAX_TERMS, STOP_WORDS, query_words, terms, written_words

from .conftest import statements_run, tx_class_of


def _summary_reads(memory: recuerdo.Memory, session: str, call: Any) -> int:
    """How many statements read items by the session's summary key while ``call`` runs."""
    key = f"session/{session}/summary"
    with pytest.MonkeyPatch.context() as patch, statements_run(patch, tx_class_of(memory)) as seen:
        call()
    return sum(1 for sql, params in seen if sql.lstrip().startswith("SELECT") and key in params)


@pytest.mark.parametrize(
    ("first", "second"),
    [("what we did", None), (None, None), ("what we did", "what we did, told again")],
    ids=["summary given", "none given", "ended again with a summary"],
)
def test_session_end_looks_its_summary_note_up_once(
    memory: recuerdo.Memory, first: str | None, second: str | None
) -> None:
    memory.session_start("s1", project="shop")
    replies: list[Any] = []
    for summary in (first, second):
        reads = _summary_reads(memory, "s1", lambda s=summary: replies.append(
            memory.session_end("s1", summary=s)
        ))  # fmt: skip
        assert reads == 1
    notes = memory.list_notes(scope="project:shop")["notes"]
    if first is None:
        assert [r["summary_note_id"] for r in replies] == [None, None] and notes == []
    else:
        assert [r["summary_note_id"] for r in replies] == [notes[0]["id"]] * 2
        assert replies[-1]["summary"] == (second or first)
    assert replies[0]["ended_at"] == replies[1]["ended_at"]  # the first end is kept


@pytest.fixture
def scope_checks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    """The scopes ``send_message`` checks (the real check, counted)."""
    seen: list[object] = []
    check = mail.check_scope

    def counted(scope: object) -> str | None:
        if scope is not None:
            seen.append(scope)
        return check(scope)

    monkeypatch.setattr(mail, "check_scope", counted)
    yield seen


@pytest.fixture
def pair(memory: recuerdo.Memory) -> tuple[recuerdo.Memory, recuerdo.Memory]:
    alice, bob = memory.agent("alice"), memory.agent("bob")
    alice.bind_address("alice@local")
    bob.bind_address("bob@local")
    return alice, bob


@pytest.mark.parametrize("reply", [False, True], ids=["new conversation", "reply"])
@pytest.mark.parametrize("key", [None, "k-1"], ids=["no key", "key"])
def test_send_message_checks_its_scope_once(
    pair: tuple[recuerdo.Memory, recuerdo.Memory],
    scope_checks: list[object],
    reply: bool,
    key: str | None,
) -> None:
    alice, bob = pair
    first = alice.send_message(["bob@local"], "Plan", "Friday?", scope="project:x")
    scope_checks.clear()
    if reply:
        sent = bob.send_message(
            ["alice@local"], "Re", "Yes", first["id"], scope="project:x", idempotency_key=key
        )
    else:
        sent = alice.send_message(
            ["bob@local"], "Again", "Monday?", scope="project:x", idempotency_key=key
        )
    assert scope_checks == ["project:x"]
    assert sent["scope"] == "project:x" and sent["new_conversation"] is not reply
    if key is not None:  # the retry is answered from the key, as before
        again = (
            bob.send_message(
                ["alice@local"], "Re", "Yes", first["id"], scope="project:x", idempotency_key=key
            )
            if reply
            else alice.send_message(
                ["bob@local"], "Again", "Monday?", scope="project:x", idempotency_key=key
            )
        )
        assert again == sent


@pytest.mark.parametrize(
    ("key", "refused"),
    [(None, AddressUnknown), ("k-2", InvalidInput)],
    ids=["no key: the recipients first", "key: the scope first"],
)
def test_a_send_with_two_bad_arguments_names_the_same_one(
    pair: tuple[recuerdo.Memory, recuerdo.Memory], key: str | None, refused: type[Exception]
) -> None:
    """Where the scope is checked did not move: an unknown recipient and a bad scope name the
    one they named before (a key checks every argument before its lookup)."""
    alice, _ = pair
    with pytest.raises(refused):
        alice.send_message(["nobody@local"], "Hi", "there", scope="   ", idempotency_key=key)
    assert alice.inbox()["conversations"] == []


def _rows_back(memory: recuerdo.Memory, call: Any) -> list[tuple[str, int]]:
    """Each statement that read message refs while ``call`` ran, with how many rows it sent
    back."""
    tx_class = tx_class_of(memory)
    fetched: list[tuple[str, int]] = []
    read_all = tx_class.all

    def counted(tx: Any, sql: str, params: Any = ()) -> Any:
        rows = read_all(tx, sql, params)
        if " AS ref " in sql and "message" in sql:
            fetched.append((sql, len(rows)))
        return rows

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tx_class, "all", counted)
        call()
    return fetched


def test_add_messages_brings_back_only_the_refs_it_holds(memory: recuerdo.Memory) -> None:
    turns = [{"speaker": "ana", "text": f"turn {n}", "ref": f"t{n}"} for n in range(40)]
    first = memory.add_messages("standup", turns)
    replies: list[Any] = []
    new_turn = {"speaker": "bo", "text": "one more", "ref": "t40"}
    reads = _rows_back(memory, lambda: replies.append(memory.add_messages("standup", [new_turn])))
    assert [rows for _, rows in reads] == [0]  # every one of the 40 turns came back
    retried = [turns[3], new_turn, {"speaker": "bo", "text": "no ref"}, turns[3]]
    reads = _rows_back(memory, lambda: replies.append(memory.add_messages("standup", retried)))
    assert [rows for _, rows in reads] == [2]
    added, again = replies
    assert (added["count"], added["already"]) == (1, 0)
    assert again["ids"][0] == again["ids"][3] == first["ids"][3]
    assert again["ids"][1] == added["ids"][0] and (again["count"], again["already"]) == (1, 3)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_call_of_the_most_turns_with_refs_is_stored_and_retried(
    backend: str,
    base: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    held_upkeep: None,
) -> None:
    """Every ref of a call of the most turns is asked in one statement (10,000 of them: under
    each backend's limit of parameters). The turns' indexes are not what is tested: no
    embedder, and the close leaves them to a later process (a minute of work)."""
    from recuerdo.comms.transcripts import MAX_TURNS
    from recuerdo.core import upkeep

    monkeypatch.setattr(upkeep, "DRAIN_ON_CLOSE", 0)
    if backend == "postgres":
        _, memory = request.getfixturevalue("loaded")
    else:
        memory = recuerdo.open("long", base_dir=base, embedder="none")
        request.addfinalizer(memory.close)
    turns = [{"speaker": "ana", "text": f"t {n}", "ref": f"r{n}"} for n in range(MAX_TURNS)]
    first = memory.add_messages("long", turns)
    again = memory.add_messages("long", turns)
    assert (first["count"], again["count"], again["already"]) == (MAX_TURNS, 0, MAX_TURNS)
    assert again["ids"] == first["ids"]


QUERIES = [
    "When did Caroline go to the support-group?",
    "the and of",  # nothing but stop words: kept
    "the The THE harbour Harbour",  # repeats, in any case
    "Zu\u0308rich cre\u0302perie",  # decomposed
    " ".join(f"w{n}" for n in range(MAX_TERMS + 1)),  # one word left out
    " ".join(f"w{n}" for n in range(MAX_TERMS)) + " the a of",  # stop words past the limit
    " ".join(["the"] * 40 + [f"w{n}" for n in range(MAX_TERMS)]),
    " ".join(sorted(STOP_WORDS)[:40]),  # only stop words, more than the limit
    "",
]


@pytest.mark.parametrize("text", QUERIES)
def test_query_words_are_the_terms_and_the_written_words(text: str) -> None:
    tokens = [t.lower() for t in words_module._tokens(text)]
    distinct = list(dict.fromkeys([t for t in tokens if t not in STOP_WORDS] or tokens))
    assert query_words(text) == (terms(text), written_words(text), len(distinct) > MAX_TERMS)


@pytest.mark.parametrize("text", [QUERIES[0], QUERIES[4]], ids=["short", "cut"])
def test_search_reads_the_query_once(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    memory.save("Support group", "Caroline went to the support group on Monday w3 w31")
    memory._upkeep.drain()
    read: list[str] = []
    tokens = words_module._tokens

    def counted(asked: str) -> list[str]:
        read.append(asked)
        return tokens(asked)

    monkeypatch.setattr(words_module, "_tokens", counted)
    found = memory.search(text, stages=["lexical"])
    assert read == [text]
    assert found["count"] == 1
    assert found.get("query_truncated", False) is (text == QUERIES[4])
