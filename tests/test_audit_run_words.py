"""A search for part of a run of a script written without spaces leaves the audit with the
only text holding it, as a search for a Latin word does (decision 0176): the record asked
for the run's pairs, which the forget looks for; the step m050 finds them for the records
kept before it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import recuerdo
from recuerdo.store import audit_words
from recuerdo.store.audit_run_words import STEP
from recuerdo.store.audit_sweep import LIVE
from recuerdo.store.base import Store
from recuerdo.store.postgres import PostgresStore
from recuerdo.store.sqlite import SQLiteStore
from recuerdo.store.sqlite.schema import SCHEMA

from .conftest import audit_kept
from .postgres import contract_url, unique_memory

CASES = [
    ("Body quorveltax and more", "quorveltax"),  # the rule the others follow
    ("今天我们喝茶然后去公园", "喝茶然后"),
    ("きょうはおちゃをのみました", "おちゃを"),
    ("ฉันชอบดื่มชาเย็นทุกวัน", "ชาเย็น"),
    ("ພວກເຮົາດື່ມຊາເຢັນ", "ຊາເຢັນ"),  # Lao
    # A Latin word against a run is a word of its own to a search (index/words.py), as
    # Chinese and Japanese are written: the text's word was the two as one (a review).
    ("我的iPhone手机坏了", "iPhone"),
    ("iPhoneを買った", "iPhone"),
    ("ｉＰｈｏｎｅ手机", "iPhone"),
]


def _words(memory: recuerdo.Memory, tenant: str = "local") -> set[tuple[Any, ...]]:
    with memory._store.read() as tx:
        rows = tx.all(
            f"SELECT tenant, digest, audit_id FROM {audit_words.TABLE} WHERE tenant = ?",
            (tenant,),
        )
    return {(row["tenant"], bytes(row["digest"]), row["audit_id"]) for row in rows}


def _flushed(memory: recuerdo.Memory, tenant: str = "local") -> set[tuple[Any, ...]]:
    """The rows a flush writes for each record a read shows."""
    with memory._store.read() as tx:
        rows = tx.all(
            f"SELECT tenant, id, query, filters FROM retrieval_audit WHERE tenant = ? AND {LIVE}",
            (tenant,),
        )
    return {
        word
        for row in rows
        for word in audit_words.word_rows(row["tenant"], row["id"], row["query"], row["filters"])
    }


@pytest.mark.parametrize(("written", "asked"), CASES)
def test_a_search_for_part_of_a_forgotten_run_leaves_the_audit_with_its_words(
    memory: recuerdo.Memory, written: str, asked: str
) -> None:
    """The record kept the run it asked as one word, and the forgotten text held a longer
    run: no word matched, and the search stayed in the audit after the note was erased."""
    memory.save("Other", "Lunch with the harbour crew")
    memory.search(asked)  # before the note: it found nothing, but named its words
    memory.search("harbour crew")
    note = memory.save("Plan", written)["id"]
    memory._upkeep.drain()
    assert [hit["id"] for hit in memory.search(asked)["results"]] == [note]  # control
    memory._upkeep.drain()
    assert audit_kept(memory) == [asked, "harbour crew", asked]
    memory.delete(note, hard=True)
    memory._upkeep.drain()
    assert audit_kept(memory) == ["harbour crew"]
    assert _words(memory) == _flushed(memory)  # none of the dropped records' words left


@pytest.mark.parametrize(
    ("gone", "held", "asked"),
    [
        ("今天我们喝茶然后去公园", "我们喝茶吧", "我们喝茶"),
        ("ฉันชอบดื่มชาเย็นทุกวัน", "ชาเย็นอร่อยมาก", "ชาเย็น"),
    ],
)
def test_a_search_for_pairs_another_note_holds_stays(
    memory: recuerdo.Memory, gone: str, held: str, asked: str
) -> None:
    memory.search(asked)
    note = memory.save("Plan", gone)["id"]
    memory.save("Other", held)
    memory._upkeep.drain()
    memory.delete(note, hard=True)
    memory._upkeep.drain()
    assert audit_kept(memory) == [asked]


@pytest.mark.parametrize(("gone", "held"), [("My iPhone broke", "新的手机")])
def test_a_search_for_a_latin_word_against_a_run_leaves_with_the_only_text_holding_it(
    memory: recuerdo.Memory, gone: str, held: str
) -> None:
    """The search asked for "iphone" or the pair: the only text holding the first is gone."""
    memory.search("iPhone手机")
    note = memory.save("Plan", gone)["id"]
    memory.save("Other", held)
    memory._upkeep.drain()
    memory.delete(note, hard=True)
    memory._upkeep.drain()
    assert audit_kept(memory) == []


@contextmanager
def _opened_at(kind: str, base: Path, name: str, steps: int | None) -> Iterator[recuerdo.Memory]:
    store: Store
    if kind == "postgres":
        store = PostgresStore(contract_url(), name, steps=steps)
    else:
        store = SQLiteStore(str(base / "old.db"), steps=steps)
    try:
        with recuerdo.open("old", store=store, embedder="none") as memory:
            yield memory
    finally:
        store.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_the_step_finds_the_pairs_of_the_records_kept_before_it(
    base: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Records flushed before the step kept their runs whole: after it they hold the rows a
    flush writes now (each tenant's, none for an emptied record), and a forget drops them."""
    name = unique_memory("runs")
    try:
        with monkeypatch.context() as old:
            old.setattr(audit_words, "run_words", lambda text: set())  # the words before m050
            with _opened_at(kind, base, name, SCHEMA.names().index(STEP)) as memory:
                other = memory.for_tenant("ann")
                for query in ("喝茶然后", "ชาเย็น", "unrelated matters", "公园", "图书馆"):
                    memory.search(query)
                memory.search("Zorbix会议")  # a word against a run: its own word (a review)
                memory.search("matters", tags=["おちゃを"])
                other.search("喝茶然后")
                # A record a forget emptied: it asks for nothing any more.
                seen = memory.save("Seen", "かいぎしつのよやく")["id"]
                memory._upkeep.drain()
                memory.search("かいぎしつ")
                memory.delete(seen, hard=True)
                notes = [
                    memory.save("Plan", text)["id"]
                    for text in (
                        "今天我们喝茶然后去公园",
                        "ฉันชอบดื่มชาเย็นทุกวัน",
                        "おちゃをのみました",
                        "Zorbix release",
                    )
                ]
                memory._upkeep.drain()
                memory.audit()
                before = _words(memory)
        # Control: the old rows lack the pairs.
        assert audit_words.digest_of("喝茶") not in {digest for _, digest, _ in before}
        with _opened_at(kind, base, name, None) as memory:
            assert _words(memory) == _flushed(memory) > before
            assert _words(memory, "ann") == _flushed(memory, "ann")
            for note in notes:
                memory.delete(note, hard=True)
            memory._upkeep.drain()
            assert audit_kept(memory) == ["unrelated matters", "图书馆"]  # 公园: a pair
            assert audit_kept(memory, tenant="ann") == ["喝茶然后"]  # another tenant's search
            assert _words(memory) == _flushed(memory)
    finally:
        if kind == "postgres":
            PostgresStore(contract_url(), name).drop()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_the_step_takes_records_flushed_with_their_pairs_at_an_older_schema(
    base: Path, kind: str
) -> None:
    """A store opened at an older schema (a restore's) is flushed by this version, pairs
    included, before it takes the step: the step stopped on the rows already there."""
    name = unique_memory("runs")
    try:
        with _opened_at(kind, base, name, SCHEMA.names().index(STEP)) as memory:
            memory.search("喝茶然后")
            memory.audit()
        with _opened_at(kind, base, name, None) as memory:
            assert _words(memory) == _flushed(memory)
    finally:
        if kind == "postgres":
            PostgresStore(contract_url(), name).drop()


def test_the_lookup_finds_the_asked_digests_among_thousands(memory: recuerdo.Memory) -> None:
    """``asked_among`` a statement of 500 at a time (PostgreSQL: each 500 as one value its
    server cuts into digests): what was asked is found wherever it stands among them."""
    for query in ("喝茶然后", "quorveltax"):
        memory.search(query)
    memory.audit()
    asked = [audit_words.digest_of(word) for word in ("喝茶", "然后", "quorveltax")]
    others = sorted(audit_words.digest_of(f"w{i}") for i in range(1200))
    digests = [asked[0], *others[:499], asked[1], *others[499:], asked[2]]
    with memory._store.read() as tx:
        assert audit_words.asked_among(tx, "local", digests) == set(asked)
        assert audit_words.asked_among(tx, "local", []) == set()
        assert audit_words.asked_among(tx, "ann", digests) == set()
