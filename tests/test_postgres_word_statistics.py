"""PostgreSQL's BM25 statistics in bounded time (``store/postgres/word_statistics.py``): a
chunk's length written with it, and a large tenant's totals taken from the planner's
estimates instead of counted at every search."""

from __future__ import annotations

from pathlib import Path

import pytest

import recuerdo
from recuerdo.engine import restore_memory
from recuerdo.store.postgres import PostgresStore, word_statistics
from recuerdo.store.postgres.connection import PostgresTx

from .conftest import statements_run
from .postgres import app_conninfo, unique_memory


def _load(memory: recuerdo.Memory, first: int, count: int, every: int = 5) -> None:
    memory.remember_many(
        [
            {
                "category": "learning",
                "content": f"entry {n} " + ("halfway " * (1 + n % 3) if n % every < 2 else ""),
            }
            for n in range(first, first + count)
        ]
    )
    memory._upkeep.drain()


def _lengths(store: PostgresStore) -> list[tuple[int | None, int | None]]:
    with store.read() as tx:
        return [
            (row["tokens"], row["counted"])
            for row in tx.all(
                "SELECT tokens, (SELECT sum(array_length(u.positions, 1)) FROM unnest(words) u)"
                " AS counted FROM chunks ORDER BY id"
            )
        ]


def _statistics(store: PostgresStore, words: list[str]) -> word_statistics.Statistics:
    with store.read() as tx:
        return word_statistics.read(tx, "local", words)  # type: ignore[arg-type]


def test_a_chunk_carries_its_length(loaded: tuple[PostgresStore, recuerdo.Memory]) -> None:
    """The average length read each search was each of the latest 1,000 chunks' words
    unnested (8 ms whatever the memory's size); each chunk now has its length written with its
    words, and a row without one (written before m027) counts what its words give."""
    store, mem = loaded
    _load(mem, 0, 30)
    lengths = _lengths(store)
    assert len(lengths) == 30
    assert all(tokens == counted and tokens is not None for tokens, counted in lengths)
    assert len({tokens for tokens, _ in lengths}) > 1
    with_lengths = _statistics(store, ["entry"]).average
    with store.write() as tx:
        tx.execute("UPDATE chunks SET tokens = NULL WHERE id % 2 = 0")
    assert _statistics(store, ["entry"]).average == pytest.approx(with_lengths)
    expected = sum(counted for _, counted in lengths if counted is not None) / len(lengths)
    assert with_lengths == pytest.approx(expected)


def test_an_edited_chunk_has_its_length_written_again(
    loaded: tuple[PostgresStore, recuerdo.Memory],
) -> None:
    store, mem = loaded
    mem.save("Plans", "short", key="plans")
    mem._upkeep.drain()
    before = _lengths(store)
    mem.save("Plans", "a much longer body " * 20, key="plans")
    mem._upkeep.drain()
    after = _lengths(store)
    assert after != before
    assert all(tokens == counted and tokens is not None for tokens, counted in after)
    with store.write() as tx:
        tx.execute("UPDATE chunks SET words = to_tsvector('recuerdo_words', 'one two three')")
    assert {tokens for tokens, _ in _lengths(store)} == {3}


