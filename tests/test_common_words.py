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
RANK_AT = 1000  # search.RANK_AT, written out: these tests also ran against the code before it


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
        ranked = tx.text.rank("local", ["the", "quokka"], "any", 10, 0)
        rare_only = tx.text.rank("local", ["quokka"], "any", 10, 0)
    assert [chunk for chunk, _ in ranked[:3]] == [chunk for chunk, _ in rare_only]
    tail = [chunk for chunk, _ in ranked[3:]]
    assert len(tail) == 7 and tail == sorted(tail, reverse=True)
    scores = [score for _, score in ranked]
    assert scores == sorted(scores, reverse=True) and scores[2] > scores[3]


@pytest.mark.parametrize("window", [1, 3, 50, 700])
def test_pages_cover_every_match_once(memory: recuerdo.Memory, window: int) -> None:
    seen: list[int] = []
    with memory._store.read() as tx:
        while page := tx.text.rank("local", ["quokka", "the"], "any", window, len(seen)):
            seen += [chunk for chunk, _ in page]
        total = tx.scalar("SELECT count(*) FROM chunks WHERE item_id IS NOT NULL")
    assert len(seen) == len(set(seen)) == total


def _windowed(
    tx: object, words: list[str], mode: str = "any", window: int = RANK_AT
) -> list[tuple[int, float]]:
    """What the rule promises for a query whose every word is broad: BM25 over the newest
    RANK_AT matches, then the older matches newest first with score 0 (built by hand)."""
    expression = search.match_expression(words, mode)
    rows = tx.all(  # type: ignore[attr-defined]
        "SELECT rowid FROM chunk_fts WHERE chunk_fts MATCH ? ORDER BY rowid DESC", (expression,)
    )
    newest = {row["rowid"] for row in rows[:window]}
    every = tx.text._ranked(expression, 10**9, 0)  # type: ignore[attr-defined]
    return [hit for hit in every if hit[0] in newest] + [
        (row["rowid"], 0.0) for row in rows[window:]
    ]


def test_a_query_with_a_rarer_word_ranks_by_bm25_alone(memory: recuerdo.Memory) -> None:
    """No common word (``middling`` is in one chunk of 8, under RANK_AT): the plain ranking."""
    with memory._store.read() as tx:
        ranked = tx.text.rank("local", ["quokka", "middling"], "any", 20, 0)
        exact = tx.text._ranked(search.match_expression(["quokka", "middling"]), 20, 0)  # type: ignore[attr-defined]
    assert ranked == exact


@pytest.mark.parametrize(
    ("words", "mode"), [(["the"], "any"), (["the", "note"], "any"), (["the", "note"], "all")]
)
def test_a_query_of_broad_words_ranks_its_newest_matches(
    memory: recuerdo.Memory, words: list[str], mode: str
) -> None:
    """One common word, or only common words: BM25 over the newest RANK_AT matches, the older
    ones after them newest first (before, every match was ranked)."""
    with memory._store.read() as tx:
        expected = _windowed(tx, words, mode)
        ranked = tx.text.rank("local", words, mode, len(expected) + 5, 0)
        everything = tx.text._ranked(search.match_expression(words, mode), 10**9, 0)  # type: ignore[attr-defined]
    assert len(expected) == SIZE > RANK_AT
    assert ranked == expected
    assert sorted(ranked) == sorted(
        (c, s if c in dict(expected[:RANK_AT]) else 0.0) for c, s in everything
    )


@pytest.mark.parametrize("window", [1, 7, 333, 999, 1000, 1001])
@pytest.mark.parametrize("words", [["the"], ["note", "plain"]])
def test_pages_of_a_broad_query_follow_its_order_once(
    memory: recuerdo.Memory, window: int, words: list[str]
) -> None:
    seen: list[tuple[int, float]] = []
    with memory._store.read() as tx:
        while page := tx.text.rank("local", words, "any", window, len(seen)):
            seen += page
        expected = _windowed(tx, words)
    assert seen == expected


def _narrow_first(
    tx: object, narrow: list[str], wide: list[str], window: int, common: list[str] = ()
) -> list[tuple[int, float]]:
    """What the rule promises for narrow words beside broad ones (built by hand from the full
    ranking): every chunk holding a narrow word, and the newest ``window`` chunks holding only
    broad words, ranked together by the whole query's BM25; then the older broad-only chunks
    newest first; then (``common``) the chunks holding only common words, newest first."""
    words = narrow + wide
    every = dict(tx.text._ranked(search.match_expression(words), 10**9, 0))  # type: ignore[attr-defined]

    def newest(expression: str) -> list[int]:
        return [
            row["rowid"]
            for row in tx.all(  # type: ignore[attr-defined]
                "SELECT rowid FROM chunk_fts WHERE chunk_fts MATCH ? ORDER BY rowid DESC",
                (expression,),
            )
        ]

    narrow_any = search.match_expression(narrow)
    holding = newest(narrow_any)
    others = newest(f"({search.match_expression(wide)}) NOT ({narrow_any})")
    ranked = sorted(
        ((chunk, every[chunk]) for chunk in holding + others[:window]),
        key=lambda hit: (-hit[1], hit[0]),
    )
    filler = []
    if common:
        filler = newest(
            f"({search.match_expression(common)}) NOT ({search.match_expression(words)})"
        )
    return ranked + [(chunk, 0.0) for chunk in others[window:] + filler]


