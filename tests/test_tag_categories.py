"""The tag index carries each item's category (m026): a listing by a category and tags reads
the tags' rows of that category, and every write keeps those rows' category the item's own."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

import recuerdo
from recuerdo.store import SQLiteStore
from recuerdo.store.sqlite.schema import SCHEMA

from .conftest import query_plan, statements_run
from .postgres import opened_on

CATEGORIES = ["learning", "decision", "context"]
TAGS = ["a", "b", "c"]


def _fill(memory: recuerdo.Memory, count: int) -> dict[int, tuple[str, set[str]]]:
    """Entries of every category with one to three tags, half in one batch; what each holds,
    recorded as it is written."""
    written: dict[int, tuple[str, set[str]]] = {}
    batch: list[dict[str, Any]] = []
    for n in range(count):
        category = CATEGORIES[n % 3]
        tags = TAGS[n % 3 : n % 3 + 1 + n % 2] + (["x"] if n % 7 == 0 else [])
        if n < count // 2:
            written[memory.remember(category, f"entry {n}", tags)] = (category, set(tags))
        else:
            batch.append({"category": category, "content": f"entry {n}", "tags": tags})
    ids = memory.remember_many(batch)  # type: ignore[arg-type]
    for entry_id, entry in zip(ids, batch, strict=True):
        written[entry_id] = (entry["category"], set(entry["tags"]))
    return written


def _newest(
    written: dict[int, tuple[str, set[str]]], category: str, tags: list[str], every: bool
) -> list[int]:
    def passes(held: set[str]) -> bool:
        return set(tags) <= held if every else bool(set(tags) & held)

    return sorted(
        (i for i, (kind, held) in written.items() if kind == category and passes(held)),
        reverse=True,
    )


def _tag_rows_disagreeing(memory: recuerdo.Memory) -> list[tuple[Any, ...]]:
    """The tag index's rows whose category is not their item's (none, when it is kept)."""
    with memory._store.read() as tx:
        return [
            tuple(row)
            for row in tx.all(
                "SELECT t.item_id, t.tag, t.category, i.category FROM item_tags t"
                " JOIN items i ON i.tenant = t.tenant AND i.id = t.item_id"
                " WHERE t.category IS DISTINCT FROM i.category"
            )
        ]


@pytest.mark.parametrize("limit", [1, 3, 200])
def test_a_listing_by_category_and_tags_is_exact_newest_first(
    memory: recuerdo.Memory, limit: int
) -> None:
    """Every category with every tag asked alone, two tags any or all: the entries of that
    category carrying them, newest first, ``more`` counting the rest, on every store."""
    written = _fill(memory, 48)
    asked = [([tag], False) for tag in [*TAGS, "x"]] + [(["a", "b"], False), (["b", "c"], True)]
    for category, (tags, every) in itertools.product(CATEGORIES, asked):
        expected = _newest(written, category, tags, every)
        listed = memory.recall(
            category=category, tags=tags, mode="all" if every else "any", limit=limit
        )
        assert [e["id"] for e in listed] == expected[:limit], (category, tags, every)
        assert listed.more == max(0, len(expected) - limit), (category, tags, every)
    assert memory.recall(category="rule", tags=["a"]) == []
    assert _tag_rows_disagreeing(memory) == []


def test_a_notes_tag_rows_follow_its_kind(memory: recuerdo.Memory) -> None:
    """A note's tag rows carry its kind through a save, an update of its tags, an update of its
    kind alone, an update of both, and a text edit that names neither."""
    memory.save("Deploys", "Blue-green deploys.", key="deploys", kind="decision", tags=["ops"])
    assert _tag_rows_disagreeing(memory) == []
    memory.save("Deploys", "Blue-green.", key="deploys", kind="decision", tags=["ops", "ci"])
    memory.save("Deploys", "Blue-green.", key="deploys", kind="pattern", tags=["ops", "ci"])
    assert _tag_rows_disagreeing(memory) == []
    saved = memory.save("Deploys", "Canary.", key="deploys", kind="config", tags=["ci"])
    memory.edit(saved["id"], "find_replace", "Canary first", find="Canary")
    assert _tag_rows_disagreeing(memory) == []
    with memory._store.read() as tx:
        rows = {tuple(row) for row in tx.all("SELECT tag, category FROM item_tags")}
    assert rows == {("ci", "config")}


def test_a_listing_by_category_and_tag_reads_the_category_from_the_tag_index(
    file_memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The listing's tag rows, category included, are read from the tag index alone (a covering
    search), and the category is the index's last column, so a listing by tags alone still
    reads ids in order. Before, each id the tag held was looked up in the category index: 2.3
    ms of the listing's 3.6 for one tag among 100,000 entries (decision 0047). That the
    category read there decides the listing is shown by the next test."""
    written = _fill(file_memory, 30)
    with statements_run(monkeypatch) as seen:
        found = file_memory.recall(category="decision", tags=["b"])
    assert [e["id"] for e in found] == _newest(written, "decision", ["b"], every=False) != []
    [(sql, params)] = [(sql, p) for sql, p in seen if "listed_id" in sql]
    plan = query_plan(file_memory, sql, params)
    assert any("COVERING INDEX item_tags_by_tag (tenant=? AND tag=?)" in s for s in plan), plan
    with file_memory._store.read() as tx:
        [(definition,)] = tx.all("SELECT sql FROM sqlite_schema WHERE name = 'item_tags_by_tag'")
    assert definition.endswith("(tenant, tag, item_id, category)"), definition