def test_a_large_tenant_takes_the_planners_estimates(
    loaded: tuple[PostgresStore, recuerdo.Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past COUNTED_UP_TO chunks, N is the planner's estimate (the rows per page ANALYZE saw,
    times the pages the table has now) and a word counted to its limit takes its lexeme's share
    of the rows (before, both were counted at every search: a word in every chunk read half the
    memory). 300 chunks are analysed (``halfway`` in 40% of them), 60 more written, all with
    ``halfway``: a count says 180 of 360 (half: the word would weigh nothing), the estimate
    40% of N."""
    store, mem = loaded
    monkeypatch.setattr(word_statistics, "COUNTED_UP_TO", 100, raising=False)
    _load(mem, 0, 300)
    store.optimize()
    _load(mem, 300, 60, every=1)
    with store.read() as tx:
        assert tx.scalar("SELECT count(*) FROM chunks") == 360
    found = _statistics(store, ["halfway", "entry", "nowhere"])
    assert found.share == 1.0
    assert 300 < found.chunks <= 400
    half = (found.chunks + 1) // 2
    assert found.found == {"halfway": round(0.4 * found.chunks), "entry": half, "nowhere": 0}


def test_an_estimate_from_before_the_tenant_grew_is_not_taken(
    loaded: tuple[PostgresStore, recuerdo.Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An estimate under what was counted is not taken (statistics older than the tenant's
    growth): N and the word are counted, 360 and 180. Planted here: ANALYZE's page count set
    high, so its rows per page come out near zero (autovacuum off, so it stays)."""
    store, mem = loaded
    monkeypatch.setattr(word_statistics, "COUNTED_UP_TO", 100, raising=False)
    with store.write() as tx:
        tx.execute("ALTER TABLE chunks SET (autovacuum_enabled = false)")
    _load(mem, 0, 60)
    store.optimize()
    with store.write() as tx:
        tx.execute("UPDATE pg_class SET relpages = 1000000 WHERE oid = 'chunks'::regclass")
    _load(mem, 60, 300, every=1)
    found = _statistics(store, ["halfway"])
    assert (found.chunks, found.found, found.share) == (360, {"halfway": 180}, None)


def test_a_small_tenant_is_counted(
    loaded: tuple[PostgresStore, recuerdo.Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, mem = loaded
    monkeypatch.setattr(word_statistics, "COUNTED_UP_TO", 1000, raising=False)
    _load(mem, 0, 300)
    store.optimize()
    _load(mem, 300, 60, every=1)
    found = _statistics(store, ["halfway", "entry"])
    assert (found.chunks, found.found) == (360, {"halfway": 180, "entry": 180})


def test_a_backup_of_the_memory_restores_into_sqlite(
    loaded: tuple[PostgresStore, recuerdo.Memory], tmp_path: Path
) -> None:
    """The step that adds the lengths is PostgreSQL's; SQLite lists it too (doing nothing), or a
    restore would refuse every PostgreSQL backup as made by a newer recuerdo."""
    _store, mem = loaded
    _load(mem, 0, 20)
    mem.backup(tmp_path / "memory.jsonl.gz")
    restore_memory("copy", tmp_path / "memory.jsonl.gz", base_dir=tmp_path)
    copy = recuerdo.open("copy", base_dir=tmp_path, embedder="none")
    try:
        # The same items found (each backend ranks them by its own BM25 normalisation).
        assert {hit["id"] for hit in copy.search("halfway", limit=50)["results"]} == {
            hit["id"] for hit in mem.search("halfway", limit=50)["results"]
        }
        assert len(copy.recall(limit=50)) == 20
    finally:
        copy.close()


def test_a_reader_held_by_the_tenant_policies_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    """pg_stats hides a policed table's statistics from the roles its policies hold (they
    would tell of other tenants' rows): such a reader counts N and the words up to half, in
    the one statement, as before the estimates (an ordinary role owning its memory, as
    docs/tenancy.md has a deployment connect)."""
    store = PostgresStore(app_conninfo(), unique_memory("stats"))
    mem = recuerdo.open(store.memory, store=store, embedder="none")
    try:
        monkeypatch.setattr(word_statistics, "COUNTED_UP_TO", 100, raising=False)
        _load(mem, 0, 300)
        store.optimize()
        _load(mem, 300, 60, every=1)
        with statements_run(monkeypatch, PostgresTx) as seen:
            found = _statistics(store, ["halfway", "entry"])
        with store.read() as tx:
            assert tx.scalar("SELECT row_security_active('chunks')") is True
    finally:
        mem.close()
        store.drop()
    assert (found.chunks, found.found) == (360, {"halfway": 180, "entry": 180})
    assert len(seen) == 1


def test_a_tenant_sharing_the_table_counts_its_words(
    loaded: tuple[PostgresStore, recuerdo.Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lexeme's share in pg_stats is of every tenant's chunks: for a tenant holding a third
    of them it would say "halfway" is in a third of this tenant's chunks (it is in every one
    of them, and in none of the other's), so the word is counted instead."""
    store, mem = loaded
    monkeypatch.setattr(word_statistics, "COUNTED_UP_TO", 100, raising=False)
    _load(mem, 0, 300, every=1)
    other = mem.for_tenant("other")
    other.remember_many([{"category": "learning", "content": f"row {n}"} for n in range(600)])
    mem._upkeep.drain()
    store.optimize()
    found = _statistics(store, ["halfway"])
    assert found.share == pytest.approx(1 / 3, abs=0.05)
    assert found.found == {"halfway": (found.chunks + 1) // 2}


@pytest.mark.parametrize("empty_side", ["wanted", "unwanted"])
def test_a_side_without_lexemes_leaves_nothing_out_by_mistake(
    loaded: tuple[PostgresStore, recuerdo.Memory], empty_side: str
) -> None:
    """``²`` is a query token with no lexeme. Chunks of an empty query less others are none
    (``'' && !!x`` alone is every chunk without x); chunks of a query less an empty one are the
    query's."""
    store, mem = loaded
    _load(mem, 0, 20)
    with store.read() as tx:
        text = tx.text
        text.rank("local", ["entry"], "any", 1, 0)  # aims the primitives at the tenant
        empty, entry = text._any(["²"]), text._any(["halfway"])
        if empty_side == "wanted":
            assert text._count(text._without(empty, entry)) == 0
        else:
            assert text._count(text._without(entry, empty)) == text._count(entry) == 8
