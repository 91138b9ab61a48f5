"""Fullwidth and halfwidth forms are the letters they stand for, on every backend and every
search that reads the word index (decision 0161).

"ＡＢＣ" (fullwidth Latin, common in CJK text) was a word of its own in both indexes: "abc"
did not find it, nor "123" "１２３", nor "カタカナ" the halfwidth "ｶﾀｶﾅ". Both the indexed
words and the asked ones now go through the width fold; the stored text is not changed, and a
store written before the step (m048) finds them once opened.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import recuerdo
from recuerdo.index.words import query_words
from recuerdo.store.postgres import PostgresStore
from recuerdo.store.postgres.word_folds import fold
from recuerdo.store.sqlite.schema import SCHEMA
from recuerdo.store.unspaced import indexed_text

from .conftest import rewrite_postgres_words
from .postgres import contract_url, unique_memory
from .test_audit_words import _opened_at

NOTES = {
    "Model": "ＡＢＣ１２３ は新しいモデルです",
    "Kana": "ｶﾀｶﾅ と ｶﾞｯｺｳ の話",
    "Shout": "ＨＥＬＬＯ　ＷＯＲＬＤ",
    "Plain": "Lunch with the harbour crew at 123 Quay Street",
}
FOUND = [
    ("abc123", ["Model"]),
    ("ＡＢＣ１２３", ["Model"]),
    ("ａｂｃ１２３", ["Model"]),
    ("カタカナ", ["Kana"]),
    ("ｶﾀｶﾅ", ["Kana"]),
    ("ガッコウ", ["Kana"]),
    ("hello world", ["Shout"]),
    ("ｈａｒｂｏｕｒ", ["Plain"]),
    ("１２３", ["Plain"]),
]


@pytest.fixture(autouse=True)
def words_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECUERDO_EMBEDDER", "none")


def _saved(memory: recuerdo.Memory) -> dict[str, int]:
    ids = {title: int(memory.save(title, text, key=title)["id"]) for title, text in NOTES.items()}
    memory._upkeep.drain()
    return ids


def _titles(memory: recuerdo.Memory, query: str, mode: str = "any") -> list[str]:
    reply = memory.search(query, mode=mode, stages=["lexical"])
    return sorted(hit["title"] for hit in reply["results"])


@pytest.mark.parametrize(("query", "titles"), FOUND)
def test_a_width_form_and_its_letter_find_each_other(
    memory: recuerdo.Memory, query: str, titles: list[str]
) -> None:
    _saved(memory)
    assert _titles(memory, query) == titles
    pack = memory.context(query)
    assert pack["state"] == "answered"
    assert sorted(source["title"] for source in pack["sources"]) == titles


def test_the_stored_text_is_kept_as_written(memory: recuerdo.Memory) -> None:
    ids = _saved(memory)
    for title, note in ids.items():
        assert memory.get(note)["content"] == NOTES[title]
    [hit] = memory.search("abc123")["results"]
    assert "ＡＢＣ１２３" in hit["preview"]


@pytest.mark.parametrize(("query", "title"), [("abc123", "Model"), ("カタカナ", "Kana")])
def test_a_note_not_cut_yet_is_found(memory: recuerdo.Memory, query: str, title: str) -> None:
    """Saved a moment ago, before the upkeep cut it into chunks: the search reads its text."""
    memory._upkeep.stop(drain=False)
    for name in ("Model", "Kana", "Plain"):
        memory.save(name, NOTES[name])
    assert [hit["title"] for hit in memory.search(query)["results"]] == [title]


def test_entries_are_found_by_search(memory: recuerdo.Memory) -> None:
    entry = memory.remember("context", "The build id is ＸＹＺ７７")
    memory.remember("context", "Lunch with the harbour crew")
    memory._upkeep.drain()
    assert [hit["id"] for hit in memory.search("xyz77", stages=["lexical"])["results"]] == [entry]


@pytest.mark.parametrize(
    ("then_text", "query"), [("Ordered part ＱＸ９ today", "qx9"), ("ｶﾀｶﾅ notes", "カタカナ")]
)
def test_ask_at_an_earlier_instant_finds_a_width_form_by_its_letters(
    memory: recuerdo.Memory, then_text: str, query: str
) -> None:
    """A note edited since is found by its words of then (then.py reads the earlier text)."""
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


def test_forgetting_a_width_form_takes_its_words_out_of_the_index(
    memory: recuerdo.Memory,
) -> None:
    """The delete triggers tell SQLite's contentless index the folded words it was given."""
    ids = _saved(memory)
    memory.save("Model", "ＡＢＣ９９９ は古いモデル", key="Model")  # re-cut: old words go stale
    memory._upkeep.drain()
    assert _titles(memory, "abc123") == []
    assert _titles(memory, "abc999") == ["Model"]
    memory.delete(ids["Model"], hard=True)
    memory.delete(ids["Kana"], hard=True)
    memory._upkeep.drain()
    assert _titles(memory, "abc999") == []
    assert _titles(memory, "カタカナ") == []
    assert _titles(memory, "harbour") == ["Plain"]
    assert memory._store.check()["ok"]


