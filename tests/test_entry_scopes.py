"""Entries are listed by scope through an index of their own (m028): the listing reads the
scope's rows newest first and stops, where it walked every entry of the memory."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

import recuerdo
from recuerdo.entries import operations as entry_ops
from recuerdo.errors import RecuerdoError
from recuerdo.store import SQLiteStore
from recuerdo.store.postgres.connection import PostgresTx
from recuerdo.store.sqlite.schema import SCHEMA

from .conftest import query_plan, settled_dump, statements_run
from .grown import grown_copy
from .postgres import opened_on

SCOPES = ["project:shop", "project:blog", "default"]
CATEGORIES = ["learning", "decision"]
STEP = "m028_entry_scopes"


def _fill(memory: recuerdo.Memory, count: int) -> dict[int, tuple[str, str]]:
    """Entries spread over the scopes (the last one unnamed: the default scope) and the
    categories, half written one at a time and half in one batch; (scope, category) of each."""
    written: dict[int, tuple[str, str]] = {}
    batch: list[dict[str, Any]] = []
    for n in range(count):
        scope, category = SCOPES[n % 3], CATEGORIES[n % 2]
        named = {} if scope == "default" else {"scope": scope}
        if n < count // 2:
            written[memory.remember(category, f"entry {n}", ["t"], **named)] = (scope, category)
        else:
            batch.append({"category": category, "content": f"entry {n}", **named})
    for entry_id, entry in zip(memory.remember_many(batch), batch, strict=True):  # type: ignore[arg-type]
        written[entry_id] = (entry.get("scope", "default"), entry["category"])
    return written


def _newest(written: dict[int, tuple[str, str]], scope: str, category: str | None) -> list[int]:
    return sorted(
        (i for i, (s, c) in written.items() if s == scope and category in (None, c)),
        reverse=True,
    )


@pytest.mark.parametrize("limit", [1, 4, 200])
def test_a_listing_by_scope_is_exact_newest_first(memory: recuerdo.Memory, limit: int) -> None:
    """Every scope, alone and with each category: its entries newest first, ``more`` counting
    the rest, on every store; a scope holding no entry lists none."""
    written = _fill(memory, 36)
    memory.save("Shop note", "a note of the same scope is not an entry", scope="project:shop")
    for scope, category in itertools.product(SCOPES, [None, *CATEGORIES]):
        expected = _newest(written, scope, category)
        listed = memory.recall(scope=scope, category=category, limit=limit)
        assert [e["id"] for e in listed] == expected[:limit], (scope, category)
        assert listed.more == max(0, len(expected) - limit), (scope, category)
        assert {e["scope"] for e in listed} <= {scope}
    assert memory.recall(scope="project:none") == []


def _plans(
    memory: recuerdo.Memory,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    grown: bool,
    asked: dict[str, Any],
) -> tuple[list[int], list[str]]:
    """The ids ``recall(**asked)`` lists, and its listing statement's plan: on the memory's own
    store, or on a copy whose statistics are those of a store of 100,000 items."""
    with statements_run(monkeypatch) as seen:
        found = [e["id"] for e in memory.recall(**asked)]
    [(sql, params)] = [(sql, p) for sql, p in seen if "listed_id" in sql]
    if not grown:
        return found, query_plan(memory, sql, params)
    copy = grown_copy(memory.location, tmp_path / f"grown-{len(asked)}.db", 100_000)
    store = SQLiteStore(copy)
    try:
        with recuerdo.open("grown", store=store) as view:
            return found, query_plan(view, sql, params)
    finally:
        store.close()


@pytest.mark.parametrize("grown", [False, True], ids=["as opened", "as if grown"])
def test_a_listing_by_scope_alone_reads_the_scope_index(
    file_memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, grown: bool
) -> None:
    """The listing's statement searches ``items_entry_scopes`` by tenant and scope, under the
    statistics the store is opened with and under those of a store of 100,000 items. Before
    the step it walked ``items_entries`` (every entry of the tenant, newest first), reading
    each row to test its scope: 35-47 ms a listing for one scope of 50 among 100,000 entries
    (docs/decisions/0050-entry-scopes.md)."""
    written = _fill(file_memory, 30)
    found, plan = _plans(file_memory, monkeypatch, tmp_path, grown, {"scope": "project:blog"})
    assert found == _newest(written, "project:blog", None) != []
    assert plan == ["SEARCH items USING COVERING INDEX items_entry_scopes (tenant=? AND scope=?)"]


@pytest.mark.parametrize("grown", [False, True], ids=["as opened", "as if grown"])
@pytest.mark.parametrize(
    ("asked", "index"),
    [
        ({"scope": "default", "category": "rule"}, "items_by_category (tenant=? AND category=?)"),
        ({"scope": "default", "from_": "Scout"}, "items_by_source (tenant=? AND source=?)"),
        (
            {"scope": "project:blog", "category": "learning"},
            "items_entry_scopes (tenant=? AND scope=?)",
        ),
        (
            {"scope": "project:blog", "category": "learning", "from_": "main"},
            "items_entry_scopes (tenant=? AND scope=?)",
        ),
        ({"scope": "project:blog", "tags": ["t"]}, "item_tags_by_tag (tenant=? AND tag=?)"),
    ],
    ids=["rare category", "rare writer", "small scope", "small scope of three", "tags"],
)
def test_the_filter_holding_fewest_entries_drives_a_listing(
    file_memory: recuerdo.Memory,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    grown: bool,
    asked: dict[str, Any],
    index: str,
) -> None:
    """SQLite's sampled statistics give the scope, category and writer indexes the same
    figures, and its planner took the scope index on a tie: a few rules or one agent's entries
    in a large default scope were found by walking the whole scope (0.30 against 8.16 ms at
    40,000 entries, found in review). Each filter's newest entries are now read (up to
    ``DRIVE_PROBE``) and the rarest drives: a small scope beside a large category too. Under
    tags, the tags' index is read, as before the scope index."""
    written = _fill(file_memory, 40)
    crowd = file_memory.remember_many(
        [{"category": "learning", "content": f"crowd {n}"} for n in range(30)]  # type: ignore[list-item]
    )
    written |= {entry_id: ("default", "learning") for entry_id in crowd}
    rules = [file_memory.remember("rule", f"rule {n}") for n in range(2)]
    scout = file_memory.agent("Scout")
    scouted = [scout.remember("learning", f"seen {n}") for n in range(2)]
    found, plan = _plans(file_memory, monkeypatch, tmp_path, grown, asked)
    if asked.get("from_") == "Scout":
        expected = sorted(scouted, reverse=True)
    elif asked.get("category") == "rule":
        expected = sorted(rules, reverse=True)
    elif "tags" in asked:
        expected = [i for i, (s, _) in sorted(written.items(), reverse=True) if s == asked["scope"]]
        expected = [i for i in expected if i in _tagged(file_memory)]
    else:
        expected = _newest(written, asked["scope"], asked["category"])
    assert found == expected != []
    assert any(step.endswith(index) for step in plan), plan
    assert not any("TEMP B-TREE" in step for step in plan), plan


