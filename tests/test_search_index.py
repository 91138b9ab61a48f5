"""The entry substring index is built off the write path; reads never miss a row for it."""

from __future__ import annotations

import time
from pathlib import Path

import recuerdo
from recuerdo.store.sqlite import sqlite3
from recuerdo.store.sqlite.search import trigram_expression


def _integrity(path: str) -> None:
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO entry_trigrams (entry_trigrams) VALUES ('integrity-check')")
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()


def _trigram_backlog(memory: recuerdo.Memory) -> int:
    with memory._store.read() as tx:
        return tx.substrings.waiting()


def test_found_before_and_after_indexing(file_memory: recuerdo.Memory) -> None:
    upkeep = file_memory._upkeep
    upkeep.stop(drain=False)  # hold the worker back: rows stay above the watermark
    ids = [file_memory.remember("learning", f"pending row {i} kiwi") for i in range(30)]
    assert _trigram_backlog(file_memory) == 30
    assert [e["id"] for e in file_memory.recall(search="KIWI")] == ids[::-1]
    assert upkeep.drain() >= 30 and upkeep.backlog() == 0
    assert [e["id"] for e in file_memory.recall(search="KIWI")] == ids[::-1]
    _integrity(file_memory.location)


def test_forget_on_both_sides_of_the_watermark(file_memory: recuerdo.Memory) -> None:
    upkeep = file_memory._upkeep
    upkeep.stop(drain=False)
    indexed = file_memory.remember("learning", "indexed mango")
    upkeep.drain()
    pending = file_memory.remember("learning", "pending mango")
    assert file_memory.forget(indexed) and file_memory.forget(pending)
    assert file_memory.recall(search="mango") == []
    upkeep.drain()
    assert file_memory.recall(search="mango") == []
    _integrity(file_memory.location)


def test_the_worker_catches_up_by_itself(file_memory: recuerdo.Memory) -> None:
    file_memory.remember_many([{"category": "rule", "content": f"r{i}"} for i in range(700)])
    deadline = time.monotonic() + 20
    while file_memory._upkeep.backlog() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert file_memory._upkeep.backlog() == 0


def test_close_leaves_a_complete_index(base: Path) -> None:
    mem = recuerdo.open("closing", base_dir=base)
    mem.remember_many([{"category": "rule", "content": f"papaya {i}"} for i in range(50)])
    mem.close()
    conn = sqlite3.connect(base / ".recuerdo" / "state" / "closing.db")
    upto = conn.execute("SELECT upto FROM index_marks").fetchone()[0]
    top = conn.execute("SELECT max(id) FROM items").fetchone()[0]
    hits = conn.execute(  # the index keeps no positions: all of the word's trigrams
        "SELECT count(*) FROM entry_trigrams WHERE entry_trigrams MATCH ?",
        (trigram_expression("papaya"),),
    ).fetchone()[0]
    conn.close()
    assert upto == top and hits == 50


def test_a_read_right_after_a_write_waits_only_for_its_chunks_and_vectors(base: Path) -> None:
    """A search just after a save still finds the note by its meaning (``armed``), so the read
    cuts and embeds the newest writes itself, but the rest of the upkeep stays with the
    worker: the audit's buffered records are not flushed (a durable commit) and the entry
    substring index does not catch up on the reader's time."""
    with recuerdo.open("settle", base_dir=base, embedder="static") as memory:
        upkeep = memory._upkeep
        upkeep.stop(drain=False)  # the worker held back: what the reads do is all that happens
        memory.remember("learning", "the ferry leaves at noon")
        memory.search("ferry")
        buffered = len(memory._audit)
        assert buffered >= 1
        memory.save(title="Boats", content="We paddled kayaks across the lake at dawn.")
        waiting = _trigram_backlog(memory)
        assert waiting >= 1
        found = memory.search("canoe paddling on water")
        assert found["meaning"] == "armed"
        assert any("meaning" in hit["found_by"] for hit in found["results"])
        assert len(memory._audit) == buffered + 1  # this search's record joined the buffer
        assert _trigram_backlog(memory) == waiting  # still left to the worker
        assert upkeep.drain() > 0 and len(memory._audit) == 0
