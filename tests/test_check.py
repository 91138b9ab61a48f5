"""The store's check over a memory in ordinary use, and over one whose index marks are damaged
(``store/sqlite/health.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

import recuerdo
from recuerdo.engine import check_memory


@pytest.mark.parametrize("newest", ["a note hard-deleted", "an entry forgotten"])
def test_forgetting_the_newest_item_leaves_a_healthy_memory(base: Path, newest: str) -> None:
    """The index marks stay past the newest item's id when it goes: no later item takes that
    id (ids are never given twice), so nothing is left unindexed. The check said the marks
    were beyond the last item."""
    with recuerdo.open("newest", base_dir=base, embedder="none") as memory:
        memory.save("One", "the first note", key="one")
        memory.remember("learning", "an older entry")
        if newest == "a note hard-deleted":
            gone = memory.save("Two", "the second note", key="two")["id"]
        else:
            gone = memory.remember("learning", "the newest entry")
        memory._upkeep.drain()
        if newest == "a note hard-deleted":
            memory.delete(gone, hard=True)
        else:
            assert memory.forget(gone)
        memory._upkeep.drain()
        assert memory._store.check()["problems"] == []
        later = memory.remember("learning", "written after the forget")
        memory._upkeep.drain()
        assert later > gone
        assert [e["id"] for e in memory.recall(search="after the forget")] == [later]
        assert memory._store.check()["ok"]


def test_a_mark_beyond_every_id_ever_given_is_reported(base: Path) -> None:
    with recuerdo.open("beyond", base_dir=base, embedder="none") as memory:
        memory.remember("learning", "an entry")
        memory._upkeep.drain()
        with memory._store.write() as tx:
            tx.execute("UPDATE index_marks SET upto = upto + 5 WHERE name = 'entry_trigrams'")
        found = memory._store.check()
    assert "index marks beyond the last item: 1" in found["problems"]


def _header_lost(base: Path) -> tuple[Path, bytes]:
    """A memory whose file lost its first bytes (SQLite's header): SQLite calls it "not a
    database", and the file is the memory's own, damaged."""
    with recuerdo.open("headless", base_dir=base, embedder="none") as memory:
        memory.remember("learning", "kept before the damage")
    [path] = base.rglob("headless.db")
    data = bytearray(path.read_bytes())
    data[:16] = bytes(16)
    path.write_bytes(bytes(data))
    return path, bytes(data)


def test_a_memory_whose_header_is_lost_is_damaged_not_unavailable(base: Path) -> None:
    """It answered store_unavailable (503: try again later, which never helps) and check
    raised the same error instead of reporting (a hunt over the CLI)."""
    path, before = _header_lost(base)
    with pytest.raises(recuerdo.StoreDamaged) as refused:
        recuerdo.open("headless", base_dir=base, embedder="none")
    assert refused.value.code == "store_damaged" and "recover" in refused.value.detail
    report = check_memory("headless", base_dir=base)
    assert report["ok"] is False and "not a database" in report["integrity"][0]
    assert path.read_bytes() == before  # nothing was written to it
