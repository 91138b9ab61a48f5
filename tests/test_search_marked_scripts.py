"""Words inside runs of Thai, Lao, Khmer and Myanmar are found on every backend (decision
0174).

These scripts are written without spaces, and their vowel signs and tone marks are combining
marks: SQLite's tokenizer cut a word at each mark and PostgreSQL's kept it in the word, so
"ชาเย็น" inside "ฉันชอบดื่มชาเย็นทุกวัน" found the note on neither. A run is now indexed, and
asked, as the pairs and letters of its letters, marks left out; a store written before the
step (m049) finds them once opened.
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
from recuerdo.store.sqlite.schema import SCHEMA
from recuerdo.store.unspaced import indexed_text
from recuerdo.store.width_forms import fold_width

from .conftest import rewrite_postgres_words
from .postgres import contract_url
from .test_audit_words import _opened_at

NOTES = {
    "Thai": "ฉันชอบดื่มชาเย็นทุกวัน",  # I like to drink iced tea every day
    "Lao": "ຂ້ອຍມັກກິນເຂົ້າໜຽວທຸກມື້",  # I like to eat sticky rice every day
    "Khmer": "ខ្ញុំចូលចិត្តផឹកតែរៀងរាល់ថ្ងៃ",  # I like to drink tea every day
    "Myanmar": "ကျွန်တော်လက်ဖက်ရည်သောက်တယ်",  # I drink tea
    "Water": "ดื่มน้ำเยอะๆ",  # drink a lot of water
    "School": "น้องไปโรงเรียน",  # my brother goes to school
    "Market": "ໄປຕະຫຼາດນຳແມ່",  # going to the market with mother
    "Rice": "ខ្ញុំញ៉ាំបាយ",  # I eat rice
    "Home": "ကျွန်တော်အိမ်ပြန်မယ်",  # I am going home
    "Plain": "Lunch with the harbour crew",
}
FOUND = [
    ("ชาเย็น", "Thai"),
    ("ทุกวัน", "Thai"),
    ("ฉันชอบดื่มชาเย็นทุกวัน", "Thai"),
    ("ເຂົ້າໜຽວ", "Lao"),
    ("ທຸກມື້", "Lao"),
    ("ផឹកតែ", "Khmer"),
    ("ថ្ងៃ", "Khmer"),
    ("လက်ဖက်ရည်", "Myanmar"),
    ("သောက်", "Myanmar"),
    ("น้ำ", "Water"),
    ("น้ํา", "Water"),  # SARA AM typed as NIKHAHIT and SARA AA
    ("harbour", "Plain"),
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


@pytest.mark.parametrize(("query", "title"), FOUND)
def test_a_word_inside_a_run_is_found(memory: recuerdo.Memory, query: str, title: str) -> None:
    _saved(memory)
    assert _titles(memory, query) == [title]
    pack = memory.context(query)
    assert pack["state"] == "answered"
    assert [source["title"] for source in pack["sources"]] == [title]


@pytest.mark.parametrize("query", ["กาแฟ", "ชาร้อน", "ກາເຟ", "កាហ្វេ", "ထမင်း"])
def test_a_word_the_runs_do_not_hold_finds_nothing(memory: recuerdo.Memory, query: str) -> None:
    _saved(memory)
    assert _titles(memory, query) == []


def test_words_apart_by_their_marks_only_are_found_together_the_exact_first(
    memory: recuerdo.Memory,
) -> None:
    """The index holds letters only: "ไม่" (not) and "ไม้" (wood) are one word there. Both
    notes are found, the one holding the word as asked first (the exact-words check)."""
    memory.save("Not", "ไม่ยาวมาก")
    memory.save("Wood", "ไม้ยาวมาก")
    memory._upkeep.drain()
    for query, first in (("ไม่", "Not"), ("ไม้", "Wood")):
        hits = memory.search(query, stages=["lexical"])["results"]
        assert [hit["title"] for hit in hits][:1] == [first]
        assert len(hits) == 2


def test_a_run_is_one_word_among_the_others(memory: recuerdo.Memory) -> None:
    _saved(memory)
    assert _titles(memory, "harbour ชาเย็น") == ["Plain", "Thai"]
    assert _titles(memory, "harbour ชาเย็น", mode="all") == []
    assert _titles(memory, "ชาเย็น ทุกวัน", mode="all") == ["Thai"]


@pytest.mark.parametrize(("query", "title"), [("ชาเย็น", "Thai"), ("ផឹកតែ", "Khmer")])
def test_a_note_not_cut_yet_is_found(memory: recuerdo.Memory, query: str, title: str) -> None:
    """Saved a moment ago, before the upkeep cut it into chunks: the search reads its text."""
    memory._upkeep.stop(drain=False)
    for key in (title, "Plain"):
        memory.save(key, NOTES[key])
    assert [hit["title"] for hit in memory.search(query)["results"]] == [title]


@pytest.mark.parametrize(("query", "title"), [("ชาเย็น", "Thai"), ("လက်ဖက်ရည်", "Myanmar")])
def test_entries_are_found_by_search_and_recall(
    memory: recuerdo.Memory, query: str, title: str
) -> None:
    """``recall(search=)`` is a substring search of the trigram index, which the step does not
    touch: it found these words before and still does."""
    entry = memory.remember("context", NOTES[title])
    memory.remember("context", NOTES["Plain"])
    memory.remember("context", NOTES["Water"])
    memory._upkeep.drain()
    hits = memory.search(query, stages=["lexical"])["results"]
    assert [hit["id"] for hit in hits] == [entry]
    assert [found["id"] for found in memory.recall(search=query)] == [entry]


def test_forgetting_a_run_takes_its_words_out_of_the_index(memory: recuerdo.Memory) -> None:
    """The delete triggers tell the index the words it was given: none is left behind."""
    ids = _saved(memory)
    memory.save("Thai", "ฉันชอบดื่มกาแฟ", key="Thai")  # re-cut: the old chunk's words go stale
    memory._upkeep.drain()
    assert _titles(memory, "ชาเย็น") == []
    assert _titles(memory, "กาแฟ") == ["Thai"]
    memory.delete(ids["Thai"], hard=True)
    memory.delete(ids["Khmer"], hard=True)
    memory._upkeep.drain()
    assert _titles(memory, "กาแฟ") == []
    assert _titles(memory, "ផឹកតែ") == []
    assert _titles(memory, "ເຂົ້າໜຽວ") == ["Lao"]
    assert memory._store.check()["ok"]


STEP = "m049_unmarked_words"


def _before_0174(text: str | None) -> str | None:
    """A text as PostgreSQL's words were computed from before the step (marks kept)."""
    return None if text is None else indexed_text(fold(fold_width(text)))


