"""Vectors whose text lost its last chunk are collected from the hashes released by deleted
chunks, not by reading every vector (step ``m032_released_hashes``,
``docs/decisions/0060-released-hashes.md``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

import recuerdo
from recuerdo.index import chunks, vectors
from recuerdo.store import released_hashes
from recuerdo.store.sqlite import files
from recuerdo.store.sqlite.connection import SQLiteStore

from .conftest import query_plan, statements_run, tx_class_of
from .postgres import contract_url, unique_memory

SHARED = "The deploy key rotates every Tuesday at noon."


def _vectors_of(memory: recuerdo.Memory, text_of: int) -> int:
    with memory._store.read() as tx:
        return int(
            tx.scalar(
                "SELECT count(*) FROM embeddings e WHERE e.hash IN"
                " (SELECT c.hash FROM chunks c WHERE c.tenant = 'local' AND c.item_id = ?)",
                (text_of,),
            )
        )


def _released(memory: recuerdo.Memory) -> int:
    with memory._store.read() as tx:
        return int(tx.scalar(f"SELECT count(*) FROM {released_hashes.TABLE}"))


def _collect(memory: recuerdo.Memory) -> int:
    with memory._store.write() as tx:
        return vectors.collect_orphans(tx)


def _delete_uncollected(memory: recuerdo.Memory, tenant: str, item: int) -> None:
    """Delete an item (its chunks go by the cascade, releasing their hashes) in a write that
    does not collect: a forgetting verb collects in its own write, these tests collect apart."""
    with memory._store.write() as tx:
        tx.execute("DELETE FROM items WHERE tenant = ? AND id = ?", (tenant, item))


class MeanwhileEmbedder:
    """Fixed vectors; while it embeds a text that ``meanwhile`` is set for, it runs that
    first: what another writer does while the upkeep embeds outside the write lock."""

    name = "test-meanwhile-8"
    dim = 8
    min_similarity = -1.0
    fusion_weight = 1.0

    def __init__(self) -> None:
        self.meanwhile: dict[str, Callable[[], None]] = {}

    def embed(self, texts: list[str], *, query: bool = False) -> np.ndarray:
        for text in texts:
            if text in self.meanwhile:
                self.meanwhile.pop(text)()
        return np.ones((len(texts), self.dim), dtype=np.float32) / np.sqrt(self.dim)


def _opened(
    backend: str, base: Path, embedder: object
) -> tuple[recuerdo.Memory, Callable[[], None]]:
    if backend == "sqlite":
        memory = recuerdo.open("vectors", base_dir=base, embedder=embedder)
        return memory, memory.close
    from recuerdo.store.postgres import PostgresStore

    store = PostgresStore(contract_url(), unique_memory("released"))
    memory = recuerdo.open("vectors", store=store, embedder=embedder)

    def close() -> None:
        memory.close()
        store.drop()

    return memory, close


@pytest.fixture(params=["sqlite", "postgres"])
def embedded(request: pytest.FixtureRequest, base: Path) -> Iterator[recuerdo.Memory]:
    """A memory with the shipped static embedder, on a file or on PostgreSQL."""
    memory, close = _opened(request.param, base, "static")
    yield memory
    close()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_text_deleted_while_it_is_embedded_leaves_no_vector(backend: str, base: Path) -> None:
    """The upkeep embeds outside the write lock. A note erased meanwhile (its hash released
    and collected at once, as an erasing write does) gets no vector written after it."""
    embedder = MeanwhileEmbedder()
    memory, close = _opened(backend, base, embedder)
    try:
        memory._upkeep.stop(drain=False)
        doomed = memory.save("Doomed", "Erased while its vector is computed.")["id"]
        kept = memory.save("Kept", "Stays, with its vector.")["id"]

        hashes: list[bytes] = []

        def erase() -> None:
            with memory._store.read() as tx:
                chunks = tx.all("SELECT hash FROM chunks WHERE item_id = ?", (doomed,))
            hashes.extend(row["hash"] for row in chunks)
            memory.delete(doomed, hard=True)
            _collect(memory)

        embedder.meanwhile["Doomed\nErased while its vector is computed."] = erase
        memory._upkeep.drain()
        assert hashes and not embedder.meanwhile, "the doomed note was never embedded"
        with memory._store.read() as tx:
            marks = ", ".join("?" * len(hashes))
            assert (
                tx.scalar(f"SELECT count(*) FROM embeddings WHERE hash IN ({marks})", hashes) == 0
            )
        assert _vectors_of(memory, kept) == 1
    finally:
        close()


def test_a_vector_goes_with_the_last_chunk_of_its_text(embedded: recuerdo.Memory) -> None:
    first = embedded.save("First copy", SHARED)["id"]
    second = embedded.save("Second copy", SHARED)["id"]
    other = embedded.save("Other", "Lunch is served in the atrium on Fridays.")["id"]
    embedded._upkeep.drain()
    assert (_vectors_of(embedded, first), _vectors_of(embedded, other)) == (1, 1)
    # The worker collects released hashes itself: it raced the collection below (CI, loaded).
    embedded._upkeep.stop(drain=False)

    with embedded._store.read() as tx:
        hashes = tx.all(
            "SELECT DISTINCT hash FROM chunks WHERE tenant = 'local' AND item_id = ?", (first,)
        )
    _delete_uncollected(embedded, "local", first)
    assert _released(embedded) == len(hashes)  # the deleted chunks' texts, once each
    assert _collect(embedded) == 1
    assert _released(embedded) == 0
    assert _vectors_of(embedded, second) == 1  # the other copy still uses it

    embedded.delete(second, hard=True)
    embedded._upkeep.drain()
    with embedded._store.read() as tx:
        left = tx.scalar(
            "SELECT count(*) FROM embeddings WHERE hash IN (" + ", ".join("?" * len(hashes)) + ")",
            [row["hash"] for row in hashes],
        )
    assert left == 0
    assert _vectors_of(embedded, other) == 1
    assert _released(embedded) == 0
    assert _collect(embedded) == 0  # nothing released since


# The released hashes, and the walks of the models and the tenants (``t``): their own rows.
_SCANNED_ON_PURPOSE = {"released_hashes", "models", "tenants", "t", "CONSTANT"}


def test_a_collection_and_the_embedder_read_by_keys_only(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No statement of a collection, nor of the embedder's write, walks the vectors or the
    chunks (SQLite's plans, aliases included); only the released hashes themselves are read
    whole, and the recursive walks of the models and the tenants."""
    with recuerdo.open("vectors", base_dir=base, embedder="static") as memory:
        ids = [
            memory.save(f"Note {n}", f"Topic {n}: the build {n} passed.")["id"] for n in range(200)
        ]
        memory._upkeep.drain()
        memory._store.optimize()
        memory._upkeep.stop(drain=False)
        _delete_uncollected(memory, "local", ids[7])
        memory.save("Fresh", "A note written after the statistics.")
        with statements_run(monkeypatch) as seen:
            with memory._store.write() as tx:
                assert vectors.collect_orphans(tx) == 1
                chunks.chunk_backlog(tx)
            assert vectors.embed_backlog(memory._store, memory._meaning.embedder) > 0
        walks = [
            (sql, step)
            for sql, params in seen
            for step in query_plan(memory, sql, params)
            if step.startswith("SCAN") and step.split()[1] not in _SCANNED_ON_PURPOSE
        ]
        read = " ".join(sql for sql, _ in seen)
        assert "DELETE FROM embeddings" in read and "chunks /* every tenant */ WHERE id IN" in read
        assert not walks, walks


