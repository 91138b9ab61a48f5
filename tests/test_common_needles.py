"""A substring in most entries: ``recall(search=...)`` walks the matches newest first and stops
after its limit, and ``more`` is counted up to MORE_COUNT_LIMIT (docs/decisions/0028)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import recuerdo
from recuerdo.entries.operations import MORE_COUNT_LIMIT
from recuerdo.store.sqlite.connection import SQLiteTx

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
    matches: a walk starts by loading them (1.8 ms for a word in every one of 100,000 entries),
    and the count walked them a second time."""
    file_memory.remember_many(_entries(0, 300))
    file_memory._upkeep.drain()
    walks: list[str] = []
    real = SQLiteTx._run

    def recorded(self: SQLiteTx, sql: str, params: Any) -> Any:
        if "entry_trigrams MATCH" in sql:
            walks.append(sql)
        return real(self, sql, params)

    monkeypatch.setattr(SQLiteTx, "_run", recorded)
    found = file_memory.recall(search="plan", limit=20)
    assert len(walks) == 1
    every = _expected(file_memory, "plan")
    assert [entry["id"] for entry in found] == every[:20]
    assert found.more == len(every) - 20
