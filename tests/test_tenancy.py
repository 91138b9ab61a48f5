"""The tenant-first rule, on both backends: every statement the families run filters by tenant
(``tests/tenancy.py`` reads each one), and every table's key and indexes lead with ``tenant``,
so a memory can be distributed by tenant (``docs/tenancy.md``).

The statements are collected by running one workload through every family, for two tenants,
on a real store of each backend, and recording each statement the store is given."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import recuerdo
from recuerdo.store.postgres.connection import PostgresStore, PostgresTx
from recuerdo.store.sqlite.connection import SQLiteStore, SQLiteTx

from .gitrepo import Repo
from .postgres import embedded_url, unique_memory
from .tenancy import EVERY_TENANT, SHARED_TABLES, problems

FTS5_SHADOWS = ("config", "data", "docsize", "idx", "content")
"""The tables FTS5 keeps for an index of its own, named after it."""

# PostgreSQL indexes that do not lead with tenant, on purpose: the upkeep reads new rows by id
# across tenants (every tenant's rows are chunked in id order), and GIN indexes (words,
# trigrams) hold no btree column. Distributed, each shard keeps its own.
PG_EXCEPTIONS = {
    "items_by_id",
    "chunks_by_id",
    "chunks_words",
    "items_trigrams",
    "items_folded_trigrams",
}


class Recorder:
    """Every statement text given to the stores while it is installed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.statements: set[str] = set()
        for cls in (SQLiteTx, PostgresTx):
            for name in ("_run", "executemany", "insert_returning_ids"):
                original = getattr(cls, name)
                monkeypatch.setattr(cls, name, self._wrap(original))

    def _wrap(self, original: Any) -> Any:
        def record(tx: Any, sql: str, params: Any = ()) -> Any:
            self.statements.add(sql)
            return original(tx, sql, params)

        return record


def workload(memory: recuerdo.Memory, tmp: Path) -> None:
    """What every family does, for two tenants with the same scope names."""
    repo = Repo(tmp / "repo")
    repo.write("src/app.py", "def answer():\n    return 42\n")
    repo.commit("first")
    for tenant in ("ann", "bob"):
        mem = memory.for_tenant(tenant)
        entry = mem.remember("learning", "Zebra crossings are striped", ["road", "city"])
        mem.remember("context", "Zebrastreifen an der Hauptstraße")  # kept folded on PostgreSQL
        mem.recall(search="zebra", tags=["road"])
        mem.recall(search="ze", tags=["road", "city"], mode="all")
        note = mem.save("Zebra notes", "Stripes [[Other note]] and more", tags=["x"])["id"]
        other = mem.save("Other note", "Links back [[Zebra notes]]", session="s1")["id"]
        mem.edit(note, "append", "More about zebras")
        mem.edit(note, "replace", "Whole new zebra text")
        mem.history(note)
        mem.revision(note, 1)
        mem.link(note, other, "related")
        mem.links(note)
        mem.timeline(other)
        mem.conflicts(note)
        mem.list_notes()
        mem.remember_about("user", "Likes striped animals", category="taste")
        mem.profile("user")
        mem.review()
        mem.journal()
        mem.recent()
        mem.session_end("s1", "done")
        mem.create_progress("trip", ["pack", "go"])
        mem.start_step("trip", "pack")
        mem.complete_step("trip", "pack", "packed")
        mem.list_progress()
        mem.add_rule("slow", "avoid", "latency_ms > 500", "api")
        mem.check_rules("api", {"latency_ms": 900})
        mem.add_messages("c1", [{"speaker": "Ann", "text": "Zebras at noon"}] * 2)
        sender, reader = mem.agent("alice"), mem.agent("bob")
        sender.bind_address("alice@local")
        reader.bind_address("bob@local")
        sender.addresses()
        mail = sender.send_message(["bob@local"], "Zebras", "Priya Raman sees zebras.")
        reader.inbox()
        reader.thread(mail["conversation_id"])
        reader.read_message(mail["id"])
        reader.search("zebras", types=["mail"])
        reader.journal()
        mem.remember_knowledge(
            "Priya Raman works at Globex. Globex owns Initech.",
            facts={
                "entities": [{"name": "Priya Raman", "type": "person", "attributes": {"age": 40}}],
                "relations": [
                    {"source": "Priya Raman", "target": "Globex", "type": "works_at"},
                    {"source": "Globex", "target": "Initech", "type": "owns"},
                ],
            },
        )
        mem.relate("Priya Raman", "Initech", "works_at", replaces=True)
        mem.about("Priya Raman", hops=2)
        doc = mem.ingest(
            base64.b64encode(b"Globex handbook: zebras welcome.").decode(), name="h.md"
        )
        memory._upkeep.drain()
        mem.search("zebra stripes")
        mem.search("zebra", tags=["road"], types=["entry", "note"])
        mem.context("What does Priya do?")
        mem.ask("Where does Priya Raman work?")
        mem.status()
        exported = mem.export()
        mem.import_records(exported["records"], scope="copy")
        mem.index_status()
        mem.overview()
        mem.audit()
        sender.forget_conversation(mail["conversation_id"])
        mem.code_ingest_path(repo.path, "app")
        mem.code_at("app", "src/app.py")
        mem.search("answer", types=["code"])
        mem.forget_knowledge(fact={"from": "Globex", "to": "Initech", "type": "owns"})
        mem.forget_knowledge(passage=doc["doc_id"])
        mem.forget_knowledge(subject="Priya Raman")
        mem.delete(other)
        mem.restore(other)
        mem.delete(note, hard=True)
        mem.forget(entry)
        memory._upkeep.drain()


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    return Recorder(monkeypatch)