def _same_order(found: list[tuple[int, float]], expected: list[tuple[int, float]]) -> None:
    """The same chunks in the same order, with the same scores but for rounding (the narrow
    words' chunks are scored as a difference of two BM25 sums)."""
    assert [chunk for chunk, _ in found] == [chunk for chunk, _ in expected]
    assert [score for _, score in found] == pytest.approx([score for _, score in expected])


def test_a_rare_word_beside_a_broad_one_keeps_every_rare_match_ranked(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With RANK_AT (and SPLIT_AT) lowered under ``middling``'s 138 chunks, ``middling`` alone
    is broad and is windowed. Beside ``quokka`` (3 chunks), every quokka chunk is ranked (the
    oldest too) with the newest 50 chunks holding only ``middling``; the older ones follow
    newest first (before, all 141 were ranked: a broad word cost as much as ranking all its
    chunks)."""
    monkeypatch.setattr(search, "RANK_AT", 50, raising=False)
    monkeypatch.setattr(search, "SPLIT_AT", 100, raising=False)
    with memory._store.read() as tx:
        alone = tx.text.rank("local", ["middling"], "any", 200, 0)
        assert alone == _windowed(tx, ["middling"], window=50)
        assert alone != tx.text._ranked('"middling"', 200, 0)  # type: ignore[attr-defined]
        both = tx.text.rank("local", ["quokka", "middling"], "any", 200, 0)
        expected = _narrow_first(tx, ["quokka"], ["middling"], 50)
        beside_common = tx.text.rank("local", ["quokka", "note"], "any", 5, 0)
        rare_only = tx.text._ranked('"quokka"', 5, 0)  # type: ignore[attr-defined]
    assert len(expected) == SIZE // 8 + 1 + len(RARE)
    _same_order(both, expected)
    assert {chunk for chunk, score in both if score > 0} >= {chunk for chunk, _ in rare_only}
    assert beside_common[:3] == rare_only


@pytest.mark.parametrize("rank_at", [1000, 50])
def test_under_split_at_a_rare_word_beside_a_broad_one_ranks_every_match(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch, rank_at: int
) -> None:
    """``middling``'s 138 chunks are under SPLIT_AT: every match is ranked, also when
    ``middling`` is broad (RANK_AT 50): in a small memory the full ranking is cheap, and
    windowing it would change answers (LoCoMo R@10)."""
    monkeypatch.setattr(search, "RANK_AT", rank_at, raising=False)
    with memory._store.read() as tx:
        both = tx.text.rank("local", ["quokka", "middling"], "any", 200, 0)
        exact = tx.text._ranked(search.match_expression(["quokka", "middling"]), 200, 0)  # type: ignore[attr-defined]
    assert len(both) == SIZE // 8 + 1 + len(RARE)
    assert both == exact


@pytest.mark.parametrize("window", [1, 7, 49, 50, 51, 200])
@pytest.mark.parametrize(
    ("words", "narrow", "wide", "common"),
    [
        (["middling", "quokka"], ["quokka"], ["middling"], []),
        (["quokka", "middling", "the"], ["quokka"], ["middling"], ["the"]),
    ],
)
def test_pages_of_narrow_words_beside_broad_ones_follow_their_order_once(
    memory: recuerdo.Memory,
    monkeypatch: pytest.MonkeyPatch,
    window: int,
    words: list[str],
    narrow: list[str],
    wide: list[str],
    common: list[str],
) -> None:
    monkeypatch.setattr(search, "RANK_AT", 50, raising=False)
    monkeypatch.setattr(search, "SPLIT_AT", 100, raising=False)
    seen: list[tuple[int, float]] = []
    with memory._store.read() as tx:
        while page := tx.text.rank("local", words, "any", window, len(seen)):
            seen += page
        expected = _narrow_first(tx, narrow, wide, 50, common)
        total = tx.scalar("SELECT count(*) FROM chunks WHERE item_id IS NOT NULL")
    _same_order(seen, expected)
    assert len({chunk for chunk, _ in seen}) == len(seen)
    assert len(seen) == (total if common else SIZE // 8 + 1 + len(RARE))


def test_search_finds_the_rare_items_first(memory: recuerdo.Memory) -> None:
    found = memory.search("the quokka", limit=5)["results"]
    assert {hit["id"] for hit in found[:3]} == {
        item for item in _chunk_items(memory, _rare_chunks(memory))
    }


def _rare_chunks(memory: recuerdo.Memory) -> list[tuple[int, float]]:
    with memory._store.read() as tx:
        return tx.text.rank("local", ["quokka"], "any", 10, 0)


def test_leaving_the_common_word_out_keeps_the_order_of_the_other_words_hits(
    memory: recuerdo.Memory,
) -> None:
    """A word in every chunk weighs nothing in BM25 (FTS5 clamps its IDF), so the chunks that
    hold ``middling`` come in the order the full ranking gives them."""
    with memory._store.read() as tx:
        pruned = [chunk for chunk, _ in tx.text.rank("local", ["middling", "the"], "any", 200, 0)]
        exact = [
            chunk
            for chunk, _ in tx.text._ranked(  # type: ignore[attr-defined]
                search.match_expression(["middling", "the"]), 200, 0
            )
        ]
    holding = SIZE // 8 + 1
    assert pruned[:holding] == exact[:holding]
