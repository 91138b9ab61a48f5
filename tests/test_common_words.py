"""A near-universal word beside a rare one: the rare word's matches are ranked, the chunks with
only the common word follow (newest first), and paging still walks every match exactly once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import recuerdo
from recuerdo.store.sqlite import search

SIZE = search.COMMON_AT + 100
RARE = {7: "quokka quokka", 500: "quokka", 1050: "quokka in the title"}


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[recuerdo.Memory]:
    base: Path = tmp_path_factory.mktemp("common")
    memory = recuerdo.open("common", base_dir=base, embedder="none")
    memory.remember_many(
        [
            {
                "category": "learning",
                "content": f"the note {n} {RARE.get(n, 'plain')}"
                + (" middling" if n % 8 == 0 else ""),
            }
            for n in range(SIZE)
        ]
    )
    memory._upkeep.drain()
    yield memory
    memory.close()


def _chunk_items(memory: recuerdo.Memory, ranked: list[tuple[int, float]]) -> list[int]:
    with memory._store.read() as tx:
        item_of = {
            row["id"]: row["item_id"]
            for row in tx.all("SELECT id, item_id FROM chunks WHERE item_id IS NOT NULL")
        }
    return [item_of[chunk] for chunk, _ in ranked]


def test_rare_matches_rank_first_then_common_ones_newest_first(memory: recuerdo.Memory) -> None:
    with memory._store.read() as tx:
        ranked = tx.text.rank(["the", "quokka"], "any", 10, 0)
        rare_only = tx.text.rank(["quokka"], "any", 10, 0)
    assert [chunk for chunk, _ in ranked[:3]] == [chunk for chunk, _ in rare_only]
    tail = [chunk for chunk, _ in ranked[3:]]
    assert len(tail) == 7 and tail == sorted(tail, reverse=True)
    scores = [score for _, score in ranked]
    assert scores == sorted(scores, reverse=True) and scores[2] > scores[3]


@pytest.mark.parametrize("window", [1, 3, 50, 700])
def test_pages_cover_every_match_once(memory: recuerdo.Memory, window: int) -> None:
    seen: list[int] = []
    with memory._store.read() as tx:
        while page := tx.text.rank(["quokka", "the"], "any", window, len(seen)):
            seen += [chunk for chunk, _ in page]
        total = tx.scalar("SELECT count(*) FROM chunks WHERE item_id IS NOT NULL")
    assert len(seen) == len(set(seen)) == total


@pytest.mark.parametrize("words", [["the"], ["the", "note"], ["quokka", "middling"]])
def test_queries_without_a_rare_and_a_common_word_rank_by_bm25_alone(
    memory: recuerdo.Memory, words: list[str]
) -> None:
    """One word, only common words, or no common word (``middling`` is in one chunk of 8):
    the plain BM25 ranking."""
    with memory._store.read() as tx:
        ranked = tx.text.rank(words, "any", 20, 0)
        exact = tx.text._ranked(search.match_expression(words), 20, 0)  # type: ignore[attr-defined]
    assert ranked == exact


def test_search_finds_the_rare_items_first(memory: recuerdo.Memory) -> None:
    found = memory.search("the quokka", limit=5)["results"]
    assert {hit["id"] for hit in found[:3]} == {
        item for item in _chunk_items(memory, _rare_chunks(memory))
    }


def _rare_chunks(memory: recuerdo.Memory) -> list[tuple[int, float]]:
    with memory._store.read() as tx:
        return tx.text.rank(["quokka"], "any", 10, 0)


def test_leaving_the_common_word_out_keeps_the_order_of_the_other_words_hits(
    memory: recuerdo.Memory,
) -> None:
    """A word in every chunk weighs nothing in BM25 (FTS5 clamps its IDF), so the chunks that
    hold ``middling`` come in the order the full ranking gives them."""
    with memory._store.read() as tx:
        pruned = [chunk for chunk, _ in tx.text.rank(["middling", "the"], "any", 200, 0)]
        exact = [
            chunk
            for chunk, _ in tx.text._ranked(  # type: ignore[attr-defined]
                search.match_expression(["middling", "the"]), 200, 0
            )
        ]
    holding = SIZE // 8 + 1
    assert pruned[:holding] == exact[:holding]
