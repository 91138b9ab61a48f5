"""Chunks keep their span of their item's text, not the text (migration ``m021_chunk_spans``,
``docs/decisions/0029-chunk-spans.md``): the store is smaller, every reader gets the same text,
forgetting still erases, and a store written before the step migrates to the same answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import recuerdo
from recuerdo.core.upkeep import Upkeep
from recuerdo.store.chunk_text import by_id
from recuerdo.store.sqlite.schema import SCHEMA

from .older_layouts import layout_before_spans
from .test_compact_store import Backend


def _sentence(seed: int, words: int) -> str:
    vocabulary = ["harbor", "ledger", "copper", "falcon", "meadow", "quartz", "signal", "timber"]
    picked = [
        f"{vocabulary[(seed * 5 + k * 3) % 8]}{(seed * 31 + k * 7) % 97}" for k in range(words)
    ]
    return " ".join(picked).capitalize() + "."


def _page_bytes(memory: recuerdo.Memory) -> int:
    memory._store.reclaim()  # the WAL folded into the file
    with memory._store.read() as tx:
        return int(tx.scalar("PRAGMA page_count")) * int(tx.scalar("PRAGMA page_size"))


def test_a_chunk_row_holds_no_text(base: Path) -> None:
    """The chunks of 300 entries of 200 words take a fraction of their text, and the words
    index holds none (before m021 each chunk row held its text again and the index could read
    it back: the file was more than three times the text)."""
    texts = [_sentence(n, 200) for n in range(300)]
    with recuerdo.open("spans", base_dir=base) as memory:
        empty = _page_bytes(memory)
        memory.remember_many([{"category": "learning", "content": t} for t in texts])
        memory._upkeep.drain()
        with memory._store.read() as tx:
            vectors = int(tx.scalar("SELECT coalesce(sum(length(vector)), 0) FROM embeddings"))
        grown = _page_bytes(memory) - empty - vectors
        text = sum(len(t.encode()) for t in texts)
        assert grown < 3 * text, (grown, text)
        with memory._store.read() as tx:
            assert "body" not in [c["name"] for c in tx.all("PRAGMA table_info(chunks)")]
            assert tx.scalar("SELECT count(*) FROM chunk_fts WHERE body IS NOT NULL") == 0
        assert memory._store.check()["ok"]


def test_every_reader_gets_the_chunk_s_text(memory: recuerdo.Memory) -> None:
    """Search previews, ``ask`` passages with their citations, and ``about`` passages read a
    chunk's text from its item: the same text the chunk was cut with."""
    first, second = _sentence(1, 160), _sentence(2, 160)
    document = f"{first}\n\n{second}"
    reply = memory.remember_knowledge(
        document,
        source="field notes",
        facts={"entities": [{"name": "Harbor Office", "type": "place"}]},
    )
    memory.remember_knowledge(f"The Harbor Office keeps the {second.split()[3]} ledger.")
    memory._upkeep.drain()
    found = memory.search(second.split()[3], stages=["lexical"])["results"]
    assert any(hit["id"] == reply["doc_id"] for hit in found)
    passages = memory.ask(second.split()[5])["passages"]
    mine = [p for p in passages if p["doc_id"] == reply["doc_id"]]
    assert mine and all(p["citation"]["span_state"] == "verified" for p in mine)
    for passage in mine:
        span = passage["citation"]["span"]
        assert passage["text"] == span["text"] == document[span["start"] : span["end"]]
        assert passage["text"] in (first, second)


