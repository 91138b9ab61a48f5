"""The full-text indexes' own settings on SQLite (decision 0067). The entries' trigram index is
written in small pages, so that a delete reads a bounded stretch of each of its trigrams'
lists; a store whose index was written in FTS5's default pages gets the setting when opened,
and ``compact`` writes every index again in its pages, one segment each."""

from __future__ import annotations

from pathlib import Path

import pytest

import recuerdo
from recuerdo.store.sqlite.full_text_settings import FULL_TEXT_INDEXES, TRIGRAM_PAGE_BYTES

FTS5_DEFAULT_PAGE_BYTES = 4050
# FTS5 ends a page once it has passed its size: by one entry, a few bytes here.
PAGE_SLACK = 100


def _fill(memory: recuerdo.Memory, count: int) -> list[int]:
    ids = memory.remember_many(
        [
            {"category": "learning", "content": f"harbour crane {n} lifts containers at dawn"}
            for n in range(count)
        ]
    )
    memory._upkeep.drain()
    return ids


def _trigram_pages(memory: recuerdo.Memory) -> tuple[int | None, int]:
    """The index's page size setting, and its largest leaf (ids up to 10 are its records)."""
    with memory._store.read() as tx:
        setting = tx.scalar("SELECT v FROM entry_trigrams_config WHERE k = 'pgsz'")
        largest = tx.scalar("SELECT max(length(block)) FROM entry_trigrams_data WHERE id > 10")
    return setting, int(largest)


def _segments(memory: recuerdo.Memory, index: str) -> int:
    with memory._store.read() as tx:
        return int(tx.scalar(f"SELECT count(DISTINCT segid) FROM {index}_idx"))


def _found(memory: recuerdo.Memory) -> tuple[set[int], set[int]]:
    by_substring = {row["id"] for row in memory.recall(search="ontainer", limit=5000)}
    by_words = {hit["id"] for hit in memory.search("harbour crane 17", limit=20)["results"]}
    return by_substring, by_words


@pytest.mark.parametrize("in_memory", [False, True], ids=["file", "in_memory"])
def test_the_trigram_index_is_written_in_small_pages(base: Path, in_memory: bool) -> None:
    with recuerdo.open("pages", base_dir=base, in_memory=in_memory, embedder="none") as memory:
        ids = _fill(memory, 3000)
        setting, largest = _trigram_pages(memory)
        assert setting == TRIGRAM_PAGE_BYTES
        assert TRIGRAM_PAGE_BYTES <= largest <= TRIGRAM_PAGE_BYTES + PAGE_SLACK
        assert len(memory.recall(search="ontainer", limit=5000)) == len(ids)


def test_an_index_written_in_default_pages_is_written_again_small_by_compact(base: Path) -> None:
    with recuerdo.open("pages", base_dir=base, embedder="none") as memory:
        with memory._store.write() as tx:  # as a store made before the setting was
            tx.execute(
                "INSERT INTO entry_trigrams (entry_trigrams, rank)"
                f" VALUES ('pgsz', {FTS5_DEFAULT_PAGE_BYTES})"
            )
        ids = _fill(memory, 3000)
        for entry_id in ids[:500]:
            assert memory.forget(entry_id)
        _fill(memory, 200)
        assert _trigram_pages(memory)[1] > TRIGRAM_PAGE_BYTES + PAGE_SLACK
        assert _segments(memory, "entry_trigrams") > 1
        found = _found(memory)
        assert len(found[0]) == 2700 and found[1]
    with recuerdo.open("pages", base_dir=base, embedder="none") as memory:
        assert _trigram_pages(memory)[0] == TRIGRAM_PAGE_BYTES  # set when opened
        report = memory.compact()
        assert report["rebuilt"] == list(FULL_TEXT_INDEXES)
        assert _trigram_pages(memory)[1] <= TRIGRAM_PAGE_BYTES + PAGE_SLACK
        assert [_segments(memory, index) for index in FULL_TEXT_INDEXES] == [1, 1, 1]
        assert _found(memory) == found