@pytest.mark.parametrize("old_store", ["sqlite", "postgres"], indirect=True)
def test_a_store_written_before_the_step_finds_runs_after_it(
    base: Path, old_store: tuple[str, str]
) -> None:
    kind, name = old_store
    with _opened_at(kind, base, name, SCHEMA.names().index(STEP)) as memory:
        ids = _saved(memory)
        # A note edited after its chunking: its old chunk's words stay, listed as stale.
        memory._upkeep.stop(drain=False)
        memory.save("Thai", NOTES["Thai"] + " แล้วก็กินข้าวมันไก่", key="Thai")
        memory._upkeep.drain(tasks=memory._upkeep._tasks)
        if kind == "postgres":  # as the code before 0174 wrote them
            rewrite_postgres_words(memory, _before_0174)
        assert _titles(memory, "ชาเย็น") == []
        assert _titles(memory, "harbour") == ["Plain"]
    with _opened_at(kind, base, name, None) as memory:
        for query, title in FOUND:
            assert _titles(memory, query) == [title], query
        assert _titles(memory, "ข้าวมันไก่") == ["Thai"]
        memory.delete(ids["Thai"], hard=True)
        memory.delete(ids["Myanmar"], hard=True)
        memory._upkeep.drain()
        assert _titles(memory, "ชาเย็น") == []
        assert _titles(memory, "လက်ဖက်ရည်") == []
        assert memory._store.check()["ok"]


