"""The hot queries use their indexes: every statement a representative workload runs (each write
verb, then each read verb) is explained by SQLite's planner, and none scans a table that grows
with the memory when an index could serve it.

The statements are recorded as the store runs them (a spy around the one place the SQLite
transaction executes SQL), so a new query is checked the day it is written, not when someone
remembers to list it here.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import recuerdo
from recuerdo.store.sqlite import files
from recuerdo.verbs import VERBS

from .conftest import statements_run
from .gitrepo import sample
from .grown import grown_copy

MARK = "Plonquist"

# Tables whose size does not grow with what the memory holds (a few rows each), or that are read
# whole on purpose (the row each names is the reason it is listed).
SMALL_OR_WHOLE = {
    "_migrations",  # the schema's step names
    "settings",  # configure's keys
    "mutes",  # muted categories of a memory
    "rules",  # owner rules are checked all at once by check_rules
    "index_marks",  # one row per index
    "embeddings",  # one row per embedder
    "code_repos",  # one row per ingested repository
    "sessions",  # listed whole by recent / overview, a handful per memory
    "rechunk_queue",  # a work queue, empty once the background indexer has drained it
    "released_hashes",  # a work queue too, emptied by each collection of unused vectors
}
WHOLE = "/* whole memory */"  # the mark of a statement that counts everything a tenant holds
WHOLE_REPOSITORY = "/* whole repository */"  # or everything ingested of one repository

WRITES: list[tuple[str, dict[str, Any]]] = [
    ("remember", {"category": "learning", "content": f"{MARK} entry", "tags": ["t"]}),
    ("save", {"title": f"{MARK} note", "content": f"{MARK} body [[Other]]", "key": "k"}),
    ("save", {"title": "Other", "content": f"see [[{MARK} note]]", "key": "k2"}),
    ("remember_about", {"axis": "user", "observation": f"{MARK} likes tea", "category": "c"}),
    ("mirror_push", {"key": "odd/x/tasks", "content": f"- [ ] {MARK} task"}),
    (
        "add_messages",
        {"conversation": "c1", "messages": [{"speaker": "Ann", "text": f"{MARK} said hi"}]},
    ),
    (
        "remember_knowledge",
        {
            "content": f"{MARK} Ann works at Acme.",
            "facts": {"relations": [{"source": "Ann", "target": "Acme", "type": "works_at"}]},
        },
    ),
    (
        "ingest",
        {
            "content_base64": base64.b64encode(f"{MARK} handbook text".encode()).decode(),
            "name": "handbook.md",
        },
    ),
    ("create_progress", {"task": "t1", "steps": ["one", "two"]}),
    ("add_rule", {"name": "r1", "level": "must", "description": "x <= 1"}),
    ("session_start", {"id": "s1", "project": "p"}),
    ("save", {"title": f"{MARK} mine", "content": f"{MARK} of p", "project": "p"}),
]

READS: dict[str, dict[str, Any]] = {
    "recall": {"search": MARK},
    "summary": {},
    "resume_point": {"task": "t1"},
    "get_progress": {"task": "t1"},
    "list_progress": {},
    "check_rules": {"context": {"x": 5}},
    "get": {"id": "NOTE"},
    "history": {"id": "NOTE"},
    "revision": {"id": "NOTE", "version": 1},
    "timeline": {"id": "NOTE"},
    "links": {"id": "NOTE"},
    "conflicts": {"id": "NOTE"},
    "list_notes": {},
    "overview": {},
    "profile": {"axis": "user"},
    "recent": {},
    "pins": {},
    "context_sets": {},
    "journal": {},
    "search": {"query": MARK},
    "context": {"query": MARK},
    "audit": {},
    "about": {"subject": "Ann"},
    "ask": {"query": "who is Ann?"},
    "status": {},
    "code_status": {"repo": "sample"},
    "code_at": {"repo": "sample", "path": "b.txt"},
    "code_history": {"repo": "sample", "path": "b.txt"},
    "code_blame": {"repo": "sample", "path": "b.txt"},
    "code_changes_since": {"repo": "sample", "rev": "HEAD~1"},
    "mirror_get": {"key": "odd/x/tasks"},
}

# The reads of one project's notes of ``user`` (decision 0148; its index, step m046).
PROJECT_READS: list[tuple[str, dict[str, Any]]] = [
    ("recent", {"scope": "user", "project": "p"}),
    ("recent", {"project": "p"}),
    ("search", {"query": MARK, "scope": "user", "project": "p"}),
]

# An index searched by the tenant alone reads every row the tenant holds: wrong when the
# statement names its rows by id (a rowid lookup each would serve it).
TENANT_ONLY = re.compile(r"\bSEARCH (\w+) USING (?:COVERING )?INDEX \w+ \(tenant=\?\)")
BY_IDS = re.compile(r"\bid IN \(", re.IGNORECASE)
SCAN = re.compile(r"\bSCAN (\w+)\b(?! USING (?:COVERING )?INDEX| VIRTUAL TABLE)")
CTE = re.compile(r"\b(\w+)(?:\s*\([^)]*\))?\s+AS\s+(?:NOT\s+)?(?:MATERIALIZED\s+)?\(", re.I)
# A listing cut at a limit: sorting every row the tenant holds to keep the first few is a
# walk of the whole memory each time.
LIMITED = re.compile(r"\bLIMIT\b", re.IGNORECASE)
USED_INDEX = re.compile(r"USING (?:COVERING )?INDEX (\w+)")
# A table and the alias a statement reads it under (plans name the alias).
ALIAS = re.compile(
    r"\b(?:FROM|JOIN)\s+(\w+)(?:\s+(?:AS\s+)?(?!WHERE\b|ON\b|JOIN\b|CROSS\b|LEFT\b|INNER\b"
    r"|NATURAL\b|ORDER\b|GROUP\b|LIMIT\b|USING\b|INDEXED\b|NOT\b|UNION\b|AS\b)(\w+))?",
    re.IGNORECASE,
)


@pytest.fixture
def statements(
    monkeypatch: pytest.MonkeyPatch, base: Path, tmp_path: Path
) -> Iterator[tuple[str, list[tuple[str, Any]]]]:
    monkeypatch.setenv("RECUERDO_EMBEDDER", "none")
    memory = recuerdo.open("plans", base_dir=base)
    try:
        memory.code_ingest_path(sample(tmp_path).path, "sample")
        with statements_run(monkeypatch) as seen:
            ids = {}
            for verb, args in WRITES:
                reply = VERBS[verb].call(memory, args)
                if verb == "save" and "NOTE" not in ids:
                    ids["NOTE"] = reply["id"]
            VERBS["save"].call(memory, {"key": "k", "title": f"{MARK} note", "content": "v2"})
            memory._upkeep.drain()
            for verb, args in READS.items():
                VERBS[verb].call(memory, {k: ids[v] if v == "NOTE" else v for k, v in args.items()})
            for verb, args in PROJECT_READS:
                VERBS[verb].call(memory, args)
        yield memory.location, seen
    finally:
        memory.close()


def test_the_workload_reaches_every_family(statements: tuple[str, list[tuple[str, Any]]]) -> None:
    """The spy saw the statements (so the plan check below is not vacuous)."""
    _, seen = statements
    text = " ".join(sql for sql, _ in seen)
    for table in ("items", "revisions", "facts", "entities", "chunks", "code_"):
        assert table in text, table


@pytest.mark.parametrize("grown", [False, True], ids=["as opened", "as if grown"])
def test_no_hot_query_scans_a_growing_table(
    statements: tuple[str, list[tuple[str, Any]]], tmp_path: Path, grown: bool
) -> None:
    """Each recorded read or filtered write, explained: no full scan of a table that grows
    (named or by its alias). Under the statistics the store is opened with, and under those a
    store of 100,000 items has after its last close: its tables analysed at their size, the
    empty ones still stating a million rows (a join then read the analysed side first: every
    item walked to find none pinned)."""
    location, seen = statements
    if grown:
        location = grown_copy(location, tmp_path / "grown.db", 100_000)
    conn = files.connect(location, read_only=True)
    wrong: dict[str, list[str]] = {}
    try:
        tables = {
            row[0] for row in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")
        }
        empty = {
            str(index)
            for index, stat in conn.execute("SELECT idx, stat FROM sqlite_stat1")
            if index is not None and stat.split()[0] == "0"
        }
        for sql, params in seen:
            head = re.sub(r"/\*.*?\*/", "", sql).split(None, 1)[0].upper()
            if head not in {"SELECT", "WITH", "UPDATE", "DELETE"}:
                continue
            if WHOLE in sql or WHOLE_REPOSITORY in sql:
                continue
            plan = [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params)]
            if _reads_too_much(sql, plan, tables, empty):
                wrong[" ".join(sql.split())] = plan
    finally:
        conn.close()
    assert not wrong, "\n\n".join(f"{sql}\n  " + "\n  ".join(p) for sql, p in wrong.items())


def _reads_too_much(sql: str, plan: list[str], tables: set[str], empty: set[str]) -> bool:
    """Whether a plan scans a table that grows (named or by its alias), walks the tenant for
    rows it names by id, sorts every row of the tenant to keep a limited few, or scans a name
    it cannot be traced to (a comma join's alias, which ``ALIAS`` does not read)."""
    named = {alias: table for table, alias in ALIAS.findall(sql) if alias}
    named |= {table: table for table in tables}
    ctes = set(CTE.findall(sql))
    by_ids = bool(BY_IDS.search(sql))
    for line in plan:
        tenant_walk = TENANT_ONLY.findall(line) if by_ids and not _empty(line, empty) else []
        for name in SCAN.findall(line) + tenant_walk:
            if name not in named:
                if name != "CONSTANT" and name not in ctes:
                    return True
            elif named[name] in tables and named[name] not in SMALL_OR_WHOLE:
                return True
    sorted_whole = LIMITED.search(sql) and any("TEMP B-TREE FOR ORDER BY" in line for line in plan)
    return bool(sorted_whole and any(TENANT_ONLY.search(line) for line in plan))


def _empty(line: str, empty: set[str]) -> bool:
    """Whether a plan's step walks an index the statistics say is empty (``empty``: the
    partial index of mail in a memory that has none): walking it reads nothing, and it is what
    the planner picks then."""
    index = USED_INDEX.search(line)
    return index is not None and index.group(1) in empty


def test_closing_leaves_the_planner_statistics_of_what_was_written(base: Path) -> None:
    """``PRAGMA optimize`` before the last close: the next open plans with real row counts."""
    memory = recuerdo.open("stats", base_dir=base, embedder="none")
    for n in range(120):
        memory.remember(category="learning", content=f"{MARK} entry {n}")
    location = memory.location
    memory.close()
    conn = files.connect(location, read_only=True)
    try:
        counts = dict(conn.execute("SELECT tbl, stat FROM sqlite_stat1 WHERE idx IS NULL"))
    finally:
        conn.close()
    assert counts.get("items", "").split()[0] == "120", counts


def test_the_planner_is_told_the_tenant_narrows_nothing(base: Path) -> None:
    """ANALYZE samples a few hundred rows per index and reported 401 rows per tenant for 100,000
    chunks of one tenant; the planner then walked the whole tenant instead of looking rows up by
    id. Every tenant-first index's statistics say one tenant may hold the whole table, on a new
    store and after the statistics are refreshed at close."""
    memory = recuerdo.open("tenant-stats", base_dir=base, embedder="none")
    location = memory.location
    for n in range(1200):
        memory.remember(category="learning", content=f"{MARK} entry {n} of many words")
    memory._upkeep.drain()
    new = _tenant_figures(location)
    memory.close()
    closed = _tenant_figures(location)
    for figures in (new, closed):
        assert "items_entries" in figures and "chunks_by_item" in figures, figures
        wrong = {index: pair for index, pair in figures.items() if pair[1] < pair[0]}
        assert not wrong, wrong
    assert closed["items_entries"][0] == 1200, closed
    conn = files.connect(location, read_only=True)
    try:
        marks = ",".join("?" * 20)
        plan = " ".join(
            row[3]
            for row in conn.execute(
                "EXPLAIN QUERY PLAN SELECT c.id FROM chunks c JOIN items i ON i.tenant = c.tenant"
                f" AND i.id = c.item_id WHERE c.id IN ({marks}) AND i.tenant = ?",
                [*range(20), "local"],
            )
        )
    finally:
        conn.close()
    assert "SEARCH c USING INTEGER PRIMARY KEY (rowid=?)" in plan, (plan, closed)


def test_an_index_made_after_the_store_was_opened_gets_its_figures(base: Path) -> None:
    """The tenant-first indexes are listed once per schema: an index added since (by a
    migration of a newer version, say) changes the schema, and is given its figures at once."""
    from recuerdo.store.sqlite.statistics import DEFAULTED, state_tenant_share

    with recuerdo.open("later-index", base_dir=base, embedder="none") as memory:
        memory.remember(category="learning", content=f"{MARK} before the index")
        location = memory.location
    conn = files.connect(location)
    try:
        state_tenant_share(conn)  # the schema as it was, listed
        conn.execute("CREATE INDEX items_later ON items (tenant, created_at)")
        assert state_tenant_share(conn) == 1
        stat = conn.execute("SELECT stat FROM sqlite_stat1 WHERE idx = 'items_later'").fetchone()
    finally:
        conn.close()
    assert stat is not None and stat[0].endswith(DEFAULTED), stat


def test_closing_a_store_that_did_not_change_writes_nothing(base: Path) -> None:
    """The figures a close refreshes are already current when nothing was written since the
    last close: the file stays the same, byte for byte. (``PRAGMA optimize`` took the stated
    million rows of every empty table for a change; its ANALYZE dropped them and the close
    wrote them back, some twenty commits at every close.)"""
    memory = recuerdo.open("unchanged", base_dir=base, embedder="none")
    memory.remember(category="learning", content=f"{MARK} entry", tags=["a", "b"])
    memory.save(title=f"{MARK} note", content="a body")
    location = memory.location
    memory.close()
    closed = Path(location).read_bytes()
    for _ in range(2):
        recuerdo.open("unchanged", base_dir=base, embedder="none").close()
        assert Path(location).read_bytes() == closed
        wal = Path(f"{location}-wal")
        assert not wal.exists() or wal.stat().st_size == 0


def _key_figures(location: str) -> dict[str, str]:
    conn = files.connect(location, read_only=True)
    try:
        return dict(conn.execute("SELECT idx, stat FROM sqlite_stat1 WHERE tbl = 'item_tags'"))
    finally:
        conn.close()


def test_a_refresh_waits_for_another_writer(base: Path) -> None:
    """A refresh takes the write lock when it begins, so another process's write makes it
    wait (``busy_timeout``) rather than fail; a transaction that read first and then tried to
    write failed at once with "database is locked", and the figures were left as they were."""
    import threading

    from recuerdo.store.sqlite import statistics

    with recuerdo.open("busy", base_dir=base, embedder="none") as memory:
        for n in range(50):
            memory.remember(category="learning", content=f"{MARK} entry {n}", tags=["a"])
        location = memory.location
    stale = "1000000 1000000 recuerdo-default"
    conn = files.connect(location)
    conn.execute("UPDATE sqlite_stat1 SET stat = ? WHERE idx = 'items_entries'", (stale,))
    other = files.connect(location)
    other.execute("BEGIN IMMEDIATE")
    released = threading.Event()

    def release() -> None:
        other.execute("COMMIT")
        released.set()

    releasing = threading.Timer(0.3, release)
    releasing.start()
    try:
        held_when_begun = not released.is_set()
        statistics.refresh(conn)
        finished_after_release = released.is_set()
        stat = conn.execute("SELECT stat FROM sqlite_stat1 WHERE idx = 'items_entries'").fetchone()
    finally:
        releasing.join()
        other.close()
        conn.close()
    assert held_when_begun and finished_after_release  # the refresh really waited
    assert stat[0] == "50 50", stat


def test_the_key_of_a_table_without_rowid_has_one_row_of_figures(base: Path) -> None:
    """ANALYZE writes the figures of a ``WITHOUT ROWID`` table's key under the table's own name:
    the tenant's figure is stated in that row, and no second row under the key index's name
    competes with it."""
    memory = recuerdo.open("keys", base_dir=base, embedder="none")
    for n in range(30):
        memory.remember(category="learning", content=f"{MARK} entry {n}", tags=["a", f"t{n}"])
    location = memory.location
    assert "sqlite_autoindex_item_tags_1" not in _key_figures(location)  # a new store's figures
    memory.close()
    figures = _key_figures(location)
    assert "sqlite_autoindex_item_tags_1" not in figures, figures
    assert figures["item_tags"].split()[:2] == ["60", "60"], figures


def test_figures_stated_under_a_key_index_name_by_an_earlier_version_go(base: Path) -> None:
    """A store whose figures an earlier version stated under the key index's name (where SQLite
    reads them for the same index as the table-named row) loses that row at its next open."""
    with recuerdo.open("stray", base_dir=base, embedder="none") as memory:
        memory.remember(category="learning", content=f"{MARK} entry", tags=["a"])
        location = memory.location
    conn = files.connect(location)
    try:
        conn.execute(
            "INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES (?, ?, ?)",
            ("item_tags", "sqlite_autoindex_item_tags_1", "1000000 1000000 10 1 recuerdo-default"),
        )
    finally:
        conn.close()
    memory = recuerdo.open("stray", base_dir=base, embedder="none")
    try:
        assert "sqlite_autoindex_item_tags_1" not in _key_figures(location)
    finally:
        memory.close()


def _tenant_figures(location: str) -> dict[str, tuple[int, int]]:
    """Per tenant-first index of a non-empty table: (rows, rows per tenant) from sqlite_stat1."""
    conn = files.connect(location, read_only=True)
    try:
        figures = {}
        for index, stat in conn.execute("SELECT idx, stat FROM sqlite_stat1 WHERE idx IS NOT NULL"):
            first = conn.execute("SELECT name FROM pragma_index_info(?) WHERE seqno = 0", (index,))
            row = first.fetchone()
            fields = stat.split()
            if row and row[0] == "tenant" and int(fields[0]) > 0:
                figures[index] = (int(fields[0]), int(fields[1]))
        return figures
    finally:
        conn.close()


def test_the_consistency_checks_look_rows_up_by_key_inside_every_correlated_subquery(
    base: Path,
) -> None:
    """``check`` runs each statement over the whole memory: a subquery run once per row must
    find its rows by key. One that scanned or sorted per row made ``check`` quadratic (the
    vectors-of-a-wrong-size count sorted a model's vectors for each vector: over 15 minutes at
    100,000)."""
    from recuerdo.store.sqlite import health

    with recuerdo.open("plans", base_dir=base) as memory:
        memory.remember("learning", f"{MARK} checked")
        location = memory.location
    conn = files.raw_connection(location)
    try:
        for name, sql in health._CONSISTENCY:
            plan = {row[0]: (row[1], row[3]) for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}")}
            for parent, detail in plan.values():
                if _under_correlated(plan, parent):
                    assert detail.startswith("SEARCH"), (name, detail)
                    assert "TEMP B-TREE" not in detail, (name, detail)
    finally:
        conn.close()


def _under_correlated(plan: dict[int, tuple[int, str]], node: int) -> bool:
    """Whether a step of a query plan runs inside a correlated subquery (once per outer row)."""
    while node in plan:
        parent, detail = plan[node]
        if detail.startswith("CORRELATED"):
            return True
        node = parent
    return False


def test_every_cascade_finds_its_rows_through_an_index_on_sqlite(base: Path) -> None:
    """A delete cascades into each table that refers to the deleted row, by the foreign key's
    columns: a table with no index for them is read whole once per deleted row (forgetting
    4,000 entities took 0.94 s, growing with their square, decision 0063)."""
    memory = recuerdo.open("cascades", base_dir=base)
    try:
        with memory._store.read() as tx:
            tables = [
                row["name"]
                for row in tx.all(
                    "SELECT name FROM sqlite_schema WHERE type = 'table'"
                    " AND name NOT LIKE 'sqlite_%' AND sql NOT LIKE 'CREATE VIRTUAL%'"
                )
            ]
            scanned = []
            for table in tables:
                keys: dict[int, list[str]] = {}
                for key in tx.all(f'PRAGMA foreign_key_list("{table}")'):
                    keys.setdefault(key["id"], []).append(key["from"])
                for columns in keys.values():
                    where = " AND ".join(f'"{column}" = ?' for column in columns)
                    explained = f'EXPLAIN QUERY PLAN SELECT 1 FROM "{table}" WHERE {where}'
                    plan = [row["detail"] for row in tx.all(explained, [None] * len(columns))]
                    read_whole = (f"SCAN {table}", "AUTOMATIC")  # or an index made per query
                    if any(line.startswith(read_whole) or read_whole[1] in line for line in plan):
                        scanned.append((table, columns))
    finally:
        memory.close()
    assert scanned == []


def test_every_cascade_finds_its_rows_through_an_index_on_postgres() -> None:
    from .postgres import contract_store

    store = contract_store()
    with store.read() as tx:
        unindexed = tx.all(
            "SELECT c.conrelid::regclass::text AS child, c.conname AS name FROM pg_constraint c"
            " WHERE c.contype = 'f' AND c.connamespace = current_schema()::regnamespace"
            " AND NOT EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.conrelid"
            " AND i.indpred IS NULL AND i.indisvalid AND cardinality(c.conkey) <= i.indnkeyatts"
            " AND (i.indkey::int2[])[0:cardinality(c.conkey) - 1] @> c.conkey"
            " AND (i.indkey::int2[])[0:cardinality(c.conkey) - 1] <@ c.conkey)"
        )
    assert [(row["child"], row["name"]) for row in unindexed] == []