def _doomed_and_kept(base: Path, name: str) -> tuple[str, int, int, bytes]:
    """A memory file with two embedded notes: its location, the note to lose, the one to
    keep, and the hash of the first one's text."""
    with recuerdo.open(name, base_dir=base, embedder="static") as memory:
        doomed = memory.save("Doomed", "A text whose chunk will go.")["id"]
        kept = memory.save("Kept", "A text that stays.")["id"]
        memory._upkeep.drain()
        with memory._store.read() as tx:
            orphan = bytes(tx.scalar("SELECT hash FROM chunks WHERE item_id = ?", (doomed,)))
        return memory.location, doomed, kept, orphan


def _before_the_step(location: str) -> None:
    """The store as m031 left it: chunk deletions counted, not their hashes kept."""
    conn = files.connect(location)
    try:
        conn.execute(f"DROP TABLE {released_hashes.TABLE}")
        conn.execute("DROP TRIGGER chunk_hashes_released")
        conn.execute(
            "CREATE TRIGGER chunk_deletions_count AFTER DELETE ON chunks BEGIN"
            " UPDATE index_marks SET upto = upto + 1 WHERE name = 'chunk_deletions'; END"
        )
        for name in ("chunk_deletions", "chunk_deletions_collected"):
            conn.execute("INSERT INTO index_marks (name, upto) VALUES (?, 0)", (name,))
        conn.execute("DELETE FROM _migrations WHERE name = 'm032_released_hashes'")
        conn.commit()
    finally:
        conn.close()


