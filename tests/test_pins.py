"""Pins and named context sets: pinned items come first at session start, within the budget
and flagged; sets load by name in recent and context; forgetting an item takes its pins."""

from __future__ import annotations

from pathlib import Path

import pytest

import recuerdo
from recuerdo.engine import restore_memory
from recuerdo.errors import ContextSetNotFound, InvalidInput, ItemNotFound
from recuerdo.store import archive

from .conftest import settled_dump


def test_pin_unpin_and_list(memory: recuerdo.Memory) -> None:
    note = memory.save("Deploy checklist", "run migrations first")["id"]
    entry = memory.remember("learning", "staging is flaky on Mondays")
    assert memory.pin(note)["outcome"] == "pinned"
    assert memory.pin(note)["outcome"] == "already_pinned"
    memory.pin(entry)
    listed = memory.pins()
    assert [(p["id"], p["item_type"], p["title"]) for p in listed] == [
        (note, "note", "Deploy checklist"),
        (entry, "entry", "learning entry"),
    ]
    assert memory.unpin(note)["outcome"] == "unpinned"
    assert memory.unpin(note)["outcome"] == "not_pinned"
    assert [p["id"] for p in memory.pins()] == [entry]


@pytest.mark.parametrize("bad", [999_999, "1", True])
def test_pinning_what_does_not_exist_changes_nothing(memory: recuerdo.Memory, bad: object) -> None:
    memory.save("Kept", "text")
    on_disk = Path(memory.location).is_file()  # a file store: compare every row on disk
    before = settled_dump(memory) if on_disk else None
    with pytest.raises((ItemNotFound, InvalidInput)) as caught:
        memory.pin(bad)  # type: ignore[arg-type]
    assert caught.value.code in ("item_not_found", "invalid_input")
    assert memory.pins() == []
    if before is not None:
        assert settled_dump(memory) == before


def test_pinned_items_come_first_in_recent_flagged(memory: recuerdo.Memory) -> None:
    old = memory.save("Old but pinned", "keep this in mind")["id"]
    for n in range(5):
        memory.save(f"Newer {n}", f"text {n}")
    memory.pin(old)
    reply = memory.recent()
    assert reply["ids"][0] == old and reply["pinned"] == [old]
    first = reply["text"].split("\n\n")[0]
    assert first.startswith("## Old but pinned") and "pinned)" in first.splitlines()[0]
    assert reply["ids"].count(old) == 1  # not shown a second time among the latest


def test_pins_stay_within_the_budget(memory: recuerdo.Memory) -> None:
    pinned = memory.save("Big pinned", "x" * 3000)["id"]
    memory.save("Latest", "short")
    memory.pin(pinned)
    reply = memory.recent(max_bytes=500)
    assert reply["truncated"] and reply["returned_bytes"] <= 500
    assert reply["ids"] == [pinned] and reply["pinned"] == [pinned]


def test_pins_follow_the_scope_of_recent(memory: recuerdo.Memory) -> None:
    mine = memory.save("Mine", "user note")["id"]
    shop = memory.save("Shop", "project note", scope="project:shop")["id"]
    memory.pin(mine)
    memory.pin(shop)
    assert memory.recent(scope="project:shop")["pinned"] == [shop]


def test_a_context_set_loads_by_name_in_recent_and_context(memory: recuerdo.Memory) -> None:
    a = memory.save("Release steps", "tag, build, publish")["id"]
    b = memory.save("Rollback", "revert the tag")["id"]
    memory.save("Unrelated", "lunch menu")
    assert memory.context_set("release", [b, a, b])["ids"] == [b, a]
    assert memory.context_sets()[0]["ids"] == [b, a]
    reply = memory.recent(context_set_name="release")
    assert reply["from_set"] == [b, a] and reply["ids"][:2] == [b, a]
    assert "in set release" in reply["text"].split("\n")[0]
    pack = memory.context("lunch", context_set_name="release")
    assert [s["id"] for s in pack["sources"]][:2] == [b, a]
    assert all(s.get("pinned") for s in pack["sources"][:2])
    assert pack["context"].startswith("## Rollback")


def test_a_set_is_replaced_then_deleted(memory: recuerdo.Memory) -> None:
    a = memory.save("A", "a")["id"]
    b = memory.save("B", "b")["id"]
    assert memory.context_set("s", [a])["outcome"] == "created"
    assert memory.context_set("s", [b])["outcome"] == "replaced"
    assert memory.context_set("s", [])["outcome"] == "deleted"
    assert memory.context_sets() == []
    with pytest.raises(ContextSetNotFound) as caught:
        memory.recent(context_set_name="s")
    assert caught.value.code == "context_set_not_found"


def test_a_set_with_an_unknown_item_changes_nothing(memory: recuerdo.Memory) -> None:
    a = memory.save("A", "a")["id"]
    memory.context_set("s", [a])
    with pytest.raises(ItemNotFound):
        memory.context_set("s", [a, 424242])
    assert memory.context_sets()[0]["ids"] == [a]


@pytest.mark.parametrize("how", ["forget_entry", "hard_delete_note"])
def test_forgetting_an_item_removes_its_pins(memory: recuerdo.Memory, how: str) -> None:
    if how == "forget_entry":
        item = memory.remember("learning", "short-lived")
        memory.pin(item)
        memory.context_set("s", [item])
        memory.forget(item)
    else:
        item = memory.save("Gone", "soon")["id"]
        memory.pin(item)
        memory.context_set("s", [item])
        memory.delete(item, hard=True)
    assert memory.pins() == [] and memory.context_sets() == []
    with memory._store.read() as tx:
        assert tx.scalar("SELECT count(*) FROM pins") == 0


def test_a_soft_deleted_note_keeps_its_pin_hidden(memory: recuerdo.Memory) -> None:
    note = memory.save("Paused", "text")["id"]
    memory.pin(note)
    memory.delete(note)
    assert memory.pins() == [] and memory.recent()["pinned"] == []
    memory.restore(note)
    assert [p["id"] for p in memory.pins()] == [note]


def test_pins_and_sets_survive_backup_and_restore(base: Path) -> None:
    with recuerdo.open("pinned", base_dir=base, embedder="none") as memory:
        note = memory.save("Pinned", "text")["id"]
        memory.pin(note)
        memory.context_set("s", [note])
        memory.backup(base / "pins.rbk")
    held = archive.read_header(base / "pins.rbk").tables
    assert (held["pins"], held["context_sets"]) == (1, 1)
    restore_memory("again", base / "pins.rbk", base_dir=base)
    with recuerdo.open("again", base_dir=base, embedder="none") as copy:
        assert [p["id"] for p in copy.pins()] == [note]
        assert copy.context_sets()[0]["ids"] == [note]


def test_pins_belong_to_their_tenant(memory: recuerdo.Memory) -> None:
    alice = memory.for_principal("a-bot", tenant="alice")
    bob = memory.for_principal("b-bot", tenant="bob")
    note = alice.save("Alice's", "private")["id"]
    alice.pin(note)
    with pytest.raises(ItemNotFound):
        bob.pin(note)
    assert bob.pins() == [] and bob.recent()["pinned"] == []
    assert bob.unpin(note)["outcome"] == "not_pinned"
    assert [p["id"] for p in alice.pins()] == [note]
