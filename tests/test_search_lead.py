"""The lexical stage settles its pool's first items from part of its best chunks where no turn
of a conversation can be rescored (``retrieval/head.py``, decision 0184): the same answers as
reading every one of them, fewer rows read."""

from __future__ import annotations

import random
from typing import Any

import pytest

import recuerdo
from recuerdo.retrieval import head

from .conftest import statements_run

_READ_BY_ID = ("FROM chunks c", "c.id IN (", "JOIN items i")


def _read_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every best chunk read at once, as where turns are rescored (the way before 0184)."""
    monkeypatch.setattr(head, "no_turns", lambda tx, filters: False)


def _settled(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each pool was settled by part of its chunks, as searches run."""
    seen: list[bool] = []
    first_items = head._first_items

    def spied(*args: Any) -> Any:
        found = first_items(*args)
        seen.append(found is not None)
        return found

    monkeypatch.setattr(head, "_first_items", spied)
    return seen


def _answers(memory: recuerdo.Memory, asked: list[dict[str, Any]]) -> list[Any]:
    found = []
    for options in asked:
        reply = memory.search(stages=["lexical"], **options)
        found.append([(hit["id"], hit["ranks"], hit["span"]) for hit in reply["results"]])
    return found


def _both_ways(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch, asked: list[dict[str, Any]]
) -> tuple[list[Any], list[Any], list[bool]]:
    """The answers with the pool settled where it can be, the answers with every best chunk
    read, and whether each pool was settled."""
    with monkeypatch.context() as patch:
        settled = _settled(patch)
        quick = _answers(memory, asked)
    with monkeypatch.context() as patch:
        _read_whole(patch)
        whole = _answers(memory, asked)
    return quick, whole, settled


