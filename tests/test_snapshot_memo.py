"""A word search probes how far each word reaches once while the words index is unchanged
(``store/sqlite/snapshot_memo.py``, decision 0053), and asks again after a commit that
changes it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import recuerdo
from recuerdo.store.sqlite import snapshot_memo
from recuerdo.store.sqlite.connection import SQLiteTx
from recuerdo.store.sqlite.driver import FTS5_SECURE_DELETE, sqlite3

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


def test_a_search_gives_the_same_results_with_answers_kept(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second round answers from the answers the first kept; the expected results are
    those of the code before, which kept none."""
    queries = ("note quokka", "quokka", "note", "note 7")
    with monkeypatch.context() as before:
        before.setattr(SQLiteTx, "snapshot_answers", lambda tx: None)
        expected = [_search(memory, query) for query in queries]
    for _ in range(2):
        with statements_run(monkeypatch) as seen:
            found = [_search(memory, query) for query in queries]
    assert not [sql for sql, _ in seen if "LIMIT 1 OFFSET" in sql]
    assert found == expected
    assert all(expected)


def _search(memory: recuerdo.Memory, query: str) -> list[Any]:
    return [(hit["id"], hit["score"]) for hit in memory.search(query, limit=20)["results"]]


def test_a_forget_makes_the_next_read_probe_again(memory: recuerdo.Memory) -> None:
    before, _ = _ranked(memory)
    with memory._store.read() as tx:
        quokkas = [row[0] for row in tx.all("SELECT id FROM items WHERE content LIKE '%quokka%'")]
    for entry in quokkas:
        memory.forget(entry)
    after, probes = _ranked(memory)
    assert probes
    assert after == _unremembered(memory)
    assert after != before


def _newest_plain(memory: recuerdo.Memory) -> int:
    with memory._store.read() as tx:
        return int(tx.scalar("SELECT max(id) FROM items WHERE content NOT LIKE '%quokka%'"))


def _structure(memory: recuerdo.Memory) -> bytes:
    with memory._store.read() as tx:
        return bytes(tx.scalar("SELECT block FROM chunk_fts_data WHERE id = 10"))


@pytest.mark.skipif(not FTS5_SECURE_DELETE, reason="deletes in place need FTS5's secure-delete")
def test_a_forget_deleting_in_place_drops_the_answers(memory: recuerdo.Memory) -> None:
    """With secure-delete, a forget rewrites the index's pages in place and leaves its
    structure record as it was: only the averages record (one row fewer) tells. The newest
    plain note was the edge of "note"'s window of RANK_AT newest matches."""
    memory.forget(_newest_plain(memory))  # the first forget also writes the structure record
    before, _ = _ranked(memory)
    structure = _structure(memory)
    memory.forget(_newest_plain(memory))
    assert _structure(memory) == structure
    after, probes = _ranked(memory)
    assert probes
    assert after == _unremembered(memory)
    assert after != before


def test_a_commit_that_leaves_the_words_index_keeps_the_answers(
    memory: recuerdo.Memory,
) -> None:
    """Every search leaves an audit record, written by the upkeep a moment later: a commit
    like any other, which must not cost the next search its answers."""
    _ranked(memory)
    memory.search("note quokka")
    memory._audit.flush(memory._store)
    with memory._store.read() as tx:
        assert tx.scalar("SELECT count(*) FROM retrieval_audit") >= 1
    again, probes = _ranked(memory)
    assert probes == []
    assert again == _unremembered(memory)


