"""Re-cutting an edited item (``docs/decisions/0027-superseded-chunks.md``): chunks the new text
still has keep their rows (id, vector, full-text entry); the others are superseded. On SQLite
their words stay in the full-text index, listed as stale and found by no search, until the
upkeep (after a pause of the writes) or a forget erases them
(``docs/decisions/0072-stale-words.md``)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

import recuerdo
from recuerdo.core import upkeep as upkeep_module
from recuerdo.index.chunk import chunk_spans
from recuerdo.store.chunk_text import chunks_with_text
from recuerdo.store.sqlite import stale_words
from recuerdo.store.sqlite.connection import SQLiteStore

from .conftest import ended_without_closing, eventually, statements_run
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


def _recut(memory: recuerdo.Memory) -> None:
    """The upkeep's work on the writes so far, without what it leaves to a pause of the writes (the
    stale words' erasure among it)."""
    memory._upkeep.drain(tasks=memory._upkeep._tasks)


def _stale(memory: recuerdo.Memory) -> list[tuple[str, int]]:
    with memory._store.read() as tx:
        rows = tx.all("SELECT tenant, item_id FROM chunk_fts_stale /* every tenant */")
    return [(row["tenant"], row["item_id"]) for row in rows]


def _index_pages(memory: recuerdo.Memory) -> set[int]:
    """The rows of the words index's pages but its two records (averages, structure): a merge
    of every segment writes them all under new ids."""
    with memory._store.read() as tx:
        return {int(row["id"]) for row in tx.all("SELECT id FROM chunk_fts_data")} - {1, 10}


def _indexed_term(memory: recuerdo.Memory, term: str) -> bool:
    """Whether the words index still holds ``term`` (its bytes in a page: the tail after the
    first letter, which a page's prefix compression may share with the term before)."""
    with memory._store.read() as tx:
        blocks = [bytes(row["block"]) for row in tx.all("SELECT block FROM chunk_fts_data")]
    return any(term[1:].lower().encode() in block for block in blocks)


def _edited_away(memory: recuerdo.Memory) -> int:
    """A note whose first version named MARKER, cut into chunks, then saved without it and cut
    again; its id. The old chunk's words stay in the index, listed as stale. The worker is
    stopped first: it would erase them at the first pause (the tests drain what they need)."""
    memory._upkeep.stop(drain=False)
    filler = "Ordinary background passage about shipping schedules and invoices. " * 3
    for number in range(60):  # enough index segments and pages for a deleted word to linger
        memory.save(f"Filler {number}", f"{filler} number {number}.")
    note = int(memory.save("Plan", f"Body {MARKER} and the {filler}", key="plan")["id"])
    _recut(memory)
    memory.save("Plan", f"Body without it and the {filler}", key="plan")
    _recut(memory)
    return note


@pytest.mark.parametrize("forget", ["hard delete", "forget of another item"])
def test_a_word_only_a_superseded_chunk_held_leaves_the_file_when_forgotten(
    base: Path, forget: str
) -> None:
    """A note's first version names the marker, it is chunked, then saved without it: the
    re-cut leaves the old chunk's words indexed, listed as stale, and no search finds them.
    Forgetting then erases the marker from every file: deleting the note, or (for a note that
    stays) a forget of a passage, which erases what every superseded chunk left."""
    memory = recuerdo.open("erasure", base_dir=base)
    note = _edited_away(memory)
    assert _stale(memory) == [(memory.tenant, note)]
    assert _indexed_term(memory, MARKER)
    assert memory.search(MARKER, stages=["lexical"])["results"] == []
    memory.audit(limit=5)  # the search's audit record (naming the marker) is on disk now
    if forget == "forget of another item":
        other = memory.remember_knowledge(content="A passage to forget.", source="other")
        _recut(memory)
        memory.forget_knowledge(passage=other["doc_id"])
        assert _stale(memory) == []  # erased without the note
        assert not _indexed_term(memory, MARKER)
    memory.delete(note, hard=True)  # its history holds the marker too
    assert _stale(memory) == []
    memory.close()
    assert _on_disk(base, MARKER) == []


