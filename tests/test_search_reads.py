"""What the lexical stage reads of its best-ranked chunks: their text (for the words as
written) and whether they pass the filters, in one read, with the same answers."""

from __future__ import annotations

from typing import Any

import pytest

import recuerdo

from .conftest import statements_run


def _chunk_reads(monkeypatch: pytest.MonkeyPatch, search: Any) -> list[str]:
    """The statements that read chunks by id, joined with their items, while ``search`` runs."""
    with statements_run(monkeypatch) as seen:
        search()
    flat = [" ".join(sql.split()) for sql, _ in seen]
    return [sql for sql in flat if all(part in sql for part in _READ_BY_ID)]


_READ_BY_ID = ("FROM chunks c", "c.id IN (", "JOIN items i")


@pytest.mark.parametrize("scope", [None, "project:a"], ids=["every scope", "one scope"])
def test_a_search_reads_its_best_chunks_once(
    file_memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch, scope: str | None
) -> None:
    """The text of the best-ranked chunks and their filter columns come from one read (they
    were two reads of the same rows: 1.4 ms each at 10,000 notes)."""
    for n in range(40):
        file_memory.save(
            f"Harbour {n}", f"the harbour log, day {n}", scope=f"project:{'ab'[n % 2]}"
        )
    file_memory._upkeep.drain()
    replies: list[Any] = []
    reads = _chunk_reads(
        monkeypatch,
        lambda: replies.append(
            file_memory.search("harbour", scope=scope, stages=["lexical"], limit=50)
        ),
    )
    assert len(reads) == 1, reads
    expected = 20 if scope else 40
    assert replies[0]["count"] == expected


def test_the_best_chunks_pass_the_filters_and_the_index_as_before(
    memory: recuerdo.Memory, held_upkeep: None
) -> None:
    """Among the best-ranked chunks: one of a deleted note, one out of the asked scope, one of
    a note edited since it was cut (its chunk still holds the old words), and notes that hold the
    word only through its stem. Only live, in-scope chunks are found by their chunks, the
    edited note by its new text only, and the word as written comes first."""
    kept = memory.save("Kept", "the lighthouse keeper", scope="project:a")["id"]
    stems = [
        memory.save(f"Stem {n}", "lighthouses lighthouses", scope="project:a")["id"]
        for n in range(3)
    ]
    gone = memory.save("Gone", "the lighthouse keeper left", scope="project:a")["id"]
    elsewhere = memory.save("Elsewhere", "a lighthouse keeper", scope="project:b")["id"]
    edited = memory.save("Edited", "the lighthouse of the bay", key="bay", scope="project:a")
    memory._upkeep.drain()
    memory.delete(gone)
    memory.save("Edited", "the bay has no beacon now", key="bay", scope="project:a")

    found = memory.search("lighthouse", scope="project:a", stages=["lexical"], limit=20)
    ids = [hit["id"] for hit in found["results"]]
    assert ids[0] == kept  # the word as written, ahead of its stem's heavier matches
    assert set(ids) == {kept, *stems}
    assert gone not in ids and elsewhere not in ids and edited["id"] not in ids

    beacon = memory.search("beacon", scope="project:a", stages=["lexical"], limit=20)
    assert [hit["id"] for hit in beacon["results"]] == [edited["id"]]  # its new text, read directly


def test_when_the_best_chunks_are_filtered_out_the_rest_of_the_window_is_read(
    file_memory: recuerdo.Memory,
) -> None:
    """The best 510 chunks for "quay" belong to deleted notes (a deleted note keeps its chunks:
    it can be restored), so none of the first EXACT_WINDOW pass: the lexical stage reads on, in
    rank order, and finds the live notes further down."""
    dead = [file_memory.save(f"Dead {n}", "quay")["id"] for n in range(510)]
    live = {
        file_memory.save(f"Live {n}", f"quay and the harbour wall, stone by stone, day {n}")["id"]
        for n in range(30)
    }
    for note in dead:
        file_memory.delete(note)
    file_memory._upkeep.drain()
    ten = file_memory.search("quay", stages=["lexical"])
    assert len(ten["results"]) == 10 and {hit["id"] for hit in ten["results"]} <= live
    every = file_memory.search("quay", stages=["lexical"], limit=50)
    assert {hit["id"] for hit in every["results"]} == live


def test_another_tenants_chunks_make_the_first_window_one_read(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite's one full-text index ranks every tenant's chunks. When another tenant has chunks,
    the best 500 may be mostly theirs, so the first window is fetched whole (one ranking), not
    in two parts. PostgreSQL ranks the tenant's chunks only, and still splits."""
    ours = {
        memory.save(f"Ours {n}", f"quay and the harbour wall, day {n}")["id"] for n in range(30)
    }
    memory._upkeep.drain()
    with memory._store.read() as tx:
        assert not tx.text.ranks_others(memory.tenant)
    memory.for_tenant("other").remember_many(
        [{"category": "learning", "content": f"quay {n}"} for n in range(510)]
    )
    memory._upkeep.drain()
    with memory._store.read() as tx:
        text_search = type(tx.text)
        shared = tx.dialect == "sqlite"
        assert tx.text.ranks_others(memory.tenant) is shared
        assert tx.text.ranks_others("nobody") is shared
    rankings: list[tuple[int, int]] = []
    real = text_search.rank

    def counted(self: Any, tenant: str, words: Any, mode: str, limit: int, offset: int) -> Any:
        rankings.append((limit, offset))
        return real(self, tenant, words, mode, limit, offset)

    monkeypatch.setattr(text_search, "rank", counted)
    found = memory.search("quay", stages=["lexical"], limit=50)
    assert {hit["id"] for hit in found["results"]} == ours
    assert rankings == ([(2000, 0)] if shared else [(500, 0)])