@pytest.fixture
def index_file(tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    """A writer and a reader on one file holding a ``chunk_fts`` made by the statement a
    memory's own was made by, configured as a memory's (secure-delete where FTS5 has it)."""
    made = recuerdo.open("made", base_dir=tmp_path / "made", embedder="none")
    with made._store.read() as tx:
        statement = str(tx.scalar("SELECT sql FROM sqlite_master WHERE name = 'chunk_fts'"))
    made.close()
    path = str(tmp_path / "file.db")
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("CREATE TABLE t (x)")
    writer.execute(statement)
    if FTS5_SECURE_DELETE:  # as a memory's: a delete rewrites the pages in place
        writer.execute(_SECURE_DELETE)
    reader = sqlite3.connect(path, isolation_level=None)
    yield writer, reader
    reader.close()
    writer.close()


_ADD = "INSERT INTO chunk_fts (rowid, title, body, context) VALUES ({0})"
_SECURE_DELETE = "INSERT INTO chunk_fts (chunk_fts, rank) VALUES ('secure-delete', 1)"


def _answers(reader: Any, memo: snapshot_memo.SnapshotMemo) -> dict[Any, Any]:
    reader.execute("BEGIN")
    try:
        return memo.answers(reader)
    finally:
        reader.execute("ROLLBACK")


# A contentless table forgets a row by being told its words again (the 'delete' command).
_FORGET = "INSERT INTO chunk_fts (chunk_fts, rowid, title, body, context) VALUES ('delete', {0})"


@pytest.mark.parametrize(
    "change",
    [
        _ADD.format("2, '', 'more words', ''"),
        _FORGET.format("1, '', 'words', ''"),
        _ADD.format("2, '', 'words', ''"),  # the same tokens again
        "INSERT INTO chunk_fts (chunk_fts) VALUES ('delete-all')",
        # A chunk cut again to the same words under the same id: the counts are as they were.
        _FORGET.format("1, '', 'words', ''") + "; " + _ADD.format("1, '', 'words', ''"),
        # The whole index emptied and filled again with as many words: the schema's version.
        "DROP TABLE chunk_fts; {made}; {configured}" + _ADD.format("1, '', 'pears', ''"),
    ],
    ids=["added", "forgotten", "same-words", "delete-all", "cut-again", "made-again"],
)
def test_a_change_of_the_words_index_drops_the_answers(
    index_file: tuple[Any, Any], change: str
) -> None:
    """Each change moves FTS5's averages record or its structure record, whatever
    secure-delete does to the pages (the file's version moves with any commit)."""
    writer, reader = index_file
    writer.execute(_ADD.format("1, '', 'words', ''"))
    made = writer.execute("SELECT sql FROM sqlite_master WHERE name = 'chunk_fts'").fetchone()[0]
    memo = snapshot_memo.SnapshotMemo()
    kept = _answers(reader, memo)
    kept["question"] = 1
    assert _answers(reader, memo) is kept
    writer.execute("INSERT INTO t VALUES (1)")  # another table: the index is as it was
    assert _answers(reader, memo) == {"question": 1}
    configured = f"{_SECURE_DELETE}; " if FTS5_SECURE_DELETE else ""
    writer.executescript(f"BEGIN; {change.format(made=made, configured=configured)}; COMMIT;")
    assert _answers(reader, memo) == {}


def test_a_full_memo_is_dropped(
    index_file: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, reader = index_file
    monkeypatch.setattr(snapshot_memo, "MAX_ANSWERS", 2)
    memo = snapshot_memo.SnapshotMemo()
    _answers(reader, memo).update(a=1, b=2)
    assert _answers(reader, memo) == {}


def test_a_read_transaction_keeps_answers_of_its_own_snapshot(
    index_file: tuple[Any, Any],
) -> None:
    """The version is read inside the read transaction: a commit during it changes neither
    what the transaction sees nor the version its answers are kept under."""
    writer, reader = index_file
    memo = snapshot_memo.SnapshotMemo()
    reader.execute("BEGIN")
    kept = memo.answers(reader)
    writer.execute(_ADD.format("1, '', 'words', ''"))
    assert reader.execute("SELECT count(*) FROM chunk_fts_data").fetchone()[0] == 2
    kept["rows"] = 0
    reader.execute("ROLLBACK")
    assert _answers(reader, memo) == {}
    assert reader.execute("SELECT count(*) FROM chunk_fts_data").fetchone()[0] > 2
