"""Words inside runs of Han, Kana and Hangul, and emoji, are found on every backend
(decision 0147).

Both word indexes cut words at spaces: "今天我们喝茶然后去公园" was one word, so neither "喝茶"
nor "公园" found the note, and an emoji was no word at all. Each run is now indexed as its
character pairs and characters, each symbol as a word of its own, at index and query time
alike, and a store written before the step (m045) finds them once opened.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import recuerdo
from recuerdo.index.words import query_words
from recuerdo.store.postgres.word_folds import fold
from recuerdo.store.sqlite.connection import SQLiteStore
from recuerdo.store.sqlite.schema import SCHEMA

from .conftest import rewrite_postgres_words
from .test_audit_words import _opened_at

NOTES = {
    "Tea": "今天我们喝茶然后去公园",
    "Sushi": "東京で寿司を食べた",
    "Korean": "오늘 차를 마셨다",
    "Party": "party 🎉 tonight",
    "Plain": "Lunch with the harbour crew",
}
FOUND = [
    ("喝茶", "Tea"),
    ("茶", "Tea"),
    ("去公园", "Tea"),
    ("今天我们喝茶然后去公园", "Tea"),
    ("寿司", "Sushi"),
    ("寿司を食べ", "Sushi"),
    ("東京", "Sushi"),
    ("차", "Korean"),
    ("마셨", "Korean"),
    ("🎉", "Party"),
    ("harbour", "Plain"),
]


@pytest.fixture(autouse=True)
def words_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECUERDO_EMBEDDER", "none")


def _saved(memory: recuerdo.Memory) -> int:
    """The notes saved and cut into chunks; the id of "Tea"."""
    ids = {title: int(memory.save(title, text, key=title)["id"]) for title, text in NOTES.items()}
    memory._upkeep.drain()
    return ids["Tea"]


def _titles(memory: recuerdo.Memory, query: str, mode: str = "any") -> list[str]:
    reply = memory.search(query, mode=mode, stages=["lexical"])
    return sorted(hit["title"] for hit in reply["results"])


@pytest.mark.parametrize(("query", "title"), FOUND)
def test_a_word_inside_a_run_or_an_emoji_is_found(
    memory: recuerdo.Memory, query: str, title: str
) -> None:
    _saved(memory)
    assert _titles(memory, query) == [title]
    pack = memory.context(query)
    assert pack["state"] == "answered"
    assert [source["title"] for source in pack["sources"]] == [title]


@pytest.mark.parametrize("query", ["喝公园", "茶喝", "京東", "🎈"])
def test_characters_of_a_run_not_side_by_side_find_nothing(
    memory: recuerdo.Memory, query: str
) -> None:
    _saved(memory)
    assert _titles(memory, query) == []


def test_a_run_is_one_word_among_the_others(memory: recuerdo.Memory) -> None:
    _saved(memory)
    assert _titles(memory, "harbour 喝茶 🎉") == ["Party", "Plain", "Tea"]
    assert _titles(memory, "party 🎉", mode="all") == ["Party"]
    assert _titles(memory, "party 喝茶", mode="all") == []


@pytest.mark.parametrize(("query", "title"), [("喝茶", "Tea"), ("🎉", "Party"), ("公园", "Tea")])
def test_a_note_not_cut_yet_is_found(memory: recuerdo.Memory, query: str, title: str) -> None:
    """Saved a moment ago, before the upkeep cut it into chunks: the search reads its text,
    where a run's word stands between other letters and an emoji between letters."""
    memory._upkeep.stop(drain=False)
    memory.save("Tea", NOTES["Tea"])
    memory.save("Party", "party🎉tonight")
    memory.save("Plain", NOTES["Plain"])
    assert [hit["title"] for hit in memory.search(query)["results"]] == [title]


@pytest.mark.parametrize(("query", "content"), [("喝茶", NOTES["Tea"]), ("🎉", NOTES["Party"])])
def test_entries_are_found_by_search_and_recall(
    memory: recuerdo.Memory, query: str, content: str
) -> None:
    entry = memory.remember("context", content)
    memory.remember("context", "Lunch with the harbour crew")
    memory._upkeep.drain()
    hits = memory.search(query, stages=["lexical"])["results"]
    assert [hit["id"] for hit in hits] == [entry]
    assert [found["id"] for found in memory.recall(search=query)] == [entry]