def _tenant_tables(store: Any) -> set[str]:
    with store.read() as tx:
        if store.dialect == "sqlite":
            names = [
                r["name"] for r in tx.all("SELECT name FROM sqlite_master WHERE type = 'table'")
            ]
            return {
                n
                for n in names
                if any(c["name"] == "tenant" for c in tx.all(f'PRAGMA table_info("{n}")'))
            }
        rows = tx.all(
            "SELECT table_name FROM information_schema.columns WHERE column_name = 'tenant'"
            " AND table_schema = current_schema()"
        )
        return {r["table_name"] for r in rows}


@pytest.fixture(params=["sqlite", "postgres"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "sqlite":
        store: Any = SQLiteStore(str(tmp_path / "t.db"))
        yield store
        store.close()
    else:
        store = PostgresStore(embedded_url(), unique_memory("tenancy"))
        yield store
        store.drop()


def test_every_statement_of_every_family_filters_by_tenant(
    any_store: Any, recorder: Recorder, tmp_path: Path
) -> None:
    memory = recuerdo.open("tenancy", store=any_store, embedder="none")
    try:
        workload(memory, tmp_path)
    finally:
        memory.close()
    tables = _tenant_tables(any_store)
    assert {"items", "chunks", "links", "mentions", "item_tags"} <= tables
    found = {sql: problems(sql, tables) for sql in recorder.statements}
    broken = {sql: why for sql, why in found.items() if why}
    assert not broken, "\n\n".join(f"{sql}\n  -> {why}" for sql, why in broken.items())
    # The workload reached the tables it is meant to prove things about.
    touched = " ".join(recorder.statements)
    for table in ("plan_steps", "entity_types", "entity_words", "attributes", "fact_sources"):
        assert table in touched
    assert any(EVERY_TENANT in sql for sql in recorder.statements)


def test_the_checker_catches_a_statement_without_tenant() -> None:
    tables = {"items", "chunks"}
    assert problems("SELECT * FROM items WHERE id = ?", tables)
    assert problems("SELECT c.id FROM chunks c JOIN items i ON i.id = c.item_id", tables)
    assert not problems(
        "SELECT c.id FROM chunks c JOIN items i ON i.tenant = c.tenant AND i.id = c.item_id"
        " WHERE i.tenant = ?",
        tables,
    )
    assert not problems(f"SELECT * FROM items {EVERY_TENANT} WHERE id > ?", tables)


_PG_KEYS = """
SELECT c.relname AS table_name, i.relname AS index_name, x.indisprimary AS is_primary,
       am.amname AS method,
       (SELECT a.attname FROM pg_attribute a
         WHERE a.attrelid = c.oid AND a.attnum = x.indkey[0]) AS first_column
FROM pg_index x
JOIN pg_class c ON c.oid = x.indrelid
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_am am ON am.oid = i.relam
WHERE c.relnamespace = current_schema()::regnamespace
"""


def test_every_postgresql_key_and_index_leads_with_tenant() -> None:
    store = PostgresStore(embedded_url(), unique_memory("keys"))
    try:
        with store.read() as tx:
            rows = tx.all(_PG_KEYS)
            tables = {
                r["table_name"]
                for r in tx.all(
                    "SELECT table_name FROM information_schema.tables"
                    " WHERE table_schema = current_schema()"
                )
            }
    finally:
        store.drop()
    holding = tables - SHARED_TABLES
    keyed = {r["table_name"] for r in rows if r["is_primary"]}
    assert holding <= keyed, f"tables without a primary key: {holding - keyed}"
    wrong = sorted(
        f"{r['table_name']}.{r['index_name']} starts with {r['first_column']}"
        for r in rows
        if r["table_name"] in holding
        and r["index_name"] not in PG_EXCEPTIONS
        and r["first_column"] != "tenant"
    )
    assert not wrong
    # The trigram indexes need pg_trgm, which the embedded server lacks.
    assert {r["index_name"] for r in rows} >= PG_EXCEPTIONS - {
        "items_trigrams",
        "items_folded_trigrams",
    }


def test_every_sqlite_table_of_tenants_rows_carries_its_tenant(tmp_path: Path) -> None:
    """The same tables hold a tenant on SQLite; keys other than the rowid, and every index,
    lead with it (the rowid tables keep their integer key: the full-text index addresses rows
    by it)."""
    store = SQLiteStore(str(tmp_path / "t.db"))
    try:
        with store.read() as tx:
            listed = tx.all("SELECT name, sql FROM sqlite_master WHERE type = 'table'")
            # A full-text index's own tables go with its rows, and so does entry_trigrams_folds
            # (the folded stretches of the entries it indexes); chunk_fts_stale and the like are
            # tables of ours, checked as any other.
            virtual = [r["name"] for r in listed if r["sql"].startswith("CREATE VIRTUAL")]
            own = {f"{name}_{part}" for name in virtual for part in FTS5_SHADOWS}
            tables = [
                r["name"]
                for r in listed
                if r["name"] not in {*virtual, *own, "entry_trigrams_folds"}
                and not r["name"].startswith("sqlite_")
            ]
            missing = []
            wrong = []
            for table in tables:
                columns = [c["name"] for c in tx.all(f'PRAGMA table_info("{table}")')]
                if table in SHARED_TABLES:
                    continue
                if "tenant" not in columns:
                    missing.append(table)
                    continue
                key = [
                    c["name"]
                    for c in sorted(tx.all(f'PRAGMA table_info("{table}")'), key=lambda c: c["pk"])
                    if c["pk"]
                ]
                if key != ["id"] and key[0] != "tenant":
                    wrong.append(f"{table} key {key}")
                for index in tx.all(f'PRAGMA index_list("{table}")'):
                    if index["origin"] == "pk":
                        continue
                    first = tx.one(f'PRAGMA index_info("{index["name"]}")')
                    if first is not None and first["name"] != "tenant":
                        wrong.append(f"{table}.{index['name']} starts with {first['name']}")
    finally:
        store.close()
    assert not missing
    assert not wrong


def test_an_older_sqlite_memory_gives_its_children_their_parents_tenant(tmp_path: Path) -> None:
    """A file made before ``m014_tenant_children`` keeps every child row, each now carrying
    the tenant of its parent (tags, links, chunks, revisions, plan steps, graph rows)."""
    path = str(tmp_path / "old.db")
    names = SQLiteStore(None).schema_steps
    older = SQLiteStore(path, steps=names.index("m014_tenant_children"))
    with older.write() as tx:
        for tenant in ("ann", "bob"):
            item = tx.scalar(
                "INSERT INTO items (tenant, scope, item_type, content, source, created_at,"
                " updated_at) VALUES (?, 'user', 'note', 'text', 'main', 'x', 'x') RETURNING id",
                (tenant,),
            )
            tx.execute("INSERT INTO item_tags (item_id, tag) VALUES (?, 't')", (item,))
            tx.execute(
                "INSERT INTO links (from_id, to_id, type, created_at) VALUES (?, ?, 'r', 'x')",
                (item, item),
            )
            tx.execute(
                "INSERT INTO chunks (item_id, ordinal, start, stop, body, hash)"
                " VALUES (?, 0, 0, 4, 'text', 'h')",
                (item,),
            )
            plan = tx.scalar(
                "INSERT INTO plans (tenant, task, created_at, updated_at) VALUES (?, 'p', 'x', 'x')"
                " RETURNING id",
                (tenant,),
            )
            tx.execute(
                "INSERT INTO plan_steps (plan_id, position, name) VALUES (?, 0, 's')", (plan,)
            )
    older.close()
    store = SQLiteStore(path)
    try:
        with store.read() as tx:
            for table in ("item_tags", "links", "chunks", "plan_steps"):
                rows = tx.all(f"SELECT tenant FROM {table} ORDER BY tenant")
                assert [row["tenant"] for row in rows] == ["ann", "bob"], table
    finally:
        store.close()