@pytest.mark.parametrize(
    ("probe", "index"),
    [
        (3, "items_by_category (tenant=? AND category=?)"),
        (100, "items_entry_scopes (tenant=? AND scope=?)"),
    ],
    ids=["both past the probe", "under it"],
)
def test_past_the_probe_the_scope_is_tested_row_by_row(
    file_memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch, probe: int, index: str
) -> None:
    """The counts stop at ``DRIVE_PROBE``: when every filter reaches it they cannot tell the
    filters apart, and the scope is tested on the rows the category's index offers, as before
    the scope index. Under the bound the fewer drive (here the scope: 8 entries against 32)."""
    monkeypatch.setattr(entry_ops, "DRIVE_PROBE", probe)
    expected = []
    for n in range(40):
        scope = "project:blog" if n % 5 == 0 else None
        entry_id = file_memory.remember("learning", f"entry {n}", scope=scope)
        if scope:
            expected.append(entry_id)
    with statements_run(monkeypatch) as seen:
        found = [e["id"] for e in file_memory.recall(scope="project:blog", category="learning")]
    assert found == sorted(expected, reverse=True)
    [(sql, params)] = [(sql, p) for sql, p in seen if "listed_id" in sql]
    assert ("+items.scope" in sql) == (probe == 3), sql
    plan = query_plan(file_memory, sql, params)
    assert len(plan) == 1 and index in plan[0], plan


