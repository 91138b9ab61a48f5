"""A forgotten note written in width forms leaves no word in any file of the store, folded or
as written, on a store made since the step m048 and on one the step refolded (decision 0161:
the step marks many rows' old words deleted and merges the index once)."""

from __future__ import annotations

from pathlib import Path

import pytest

import recuerdo
from recuerdo.store.sqlite.schema import SCHEMA
from recuerdo.store.sqlite.stale_words import ERASE_ONE_BY_ONE

from .test_audit_words import _opened_at

STEP = "m048_width_forms"
FILLER = "Ordinary background passage about shipping schedules and invoices. " * 3
SECRET = "ＱＵＯＲＶＥＬＴＡＸ ﾇｿﾞﾍﾑ"
NEEDLES = (  # each word's end: a term of an index page is written after the prefix it
    # shares with the term before it
    "orveltax",  # folded, as the index holds it since the step
    "ｏｒｖｅｌｔａｘ",  # as unicode61 lowered the fullwidth word before the step
    "ＯＲＶＥＬＴＡＸ",  # as written
)


@pytest.fixture(autouse=True)
def words_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECUERDO_EMBEDDER", "none")


def _bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


def _left(folder: Path) -> list[str]:
    raw = _bytes(folder)
    return [needle for needle in NEEDLES if needle.encode() in raw]


def _fill(memory: recuerdo.Memory, width_notes: int) -> None:
    for number in range(40):  # enough pages that deleted words would linger if not erased
        memory.save(f"Filler {number}", f"{FILLER} number {number}.")
    for number in range(width_notes):
        memory.save(f"Part {number}", f"ＰＡＲＴ{number:03d}ＺＱ ｶﾀｶﾅ stock")


def test_a_width_note_forgotten_leaves_no_word_in_the_file(base: Path) -> None:
    memory = recuerdo.open("erase", base_dir=base)
    _fill(memory, 3)
    note = memory.save("Plan", f"Body {SECRET} and {FILLER}", key="plan")["id"]
    memory._upkeep.drain()
    memory.save("Plan", f"Body {SECRET} again and {FILLER}", key="plan")  # an old chunk
    memory._upkeep.drain()
    state = base / ".recuerdo" / "state"
    assert _left(state)  # control
    memory.delete(note, hard=True)
    memory._upkeep.drain()
    while_open = _left(state)
    memory.close()
    assert while_open == [] and _left(state) == []


@pytest.mark.parametrize("rows", [3, ERASE_ONE_BY_ONE + 6])
def test_the_step_leaves_no_old_word_and_a_forget_after_it_none_at_all(
    base: Path, rows: int
) -> None:
    """One by one (a secure delete each) or marked and merged: after the step no page keeps
    the words the rows were given before it, and a forget then leaves none of either."""
    with _opened_at("sqlite", base, "", SCHEMA.names().index(STEP)) as memory:
        _fill(memory, rows)
        note = memory.save("Plan", f"Body {SECRET} and {FILLER}", key="plan")["id"]
        memory._upkeep.drain()
        memory.save("Plan", f"Body {SECRET} again and {FILLER}", key="plan")  # an old chunk
        memory._upkeep.drain(tasks=memory._upkeep._tasks)
    old_words = ["ａｒｔ", "ｏｒｖｅｌｔａｘ"]  # lowered: the stored text has neither
    raw = base.joinpath("old.db").read_bytes()
    assert all(word.encode() in raw for word in old_words)  # control
    with _opened_at("sqlite", base, "", None) as memory:
        assert [h["id"] for h in memory.search("quorveltax")["results"]] == [note]
    raw = _bytes(base)  # checkpointed at the close
    assert [word for word in old_words if word.encode() in raw] == []
    with _opened_at("sqlite", base, "", None) as memory:
        memory.delete(note, hard=True)
        memory._upkeep.drain()
        assert _left(base) == []
        assert memory._store.check()["ok"]
    assert _left(base) == []


@pytest.mark.parametrize(
    ("written", "asked"),
    [
        ("Quorveltax", "quorveltax"),  # as written: the rule the others follow
        ("ＱＵＯＲＶＥＬＴＡＸ", "quorveltax"),
        ("Quorveltax", "ｑｕｏｒｖｅｌｔａｘ"),
        ("ｸﾞﾛｰﾌﾞ", "グローブ"),
    ],
)
def test_a_search_for_a_forgotten_width_form_by_its_letters_leaves_the_audit(
    memory: recuerdo.Memory, written: str, asked: str
) -> None:
    """A search names a word the forgotten note alone held, in its width form or by its
    letters (one word since 0161, as a search reads them): the record goes with the note, as
    one naming the word as written does (decision 0064)."""
    from .conftest import audit_kept

    memory.save("Other", "Lunch with the harbour crew")
    memory.search(asked)  # before the note: it found nothing, but named the word
    memory.search("harbour crew")
    note = memory.save("Plan", f"Body {written} and more")["id"]
    memory._upkeep.drain()
    assert [hit["id"] for hit in memory.search(asked)["results"]] == [note]
    memory._upkeep.drain()
    assert audit_kept(memory) == [asked, "harbour crew", asked]
    memory.delete(note, hard=True)
    memory._upkeep.drain()
    assert audit_kept(memory) == ["harbour crew"]


def test_the_step_erases_old_words_in_a_file_last_written_without_the_secure_delete(
    base: Path,
) -> None:
    """A file last written by a library without FTS5's secure-delete holds no such setting
    when the step runs (the settings are written after the steps): the step's deletes are
    secure all the same, or the old words would stay in the index's pages, marked deleted,
    after the note is forgotten."""
    from recuerdo.store.sqlite.driver import FTS5_SECURE_DELETE, sqlite3

    if not FTS5_SECURE_DELETE:
        pytest.skip("this library has no secure-delete: every forget merges the index")
    with _opened_at("sqlite", base, "", SCHEMA.names().index(STEP)) as memory:
        _fill(memory, 3)
        note = memory.save("Plan", f"Body {SECRET} and {FILLER}", key="plan")["id"]
        memory._upkeep.drain()
    raw = sqlite3.connect(str(base / "old.db"))
    raw.execute("INSERT INTO chunk_fts (chunk_fts, rank) VALUES ('secure-delete', 0)")
    raw.commit()
    raw.close()
    with _opened_at("sqlite", base, "", None) as memory:
        memory.delete(note, hard=True)
        memory._upkeep.drain()
    assert _left(base) == []
