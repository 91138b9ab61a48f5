"""A word search probes how far each word reaches once while the file is unchanged
(``store/sqlite/snapshot_memo.py``, decision 0053), and asks again after any commit."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import recuerdo
from recuerdo.store.sqlite import snapshot_memo
from recuerdo.store.sqlite.driver import sqlite3

from .conftest import statements_run

WORDS = ["note", "quokka"]  # "note" is in every chunk, "quokka" in three


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[recuerdo.Memory]:
    memory = recuerdo.open("memo", base_dir=tmp_path, embedder="none")
    memory.remember_many(
        [
            {"category": "learning", "content": f"the note {n} {'quokka' if n % 500 == 7 else ''}"}
            for n in range(1500)
        ]
    )
    memory._upkeep.drain()
    yield memory
    memory.close()


def _ranked(memory: recuerdo.Memory) -> tuple[list[tuple[int, float]], list[str]]:
    """The ranking of WORDS in one read, and the probes of word counts it sent."""
    with statements_run(pytest.MonkeyPatch()) as seen, memory._store.read() as tx:
        ranked = tx.text.rank(memory.tenant, WORDS, "any", 2000, 0)
    return ranked, [sql for sql, _ in seen if "LIMIT 1 OFFSET" in sql]


def _unremembered(memory: recuerdo.Memory) -> list[tuple[int, float]]:
    """The same ranking inside a write, whose reads keep no answers."""
    with memory._store.write() as tx:
        ranked: list[tuple[int, float]] = tx.text.rank(memory.tenant, WORDS, "any", 2000, 0)
    return ranked


def test_a_word_is_probed_once_while_the_file_is_unchanged(memory: recuerdo.Memory) -> None:
    first, first_probes = _ranked(memory)
    again, again_probes = _ranked(memory)
    assert first_probes, "the first ranking probes how far its words reach"
    assert again_probes == []
    assert again == first == _unremembered(memory)


def test_a_commit_makes_the_next_read_probe_again(memory: recuerdo.Memory) -> None:
    """ "quokka" was in three chunks (ranked in full beside "note"); after 1,000 more it is a
    broad word, windowed: the next read must not reuse the answers of the file before."""
    before, _ = _ranked(memory)
    memory.remember_many(
        [{"category": "learning", "content": f"a quokka {n}"} for n in range(1000)]
    )
    memory._upkeep.drain()
    after, probes = _ranked(memory)
    assert probes
    assert after == _unremembered(memory)
    assert after != before


def test_a_search_gives_the_same_results_with_answers_kept(memory: recuerdo.Memory) -> None:
    asked = [_search(memory, query) for query in ("note quokka", "quokka", "note", "note 7")]
    assert asked == [
        _search(memory, query) for query in ("note quokka", "quokka", "note", "note 7")
    ]
    assert all(asked)


def _search(memory: recuerdo.Memory, query: str) -> list[Any]:
    return [(hit["id"], hit["score"]) for hit in memory.search(query, limit=20)["results"]]


def test_the_answers_last_while_no_other_connection_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "file.db")
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("CREATE TABLE t (x)")
    reader = sqlite3.connect(path, isolation_level=None)
    memo = snapshot_memo.SnapshotMemo()

    def answers() -> dict[Any, Any]:
        reader.execute("BEGIN")
        try:
            return memo.answers(reader)
        finally:
            reader.execute("ROLLBACK")

    kept = answers()
    kept["question"] = 1
    assert answers() is kept
    writer.execute("INSERT INTO t VALUES (1)")
    assert answers() == {}
    monkeypatch.setattr(snapshot_memo, "MAX_ANSWERS", 2)
    full = answers()
    full.update(a=1, b=2)
    assert answers() == {}, "a full memo is dropped, not grown"
    reader.close()
    writer.close()


def test_a_read_transaction_keeps_answers_of_its_own_snapshot(tmp_path: Path) -> None:
    """The version is read inside the read transaction: a commit during it changes neither
    what the transaction sees nor the version its answers are kept under."""
    path = str(tmp_path / "file.db")
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("CREATE TABLE t (x)")
    reader = sqlite3.connect(path, isolation_level=None)
    memo = snapshot_memo.SnapshotMemo()
    reader.execute("BEGIN")
    kept = memo.answers(reader)
    writer.execute("INSERT INTO t VALUES (1)")
    assert reader.execute("SELECT count(*) FROM t").fetchone()[0] == 0
    kept["rows"] = 0
    reader.execute("ROLLBACK")
    reader.execute("BEGIN")
    assert memo.answers(reader) == {}
    assert reader.execute("SELECT count(*) FROM t").fetchone()[0] == 1
    reader.execute("ROLLBACK")
    reader.close()
    writer.close()
