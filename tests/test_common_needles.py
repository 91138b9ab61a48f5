"""A substring in most entries: ``recall(search=...)`` walks the matches newest first and stops
after its limit, and ``more`` is counted up to MORE_COUNT_LIMIT (docs/decisions/0028)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import recuerdo
from recuerdo.entries.operations import MORE_COUNT_LIMIT
from recuerdo.store import SQLiteStore
from recuerdo.store.sqlite.schema import SCHEMA
from recuerdo.store.sqlite.search import trigram_expression

from .conftest import query_plan, statements_run

SIZE = 1_300  # past MORE_COUNT_LIMIT (1,000) by more than a page
CATEGORIES = ["rule", "learning", "decision"]


def _entries(first: int, n: int) -> list[dict[str, str]]:
    # Every entry holds "Plan"; one in seven holds it as "PLANE" only (a match too, any case),
    # one in five misses it (a false candidate of the trigram index: "pla" and "lan" apart).
    return [
        {
            "category": CATEGORIES[k % 3],
            "content": (
                f"lan pla entry {k}"
                if k % 5 == 0
                else f"a PLANE {k}"
                if k % 7 == 0
                else f"the Plan for entry {k}"
            ),
        }
        for k in range(first, first + n)
    ]


def _expected(memory: recuerdo.Memory, needle: str, category: str | None = None) -> list[int]:
    """Every match, newest first, from a scan in Python."""
    with memory._store.read() as tx:
        rows = tx.all("SELECT id, category, content FROM items WHERE item_type = 'entry'")
    return sorted(
        (
            row["id"]
            for row in rows
            if needle.casefold() in row["content"].casefold()
            and category in (None, row["category"])
        ),
        reverse=True,
    )


def test_a_common_needle_lists_the_newest_matches_and_caps_more(memory: recuerdo.Memory) -> None:
    memory.remember_many(_entries(0, SIZE))
    memory._upkeep.drain()
    every = _expected(memory, "plan")
    assert len(every) > 1_020
    found = memory.recall(search="plan", limit=20)
    assert [entry["id"] for entry in found] == every[:20]
    # Before: every match beyond the limit was counted (here 1,020 and more).
    assert found.more == MORE_COUNT_LIMIT
    near_end = memory.recall(search="plan", limit=len(every) - 5)
    assert [entry["id"] for entry in near_end] == every[:-5]
    assert near_end.more == 5
    rules = _expected(memory, "plan", "rule")
    found = memory.recall(search="plan", category="rule", limit=30)
    assert [entry["id"] for entry in found] == rules[:30]
    assert found.more == min(MORE_COUNT_LIMIT, len(rules) - 30)


def test_the_newest_matches_span_the_unindexed_rows_and_the_index(base: Path) -> None:
    """Rows above the index's mark are newer than every indexed one: they come first, then the
    index's matches, newest first, each exactly once, and ``more`` counts across both."""
    with recuerdo.open("needles", base_dir=base) as memory:
        memory._upkeep.stop(drain=False)
        memory.remember_many(_entries(0, 700))
        with memory._store.write() as tx:
            while tx.substrings.catch_up():
                pass
        memory.remember_many(_entries(700, 600))
        with memory._store.read() as tx:
            assert tx.substrings.waiting() == 600
        for needle in ("plan", "Plan f", "PLANE", "pl"):
            every = _expected(memory, needle)
            for limit in (5, 300, 450, 480, len(every)):
                found = memory.recall(search=needle, limit=limit)
                assert [entry["id"] for entry in found] == every[:limit], (needle, limit)
                assert found.more == min(MORE_COUNT_LIMIT, len(every) - len(found)), needle
        every = _expected(memory, "plan", "decision")
        found = memory.recall(search="plan", category="decision", limit=200)
        assert [entry["id"] for entry in found] == every[:200]
        assert found.more == len(every) - 200