def test_the_upkeep_erases_stale_words_after_a_pause(memory: recuerdo.Memory) -> None:
    """What the re-cut left in the words index leaves it at the upkeep's round after a pause (not
    in a round between writes, nor in a quiet moment), while the note (and its history) stays."""
    if not isinstance(memory._store, SQLiteStore):
        pytest.skip("a chunk's words leave PostgreSQL with its row")
    note = _edited_away(memory)
    assert _stale(memory) == [(memory.tenant, note)]
    memory._upkeep.step(quiet=False)  # the worker's round while writes keep coming
    memory._upkeep.step(quiet=True)  # its round when they stop for a moment
    assert _stale(memory) == [(memory.tenant, note)]
    assert memory._store.check()["ok"]  # listed words are not orphans
    memory._upkeep.step(quiet=True, late=True)  # when they have paused for LATE_SECONDS
    assert _stale(memory) == []
    assert not _indexed_term(memory, MARKER)
    assert memory.get(note)["content"].startswith("Body without it")
    assert memory._store.check()["ok"]


@pytest.mark.sqlite_only("a chunk's words leave PostgreSQL with its row")
@pytest.mark.parametrize("extra", [0, 1], ids=["a full last batch", "one more"])
def test_an_erasure_folds_the_log_once_the_list_is_empty(
    memory: recuerdo.Memory, extra: int
) -> None:
    """Each call erases one batch, oldest first, and folds the log once the list is empty,
    even when a full batch emptied it; not while chunks wait (decision 0072)."""
    memory._upkeep.stop(drain=False)
    notes = stale_words.ERASE_BATCH + extra
    for number in range(notes):
        memory.save(f"Plan {number}", f"First body number {number}.", key=f"plan/{number}")
    _recut(memory)
    for number in range(notes):
        memory.save(f"Plan {number}", f"Second body number {number}.", key=f"plan/{number}")
    _recut(memory)
    assert len(_stale(memory)) == notes
    store = memory._store
    folds = []
    real_fold = store.fold_log
    store.fold_log = lambda: folds.append(len(_stale(memory))) or real_fold()  # type: ignore[method-assign]
    erased = [store.erase_stale_words() for _ in range(1 + extra)]
    assert erased == [stale_words.ERASE_BATCH] + [1] * extra
    assert folds == [0]  # once, after the call that emptied the list
    assert store.erase_stale_words() == 0
    assert folds == [0]


def test_the_worker_erases_them_once_the_writes_pause(base: Path) -> None:
    """The worker itself: after an edit, it re-cuts the note and, once the writes have paused,
    erases what the old chunk left, with no drain asked."""
    with recuerdo.open("paused", base_dir=base) as memory:
        note = memory.save("Plan", f"Body {MARKER} first", key="plan")["id"]
        memory._upkeep.drain()
        memory.save("Plan", "Body quillwort second", key="plan")
        # Read through the store: a search would poke the worker, as a read does for its audit.
        eventually(
            lambda: (
                "quillwort" in _chunks(memory, note)[0]["body"]
                and not _indexed_term(memory, MARKER)
            )
        )
        assert "quillwort" in _chunks(memory, note)[0]["body"]  # re-cut by the worker
        assert not _indexed_term(memory, MARKER)
        assert _stale(memory) == []


