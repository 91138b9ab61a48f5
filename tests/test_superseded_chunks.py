"""Re-cutting an edited item (``docs/decisions/0027-superseded-chunks.md``): chunks the new text
still has keep their rows (id, vector, full-text entry); the others are superseded. On SQLite
they leave the full-text index without a secure delete, and forgetting the item still erases
their words from the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import recuerdo
from recuerdo.index.chunk import chunk_spans
from recuerdo.store.chunk_text import chunks_with_text

from .conftest import statements_run
from .older_layouts import entries_indexed_before_folds

WORDS = ["amber", "basalt", "cobalt", "dune", "ember", "fjord", "garnet", "harbor", "indigo"]
WORDS += ["juniper", "kelp", "lagoon"]


def _paragraph(seed: int, n: int = 130) -> str:
    words = [f"{WORDS[(seed * 7 + i * 5) % len(WORDS)]}{seed}" for i in range(n)]
    return " ".join(words).capitalize() + "."


def _chunks(memory: recuerdo.Memory, note: int) -> list[dict[str, Any]]:
    with memory._store.read() as tx:
        return chunks_with_text(
            tx, "c.tenant = ? AND c.item_id = ? ORDER BY c.ordinal", (memory.tenant, note)
        )


def _vectors(memory: recuerdo.Memory, hashes: list[str]) -> dict[str, int]:
    marks = ",".join("?" * len(hashes))
    with memory._store.read() as tx:
        return {
            row["hash"]: row["id"]
            for row in tx.all(f"SELECT id, hash FROM embeddings WHERE hash IN ({marks})", hashes)
        }


def test_an_edit_of_one_paragraph_keeps_the_other_chunks_and_their_vectors(
    memory: recuerdo.Memory,
) -> None:
    """A note of four long paragraphs (four chunks) has its third paragraph replaced by a
    longer one: three chunks keep their ids and vectors (the last one moved); one new chunk
    holds the new paragraph; searches find the kept chunks at their new places and never the
    replaced paragraph."""
    paragraphs = [_paragraph(seed) for seed in range(4)]
    note = memory.save("Field guide", "\n\n".join(paragraphs), key="guide")["id"]
    memory._upkeep.drain()
    before = _chunks(memory, note)
    assert len(before) == 4
    vectors = _vectors(memory, [c["hash"] for c in before])
    paragraphs[2] = _paragraph(9, 150)
    text = "\n\n".join(paragraphs)
    memory.save("Field guide", text, key="guide")
    memory._upkeep.drain()
    after = _chunks(memory, note)
    fresh = [(s.start, s.end) for s in chunk_spans(text)]
    assert [(c["start"], c["stop"]) for c in after] == fresh  # as a first cut would place them
    assert [c["body"] for c in after] == [text[a:b] for a, b in fresh]
    kept = {c["id"] for c in before} & {c["id"] for c in after}
    assert kept == {before[0]["id"], before[1]["id"], before[3]["id"]}
    assert before[2]["id"] not in {c["id"] for c in after}
    kept_hashes = [before[i]["hash"] for i in (0, 1, 3)]
    assert _vectors(memory, kept_hashes) == {h: vectors[h] for h in kept_hashes if h in vectors}
    assert after[3]["start"] > before[3]["start"]
    by_id = {c["id"]: c for c in after}
    for query, chunk in (("basalt0 cobalt0", before[0]), (f"{WORDS[0]}3", before[3])):
        [hit] = memory.search(query, stages=["lexical"])["results"]
        assert hit["span"]["chunk_id"] == chunk["id"]
        moved = by_id[chunk["id"]]
        assert (hit["span"]["start"], hit["span"]["end"]) == (moved["start"], moved["stop"])
    assert memory.search("garnet2", stages=["lexical"])["results"] == []
    [new] = memory.search("garnet9", stages=["lexical"])["results"]
    assert new["span"]["chunk_id"] not in kept


def _on_disk(folder: Path, needle: str) -> list[str]:
    """Files of the state folder holding ``needle`` (any case)."""
    found = []
    for path in folder.rglob("*"):
        if path.is_file() and needle.lower().encode() in path.read_bytes().lower():
            found.append(path.name)
    return found


MARKER = "Kzwylpendrasupx"  # no stemmable ending: the index keeps it whole, lower-cased


@pytest.mark.parametrize("forget", ["hard delete", "forget of another item"])
def test_a_word_only_a_superseded_chunk_held_leaves_the_file_when_forgotten(
    base: Path, forget: str
) -> None:
    """A note's first version names the marker, it is chunked, then saved without it: the
    re-cut deletes the old chunk without a secure delete (the note is listed as holding such
    words). Forgetting then erases the marker from every file: deleting the note, or (for a
    note that stays) any forget, which purges what superseded chunks left."""
    memory = recuerdo.open("erasure", base_dir=base)
    filler = "Ordinary background passage about shipping schedules and invoices. " * 3
    for number in range(60):  # enough index segments and pages for a deleted word to linger
        memory.save(f"Filler {number}", f"{filler} number {number}.")
    memory._upkeep.drain()
    note = memory.save("Plan", f"Body {MARKER} and the {filler}", key="plan")["id"]
    memory._upkeep.drain()
    memory.save("Plan", f"Body without it and the {filler}", key="plan")
    memory._upkeep.drain()
    with memory._store.read() as tx:
        listed = tx.all("SELECT tenant, item_id FROM chunk_fts_residue")
    assert [(r["tenant"], r["item_id"]) for r in listed] == [(memory.tenant, note)]
    assert memory.search(MARKER, stages=["lexical"])["results"] == []
    memory.audit(limit=5)  # the search's audit record (naming the marker) is on disk now
    if forget == "forget of another item":
        other = memory.remember_knowledge(content="A passage to forget.", source="other")
        memory.forget_knowledge(passage=other["doc_id"])
        with memory._store.read() as tx:
            assert tx.all("SELECT * FROM chunk_fts_residue") == []  # purged without the note
    memory.delete(note, hard=True)  # its history holds the marker too
    with memory._store.read() as tx:
        assert tx.all("SELECT * FROM chunk_fts_residue") == []
    memory.close()
    assert _on_disk(base, MARKER) == []


def test_the_newest_notes_edited_chunk_gets_its_vector(memory: recuerdo.Memory) -> None:
    """The re-cut deletes the newest chunk of the memory before adding its replacement: on
    SQLite the replacement was given the same id, at or below the worker's embedding mark, so
    it never got a vector (and the backlog said there was none)."""
    note = memory.save("Plan", "alpha bravo charlie", key="plan")["id"]
    memory._upkeep.drain()
    memory.save("Plan", "delta echo foxtrot", key="plan")
    memory._upkeep.drain()
    chunks = _chunks(memory, note)
    assert len(chunks) == 1
    assert list(_vectors(memory, [chunks[0]["hash"]])) == [chunks[0]["hash"]]


def test_a_chunk_an_embedding_mark_passed_without_a_vector_gets_one_at_the_step(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store the older code left with a chunk at or below the embedding mark and no vector
    for its text (what an edit of the newest note did): the step takes the mark back, and the
    worker embeds that chunk alone (the others keep their vectors, same ids). SQLite only:
    PostgreSQL never gave a chunk id twice, and its step does nothing."""
    from recuerdo.store.sqlite.connection import SQLiteStore
    from recuerdo.store.sqlite.schema import SCHEMA

    path = base / "older.db"
    older = SQLiteStore(str(path), steps=SCHEMA.names().index("m023_missed_vectors"))
    with entries_indexed_before_folds(monkeypatch), recuerdo.open("older", store=older) as memory:
        kept = memory.save("Runbook", "rotate the signing keys every quarter")["id"]
        note = memory.save("Plan", "delta echo foxtrot", key="plan")["id"]
        memory._upkeep.drain()
        (missed,) = _chunks(memory, note)
        (other,) = _chunks(memory, kept)
        before = _vectors(memory, [other["hash"]])
        with memory._store.write() as tx:  # the state the older id reuse left
            tx.execute("DELETE FROM embeddings WHERE hash = ?", (missed["hash"],))
        memory._upkeep.drain()
        assert _vectors(memory, [missed["hash"]]) == {}  # the worker will not come back to it
    older.close()
    with recuerdo.open("older", store=SQLiteStore(str(path))) as memory:
        memory._upkeep.drain()
        assert list(_vectors(memory, [missed["hash"]])) == [missed["hash"]]
        assert _vectors(memory, [other["hash"]]) == before


