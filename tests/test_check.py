"""The store's check over a memory in ordinary use, and over one whose index marks are damaged
(``store/sqlite/health.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

import recuerdo


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