def test_a_closing_process_erases_what_its_edits_left(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that edits a note and closes at once (a CLI call) erases the old chunk's words
    as it closes, after its own re-cut: no pause came, and a later process that only reads
    would never erase them (decision 0073)."""
    monkeypatch.setattr(upkeep_module, "LATE_SECONDS", 3600.0)  # no pause comes
    with recuerdo.open("cli", base_dir=base) as memory:
        memory.save("Plan", f"Body {MARKER} first", key="plan")
        memory._upkeep.drain(tasks=memory._upkeep._tasks)
        memory.save("Plan", "Body quillwort second", key="plan")
    with recuerdo.open("cli", base_dir=base) as memory:
        assert _stale(memory) == []
        assert not _indexed_term(memory, MARKER)
        assert memory._store.check()["ok"]


def test_a_process_that_only_read_leaves_them_to_the_upkeep(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that opens a memory where an earlier one left rows unindexed (it ended
    without closing), searches and closes, wrote nothing: its close indexes those rows but
    erases no listed words (decision 0073: a CLI search must not pay for another process's
    edits). The next process that writes does. (Its worker is kept from a round of its own
    before the close: a reader's quiet rounds erase, as decision 0072 wants of a long-lived
    one, and a loaded machine could give it one.)"""
    monkeypatch.setattr(upkeep_module, "GATHER_SECONDS", 3600.0)
    monkeypatch.setattr(upkeep_module, "MAX_DELAY_SECONDS", 3600.0)
    ended_without_closing(
        base,
        "left",
        "memory._upkeep.stop(drain=False)",
        f"memory.save('Plan', 'Body {MARKER} first', key='plan')",
        "memory._upkeep.drain()",
        "memory.save('Plan', 'Body quillwort second', key='plan')",
        "memory._upkeep.drain(tasks=memory._upkeep._tasks)",  # re-cut: the old chunk listed
        "memory.remember('learning', 'a remark left unindexed')",
    )
    with recuerdo.open("left", base_dir=base, embedder="none") as memory:
        assert memory._upkeep.backlog()  # the remark: the open poked the worker for it
        memory.search("quillwort")
    with recuerdo.open("left", base_dir=base, embedder="none") as memory:
        assert memory._upkeep.backlog() == 0
        assert len(_stale(memory)) == 1
        memory.remember("learning", "a write of this process")
    with recuerdo.open("left", base_dir=base, embedder="none") as memory:
        assert _stale(memory) == []


def test_writes_that_never_pause_still_get_the_words_erased(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under writes a tenth of a second apart (never the pause the erasure waits for), the
    worker still erases what an edit left once it has waited LATE_OVERDUE_SECONDS, while the
    writes go on (decision 0073). (No pause counts: a stall of the loaded machine could give
    one, and the test would pass without the share.)"""
    monkeypatch.setattr(upkeep_module, "LATE_OVERDUE_SECONDS", 0.5)
    monkeypatch.setattr(upkeep_module, "LATE_SECONDS", 3600.0)
    with recuerdo.open("steady", base_dir=base) as memory:
        note = memory.save("Plan", f"Body {MARKER} first", key="plan")["id"]
        memory._upkeep.drain()
        memory.save("Plan", "Body quillwort second", key="plan")
        erased = False
        writing_until = time.monotonic() + 20
        number = 0
        while time.monotonic() < writing_until and not erased:
            memory.remember("learning", f"a passing remark number {number}")
            number += 1
            time.sleep(0.1)
            with memory._store.read() as tx:  # not a search: a read pokes the worker
                recut = tx.scalar("SELECT count(*) FROM chunks WHERE item_id = ?", (note,))
            erased = bool(recut) and not _indexed_term(memory, MARKER)
        assert erased
        assert "quillwort" in _chunks(memory, note)[0]["body"]
        assert _stale(memory) == []


def test_no_search_and_no_audit_scrub_finds_a_stale_chunks_words(memory: recuerdo.Memory) -> None:
    """While they wait for the upkeep, a stale chunk's words answer no search (the item keeps
    no chunk that holds them) and count as held by no chunk (what the audit's scrub asks after
    a forget)."""
    memory._upkeep.stop(drain=False)
    note = memory.save("Plan", f"Body {MARKER} first", key="plan")["id"]
    _recut(memory)
    memory.save("Plan", "Body quillwort second", key="plan")
    _recut(memory)
    if isinstance(memory._store, SQLiteStore):
        assert _stale(memory) == [(memory.tenant, note)]
    assert memory.search(MARKER, stages=["lexical"])["results"] == []
    [hit] = memory.search("quillwort", stages=["lexical"])["results"]
    assert hit["id"] == note
    with memory._store.read() as tx:
        assert tx.text.words_held(memory.tenant, [MARKER.lower(), "quillwort"]) == {"quillwort"}
    assert memory._store.check()["ok"]


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


@pytest.mark.parametrize("library", ["with the secure delete", "without it"])
def test_a_new_chunk_never_takes_a_stale_chunks_id(
    base: Path, monkeypatch: pytest.MonkeyPatch, library: str
) -> None:
    """The newest chunk of the memory is replaced by a cut with fewer chunks: its words stay
    indexed under its id. A chunk given that id would be found by them (a word the note no
    longer holds would find the other note), also under a library without FTS5's secure delete
    opening a store a newer one wrote (the list outlives the library)."""
    with recuerdo.open("ids", base_dir=base, embedder="none") as memory:
        memory._upkeep.stop(drain=False)
        text = "\n\n".join(_paragraph(seed) for seed in range(3))
        note = memory.save("Field guide", text, key="guide")["id"]
        _recut(memory)
        last = max(c["id"] for c in _chunks(memory, note))
        memory.save("Field guide", text.rsplit("\n\n", 1)[0], key="guide")
        _recut(memory)
        assert _stale(memory) == [(memory.tenant, note)]
        if library == "without it":
            monkeypatch.setattr(stale_words, "FTS5_SECURE_DELETE", False)
        other = memory.save("Other", "Quillwort grows by the pond", key="other")["id"]
        _recut(memory)
        (chunk,) = _chunks(memory, other)
        assert chunk["id"] > last
        assert memory.search(f"{WORDS[3]}2", stages=["lexical"])["results"] == []
        assert memory._store.check()["ok"]
        memory.delete(other, hard=True)
        memory.delete(note, hard=True)
        assert _stale(memory) == []
    assert _on_disk(base, "quillwort") == []


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        ("UPDATE chunk_fts_stale SET id = (SELECT max(id) FROM chunks)", "chunks listed as stale"),
        ("UPDATE chunk_fts_stale SET id = id + 1000", "stale chunks not in the words index"),
        ("UPDATE chunk_fts_stale SET item_id = item_id + 1000", "stale chunks of missing items"),
    ],
)
def test_the_check_finds_a_damaged_list_of_stale_chunks(
    base: Path, damage: str, problem: str
) -> None:
    """The list a forget trusts to tell the index a chunk's words: an id a chunk also has, one
    the index does not hold (a delete of words it does not hold damages a contentless index),
    or one of no item are reported."""
    with recuerdo.open("listed", base_dir=base) as memory:
        _edited_away(memory)
        assert memory._store.check()["ok"]
        with memory._store.write() as tx:
            tx.execute(f"{damage} /* every tenant */")
        found = memory._store.check()
        with memory._store.write() as tx:  # the close must not tell the index those words
            tx.execute("DELETE FROM chunk_fts_stale /* every tenant */")
    assert not found["ok"]
    assert any(line.startswith(f"{problem}: ") for line in found["problems"])


@pytest.mark.parametrize("forget", ["entry", "note", "the edited note"])
def test_forgetting_one_item_never_merges_the_words_index(
    base: Path, monkeypatch: pytest.MonkeyPatch, forget: str
) -> None:
    """Another note's superseded chunks hold none of a forgotten entry's or note's text (what
    they held stays in that note's history anyway): merging the whole index for them made a
    forget in a memory whose notes are edited cost a merge of every segment (decision 0071).
    The edited note's own hard delete erased its old chunks' words by such a merge too, 72 ms at
    10,000 notes: they are now erased where they are (decision 0072). Forgetting a name or a
    passage erases every item's (the test above)."""
    with recuerdo.open("purge", base_dir=base) as memory:
        edited = _edited_away(memory)
        text = "the Vorquelline cranes lift at dawn"
        gone = (
            edited
            if forget == "the edited note"
            else memory.remember("learning", text)
            if forget == "entry"
            else memory.save("Other", text, key="other")["id"]
        )
        _recut(memory)
        assert _stale(memory) == [(memory.tenant, edited)]
        pages = _index_pages(memory)
        with statements_run(monkeypatch) as seen:
            assert memory.forget(gone) if forget == "entry" else memory.delete(gone, hard=True)
        assert [sql for sql, _ in seen if "'optimize'" in sql] == []
        assert len(pages & _index_pages(memory)) > len(pages) // 2  # the index not rewritten
        assert _stale(memory) == ([] if gone == edited else [(memory.tenant, edited)])
        if gone != edited:
            memory.delete(edited, hard=True)  # its own old chunks go with it
        assert _stale(memory) == []
    assert _on_disk(base, "Vorquelline") == []
    assert _on_disk(base, MARKER) == []


def test_past_a_bound_a_forget_of_a_passage_merges_once_instead(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Erasing many stale chunks one by one costs more than one merge of the index: past
    ERASE_ONE_BY_ONE, they are marked deleted and merged away, and still leave the file."""
    monkeypatch.setattr(stale_words, "ERASE_ONE_BY_ONE", 0)
    with recuerdo.open("many", base_dir=base) as memory:
        note = _edited_away(memory)
        other = memory.remember_knowledge(content="A passage to forget.", source="other")
        _recut(memory)
        assert _stale(memory) == [(memory.tenant, note)]
        with statements_run(monkeypatch) as seen:
            memory.forget_knowledge(passage=other["doc_id"])
        assert [sql for sql, _ in seen if "'optimize'" in sql] != []
        assert _stale(memory) == []
        assert not _indexed_term(memory, MARKER)
        memory.delete(note, hard=True)
    assert _on_disk(base, MARKER) == []


def test_the_step_merges_away_what_the_older_list_named(base: Path) -> None:
    """A store from before m036 lists the items whose old words a merge must drop
    (``chunk_fts_residue``): the step merges once and empties the list."""
    from recuerdo.store.sqlite.connection import SQLiteStore as Store
    from recuerdo.store.sqlite.schema import SCHEMA

    path = base / "older.db"
    older = Store(str(path), steps=SCHEMA.names().index("m036_stale_words"))
    with recuerdo.open("older", store=older) as memory:
        note = memory.save("Plan", f"Body {MARKER} first", key="plan")["id"]
        memory._upkeep.drain()
        (chunk,) = _chunks(memory, note)
        with memory._store.write() as tx:  # what the older re-cut did: a marker, and the list
            tx.execute("INSERT INTO chunk_fts (chunk_fts, rank) VALUES ('secure-delete', 0)")
            tx.execute(
                "INSERT INTO chunk_fts (chunk_fts, rowid, title, body, context)"
                " VALUES ('delete', ?, ?, ?, ?)",
                (chunk["id"], chunk["title"], chunk["body"], chunk["context"]),
            )
            tx.execute("INSERT INTO chunk_fts (chunk_fts, rank) VALUES ('secure-delete', 1)")
            tx.execute("DELETE FROM chunks WHERE id = ?", (chunk["id"],))
            tx.execute(
                "INSERT INTO chunk_fts_residue (tenant, item_id) VALUES (?, ?)",
                (memory.tenant, note),
            )
        assert _indexed_term(memory, MARKER)
    older.close()
    with recuerdo.open("older", store=Store(str(path))) as memory:
        with memory._store.read() as tx:
            assert tx.all("SELECT * FROM chunk_fts_residue /* every tenant */") == []
        assert not _indexed_term(memory, MARKER)