@pytest.mark.parametrize("forget", ["entry", "note"])
def test_forgetting_one_item_merges_the_words_index_only_for_its_own_old_chunks(
    base: Path, monkeypatch: pytest.MonkeyPatch, forget: str
) -> None:
    """Another note's superseded chunks hold none of a forgotten entry's or note's text (what
    they held stays in that note's history anyway): merging the whole index for them made a
    forget in a memory whose notes are edited cost a merge of every segment (decision 0071).
    Forgetting a name or a passage still merges (the test above)."""
    with recuerdo.open("purge", base_dir=base) as memory:
        edited = memory.save("Plan", f"Body {MARKER} first", key="plan")["id"]
        memory._upkeep.drain()
        memory.save("Plan", "Body without it", key="plan")
        text = "the Vorquelline cranes lift at dawn"
        gone = (
            memory.remember("learning", text)
            if forget == "entry"
            else memory.save("Other", text, key="other")["id"]
        )
        memory._upkeep.drain()
        with statements_run(monkeypatch) as seen:
            assert memory.forget(gone) if forget == "entry" else memory.delete(gone, hard=True)
        assert [sql for sql, _ in seen if "'optimize'" in sql] == []
        with memory._store.read() as tx:
            listed = [row["item_id"] for row in tx.all("SELECT item_id FROM chunk_fts_residue")]
        assert listed == [edited]
        memory.delete(edited, hard=True)  # its own old chunks go with it
        with memory._store.read() as tx:
            assert tx.all("SELECT * FROM chunk_fts_residue") == []
    assert _on_disk(base, "Vorquelline") == []
    assert _on_disk(base, MARKER) == []
