"""Entry search checks text with SQLite's LIKE first and folds in Python only where LIKE cannot
settle a row (docs/decisions/0051-substring-checks-in-c.md): the answers are those of Python's
``casefold`` containment, on the rows above the trigram index's mark, in the index, and for
needles too short for it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import recuerdo
from recuerdo.engine import restore_memory
from recuerdo.store import SQLiteStore
from recuerdo.store.sqlite import files
from recuerdo.store.sqlite.schema import SCHEMA
from recuerdo.store.sqlite.search import contains, trigram_expression

from .older_layouts import entries_indexed_before_folds

# Letters whose folding is not ASCII's lower case (the Kelvin sign -> k, long s -> s, final
# sigma -> sigma, é), their ASCII look-alikes, LIKE's own syntax (%, _ and the escape), and
# the line break that joins an entry's folded stretches in the index.
ALPHABET = "aAsSkKiI Kſςσςé É%_\\\n"
# Letters whose folding is longer than themselves (ß -> ss, ﬁ -> fi, İ -> i + a dot above):
# the trigram tokenizer folds each character to one, so the index also holds the folded
# stretches around them (m029).
EXPANDING = "ßẞﬁİ"


def _texts(alphabet: str, longest: int = 12) -> st.SearchStrategy[str]:
    return st.text(st.sampled_from(alphabet), min_size=1, max_size=longest).filter(str.strip)


def _expected(contents: dict[int, str], needle: str) -> list[int]:
    return sorted(
        (id_ for id_, text in contents.items() if needle.casefold() in text.casefold()),
        reverse=True,
    )


def _index_everything(memory: recuerdo.Memory) -> None:
    with memory._store.write() as tx:
        while tx.substrings.catch_up():
            pass


@contextmanager
def _unindexed(base: Path, name: str) -> Iterator[recuerdo.Memory]:
    """A memory whose upkeep never runs: what it writes stays above the index's mark."""
    with recuerdo.open(name, base_dir=base) as memory:
        memory._upkeep.stop(drain=False)
        yield memory


def _disagreements(
    base: Path, texts: list[str], needles: list[str], indexed: bool
) -> list[tuple[str, list[int], list[int]]]:
    """Each needle whose search answers otherwise than case folding: (needle, found,
    expected). Pieces of the stored texts are asked too, so matches are common, not only
    misses."""
    wrong = []
    with _unindexed(base, "fold") as memory:
        ids = memory.remember_many([{"category": "context", "content": t} for t in texts])
        if indexed:
            _index_everything(memory)
        contents = dict(zip(ids, texts, strict=True))
        for needle in [*needles, *(t[1:4] for t in texts if len(t) > 1), *texts]:
            found = [e["id"] for e in memory.recall(search=needle, limit=100)]
            expected = _expected(contents, needle)
            if found != expected:
                wrong.append((needle, found, expected))
    return wrong


_SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@_SETTINGS
@given(
    # Texts long enough for several folded stretches, apart or run together.
    texts=st.lists(_texts(ALPHABET + EXPANDING, longest=30), min_size=1, max_size=12),
    needles=st.lists(_texts(ALPHABET + EXPANDING), max_size=6),
    indexed=st.booleans(),
)
def test_search_finds_what_case_folding_finds(
    tmp_path_factory: pytest.TempPathFactory, texts: list[str], needles: list[str], indexed: bool
) -> None:
    """Above the index's mark and in the index alike. Before m029 the index missed "STRASSE"
    in "Straße" and "FILE" in "ﬁle", which the rows above the mark found: one search answered
    differently once the upkeep caught up."""
    base = tmp_path_factory.mktemp("fold")
    assert _disagreements(base, texts, needles, indexed=indexed) == []


