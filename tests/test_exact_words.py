"""The exact-word check of the lexical stage reads only the texts that may hold every query
word as written (decision 0054): those whose indexed words include them all, and any text
that is not ASCII."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import recuerdo
from recuerdo.index.words import written_words
from recuerdo.retrieval import exact
from recuerdo.retrieval.exact import holds_word
from recuerdo.store.sqlite.connection import SQLiteTx
from recuerdo.store.sqlite.driver import sqlite3
from recuerdo.store.sqlite.search import FTS5Text


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sqlite3.Connection]:
    """A connection holding a ``chunk_fts`` made by the statement a memory's own was made by."""
    base: Path = tmp_path_factory.mktemp("exact")
    memory = recuerdo.open("exact", base_dir=base, embedder="none")
    with memory._store.read() as tx:
        made = str(tx.scalar("SELECT sql FROM sqlite_master WHERE name = 'chunk_fts'"))
    memory.close()
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.row_factory = sqlite3.Row  # as a store's connections
    conn.execute(made)
    yield conn
    conn.close()


# Letters that porter's suffixes are made of, upper case, digits, and the characters where a
# word's edges are decided (NUL among them: ASCII for ``str.isascii``).
ASCII = st.lists(
    st.sampled_from([*"abcdeingsy", *"ABEIS", *"0129", *" _-.'\t\n\x00", "ing", "ed", "sses"]),
    max_size=16,
).map("".join)


@settings(
    max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=ASCII, query=ASCII)
def test_an_ascii_text_holding_the_words_as_written_holds_their_tokens(
    index: sqlite3.Connection, text: str, query: str
) -> None:
    words = written_words(query)
    if not words or not all(holds_word(text.lower(), word) for word in words):
        return
    index.execute("INSERT INTO chunk_fts (chunk_fts) VALUES ('delete-all')")
    index.execute(
        "INSERT INTO chunk_fts (rowid, title, body, context) VALUES (1, '', ?, '')", (text,)
    )
    tx = SQLiteTx(index, lambda _: None)
    assert tx.text.holding_every(words, [1]) == {1}


def test_only_broad_words_are_not_narrowed(index: sqlite3.Connection) -> None:
    """Words in RANK_AT chunks or more each: their AND would walk most of the span asked about
    to find most of the chunks, so every text is looked at instead."""
    index.execute("INSERT INTO chunk_fts (chunk_fts) VALUES ('delete-all')")
    index.executemany(
        "INSERT INTO chunk_fts (rowid, title, body, context) VALUES (?, '', ?, '')",
        [(n, f"project plan {n}" if n % 2 else f"project {n}") for n in range(1, 2202)],
    )
    text = FTS5Text(SQLiteTx(index, lambda _: None))
    assert text.holding_every(["project", "plan"], list(range(1, 600))) is None
    assert text.holding_every(["project", "2199"], list(range(1, 2202))) == {2199}
    assert text.holding_every(["plan", "7"], [5, 7, 9]) == {7}


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[recuerdo.Memory]:
    memory = recuerdo.open("exact", base_dir=tmp_path, embedder="none")
    yield memory
    memory.close()


def _texts_looked_at(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts the exact-word check looks for a word in (lower-cased), in order."""
    looked_at: list[str] = []
    holds = exact.holds_word

    def counted(text: str, word: str, *, whole: bool = True) -> bool:
        looked_at.append(text)
        return holds(text, word, whole=whole)

    monkeypatch.setattr(exact, "holds_word", counted)
    return looked_at


def test_a_search_looks_at_the_texts_that_may_hold_its_words(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory.remember_many(
        [{"category": "learning", "content": f"project note {n}"} for n in range(600)]
        + [{"category": "learning", "content": f"the quokka project {n}"} for n in range(3)]
    )
    memory._upkeep.drain()
    looked_at = _texts_looked_at(monkeypatch)
    found = memory.search("project quokka", limit=3)["results"]
    assert sorted(hit["preview"] for hit in found) == [f"the quokka project {n}" for n in range(3)]
    # The three holding both words, each for both words (before: the best 500).
    assert sorted(set(looked_at)) == [f"the quokka project {n}" for n in range(3)]


def test_a_text_past_ascii_is_still_checked_as_written(memory: recuerdo.Memory) -> None:
    """A private-use character glues onto a word for the index ("\\ue000enjoy" is one token)
    while Python's word edges end at it: such a text is looked at, and holds "enjoy" as
    written, so it comes before the stems' matches ("enjoyment"), which rank higher."""
    memory.remember_many(
        [{"category": "learning", "content": "music enjoyment enjoyment"} for _ in range(5)]
        + [{"category": "learning", "content": "long ago the music had \ue000enjoy in it"}]
    )
    memory._upkeep.drain()
    found = memory.search("enjoy music", limit=3)["results"]
    assert found[0]["preview"] == "long ago the music had \ue000enjoy in it"