def test_the_chunks_of_a_long_item_keep_their_text(memory: recuerdo.Memory) -> None:
    """A note cut into several chunks keeps each chunk's text in its row (reading a passage
    never reads the whole note), so an edit of it keeps no former text; a one-chunk note's
    chunk keeps none, and an edit of it keeps the text it was cut from until the re-cut."""
    long = "\n\n".join(_sentence(n, 160) for n in range(3))
    long_id = memory.save("Long", long, key="long")["id"]
    short_id = memory.save("Short", _sentence(9, 30), key="short")["id"]
    memory._upkeep.drain()
    with memory._store.read() as tx:
        rows = tx.all("SELECT item_id, start, stop, kept_text FROM chunks ORDER BY id")
    kept = {(r["item_id"], r["kept_text"]) for r in rows}
    assert len([r for r in rows if r["item_id"] == long_id]) == 3
    assert all(
        r["kept_text"] == long[r["start"] : r["stop"]] for r in rows if r["item_id"] == long_id
    )
    assert (short_id, None) in kept
    memory.save("Long", long + " And one more sentence.", key="long")
    memory.save("Short", _sentence(10, 30), key="short")
    with memory._store.read() as tx:
        queued = {r["item_id"]: r["cut_from"] for r in tx.all("SELECT * FROM rechunk_queue")}
    assert queued == {long_id: None, short_id: _sentence(9, 30)}
    memory._upkeep.drain()
    assert memory.search("more sentence", stages=["lexical"])["results"][0]["id"] == long_id
    assert (
        memory.search(_sentence(10, 30).split()[2], stages=["lexical"])["results"][0]["id"]
        == short_id
    )
    assert memory.search(_sentence(9, 30).split()[2], stages=["lexical"])["results"] == []


def _on_disk(folder: Path, needle: str) -> list[str]:
    return [
        path.name
        for path in folder.rglob("*")
        if path.is_file() and needle.lower().encode() in path.read_bytes().lower()
    ]


@pytest.mark.parametrize("then", ["hard delete", "re-cut, then hard delete"])
def test_a_note_edited_and_deleted_before_its_re_cut_leaves_no_word(base: Path, then: str) -> None:
    """A note's first version names the marker and is chunked; an edit drops the marker, and
    the note is deleted before the upkeep re-cuts it: its chunks' words (those of the first
    version, kept in the re-cut queue) leave the index and the file."""
    marker = "Vyxtrombelqa"
    memory = recuerdo.open("edited", base_dir=base)
    filler = "Ordinary background passage about shipping schedules and invoices. " * 3
    for number in range(40):  # enough index segments and pages for a deleted word to linger
        memory.save(f"Filler {number}", f"{filler} number {number}.")
    note = memory.save("Plan", f"Body {marker} and the {filler}", key="plan")["id"]
    memory._upkeep.drain()
    memory.save("Plan", f"Body without it and the {filler}", key="plan")
    with memory._store.read() as tx:
        cut_from = tx.scalar("SELECT cut_from FROM rechunk_queue WHERE item_id = ?", (note,))
    assert marker in cut_from
    if then.startswith("re-cut"):
        memory._upkeep.drain()
    memory.delete(note, hard=True)
    counts = memory._store.check()["counts"]
    assert counts["chunks missing from the words index"] == 0
    assert counts["words of chunks no longer there"] == 0
    memory.close()
    assert _on_disk(base, marker) == []


def test_overlapping_passages_are_refused_at_import(memory: recuerdo.Memory) -> None:
    """A passage is a span of its document's text: an imported document whose passages
    overlap is skipped as malformed, and nothing of it is stored (before m021 it was stored,
    each passage's text a slice of its own)."""
    record = {
        "record": "document",
        "key": "doc-1",
        "text": "One sentence here. Another one there.",
        "name": "overlap",
        "passages": [{"start": 0, "end": 20, "mentions": []}, {"start": 10, "end": 37}],
    }
    reply = memory.import_records(records=[record])
    assert reply["imported"] == 0 and "malformed" in reply["skipped"][0]["why"]
    assert memory.search("sentence")["results"] == []


WORDS = ["amber", "basalt", "cobalt", "dune", "ember", "fjord", "garnet", "harbor"]


