"""The words each retrieval audit record asked for, kept beside it (decision 0068). A forget
finds the records that asked for a forgotten word through them, instead of reading every
record the tenant kept; the words go with their record; the step that made the table finds
the words of the records kept before it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import recuerdo
from recuerdo.store.audit_sweep import EMPTY
from recuerdo.store.audit_words import STEP, TABLE, digest_of
from recuerdo.store.base import Store
from recuerdo.store.postgres import PostgresStore
from recuerdo.store.sqlite import SQLiteStore
from recuerdo.store.sqlite.recover import recover_file
from recuerdo.store.sqlite.schema import SCHEMA

from .conftest import audit_kept, statements_run, tx_class_of
from .postgres import contract_url, unique_memory


def _queries(memory: recuerdo.Memory) -> list[str]:
    return audit_kept(memory)


def _kept_words(memory: recuerdo.Memory) -> dict[str, set[bytes]]:
    """Each record's query, and the digests of the words kept for it."""
    with memory._store.read() as tx:
        rows = tx.all(
            f"SELECT a.query, w.digest FROM {TABLE} w JOIN retrieval_audit a"
            " ON a.tenant = w.tenant AND a.id = w.audit_id WHERE w.tenant = 'local'"
        )
        orphans = tx.scalar(
            f"SELECT count(*) FROM {TABLE} w WHERE NOT EXISTS"
            " (SELECT 1 FROM retrieval_audit a WHERE a.tenant = w.tenant AND a.id = w.audit_id)"
        )
    assert orphans == 0
    words: dict[str, set[bytes]] = {}
    for row in rows:
        words.setdefault(row["query"], set()).add(bytes(row["digest"]))
    return words


def _digests(*words: str) -> set[bytes]:
    return {digest_of(word) for word in words}


def test_a_forget_finds_the_records_by_their_words_and_reads_none(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading the tenant's every record made a forget's cost grow with the audit, which
    keeps 90 days of searches."""
    memory.remember("learning", "the harbour cranes lift containers at dawn")
    memory.search("what is quorbelax")  # before the text is there: it returned nothing
    asked = [f"harbour matter {n}" for n in range(40)]
    for query in asked:
        memory.search(query)
    gone = memory.remember("learning", "Quorbelax is the vault codename")
    memory._upkeep.drain()
    memory.audit()
    with statements_run(monkeypatch, tx_class_of(memory)) as seen:
        assert memory.forget(gone)
    read = [sql for sql, _ in seen if "retrieval_audit" in sql and "query" in sql]
    assert [sql for sql in read if "query" in sql.removeprefix(EMPTY)] == []  # none is read
    assert _queries(memory) == asked


def test_a_records_words_are_kept_beside_it_and_go_with_it(memory: recuerdo.Memory) -> None:
    """The words of the query and of the filters' values, four letters or more, in lower case;
    not the filters' names."""
    entry = memory.remember("learning", "Harbour cranes lift containers at dawn")
    memory.search("Harbour CRANES at dawn", tags=["Zürichwald"], status="archived")
    memory.search("dawn")
    memory._upkeep.drain()
    memory.audit()
    assert _kept_words(memory) == {
        "Harbour CRANES at dawn": _digests("harbour", "cranes", "dawn", "zürichwald", "archived"),
        "dawn": _digests("dawn"),
    }
    assert memory.forget(entry)  # both records returned it: both go, and their words
    assert _queries(memory) == []
    assert _kept_words(memory) == {}


def test_a_word_of_any_length_is_kept_and_found(memory: recuerdo.Memory) -> None:
    """A query may be one long word (a pasted blob, a run of CJK text): PostgreSQL refuses an
    index entry past 2,704 bytes, so a word kept as itself stopped every later flush."""
    long_word = "quor" + "belax" * 1200
    memory.recall(search=long_word)
    memory.search("東京の港" * 400)
    memory.search("unrelated matters")
    gone = memory.remember("learning", f"{long_word} is the vault codename")
    memory._upkeep.drain()
    memory.audit()  # flushed
    assert _kept_words(memory)[long_word] == _digests(long_word)
    assert memory.forget(gone)
    assert _queries(memory) == ["東京の港" * 400, "unrelated matters"]


def test_recover_finds_the_words_of_the_records_it_copies(base: Path) -> None:
    """The words are found again from the records recovered, whether the damaged store kept
    them or was made before the step: copied as they were, a store from before the step
    could not be recovered at all."""
    with _opened_at("sqlite", base, "", SCHEMA.names().index(STEP)) as memory:
        memory.search("what is quorbelax")
        memory.search("unrelated matters")
        memory.audit()
    recover_file(base / "old.db", base / "recovered.db")
    store = SQLiteStore(str(base / "recovered.db"))
    try:
        with recuerdo.open("recovered", store=store, embedder="none") as memory:
            assert _kept_words(memory) == {
                "what is quorbelax": _digests("what", "quorbelax"),
                "unrelated matters": _digests("unrelated", "matters"),
            }
            gone = memory.remember("learning", "Quorbelax is the vault codename")
            memory._upkeep.drain()
            assert memory.forget(gone)
            assert _queries(memory) == ["unrelated matters"]
    finally:
        store.close()


@contextmanager
def _opened_at(kind: str, base: Path, name: str, steps: int | None) -> Iterator[recuerdo.Memory]:
    """A memory on a store of ``kind`` at its first ``steps`` schema steps (None: all)."""
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
def test_the_step_finds_the_words_of_the_records_kept_before_it(base: Path, kind: str) -> None:
    """A store from before the step audits and forgets as it did, and the step writes the
    words of the records it kept."""
    name = unique_memory("words")
    before = SCHEMA.names().index(STEP)
    try:
        with _opened_at(kind, base, name, before) as memory:
            for query in ("what is quorbelax", "what is zephyrine", "unrelated matters"):
                memory.search(query)
            kept = memory.remember("learning", "Quorbelax is the vault codename")
            gone = memory.remember("learning", "Zephyrine guards the vault")
            memory._upkeep.drain()
            memory.audit()
            assert memory.forget(gone)  # the records are read, as before the step
            assert _queries(memory) == ["what is quorbelax", "unrelated matters"]
        with _opened_at(kind, base, name, None) as memory:
            assert _kept_words(memory) == {
                "what is quorbelax": _digests("what", "quorbelax"),
                "unrelated matters": _digests("unrelated", "matters"),
            }
            assert memory.forget(kept)
            assert _queries(memory) == ["unrelated matters"]
    finally:
        if kind == "postgres":
            PostgresStore(contract_url(), name).drop()