STEP = "m048_width_forms"


def _before_0161(text: str | None) -> str | None:
    """A text as PostgreSQL's words were computed from before the step (width forms kept)."""
    return None if text is None else indexed_text(fold(text))


@pytest.mark.parametrize("old_store", ["sqlite", "postgres"], indirect=True)
def test_a_store_written_before_the_step_finds_width_forms_after_it(
    base: Path, old_store: tuple[str, str]
) -> None:
    kind, name = old_store
    with _opened_at(kind, base, name, SCHEMA.names().index(STEP)) as memory:
        ids = _saved(memory)
        # A note edited after its chunking: its old chunk's words stay, listed as stale.
        memory._upkeep.stop(drain=False)
        memory.save("Kana", "ｶﾀｶﾅ と ｶﾞｯｺｳ の話。ﾏﾀﾈ", key="Kana")
        memory._upkeep.drain(tasks=memory._upkeep._tasks)
        if kind == "postgres":  # as the code before 0161 wrote them
            rewrite_postgres_words(memory, _before_0161)
        assert _titles(memory, "abc123") == []
        assert _titles(memory, "カタカナ") == []
        assert _titles(memory, "harbour") == ["Plain"]
    with _opened_at(kind, base, name, None) as memory:
        for query, titles in FOUND:
            assert _titles(memory, query) == titles, query
        assert _titles(memory, "マタネ") == ["Kana"]
        memory.delete(ids["Model"], hard=True)
        memory.delete(ids["Kana"], hard=True)
        memory._upkeep.drain()
        assert _titles(memory, "abc123") == []
        assert _titles(memory, "カタカナ") == []
        assert memory._store.check()["ok"]


@pytest.mark.parametrize("old_store", ["sqlite", "postgres"], indirect=True)
def test_the_step_refolds_many_rows_and_leaves_no_old_word(
    base: Path, old_store: tuple[str, str]
) -> None:
    """Past ERASE_ONE_BY_ONE rows SQLite's step marks the old words deleted and merges the
    index once: the old words are in no page after it, and the index is whole."""
    from recuerdo.store.sqlite.stale_words import ERASE_ONE_BY_ONE

    kind, name = old_store
    count = ERASE_ONE_BY_ONE + 6
    with _opened_at(kind, base, name, SCHEMA.names().index(STEP)) as memory:
        ids = [memory.save(f"Part {i}", f"ＰＡＲＴ{i:03d}ＺＱ stock")["id"] for i in range(count)]
        memory.save("Plain", "plain stock")
        memory._upkeep.drain()
        if kind == "postgres":
            rewrite_postgres_words(memory, _before_0161)
        assert _titles(memory, "part007zq") == []
    with _opened_at(kind, base, name, None) as memory:
        assert _titles(memory, "part007zq") == ["Part 7"]
        assert _titles(memory, "ＰＡＲＴ０４２ＺＱ") == ["Part 42"]
        assert len(memory.search("stock", limit=100, stages=["lexical"])["results"]) == count + 1
        memory.delete(ids[7], hard=True)
        memory._upkeep.drain()
        assert _titles(memory, "part007zq") == []
        assert memory._store.check()["ok"]
        if kind == "sqlite":
            with memory._store.read() as tx:
                blocks = tx.all("SELECT block FROM chunk_fts_data")
            pages = b"".join(bytes(row["block"]) for row in blocks)
            assert "ｐａｒｔ".encode() not in pages
            assert b"part007zq" not in pages


def test_a_connection_without_the_folding_cannot_write_the_index(base: Path) -> None:
    """A process of a version before the step (``recuerdo_words`` but not
    ``recuerdo_folded_words``) would take a fullwidth chunk's words out unfolded, and damage
    the index: its chunk inserts, deletes and stale erasures stop instead."""
    from recuerdo.store.sqlite.driver import sqlite3
    from recuerdo.store.unspaced import indexed_or_none

    with recuerdo.open("guarded", base_dir=base) as memory:
        ids = _saved(memory)
        memory.save("Model", "ＡＢＣ９９９", key="Model")  # a stale chunk left to erase
        memory._upkeep.drain(tasks=memory._upkeep._tasks)
        path = memory._store.location
    old = sqlite3.connect(str(path), isolation_level=None)
    old.create_function("recuerdo_words", 1, indexed_or_none, deterministic=True)
    try:
        for statement in (
            "INSERT INTO chunks SELECT * FROM chunks WHERE 0",
            "DELETE FROM chunk_fts_stale WHERE 0",
            f"DELETE FROM items WHERE id = {ids['Shout']}",
            "DELETE FROM chunks WHERE 0",
        ):
            # Since m049 they call ``recuerdo_unmarked_words`` (decision 0174), which such a
            # process lacks as well.
            with pytest.raises(sqlite3.OperationalError, match=r"recuerdo_(folded|unmarked)_words"):
                old.execute(statement)
    finally:
        old.close()
    with recuerdo.open("guarded", base_dir=base) as memory:
        assert _titles(memory, "hello") == ["Shout"]
        assert _titles(memory, "abc999") == ["Model"]
        assert memory._store.check()["ok"]