@pytest.mark.parametrize(
    ("stored", "needle"),
    [
        ("Hauptstraße 5", "HAUPTSTRASSE"),
        ("the ﬁle list", "FILE"),
        ("GROẞE", "grosse"),
        ("STRASSE", "straß"),
    ],
)
def test_the_index_finds_what_folding_lengthens(base: Path, stored: str, needle: str) -> None:
    with _unindexed(base, "lengthened") as memory:
        wanted = memory.remember("context", stored)
        memory.remember("context", "unrelated")
        _index_everything(memory)
        with memory._store.read() as tx:
            assert tx.substrings.waiting() == 0
        assert [e["id"] for e in memory.recall(search=needle)] == [wanted]


def _handed_to(monkeypatch: pytest.MonkeyPatch, function: str) -> list[str]:
    """The texts SQLite hands the Python ``function`` of ``files`` (``_fold``, the folding;
    ``folded_extras``, the stretches), on connections opened after this call."""
    handed: list[str] = []
    wrapped = getattr(files, function)

    def counted(text: str | None) -> str | None:
        handed.append(text or "")
        return wrapped(text)

    monkeypatch.setattr(files, function, counted)
    return handed


@pytest.mark.parametrize("indexed", [False, True], ids=["above the mark", "indexed"])
def test_python_folds_only_rows_like_cannot_settle(
    base: Path, monkeypatch: pytest.MonkeyPatch, indexed: bool
) -> None:
    """Before: every row above the mark was folded in Python (70 ms for 100,000 entries), and
    in the index every candidate that ASCII's lower case did not match."""
    folded = _handed_to(monkeypatch, "_fold")
    with _unindexed(base, "counted") as memory:
        plain = [f"plain entry number {k} about a plan" for k in range(40)]
        accented = ["Straße nach Köln", "un café au lait", "la PLANIFICACIÓN"]
        false_candidate = ["lan then pla, not the word"]  # every trigram of "plan" but "pla"+"lan"
        ids = memory.remember_many(
            [{"category": "context", "content": t} for t in plain + accented + false_candidate]
        )
        if indexed:
            _index_everything(memory)
        folded.clear()
        found = memory.recall(search="plan", limit=100)
        assert [e["id"] for e in found] == sorted([*ids[:40], ids[42]], reverse=True)
        # LIKE settles every ASCII row, matched or not, and the accented one it matched; only
        # the two accented rows it missed are folded (the index offers neither of them).
        assert sorted(folded) == ([] if indexed else sorted(accented[:2]))
        # Where LIKE misses (Ó against ó), Python's folding finds.
        assert [e["id"] for e in memory.recall(search="Planificación")] == [ids[42]]
        # A needle too short for the index is checked on every row, the same way.
        assert [e["id"] for e in memory.recall(search="pl")] == sorted(
            [*ids[:40], *ids[42:]], reverse=True
        )


@pytest.mark.parametrize("indexed", [False, True], ids=["above the mark", "indexed"])
def test_a_needle_past_like_s_limit_is_folded_instead(base: Path, indexed: bool) -> None:
    """SQLite refuses LIKE patterns past 50,000 bytes ("LIKE or GLOB pattern too complex"),
    and LIKE slows with the needle's length over repetitive text: a longer needle than
    LIKE_PATTERN_BYTES is folded instead."""
    needle = "Ab" * 25_010
    with _unindexed(base, "long") as memory:
        holding = memory.remember("context", f"start {needle.upper()} end")
        memory.remember("context", f"start {needle[:-1]} end")
        if indexed:
            _index_everything(memory)
        assert [e["id"] for e in memory.recall(search=needle)] == [holding]
        assert [e["id"] for e in memory.recall(search="x" + "Ab" * 60)] == []