def test_a_connection_without_the_letters_cannot_write_the_index(base: Path) -> None:
    """A process of a version before the step (``recuerdo_folded_words`` but not
    ``recuerdo_unmarked_words``) would take a Thai chunk's words out with their marks, and
    damage the index: its chunk inserts, deletes and stale erasures stop instead."""
    from recuerdo.store.sqlite.driver import sqlite3
    from recuerdo.store.unspaced import folded_or_none, indexed_or_none

    with recuerdo.open("guarded", base_dir=base) as memory:
        ids = _saved(memory)
        memory.save("Thai", "ฉันชอบดื่มกาแฟ", key="Thai")  # a stale chunk left to erase
        memory._upkeep.drain(tasks=memory._upkeep._tasks)
        path = memory._store.location
    old = sqlite3.connect(str(path), isolation_level=None)
    old.create_function("recuerdo_words", 1, indexed_or_none, deterministic=True)
    old.create_function("recuerdo_folded_words", 1, folded_or_none, deterministic=True)
    try:
        for statement in (
            "INSERT INTO chunks SELECT * FROM chunks WHERE 0",
            "DELETE FROM chunk_fts_stale WHERE 0",
            f"DELETE FROM items WHERE id = {ids['Lao']}",
            "DELETE FROM chunks WHERE 0",
        ):
            with pytest.raises(sqlite3.OperationalError, match="recuerdo_unmarked_words"):
                old.execute(statement)
    finally:
        old.close()
    with recuerdo.open("guarded", base_dir=base) as memory:
        assert _titles(memory, "ເຂົ້າໜຽວ") == ["Lao"]
        assert _titles(memory, "กาแฟ") == ["Thai"]
        assert memory._store.check()["ok"]


def test_a_restored_memory_finds_runs_and_forgets_them(base: Path) -> None:
    from recuerdo.engine import restore_memory

    with recuerdo.open("original", base_dir=base) as memory:
        _saved(memory)
        memory.backup(base / "memory.rbk")
    restore_memory("copy", base / "memory.rbk", base_dir=base)
    with recuerdo.open("copy", base_dir=base) as copy:
        copy._upkeep.drain()
        for query, title in FOUND:
            assert _titles(copy, query) == [title], query
        thai = copy.search("ชาเย็น")["results"][0]["id"]
        copy.delete(thai, hard=True)
        assert _titles(copy, "ชาเย็น") == []
        assert copy._store.check()["ok"]


# -- the spelling itself (imported here: the tests above run on the code before it) --------

_BLOCK_TEXTS = {
    "Thai": "กขคงจฉชซญดตถทนบปผพมยรลวสหอฮะัาำิีึืฺุูเแโใไๆ็่้๊๋์",
    "Lao": "ກຂຄງຈຊຍດຕຖທນບປຜຝພຟມຢຣລວສຫອຮະັາຳິີຶືຸູົຼຽເແໂໃໄໆ່້໊໋ໜ",
    "Khmer": "កខគឃងចឆជញដតថទនបផពមយរលវសហអឥឧាិីឹើុែៀេោំះ់្ៗ",
    "Myanmar": "ကခဂဃငစဆဇညဋတထဒနပဖဗမယရလဝသဟအဣဿါာိီုူေဲံ့း်ျြွှၐၚ",
}
_LETTERS = st.sampled_from("".join(_BLOCK_TEXTS.values()))