def test_the_step_releases_the_vectors_no_chunk_uses(base: Path) -> None:
    """Vectors orphaned before the step (their collection was still due) are collected after
    it."""
    location, gone, kept, orphan = _doomed_and_kept(base, "older")
    _before_the_step(location)
    conn = files.connect(location)
    try:
        conn.execute("PRAGMA foreign_keys = ON")  # its chunks go with it, as the store's do
        conn.execute("DELETE FROM items WHERE id = ?", (gone,))  # the old trigger counts it
        conn.commit()
        held = conn.execute("SELECT count(*) FROM embeddings WHERE hash = ?", (orphan,))
        assert held.fetchone()[0] == 1
    finally:
        conn.close()
    with recuerdo.open("older", base_dir=base, embedder="static") as memory:
        memory._upkeep.drain()
        with memory._store.read() as tx:
            assert tx.scalar("SELECT count(*) FROM embeddings WHERE hash = ?", (orphan,)) == 0
            marks = "SELECT count(*) FROM index_marks WHERE name LIKE 'chunk_deletions%'"
            assert tx.scalar(marks) == 0
        assert _vectors_of(memory, kept) == 1
        assert _released(memory) == 0


def test_a_postgres_memory_from_before_the_step_releases_its_orphans() -> None:
    from recuerdo.store.postgres import PostgresStore

    name = unique_memory("released-step")
    store = PostgresStore(contract_url(), name)
    try:
        with recuerdo.open(name, store=store, embedder="static") as memory:
            gone = memory.save("Gone", "A text that will be deleted before the step.")["id"]
            kept = memory.save("Kept", "A text that stays.")["id"]
            memory._upkeep.drain()
            with memory._store.read() as tx:
                orphan = tx.scalar("SELECT hash FROM chunks WHERE item_id = ?", (gone,))
        with store.write() as tx:  # the store as m031 left it, then a delete
            for statement in (
                f"DROP TABLE {released_hashes.TABLE}",
                "DROP TRIGGER chunk_hashes_released ON chunks",
                "DROP FUNCTION recuerdo_release_chunk_hashes()",
                "CREATE FUNCTION recuerdo_count_chunk_deletions() RETURNS trigger"
                " LANGUAGE plpgsql AS $$ BEGIN UPDATE index_marks"
                " SET upto = upto + (SELECT count(*) FROM gone)"
                " WHERE name = 'chunk_deletions'; RETURN NULL; END $$",
                "CREATE TRIGGER chunk_deletions_count AFTER DELETE ON chunks"
                " REFERENCING OLD TABLE AS gone FOR EACH STATEMENT"
                " EXECUTE FUNCTION recuerdo_count_chunk_deletions()",
                "INSERT INTO index_marks (name, upto) VALUES ('chunk_deletions', 0),"
                " ('chunk_deletions_collected', 0)",
                "DELETE FROM _migrations WHERE name = 'm032_released_hashes'",
                "DELETE FROM items WHERE tenant = 'local' AND id = ?",
            ):
                tx.execute(statement, (gone,) if "?" in statement else ())
            assert tx.scalar("SELECT count(*) FROM embeddings WHERE hash = ?", (orphan,)) == 1
            assert tx.scalar("SELECT upto FROM index_marks WHERE name = 'chunk_deletions'") == 1
        store.close()
        after = PostgresStore(contract_url(), name)
        with recuerdo.open(name, store=after, embedder="static") as memory:
            memory._upkeep.drain()
            with memory._store.read() as tx:
                assert tx.scalar("SELECT count(*) FROM embeddings WHERE hash = ?", (orphan,)) == 0
                assert (
                    tx.scalar("SELECT count(*) FROM index_marks WHERE name LIKE 'chunk_del%'") == 0
                )
            assert _vectors_of(memory, kept) == 1
            assert _released(memory) == 0
        after.close()
    finally:
        PostgresStore(contract_url(), name).drop()