def test_a_restored_memory_finds_width_forms_and_forgets_them(base: Path) -> None:
    from recuerdo.engine import restore_memory

    with recuerdo.open("original", base_dir=base) as memory:
        _saved(memory)
        memory.backup(base / "memory.rbk")
    restore_memory("copy", base / "memory.rbk", base_dir=base)
    with recuerdo.open("copy", base_dir=base) as copy:
        copy._upkeep.drain()
        for query, titles in FOUND:
            assert _titles(copy, query) == titles, query
        model = copy.search("abc123")["results"][0]["id"]
        copy.delete(model, hard=True)
        assert _titles(copy, "abc123") == []
        assert copy._store.check()["ok"]


# -- the fold itself (imported here: the tests above run on the code before it) ------------

_WIDTH = "".join(chr(code) for code in range(0xFF01, 0xFFEF))
_TEXT = st.text(st.sampled_from(_WIDTH + "abcXYZ019 カタガッ今日\u3099\u309a\u3000"), max_size=24)


@settings(max_examples=400, deadline=None)
@given(_TEXT)
def test_the_fold_is_idempotent_and_a_step_of_nfkc(text: str) -> None:
    from recuerdo.store.width_forms import WIDTH_FORMS, fold_width

    once = fold_width(text)
    assert fold_width(once) == once
    # None left but a halfwidth sound mark that composes with nothing (kept as written).
    assert not any(ord(char) in WIDTH_FORMS for char in once if char not in "\uff9e\uff9f")
    # A step towards NFKC, never away: halfwidth Hangul stops at the compatibility jamo
    # Korean keyboards type (NFKC goes on to conjoining jamo, which compose into syllables).
    assert unicodedata.normalize("NFKC", once) == unicodedata.normalize("NFKC", text)
    assert "\u3000" in once or "\u3000" not in text


@pytest.mark.parametrize(
    ("text", "folded"),
    [
        ("ＡＢＣ１２３", "ABC123"),
        ("ｶﾞｯｺｳ", "ガッコウ"),
        ("ﾊﾟﾝ", "パン"),
        ("ｱﾞ０ﾞ ﾟ", "アﾞ0ﾞ ﾟ"),  # a sound mark that composes with nothing stays
        ("Apple™ 5㎏ ½ nº Ⅻ ﬁle x²", "Apple™ 5㎏ ½ nº Ⅻ ﬁle x²"),  # NFKC would change each
        ("今日\u3000明日", "今日\u3000明日"),
    ],
)
def test_the_fold_changes_width_forms_only(text: str, folded: str) -> None:
    from recuerdo.store.width_forms import fold_width

    assert fold_width(text) == folded


_WORDY = st.text(
    st.sampled_from("ＡＢＣＸｙｚ０１２ｶﾀﾅﾞﾟabcxyz012カタナ寿司"), min_size=1, max_size=10
)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_search_for_the_folded_text_finds_it(base: Path, kind: str) -> None:
    """search(fold(x)) finds x, and search(x) too; each note is then forgotten (its folded
    words taken out by the delete triggers), and the index is whole at the end."""
    from recuerdo.store.width_forms import fold_width

    name = unique_memory("widthprop")
    store = PostgresStore(contract_url(), name) if kind == "postgres" else None
    try:
        with recuerdo.open("p", base_dir=base, store=store, embedder="none") as memory:
            memory.save("Other", "nothing alike here")

            @settings(max_examples=40, deadline=None)
            @given(_WORDY)
            def finds(text: str) -> None:
                if not query_words(text).terms:
                    return
                note = memory.save("N", f"before {text} after")["id"]
                memory._upkeep.drain()
                for query in (fold_width(text), text):
                    hits = memory.search(query, mode="all", stages=["lexical"])["results"]
                    assert [hit["id"] for hit in hits] == [note], ascii(query)
                memory.delete(note, hard=True)
                memory._upkeep.drain()

            finds()
            assert memory._store.check()["ok"]
    finally:
        if store is not None:
            store.drop()