def test_a_listing_takes_the_category_from_the_tag_rows(memory: recuerdo.Memory) -> None:
    """The category a listing asks for is read from the tag rows (which is why every write
    keeps it right): a row naming another category keeps its entry out, and a row naming none
    (written by an earlier version's server on the same PostgreSQL memory) lets the entry's own
    category decide."""
    first, second, third = (memory.remember("decision", f"entry {n}", ["db"]) for n in range(3))
    with memory._store.write() as tx:
        tx.execute("UPDATE item_tags SET category = 'context' WHERE item_id = ?", (first,))
        tx.execute("UPDATE item_tags SET category = NULL WHERE item_id = ?", (second,))
    assert [e["id"] for e in memory.recall(category="decision", tags=["db"])] == [third, second]
    assert [e["id"] for e in memory.recall(category="context", tags=["db"])] == []
    assert [e["id"] for e in memory.recall(tags=["db"])] == [third, second, first]


def _as_before_m026(memory: recuerdo.Memory) -> None:
    """``memory``'s store as the code before m026 left it: tag rows without a category, the
    tag index on (tenant, tag, item_id), the step not recorded."""
    step = "m026_tag_categories"
    with memory._store.write() as tx:
        tx.execute("DROP INDEX item_tags_by_tag")
        tx.execute("ALTER TABLE item_tags DROP COLUMN category")
        tx.execute("CREATE INDEX item_tags_by_tag ON item_tags (tenant, tag, item_id)")
        tx.execute("DELETE FROM _migrations WHERE name = ?", (step,))
        if isinstance(memory._store, SQLiteStore):
            tx.execute(f"PRAGMA user_version = {SCHEMA.names().index(step)}")


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_store_written_before_m026_gets_its_categories_and_lists_the_same(
    base: Path, backend: str
) -> None:
    """An older store's tag rows get their items' categories when it is opened, and its
    listings by category and tags are those of the entries it held."""
    with opened_on(backend, base, "m026") as (name, where):
        with recuerdo.open(name, embedder="none", **where) as memory:
            written = _fill(memory, 30)
            memory.save("Deploys", "Blue-green.", key="deploys", kind="decision", tags=["ops"])
            _as_before_m026(memory)
            with memory._store.read() as tx:
                assert tx.scalar("SELECT count(*) FROM item_tags") == 1 + sum(
                    len(tags) for _, tags in written.values()
                )
        with recuerdo.open(name, embedder="none", **where) as memory:
            assert _tag_rows_disagreeing(memory) == []
            with memory._store.read() as tx:
                assert tx.scalar("SELECT count(*) FROM item_tags WHERE category IS NULL") == 0
                steps = [row[0] for row in tx.all("SELECT name FROM _migrations")]
            assert "m026_tag_categories" in steps
            for category, tag in itertools.product(CATEGORIES, TAGS):
                listed = memory.recall(category=category, tags=[tag])
                assert [e["id"] for e in listed] == _newest(written, category, [tag], False)


def test_a_store_recovered_from_before_m026_gets_its_categories(base: Path) -> None:
    """``recover`` copies an older store's rows into a store of the current schema: its tag rows
    come without a category, and get their items' (the review's finding)."""
    with recuerdo.open("worn", base_dir=base, embedder="none") as memory:
        written = _fill(memory, 30)
        _as_before_m026(memory)
    rescued = base / "rescued.db"
    outcome = recuerdo.engine.recover_memory("worn", rescued, base_dir=base)
    assert outcome["lost"] == 0
    store = SQLiteStore(str(rescued))
    try:
        with recuerdo.open("rescued", store=store) as memory:
            with memory._store.read() as tx:
                assert tx.scalar("SELECT count(*) FROM item_tags WHERE category IS NULL") == 0
            assert _tag_rows_disagreeing(memory) == []
            for category, tag in itertools.product(CATEGORIES, TAGS):
                listed = memory.recall(category=category, tags=[tag])
                assert [e["id"] for e in listed] == _newest(written, category, [tag], False)
    finally:
        store.close()