def test_the_exact_chunks_of_the_lead_settle_a_one_word_search(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stems rank first, the word as written is in most chunks; some are of deleted notes or
    of another scope, one note is cut into several chunks: the first ten are those of the
    whole read, and were settled by the best chunks alone."""
    for n in range(10):
        memory.save(f"Stem {n}", f"lighthouses lighthouses {n}", scope="project:a")
    kept = []
    for n in range(140):
        words = " ".join(["the lighthouse keeper wrote"] + ["in the log"] * (n % 7))
        kept.append(memory.save(f"Keeper {n}", f"{words} {n}", scope=f"project:{'ab'[n % 5 == 0]}"))
    long = " ".join(f"Paragraph {n}: the lighthouse stood on the rock." for n in range(300))
    memory.save("Long", long, scope="project:a")
    memory._upkeep.drain()
    for note in kept[:40:4]:
        memory.delete(note["id"])
    memory._upkeep.drain()  # both ways see the same store
    asked = [
        {"query": "lighthouse", "limit": 10},
        {"query": "lighthouse", "limit": 10, "scope": "project:a"},
        {"query": "LIGHTHOUSE", "limit": 60},
        {"query": "lighthouse", "limit": 10, "mode": "all"},
    ]
    quick, whole, settled = _both_ways(memory, monkeypatch, asked)
    assert quick == whole
    assert settled and all(settled)
    assert all(len(found) == options["limit"] for found, options in zip(quick, asked, strict=True))


def test_a_text_past_ascii_beyond_the_lead_still_comes_first(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two words, held together by no chunk the index names: of the chunks past the lead only
    those past ASCII are read, and one of them holds both words as written (a private-use
    character glues onto "quay" for the index, not for Python). Ranked 151st, it comes first,
    as when every chunk is read. (PostgreSQL reads them all: its index names none.)"""
    for n in range(150):
        memory.save(f"Log {n}", f"harbour log {n}")
    odd = memory.save("Odd", "long ago the old harbour by the sea had a \ue000quay in it")["id"]
    memory._upkeep.drain()
    quick, whole, settled = _both_ways(memory, monkeypatch, [{"query": "harbour quay"}])
    assert quick == whole
    assert quick[0][0][0] == odd
    with memory._store.read() as tx:  # PostgreSQL's index names no chunk (decision 0054)
        assert settled == [tx.dialect == "sqlite"]


def test_a_lead_the_filters_leave_out_is_read_on(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The best 100 chunks are of another scope; past them, notes of plain ASCII rank above
    notes past ASCII (the only ones read with the named chunks): the ASCII ones, not read yet,
    come first all the same."""
    for n in range(120):
        memory.save(f"Log {n}", f"harbour log {n}", scope="project:b")
    plain = [
        memory.save(f"Log {n}", f"harbour log entry {n}", scope="project:a") for n in range(20)
    ]
    for n in range(60):
        memory.save(f"Log {n}", f"harbour log entry caf\u00e9 {n}", scope="project:a")
    memory._upkeep.drain()
    asked = [{"query": "harbour quay", "scope": "project:a"}]
    quick, whole, settled = _both_ways(memory, monkeypatch, asked)
    assert quick == whole
    found = [hit[0] for hit in quick[0]]
    assert len(found) == 10 and set(found) <= {note["id"] for note in plain}
    assert settled == [False] * len(settled)


def test_a_one_word_search_reads_the_lead_alone(
    file_memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Of 300 chunks holding the word as written, the best 100 are read (2 x 50 candidates),
    once each; a search with a turn in the memory reads all 300 at once."""
    for n in range(300):
        file_memory.save(f"Harbour {n}", f"the harbour log, day {n}")
    file_memory._upkeep.drain()

    def read(query: str) -> list[int]:
        with statements_run(monkeypatch) as seen:
            file_memory.search(query, stages=["lexical"], limit=10)
        flat = [(" ".join(sql.split()), params) for sql, params in seen]
        return [len(p) for sql, p in flat if all(part in sql for part in _READ_BY_ID)]

    lead = head.LEAD * 50
    assert sum(read("harbour")) <= lead + 5  # the ids, and the filters' few parameters
    file_memory.add_messages(
        "weekend", [{"speaker": "Ann", "text": "Hello", "date": "2024-03-02T10:00:00Z"}]
    )
    file_memory._upkeep.drain()
    assert len(read("harbour")) == 1 and sum(read("harbour")) > 300


def test_turns_the_viewer_may_read_keep_every_chunk_read(memory: recuerdo.Memory) -> None:
    """A message in the memory, or mail the viewer is a member of, may be rescored by its
    neighbours: every candidate counts. A search confined to notes has none."""
    from recuerdo.retrieval.filters import Filters

    def none_seen(view: recuerdo.Memory, **options: Any) -> bool:
        with view._store.read() as tx:
            return head.no_turns(tx, Filters.build(view.tenant, viewer=view.principal, **options))

    memory.save("Note", "a note")
    alice, bob = memory.agent("alice"), memory.agent("bob")
    assert none_seen(memory) and none_seen(alice)
    alice.bind_address("alice@local")
    bob.bind_address("bob@local")
    alice.send_message(["bob@local"], "Launch", "Is the launch on Monday?")
    assert not none_seen(bob) and none_seen(memory.agent("carol"))
    memory.add_messages("weekend", [{"speaker": "Ann", "text": "Hi", "date": "2024-03-02"}])
    assert not none_seen(memory) and none_seen(memory, types="note")


@pytest.mark.parametrize("seed", range(3))
def test_settled_pools_answer_as_every_chunk_read(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """Random notes of words and their stems (some long, cut into several chunks; some past
    ASCII; some deleted, some in another scope), random searches of one to three words, either
    mode, with and without a scope, limits around the lead: every answer is the one of the
    whole read."""
    rng = random.Random(seed)
    stems = ["walk", "walks", "walking", "walked", "walker", "Walk", "WALK"]
    words = ["harbour", "quay", "boat", "sail", "sails", "sea", "the", "\ue000boat", "café"]
    ids = []
    for n in range(260):
        size = rng.choice([3, 5, 8, 400 if n % 37 == 0 else 12])
        text = " ".join(rng.choice(stems + words) for _ in range(size))
        ids.append(memory.save(f"Note {n}", f"{text}.", scope=f"project:{'ab'[n % 4 == 0]}")["id"])
    memory._upkeep.drain()
    for gone in rng.sample(ids, 20):
        memory.delete(gone)
    memory._upkeep.drain()
    asked: list[dict[str, Any]] = []
    for _ in range(24):
        query = " ".join(
            rng.sample(["walk", "walking", "harbour", "boat", "sea", "the"], rng.randint(1, 3))
        )
        options: dict[str, Any] = {"query": query, "limit": rng.choice([1, 10, 50, 51, 100])}
        options["mode"] = rng.choice(["any", "all"])
        if rng.random() < 0.3:
            options["scope"] = "project:a"
        asked.append(options)
    quick, whole, settled = _both_ways(memory, monkeypatch, asked)
    assert quick == whole
    assert any(settled)