def test_a_store_opened_at_the_step_is_the_one_the_steps_make(tmp_path: Path) -> None:
    """The fresh schema (made in one pass) and a migrated one hold the same trigger."""
    store = SQLiteStore(str(tmp_path / "fresh.db"))
    try:
        with store.read() as tx:
            triggers = {
                row["name"]
                for row in tx.all("SELECT name FROM sqlite_master WHERE type = 'trigger'")
            }
    finally:
        store.close()
    assert "chunk_hashes_released" in triggers and "chunk_deletions_count" not in triggers


@pytest.mark.parametrize("source", ["before the step", "with lost chunks"])
def test_a_recovered_memory_collects_the_vectors_of_lost_chunks(base: Path, source: str) -> None:
    """``recover`` rebuilds the released hashes: the chunks the damage took release nothing,
    so every vector no chunk carries is released there; a store from before the step (it has
    no such table) recovers too."""
    location, lost, kept, orphan = _doomed_and_kept(base, "worn")
    if source == "before the step":
        _before_the_step(location)
    conn = files.connect(location)
    try:  # the chunk row is gone, behind every trigger's back: its vector stays
        conn.execute("DROP TRIGGER IF EXISTS chunk_hashes_released")
        conn.execute("DROP TRIGGER IF EXISTS chunk_deletions_count")
        conn.execute("DELETE FROM chunks WHERE item_id = ?", (lost,))
        conn.commit()
    finally:
        conn.close()
    rescued = base / "rescued.db"
    assert recuerdo.engine.recover_memory("worn", rescued, base_dir=base)["recovered"] > 0
    store = SQLiteStore(str(rescued))
    try:
        with recuerdo.open("rescued", store=store, embedder="static") as memory:
            assert memory._store.check()["counts"][released_hashes.CHECKED] == 0
            memory._upkeep.drain()
            with memory._store.read() as tx:
                assert tx.scalar("SELECT count(*) FROM embeddings WHERE hash = ?", (orphan,)) == 0
            assert _vectors_of(memory, kept) == 1
    finally:
        store.close()


def test_check_counts_a_vector_no_collection_will_erase(base: Path) -> None:
    with recuerdo.open("checked", base_dir=base, embedder="static") as memory:
        gone = memory.save("Gone", "Its chunk leaves behind the trigger's back.")["id"]
        memory._upkeep.drain()
        assert memory._store.check()["counts"][released_hashes.CHECKED] == 0
        location = memory.location
    conn = files.connect(location)
    try:
        conn.execute("DROP TRIGGER chunk_hashes_released")
        conn.execute("DELETE FROM chunks WHERE item_id = ?", (gone,))
        conn.commit()
    finally:
        conn.close()
    with recuerdo.open("checked", base_dir=base, embedder="static") as memory:
        report = memory._store.check()
        assert report["counts"][released_hashes.CHECKED] == 1
        assert f"{released_hashes.CHECKED}: 1" in report["problems"]