def test_needles_past_the_bound_are_looked_for_in_c_too(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past LIKE_PATTERN_BYTES, ASCII rows are settled by ``instr`` over SQLite's lowering
    (no Python), other rows as before."""
    assert "LIKE" in contains("items", "a" * 98)[0]  # the pattern: 100 bytes with its two %
    longer, params = contains("items", "A" * 99)
    assert "LIKE" not in longer and "instr(lower(items.content), ?)" in longer
    assert params == ["a" * 99, "a" * 99]
    folded = _handed_to(monkeypatch, "_fold")
    needle = "the Plan of record " * 6
    with _unindexed(base, "bound") as memory:
        ids = memory.remember_many(
            [{"category": "context", "content": f"{k}: {needle.upper()}"} for k in range(20)]
            + [{"category": "context", "content": f"Straße: {needle}"}]
            + [{"category": "context", "content": "Straße alone"}]
        )
        folded.clear()
        found = memory.recall(search=needle.strip(), limit=100)
        assert [e["id"] for e in found] == sorted(ids[:21], reverse=True)
        assert folded == ["Straße alone"]  # the one row neither LIKE nor instr settles


def test_a_stale_row_of_stretches_above_the_mark_does_not_stop_the_upkeep(base: Path) -> None:
    """Left by an index emptied by hand: it is replaced by the entry's own stretches."""
    with _unindexed(base, "stale") as memory:
        with memory._store.write() as tx:
            tx.execute("INSERT INTO entry_trigrams_folds (id, folded) VALUES (1, 'stale')")
        first = memory.remember("context", "Straße 1")
        assert first == 1
        _index_everything(memory)
        with memory._store.read() as tx:
            assert tx.substrings.waiting() == 0
            rows = [tuple(r) for r in tx.all("SELECT id, folded FROM entry_trigrams_folds")]
        assert rows == [(1, "rasse ")]  # "raße 1": two characters each side of ß
        assert [e["id"] for e in memory.recall(search="STRASSE 1")] == [first]


def test_a_three_character_needle_never_spans_the_folded_stretches_line_breaks(
    base: Path,
) -> None:
    """The index holds "Straße" as "Straße", a line break, and the stretch "raße" folded:
    trigrams across that break are no text of the entry, so a needle of one trigram holding a
    line break is checked against the text (before: "e", a line break, "r" found "Straße")."""
    with _unindexed(base, "breaks") as memory:
        memory.remember("context", "Straße")
        wanted = memory.remember("context", "a\nb c")
        _index_everything(memory)
        for needle in ("e\nr", "\nra", "E\nR"):
            assert memory.recall(search=needle) == [], needle
        assert [e["id"] for e in memory.recall(search="A\nB")] == [wanted]


def test_a_store_indexed_before_m029_is_indexed_again_and_finds_the_same(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = base / ".recuerdo" / "state" / "old.db"
    path.parent.mkdir(parents=True)
    store = SQLiteStore(str(path), steps=SCHEMA.names().index("m029_folded_trigrams"))
    with (
        entries_indexed_before_folds(monkeypatch),
        recuerdo.open("old", store=store) as memory,
    ):
        memory._upkeep.stop(drain=False)
        ids = memory.remember_many(
            [{"category": "context", "content": f"Hauptstraße {k}"} for k in range(30)]
        )
        _index_everything(memory)
        assert memory.recall(search="HAUPTSTRASSE") == []  # the gap m029 closes
    store.close()
    with _unindexed(base, "old") as memory:
        with memory._store.read() as tx:
            assert tx.substrings.waiting() == 30  # made again, empty: scanned meanwhile
        assert [e["id"] for e in memory.recall(search="HAUPTSTRASSE")] == ids[::-1]
        _index_everything(memory)
        with memory._store.read() as tx:
            assert tx.substrings.waiting() == 0
            assert tx.scalar("SELECT count(*) FROM entry_trigrams_folds") == 30
        assert [e["id"] for e in memory.recall(search="HAUPTSTRASSE")] == ids[::-1]
        assert [e["id"] for e in memory.recall(search="straße 7")] == [ids[7]]


def test_forgetting_an_entry_erases_its_folded_text(base: Path) -> None:
    # Held beside the text folded, one stretch: "uxsszorssbaltss e", whose middle only the
    # folded stretch holds.
    marker = "Quxßzorßbaltß"
    with _unindexed(base, "erased") as memory:
        kept = memory.remember("context", "Straße of another entry")
        gone = memory.remember("context", f"the {marker} entry")
        _index_everything(memory)
        with memory._store.read() as tx:
            assert tx.scalar("SELECT count(*) FROM entry_trigrams_folds") == 2
        assert [e["id"] for e in memory.recall(search=marker.upper())] == [gone]
        assert memory.forget(gone)
        with memory._store.read() as tx:
            assert [r["id"] for r in tx.all("SELECT id FROM entry_trigrams_folds")] == [kept]
            offered = tx.all(
                "SELECT rowid FROM entry_trigrams WHERE entry_trigrams MATCH ?",
                (trigram_expression(marker.casefold()),),
            )
        assert offered == []
        # (A search naming the marker now would be a new query, kept in the audit.)
        assert [e["id"] for e in memory.recall(search="STRASSE")] == [kept]
    for file in base.rglob("*"):
        if file.is_file():
            assert b"zorssbalt" not in file.read_bytes().lower(), file


def test_an_archive_written_before_m029_restores_and_finds_what_folding_lengthens(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A restore builds the store at the archive's own steps, empties the trigram index there,
    then takes the later steps: before m029 there is no table of stretches to empty (the
    first version of the step failed every such restore)."""
    older = SQLiteStore(str(base / "older.db"), steps=SCHEMA.names().index("m029_folded_trigrams"))
    with (
        entries_indexed_before_folds(monkeypatch),
        recuerdo.open("older", store=older) as memory,
    ):
        wanted = memory.remember("context", "Hauptstraße 5")
        memory._upkeep.drain()
        memory.backup(base / "older.rbk")
    older.close()
    restore_memory("restored", base / "older.rbk", base_dir=base)
    with recuerdo.open("restored", base_dir=base) as memory:
        memory._upkeep.drain()
        with memory._store.read() as tx:
            assert tx.substrings.waiting() == 0
        assert [e["id"] for e in memory.recall(search="HAUPTSTRASSE")] == [wanted]


def test_the_upkeep_asks_python_for_stretches_once_a_non_ascii_entry(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ASCII entries are never handed to Python; the others once each (before: twice for each
    entry with stretches, the query's subquery flattened into the insert)."""
    asked = _handed_to(monkeypatch, "folded_extras")
    with_stretches = [f"Straße {k}" for k in range(5)]
    without = ["un café", "déjà vu"]  # folding changes none of their letters
    with _unindexed(base, "asked") as memory:
        memory.remember_many(
            [
                {"category": "context", "content": text}
                for text in [*with_stretches, *without, "plain", "ASCII only"]
            ]
        )
        _index_everything(memory)
        with memory._store.read() as tx:
            assert tx.scalar("SELECT count(*) FROM entry_trigrams_folds") == 5
    assert sorted(asked) == sorted([*with_stretches, *without])


@pytest.mark.parametrize(
    ("change", "missing", "strays"),
    [
        ("DELETE FROM entry_trigrams_folds", 1, 0),
        ("UPDATE entry_trigrams_folds SET folded = 'x'", 1, 0),
        ("INSERT INTO entry_trigrams_folds (id, folded) VALUES (999, 'straße')", 0, 1),
        ("UPDATE entry_trigrams_folds SET folded = folded", 0, 0),
    ],
)
def test_check_counts_missing_and_stray_folded_stretches(
    base: Path, change: str, missing: int, strays: int
) -> None:
    """A stretch missing or stale, and the index no longer offers "Straße" for "STRASSE"; a
    stray one holds text of no entry (a forgotten entry's). Before, ``check`` counted
    neither."""
    with _unindexed(base, "checked") as memory:
        memory.remember("context", "Hauptstraße 5")
        memory.remember("context", "plain ascii text")
        _index_everything(memory)
        counts = memory._store.check()["counts"]
        assert counts["entries indexed without their folded stretches"] == 0
        assert counts["folded stretches of no entry"] == 0
        with memory._store.write() as tx:
            tx.execute(change)
        verdict = memory._store.check()
        assert verdict["counts"]["entries indexed without their folded stretches"] == missing
        assert verdict["counts"]["folded stretches of no entry"] == strays
        assert verdict["ok"] is (missing == strays == 0)