def _tagged(memory: recuerdo.Memory) -> set[int]:
    with memory._store.read() as tx:
        return {int(row[0]) for row in tx.all("SELECT item_id FROM item_tags WHERE tag = 't'")}


def test_postgres_lists_a_scope_through_the_scope_index(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL's index names the id, so the listing reads its scope's rows in order, and
    stops: the plan (sequential scans off: the table is small) walks it without a sort."""
    with (
        opened_on("postgres", base, "scopes") as (name, where),
        recuerdo.open(name, embedder="none", **where) as memory,
    ):
        written = _fill(memory, 30)
        with statements_run(monkeypatch, PostgresTx) as seen:
            found = memory.recall(scope="project:shop")
        assert [e["id"] for e in found] == _newest(written, "project:shop", None) != []
        [(sql, params)] = [(sql, p) for sql, p in seen if "listed_id" in sql]
        with memory._store.read() as tx:
            tx.execute("SET LOCAL enable_seqscan = off")
            plan = "\n".join(row[0] for row in tx.all(f"EXPLAIN {sql}", params))
    assert "items_entry_scopes" in plan and "Sort" not in plan, plan


def _as_before_m028(memory: recuerdo.Memory) -> None:
    """``memory``'s store as the code before m028 left it: no scope index, the step not
    recorded."""
    with memory._store.write() as tx:
        tx.execute("DROP INDEX items_entry_scopes")
        tx.execute("DELETE FROM _migrations WHERE name = ?", (STEP,))
        if isinstance(memory._store, SQLiteStore):
            tx.execute(f"PRAGMA user_version = {SCHEMA.names().index(STEP)}")


def _has_the_index(memory: recuerdo.Memory) -> bool:
    with memory._store.read() as tx:
        if isinstance(memory._store, SQLiteStore):
            found = "SELECT count(*) FROM sqlite_schema WHERE name = 'items_entry_scopes'"
        else:
            found = (
                "SELECT count(*) FROM pg_indexes WHERE indexname = 'items_entry_scopes'"
                " AND schemaname = current_schema()"
            )
        return bool(tx.scalar(found))


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_store_written_before_m028_gets_the_index_and_lists_the_same(
    base: Path, backend: str
) -> None:
    """An older store gets the index when it is opened (the step is recorded), and lists every
    scope as before."""
    with opened_on(backend, base, "m028") as (name, where):
        with recuerdo.open(name, embedder="none", **where) as memory:
            written = _fill(memory, 24)
            _as_before_m028(memory)
            assert not _has_the_index(memory)
        with recuerdo.open(name, embedder="none", **where) as memory:
            assert _has_the_index(memory)
            with memory._store.read() as tx:
                steps = {row[0] for row in tx.all("SELECT name FROM _migrations")}
            assert STEP in steps
            for scope in SCOPES:
                listed = memory.recall(scope=scope)
                assert [e["id"] for e in listed] == _newest(written, scope, None), scope


@pytest.mark.parametrize("search", ["entry 1", "en", "ENTRY"])
def test_a_scope_beside_a_search_lists_what_a_scan_finds(
    memory: recuerdo.Memory, search: str
) -> None:
    """A scope with a substring search (the trigram index's needle, and one too short for it,
    which every store scans): the entries of the scope holding the text, newest first, on
    every store."""
    written = _fill(memory, 36)
    texts = {entry_id: f"entry {n}" for n, entry_id in enumerate(sorted(written))}
    for scope in SCOPES:
        expected = [
            i for i in _newest(written, scope, None) if search.casefold() in texts[i].casefold()
        ]
        listed = memory.recall(scope=scope, search=search)
        assert [e["id"] for e in listed] == expected != [], (scope, search)


def test_an_agents_own_listing_of_a_scope(memory: recuerdo.Memory) -> None:
    """An agent's listing filters by its own writer: beside a scope it lists its own entries
    of that scope, not the main memory's."""
    scout = memory.agent("Scout")
    mine = [scout.remember("learning", f"seen {n}", scope="project:shop") for n in range(3)]
    scout.remember("learning", "elsewhere", scope="project:blog")
    memory.remember("learning", "the main memory's", scope="project:shop")
    assert [e["id"] for e in scout.recall(scope="project:shop")] == sorted(mine, reverse=True)
    assert len(memory.recall(scope="project:shop", from_="*")) == 4


def test_an_agents_listing_counts_no_further_than_its_own_entries(
    file_memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The filters are counted in turn, each only as far as the fewest so far: an agent with
    three entries has the scope's counted to three, not to ``DRIVE_PROBE``."""
    _fill(file_memory, 30)
    scout = file_memory.agent("Scout")
    for n in range(3):
        scout.remember("learning", f"seen {n}", scope="project:shop")
    with statements_run(monkeypatch) as seen:
        scout.recall(scope="project:shop")
    counts = [params for sql, params in seen if sql.startswith("SELECT count(*) FROM (SELECT 1")]
    assert [p[-1] for p in counts] == [entry_ops.DRIVE_PROBE, 3], counts


BAD_SCOPE_AND_TAGS = [("", [""]), ("", 5), (5, [1])]


def test_a_bad_scope_is_refused_before_bad_tags(memory: recuerdo.Memory) -> None:
    """Which refusal a call with several bad arguments gets does not change: the scope's, as
    before the filters were counted (found in review)."""
    for scope, tags in BAD_SCOPE_AND_TAGS:
        with pytest.raises(RecuerdoError) as refused:
            memory.recall(scope=scope, tags=tags)  # type: ignore[arg-type]
        assert refused.value.code == "invalid_input" and "scope" in str(refused.value)


@pytest.mark.parametrize(("scope", "tags"), BAD_SCOPE_AND_TAGS)
def test_a_refused_listing_leaves_the_store_as_it_was(
    file_memory: recuerdo.Memory, scope: Any, tags: Any
) -> None:
    """A refused listing records nothing (a listing is audited once it is answered) and
    changes nothing: every row on disk is what it was."""
    _fill(file_memory, 6)
    file_memory.recall(scope="project:shop")  # an answered listing: one audit record
    before = settled_dump(file_memory)
    assert any(line.startswith("retrieval_audit:") for line in before)
    with pytest.raises(RecuerdoError) as refused:
        file_memory.recall(scope=scope, tags=tags)
    assert refused.value.code == "invalid_input" and refused.value.status == 400
    assert settled_dump(file_memory) == before


def test_a_search_too_short_for_the_trigram_index_reads_the_scope_index(
    file_memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A needle of one or two characters has no trigram to look up, so every entry is tested:
    beside a scope, the scope's index offers them (the review's finding: a scope of 30 among
    40,000 entries took 22-28 ms, walking every entry)."""
    written = _fill(file_memory, 30)
    with statements_run(monkeypatch) as seen:
        found = [e["id"] for e in file_memory.recall(scope="project:blog", search="en")]
    assert found == _newest(written, "project:blog", None)
    [(sql, params)] = [(sql, p) for sql, p in seen if "listed_id" in sql]
    plan = query_plan(file_memory, sql, params)
    assert any("items_entry_scopes (tenant=? AND scope=?)" in step for step in plan), plan