def test_a_listing_and_its_more_walk_the_substring_index_once(
    file_memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The entries listed and the count of the others come from one walk of the index's
    matches: the count walked them a second time (and a descending walk then loaded them all
    twice: 1.8 ms each for a word in every one of 100,000 entries)."""
    file_memory.remember_many(_entries(0, 300))
    file_memory._upkeep.drain()
    found, listings = _listing(file_memory, monkeypatch, search="plan", limit=20)
    assert len([sql for sql, _ in listings if "entry_trigrams MATCH" in sql]) == 1
    every = _expected(file_memory, "plan")
    assert [entry["id"] for entry in found] == every[:20]
    assert found.more == len(every) - 20


@pytest.mark.parametrize(
    "filters",
    [{}, {"category": "rule"}, {"tags": ["t1"]}, {"tags": ["t1", "t2"], "mode": "all"}],
    ids=["none", "category", "a tag", "every tag"],
)
def test_the_index_walk_reads_each_match_s_entry_once(
    file_memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch, filters: dict[str, Any]
) -> None:
    """The index offers its matches newest first and each is checked (its text, then the
    caller's filters) with one lookup of its entry: a walk that looked each entry up twice (once
    to check the text, once for the filters) cost 4.0 ms instead of 2.4 for the 1,020 matches of
    a word in every one of 100,000 entries."""
    file_memory.remember_many(
        [{**entry, "tags": ["t1", "t2"]} for entry in _entries(0, 60)] + _entries(60, 60)
    )
    file_memory._upkeep.drain()
    found, walks = _listing(file_memory, monkeypatch, search="plan", limit=10, **filters)
    assert len(walks) == 2 and "entry_trigrams MATCH" in walks[1][0]
    above_mark, plan = (query_plan(file_memory, sql, params) for sql, params in walks)
    with file_memory._store.read() as tx:
        rows = tx.all("SELECT id, category, content, tags FROM items WHERE item_type = 'entry'")
    # The rows above the index's mark are read by their ids, from the mark up: a list of tagged
    # ids drove this part once, through every tagged entry of the tenant.
    assert above_mark[0] == "SEARCH items USING INTEGER PRIMARY KEY (rowid>?)", above_mark
    assert plan[0].startswith("SCAN entry_trigrams VIRTUAL TABLE"), plan
    assert not any("TEMP B-TREE" in line for line in plan), plan  # read in order, never sorted
    # Every row lookup but the tag filter's own (table t) reads the entries' table.
    lookups = [
        line for line in plan if line.startswith("SEARCH") and not line.startswith("SEARCH t ")
    ]
    assert len(lookups) == 1, plan
    every = sorted(
        (
            row["id"]
            for row in rows
            if "plan" in row["content"].casefold() and _passes(row, filters)
        ),
        reverse=True,
    )
    assert len(every) > 10
    assert [entry["id"] for entry in found] == every[:10]
    assert found.more == len(every) - 10


def _passes(row: Any, filters: dict[str, Any]) -> bool:
    """Whether an entry's row passes recall's category and tag filters, decided in Python."""
    wanted, held = set(filters.get("tags", [])), set(json.loads(row["tags"] or "[]"))
    tags_pass = (
        wanted <= held if filters.get("mode") == "all" else not wanted or bool(wanted & held)
    )
    return tags_pass and filters.get("category") in (None, row["category"])


def test_a_store_written_before_m024_migrates_and_lists_the_same(base: Path) -> None:
    """The trigram index of an older store keeps entries under their ids, walked backwards.
    The step makes it again (under negative ids, walked forwards) and empty, so the entries are
    scanned until the upkeep fills it; listings are the same before, during and after, and the
    new triggers keep it exact through an edit and a forget."""
    path = base / ".recuerdo" / "state" / "old.db"
    path.parent.mkdir(parents=True)
    store = SQLiteStore(str(path), steps=SCHEMA.names().index("m024_trigrams_newest_first"))
    with recuerdo.open("old", store=store) as memory:
        memory._upkeep.stop(drain=False)
        memory.remember_many(_entries(0, 400))
        with memory._store.write() as tx:  # what the code before m024 indexed, and how
            tx.execute(
                "INSERT INTO entry_trigrams (rowid, content) SELECT id, content FROM items"
                " WHERE item_type = 'entry'"
            )
            tx.execute(
                "UPDATE index_marks SET upto = (SELECT max(id) FROM items)"
                " WHERE name = 'entry_trigrams'"
            )
            assert tx.scalar("SELECT max(rowid) FROM entry_trigrams") > 0
    store.close()
    store = SQLiteStore(str(path))
    try:
        with recuerdo.open("old", store=store) as memory:
            memory._upkeep.stop(drain=False)
            with memory._store.read() as tx:
                layout = tx.scalar("SELECT sql FROM sqlite_schema WHERE name = 'entry_trigrams'")
                assert "content=''" in layout and "detail='none'" in layout, layout
                assert tx.substrings.waiting() == 400
            _lists_as_a_scan(memory)  # every entry above the mark: scanned
            with memory._store.write() as tx:
                while tx.substrings.catch_up():
                    pass
                assert tx.substrings.waiting() == 0
            _lists_as_a_scan(memory)
            assert _indexed(memory, "plan") == _holding_its_trigrams(memory, "plan")
            edited, forgotten = _expected(memory, "plan")[3:5]
            with memory._store.read() as tx:
                texts = [
                    tx.scalar("SELECT content FROM items WHERE id = ?", (i,))
                    for i in (edited, forgotten)
                ]
            with memory._store.write() as tx:  # an entry's text changed (the update trigger)
                tx.execute("UPDATE items SET content = 'now a quorzle' WHERE id = ?", (edited,))
            assert memory.forget(forgotten)
            assert [e["id"] for e in memory.recall(search="quorzle")] == [edited]
            _lists_as_a_scan(memory)
            for text in [*texts, "now a quorzle"]:  # the index holds what the table holds
                assert _indexed(memory, text) == _holding_its_trigrams(memory, text), text
    finally:
        store.close()


def _lists_as_a_scan(memory: recuerdo.Memory) -> None:
    for needle in ("plan", "Plan f", "PLANE", "pl", "quorzle"):
        every = _expected(memory, needle)
        for limit in (5, 100, len(every) + 1):
            found = memory.recall(search=needle, limit=limit)
            assert [entry["id"] for entry in found] == every[:limit], (needle, limit)
            assert found.more == max(0, len(every) - limit), needle


def _indexed(memory: recuerdo.Memory, text: str) -> set[int]:
    """The entries the trigram index offers for every trigram of ``text``."""
    with memory._store.read() as tx:
        rows = tx.all(
            "SELECT rowid FROM entry_trigrams WHERE entry_trigrams MATCH ?",
            (trigram_expression(text),),
        )
    return {-int(row["rowid"]) for row in rows}


def _holding_its_trigrams(memory: recuerdo.Memory, text: str) -> set[int]:
    """The entries whose text holds every trigram of ``text`` (any case), decided in Python."""

    def grams(value: str) -> set[str]:
        value = value.casefold()
        return {value[i : i + 3] for i in range(len(value) - 2)}

    with memory._store.read() as tx:
        rows = tx.all("SELECT id, content FROM items WHERE item_type = 'entry'")
    return {row["id"] for row in rows if grams(text) <= grams(row["content"])}


def _listing(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch, **call: Any
) -> tuple[Any, list[tuple[str, Any]]]:
    """``memory.recall(**call)``, and the statements (with their parameters) that listed its
    ids, one per part walked."""
    with statements_run(monkeypatch) as seen:
        found = memory.recall(**call)
    return found, [(sql, params) for sql, params in seen if "listed_id" in sql]