def _old_store(backend: Backend, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, dict[str, Any]]:
    """A store written by the code before m021: entries, notes, a document with a named
    passage, a conversation, all indexed and embedded; then one note edited and not re-cut yet
    (its chunks hold its first text). What it answered, and each chunk's text."""
    steps = SCHEMA.names().index("m021_chunk_spans")
    with layout_before_spans(monkeypatch), backend.open(steps) as memory:
        assert "m021_chunk_spans" not in memory._store.schema_steps
        memory.remember_many(
            [{"category": "learning", "content": _sentence(n, 60)} for n in range(6)]
        )
        for n in range(3):
            memory.save(f"Note {n}", f"{_sentence(10 + n, 50)} {WORDS[n]}", key=f"n{n}")
        memory.remember_knowledge(
            f"Ada Quill runs the {WORDS[4]} mill. {_sentence(20, 40)}",
            source="mill",
            facts={"entities": [{"name": "Ada Quill", "type": "person"}]},
        )
        memory.remember_knowledge(  # cut into several passages
            "\n\n".join(f"Ada Quill {_sentence(40 + n, 150)}" for n in range(3)), source="mill"
        )
        long = "\n\n".join(_sentence(50 + n, 150) for n in range(3))
        memory.save("Long", long, key="long")
        memory.add_messages(
            "c1",
            [
                {"speaker": "Ann", "text": f"Did the {WORDS[5]} shipment leave?"},
                {"speaker": "Bo", "text": f"Yes, the {WORDS[5]} crates left on Monday."},
            ],
        )
        memory._upkeep.drain()
        memory.save("Note 0", f"{_sentence(30, 50)} {WORDS[6]} now", key="n0")  # queued
        memory.save("Long", f"{long} {WORDS[7]} added.", key="long")  # queued, several chunks
        with memory._store.read() as tx:
            texts = {row["id"]: row["body"] for row in tx.all("SELECT id, body FROM chunks")}
            assert tx.scalar("SELECT count(*) FROM rechunk_queue") == 2
        return _answers(memory), texts


def _answers(memory: recuerdo.Memory) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for query in [*WORDS, "Ada Quill mill", "shipment crates Monday", "learning"]:
        found[query] = [
            (hit["id"], hit["span"], round(hit["score"], 6), hit["found_by"], hit["preview"])
            for hit in memory.search(query)["results"]
        ]
    for needle in ("mber", "cobalt", "arb"):
        found[f"recall {needle}"] = [e["content"] for e in memory.recall(search=needle)]
    found["about"] = [
        (i["kind"], i.get("text"), i.get("citation")) for i in memory.about("Ada Quill")["items"]
    ]
    found["ask"] = memory.ask("mill")["passages"]
    return found


@pytest.mark.parametrize("kind", ["file", "postgres"])
def test_a_store_written_before_m021_migrates_and_answers_the_same(
    kind: str, base: Path, monkeypatch: pytest.MonkeyPatch, held_upkeep: None
) -> None:
    """The step drops the chunks' text and keeps, for the note waiting to be re-cut, the text
    its chunks were cut from. Every search, substring recall, ``about`` and ``ask`` answers as
    before, each chunk reads as the text it held, no vector is computed again, and the re-cut
    then indexes the edited note's new words and drops its old ones."""
    backend = Backend(kind, base)
    # The upkeep works only when told to (drain): the queued note is re-cut when the test says.
    monkeypatch.setattr(Upkeep, "stop", lambda self, drain=True: None)
    try:
        before, texts = _old_store(backend, monkeypatch)
        with backend.open(None) as memory:
            with memory._store.read() as tx:
                assert "body" not in _columns(tx, kind)
                ids = [r["id"] for r in tx.all("SELECT id FROM chunks /* every tenant */")]
                assert {i: r["body"] for i, r in by_id(tx, ids, None).items()} == texts
                several = tx.scalar("SELECT count(*) FROM chunks WHERE kept_text IS NOT NULL")
                assert several == 6  # the long document's and the long note's
                vectors = tx.scalar("SELECT count(*) FROM embeddings")
            assert _answers(memory) == before
            assert memory._store.check()["ok"]
            memory._upkeep.drain()
            with memory._store.read() as tx:
                assert tx.scalar("SELECT count(*) FROM rechunk_queue") == 0
                assert tx.scalar("SELECT count(*) FROM embeddings") >= vectors
            [hit] = memory.search(WORDS[6], stages=["lexical"])["results"]
            assert memory.get(hit["id"])["title"] == "Note 0"
            assert memory.search(WORDS[0], stages=["lexical"])["results"] == []
            assert memory._store.check()["ok"]
    finally:
        backend.drop()


def _columns(tx: Any, kind: str) -> list[str]:
    if kind == "file":
        return [c["name"] for c in tx.all("PRAGMA table_info(chunks)")]
    return [
        c["column_name"]
        for c in tx.all(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'chunks'"
            " AND table_schema = current_schema()"
        )
    ]