@pytest.mark.parametrize(
    ("deleted", "lookup"),
    [(1, "CROSS JOIN chunks c"), (5, f"CROSS JOIN {released_hashes.TABLE} r")],
    ids=["by key, tenant by tenant", "in one pass"],
)
def test_a_text_another_tenant_still_carries_keeps_its_vector(
    embedded: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch, deleted: int, lookup: str
) -> None:
    """Vectors are shared across tenants: one tenant's delete leaves the vector of a text
    another tenant holds, whichever way the chunks are looked up (by their key for few
    released texts, in one pass when that would be more lookups than chunks)."""
    ann, bob = embedded.for_tenant("ann"), embedded.for_tenant("bob")
    mine = [ann.save(f"Shared {n}", f"Text number {n} of the shared set.")["id"] for n in range(6)]
    theirs = bob.save("Shared 0", "Text number 0 of the shared set.")["id"]
    embedded._upkeep.drain()
    embedded._upkeep.stop(drain=False)
    for note in mine[:deleted]:
        _delete_uncollected(embedded, "ann", note)
    with statements_run(monkeypatch, tx_class_of(embedded)) as seen:
        assert _collect(embedded) == 1
    assert any(lookup in sql for sql, _ in seen), [sql[-80:] for sql, _ in seen]
    with embedded._store.read() as tx:
        shared = tx.scalar(
            "SELECT hash FROM chunks WHERE tenant = 'bob' AND item_id = ?", (theirs,)
        )
        assert tx.scalar("SELECT count(*) FROM embeddings WHERE hash = ?", (shared,)) == 1
        gone = tx.all(
            "SELECT count(*) AS n FROM embeddings e WHERE NOT EXISTS (SELECT 1 FROM chunks c"
            " WHERE c.hash = e.hash)"
        )
    assert gone[0]["n"] == 0
    _delete_uncollected(embedded, "bob", theirs)
    assert _collect(embedded) == 1
    with embedded._store.read() as tx:
        assert tx.scalar("SELECT count(*) FROM embeddings WHERE hash = ?", (shared,)) == 0


FORGETS: dict[
    str, tuple[Callable[[recuerdo.Memory], int], Callable[[recuerdo.Memory, int], object]]
] = {
    "entry": (
        lambda m: int(m.remember("learning", "Plorvintex launches from pad nine.")),
        lambda m, item: m.forget(item),
    ),
    "note": (
        lambda m: int(m.save("Launch", "Plorvintex launches from pad nine.")["id"]),
        lambda m, item: m.delete(item, hard=True),
    ),
}


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
@pytest.mark.parametrize("form", sorted(FORGETS))
def test_a_forget_erases_the_vector_before_it_returns(backend: str, base: Path, form: str) -> None:
    """``forget`` of an entry and a hard ``delete`` of a note erase the vector of the text no
    chunk carries any more in their own write (decision 0005, step 3), as ``forget_knowledge``
    does: they left it to the upkeep, so the vector stayed stored (and, on a file, its bytes
    stayed in the pages after the forget's checkpoint) until the upkeep's next round."""
    memory, close = _opened(backend, base, "static")
    try:
        write, erase = FORGETS[form]
        item = write(memory)
        kept = memory.save("Kept", "Lunch is served in the atrium on Fridays.")["id"]
        memory._upkeep.drain()
        memory._upkeep.stop(drain=False)  # nothing but the forget itself may erase
        with memory._store.read() as tx:
            row = tx.one(
                "SELECT e.hash, e.vector FROM embeddings e JOIN chunks c ON c.hash = e.hash"
                " WHERE c.tenant = 'local' AND c.item_id = ?",
                (item,),
            )
        assert row is not None
        erase(memory, item)
        with memory._store.read() as tx:
            assert tx.scalar("SELECT count(*) FROM embeddings WHERE hash = ?", (row["hash"],)) == 0
        assert _released(memory) == 0
        assert _vectors_of(memory, kept) == 1
        if backend == "sqlite":
            state = base / ".recuerdo" / "state"
            stored = b"".join(path.read_bytes() for path in state.glob("vectors.db*"))
            assert bytes(row["vector"]) not in stored
    finally:
        close()
