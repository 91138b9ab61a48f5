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