def test_forgetting_a_run_takes_its_words_out_of_the_index(memory: recuerdo.Memory) -> None:
    """The delete triggers tell the index the words it was given: none is left behind."""
    tea = _saved(memory)
    memory.save("Tea", "今天我们去公园", key="Tea")  # re-cut: the old chunk's words go stale
    memory._upkeep.drain()
    assert _titles(memory, "喝茶") == []
    assert _titles(memory, "公园") == ["Tea"]
    memory.delete(tea, hard=True)
    memory._upkeep.drain()
    assert _titles(memory, "公园") == []
    assert _titles(memory, "寿司") == ["Sushi"]
    assert memory._store.check()["ok"]
    if isinstance(memory._store, SQLiteStore):  # erased from the index pages, not just unseen
        with memory._store.read() as tx:
            pages = [bytes(row["block"]) for row in tx.all("SELECT block FROM chunk_fts_data")]
        assert not any("茶".encode() in page or "园".encode() in page for page in pages)


STEP = "m045_unspaced_words"


@pytest.mark.parametrize("old_store", ["sqlite", "postgres"], indirect=True)
def test_a_store_written_before_the_step_finds_runs_after_it(
    base: Path, old_store: tuple[str, str]
) -> None:
    kind, name = old_store
    with _opened_at(kind, base, name, SCHEMA.names().index(STEP)) as memory:
        tea = _saved(memory)
        # A note edited after its chunking: its old chunk's words stay, listed as stale.
        memory._upkeep.stop(drain=False)
        memory.save("Tea", "今天我们喝茶然后去公园。明天再去", key="Tea")
        memory._upkeep.drain(tasks=memory._upkeep._tasks)
        if kind == "postgres":
            # Folded, not spelled out: the code before 0147 (SQLite's store at the older step
            # writes them so itself).
            rewrite_postgres_words(memory, lambda text: None if text is None else fold(text))
        assert _titles(memory, "喝茶") == []
        assert _titles(memory, "🎉") == []
        assert _titles(memory, "harbour") == ["Plain"]
    with _opened_at(kind, base, name, None) as memory:
        for query, title in FOUND:
            assert _titles(memory, query) == [title], query
        assert _titles(memory, "明天") == ["Tea"]
        memory.delete(tea, hard=True)
        assert _titles(memory, "喝茶") == []
        assert memory._store.check()["ok"]


def test_a_restored_memory_finds_runs_and_forgets_them(base: Path) -> None:
    """A restore fills SQLite's words index again from the archive's texts: spelled, as the
    delete triggers then say them."""
    from recuerdo.engine import restore_memory

    with recuerdo.open("original", base_dir=base) as memory:
        _saved(memory)
        memory.backup(base / "memory.rbk")
    restore_memory("copy", base / "memory.rbk", base_dir=base)
    with recuerdo.open("copy", base_dir=base) as copy:
        copy._upkeep.drain()
        for query, title in FOUND:
            assert _titles(copy, query) == [title], query
        tea = copy.search("喝茶")["results"][0]["id"]
        copy.delete(tea, hard=True)
        assert _titles(copy, "喝茶") == []
        assert copy._store.check()["ok"]


# -- the spelling itself (imported here: the tests above run on the code before it) --------

_LETTERS = st.sampled_from("今天我们喝茶公园東京で寿司を食べたカタカナー오늘차를마셨다々")


@settings(max_examples=300, deadline=None)
@given(st.text(_LETTERS, min_size=1, max_size=12), st.data())
def test_every_substring_of_a_run_asks_for_words_the_run_holds(
    run: str, data: st.DataObject
) -> None:
    from recuerdo.store import unspaced

    start = data.draw(st.integers(0, len(run) - 1))
    stop = data.draw(st.integers(start + 1, len(run)))
    held = set(unspaced.indexed_text(f"x {run} y").split())
    [term] = query_words(run[start:stop]).terms
    assert set(unspaced.query_forms(term)) <= held


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(blacklist_categories=["So", "Lo", "Lm", "Nl", "Cs"])))
def test_text_without_runs_or_symbols_is_indexed_as_it_is(text: str) -> None:
    from recuerdo.store import unspaced

    assert unspaced.indexed_text(text) == text
    assert all(unspaced.query_forms(term) == [term] for term in query_words(text).terms)


def test_symbols_and_runs_part_from_the_letters_beside_them() -> None:
    from recuerdo.store import unspaced

    assert query_words("party🎉tonight iPhone15を買った").terms == [
        "party",
        "🎉",
        "tonight",
        "iphone15",
        "を買った",
    ]
    assert unspaced.indexed_text("a🎉b") == f"a {unspaced.SYMBOL_WORD}127881 b"
    assert unspaced.indexed_text("喝茶了").split() == ["喝茶", "茶了", "喝", "茶", "了"]