@settings(max_examples=300, deadline=None)
@given(st.text(_LETTERS, min_size=1, max_size=12), st.data())
def test_every_substring_of_a_run_asks_for_words_the_run_holds(
    run: str, data: st.DataObject
) -> None:
    from recuerdo.store import unspaced

    run = unicodedata.normalize("NFC", run)
    start = data.draw(st.integers(0, len(run) - 1))
    stop = data.draw(st.integers(start + 1, len(run)))
    held = set(unspaced.spelled_text(f"x {run} y").split())
    for term in query_words(run[start:stop]).terms:
        assert set(unspaced.query_forms(term)) <= held


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(blacklist_categories=["So", "Lo", "Lm", "Nl", "Cs"])))
def test_text_without_runs_or_symbols_is_indexed_as_it_is(text: str) -> None:
    """Marks alone (no letter before them) are no run: such a text is given as it was."""
    from recuerdo.store import unspaced

    assert unspaced.spelled_text(text) == text == unspaced.indexed_text(text)


def test_a_run_is_its_letters_and_han_is_spelled_as_before() -> None:
    from recuerdo.store import unspaced

    assert unspaced.spelled_text("ชาเย็น").split() == ["ชา", "าเ", "เย", "ยน", *"ชาเยน"]
    assert unspaced.query_forms("ชาเย็น") == ["ชา", "าเ", "เย", "ยน"]
    assert unspaced.query_forms("ก็") == ["ก"]
    assert query_words("ปี2024ชาเย็น").terms == ["ปี", "2024", "ชาเย็น"]
    for text in ("今天我们喝茶然后去公园", "party 🎉 tonight", "오늘 차를 마셨다"):
        assert unspaced.spelled_text(text) == unspaced.indexed_text(text)


def _index_words(kind: str, text: str) -> list[str]:
    """The words ``kind``'s index cuts ``text`` into, as it is given them."""
    if kind == "postgres":
        import psycopg

        with psycopg.connect(contract_url()) as conn:
            rows = conn.execute(
                "SELECT token FROM ts_debug('english', %s) WHERE alias <> 'blank'", (text,)
            ).fetchall()
        return [row[0] for row in rows]
    from recuerdo.store.sqlite.driver import sqlite3

    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61 remove_diacritics 2')"
    )
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    conn.execute("INSERT INTO t VALUES (?)", (text,))
    return [row[0] for row in conn.execute("SELECT term FROM v ORDER BY offset")]


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
@pytest.mark.parametrize("script", sorted(_BLOCK_TEXTS))
def test_both_indexes_take_each_spelled_word_whole(kind: str, script: str) -> None:
    """The words given are letters only (every letter of the script, and a run of letters and
    marks), which both indexes read as one word each (with its marks, SQLite cut a word where
    PostgreSQL did not)."""
    from recuerdo.store import unspaced
    from recuerdo.store.unspaced_table import MARKED_LETTERS

    letters = "".join(
        chr(code)
        for first, last in unspaced._ranges(MARKED_LETTERS)
        for code in range(first, last + 1)
        if unicodedata.name(chr(code), "").startswith(script.upper())
    )
    given = unspaced.spelled_text(letters + " " + _BLOCK_TEXTS[script])
    assert _index_words(kind, given) == given.split()


@pytest.mark.skipif(unicodedata.unidata_version != "14.0.0", reason="the table is Unicode 14's")
def test_the_fixed_tables_are_what_their_unicode_gives_their_blocks() -> None:
    from recuerdo.store import unspaced
    from recuerdo.store.unspaced_table import MARKED_LETTERS, MARKS

    codes = [code for first, last in unspaced.MARKED_BLOCKS for code in range(first, last + 1)]

    def of(categories: tuple[str, ...]) -> list[tuple[int, int]]:
        found = [c for c in codes if unicodedata.category(chr(c)) in categories]
        ranges: list[tuple[int, int]] = []
        for code in found:
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1] = (ranges[-1][0], code)
            else:
                ranges.append((code, code))
        return ranges

    assert unspaced._ranges(MARKED_LETTERS) == of(("Lo", "Lm"))
    assert unspaced._ranges(MARKS) == of(("Mn", "Mc"))