@pytest.mark.parametrize(
    ("then_text", "query"), [("我们在北码头喝茶", "喝茶"), ("party 🎉 at the quay", "🎉")]
)
def test_ask_at_an_earlier_instant_finds_a_run_or_emoji_by_its_words_then(
    memory: recuerdo.Memory, then_text: str, query: str
) -> None:
    """A note edited since is found by its words of then (then.py reads the earlier text with
    its own pattern: a run's word inside the run, or an emoji, must be found there too)."""
    import time

    from recuerdo.core.clock import now_iso

    note = memory.save("Ferry", then_text)["id"]
    time.sleep(0.01)
    then = now_iso()
    time.sleep(0.01)
    memory.edit(note, "replace", "Lunch with the harbour crew", title="Lunch")
    memory._upkeep.drain()
    passages = [p for p in memory.ask(query, as_of=then)["passages"] if p["doc_id"] == note]
    assert [p["citation"]["source"]["version"] for p in passages] == [1]
    assert query in passages[0]["text"]


def test_recover_drops_an_orphaned_chunk_of_a_run(base: Path) -> None:
    """recover's own connection deletes the chunks whose item was lost: their delete trigger
    calls ``recuerdo_words``, which that connection must have (it failed the whole recover,
    "no such function")."""
    from recuerdo.engine import recover_memory
    from recuerdo.store.sqlite.files import raw_connection

    with recuerdo.open("damaged", base_dir=base) as memory:
        tea = _saved(memory)
        path = memory._store.location
    conn = raw_connection(str(path))  # the item's row lost, its chunks left
    conn.execute("PRAGMA foreign_keys=OFF")
    conn.execute("DELETE FROM items WHERE id = ?", (tea,))
    conn.close()
    report = recover_memory("damaged", base / "recovered.db", base_dir=base)
    assert "chunks" in report["incomplete_tables"]
    with recuerdo.open("r", store=SQLiteStore(str(base / "recovered.db"))) as recovered:
        assert _titles(recovered, "喝茶") == []
        assert _titles(recovered, "寿司") == ["Sushi"]
        assert recovered._store.check()["ok"]


def test_a_connection_without_the_spelling_cannot_write_the_index(base: Path) -> None:
    """A process of a version before the step (no ``recuerdo_words``) still open on the file
    gave the index a new chunk's words unspelled: a later delete of that chunk by this version
    found the index damaged ("database disk image is malformed", the store marked damaged).
    Its chunk inserts and stale erasures now stop, as its chunk deletes did."""
    from recuerdo.store.sqlite.driver import sqlite3

    with recuerdo.open("guarded", base_dir=base) as memory:
        _saved(memory)
        memory.save("Tea", "今天我们去公园", key="Tea")  # a stale chunk left to erase
        memory._upkeep.drain(tasks=memory._upkeep._tasks)
        path = memory._store.location
    old = sqlite3.connect(str(path), isolation_level=None)
    try:
        for statement in (
            "INSERT INTO chunks SELECT * FROM chunks WHERE 0",
            "DELETE FROM chunk_fts_stale WHERE 0",
        ):
            # Since m048 the guards call ``recuerdo_folded_words`` (decision 0161), since m049
            # ``recuerdo_unmarked_words`` (0174), which such a process lacks as well.
            with pytest.raises(
                sqlite3.OperationalError, match=r"recuerdo_((folded|unmarked)_)?words"
            ):
                old.execute(statement)
    finally:
        old.close()
    with recuerdo.open("guarded", base_dir=base) as memory:
        assert _titles(memory, "公园") == ["Tea"]
        assert memory._store.check()["ok"]


def _as_ranges(codes: list[int]) -> list[tuple[int, int]]:
    ranges: list[tuple[int, int]] = []
    for code in codes:
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1] = (ranges[-1][0], code)
        else:
            ranges.append((code, code))
    return ranges


@pytest.mark.skipif(unicodedata.unidata_version != "14.0.0", reason="the table is Unicode 14's")
def test_the_fixed_table_is_what_its_unicode_gives_its_blocks() -> None:
    """``unspaced_table`` is written out, not computed: read from Unicode 14.0.0 as its
    docstring says, its letters are those of ``unspaced._BLOCKS``, its symbols every So past
    ASCII in planes 0 and 1."""
    from recuerdo.store import unspaced
    from recuerdo.store.unspaced_table import LETTERS, SYMBOLS

    def lettered(code: int) -> bool:
        category = unicodedata.category(chr(code))
        return category.startswith("L") or category == "Nl"

    letters = [code for first, last in unspaced._BLOCKS for code in range(first, last + 1)]
    assert unspaced._ranges(LETTERS) == _as_ranges([code for code in letters if lettered(code)])
    symbols = [code for code in range(0x80, 0x20000) if unicodedata.category(chr(code)) == "So"]
    assert unspaced._ranges(SYMBOLS) == _as_ranges(symbols)
