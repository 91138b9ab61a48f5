"""Row-level security per tenant on PostgreSQL (step ``m016_tenant_policies``), defence in
depth under the families' own tenant filters: recuerdo connects as an ordinary role (a
superuser is never held to policies), each transaction names its tenant, and the database
hides every other tenant's rows, even from a statement that forgot its filter."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

import recuerdo
from recuerdo.store.postgres import PostgresStore, policies
from recuerdo.store.postgres.connection import schema_name
from recuerdo.store.postgres.ddl import POLICY
from recuerdo.store.scope import scoped

from .postgres import ROLE, app_conninfo, contract_url, unique_memory
from .test_tenancy import workload


@pytest.fixture
def app_store() -> Iterator[PostgresStore]:
    store = PostgresStore(app_conninfo(), unique_memory("rls"))
    try:
        yield store
    finally:
        store.drop()


def _raw(store: PostgresStore, tenant: str | None, query: str) -> list[tuple[Any, ...]]:
    """``query`` on a connection of its own as the store's role, in the memory's schema,
    with the tenant setting set to ``tenant`` (or not set at all)."""
    with psycopg.connect(store.url) as conn:
        conn.execute(
            sql.SQL("SET search_path TO {}, public").format(
                sql.Identifier(schema_name(store.memory))
            )
        )
        if tenant is not None:
            conn.execute("SELECT set_config('recuerdo.tenant', %s, true)", [tenant])
        return conn.execute(query).fetchall()


def _two_tenants(store: PostgresStore) -> None:
    memory = recuerdo.open(store.memory, store=store, embedder="none")
    try:
        for tenant in ("ann", "bob"):
            view = memory.for_tenant(tenant)
            view.remember("learning", f"{tenant} keeps the harbour keys")
            view.save(f"{tenant} note", "Cranes at dawn")
        memory._upkeep.drain()
    finally:
        memory.close()


def test_every_tenant_table_has_its_policy_and_it_is_forced() -> None:
    store = PostgresStore(contract_url(), unique_memory("rls"))
    try:
        with store.read() as tx:
            tables = {
                row["name"]: (row["enabled"], row["forced"], row["policy"])
                for row in tx.all(
                    "SELECT c.relname AS name, c.relrowsecurity AS enabled,"
                    " c.relforcerowsecurity AS forced, p.polname AS policy"
                    " FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid"
                    " LEFT JOIN pg_policy p ON p.polrelid = c.oid"
                    " WHERE c.relnamespace = current_schema()::regnamespace"
                    " AND c.relkind = 'r' AND a.attname = 'tenant'"
                )
            }
    finally:
        store.drop()
    assert {"items", "chunks", "revisions", "settings", "retrieval_audit", "facts"} <= set(tables)
    assert {name for name, held in tables.items() if held != (True, True, POLICY)} == set()


def test_a_session_without_the_tenant_or_with_another_sees_nothing(
    app_store: PostgresStore,
) -> None:
    _two_tenants(app_store)
    assert _raw(app_store, None, "SELECT count(*) FROM items") == [(0,)]
    assert _raw(app_store, None, "SELECT count(*) FROM chunks") == [(0,)]
    assert _raw(app_store, "carol", "SELECT count(*) FROM items") == [(0,)]
    assert _raw(app_store, "ann", "SELECT DISTINCT tenant FROM items") == [("ann",)]
    assert _raw(app_store, "ann", "SELECT DISTINCT tenant FROM chunks") == [("ann",)]
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
        _raw(
            app_store,
            "ann",
            "INSERT INTO settings (tenant, name, value) VALUES ('bob', 'k', '1') RETURNING 1",
        )
    # The rows are there: memory-wide work ("*") sees both tenants.
    assert sorted(_raw(app_store, "*", "SELECT DISTINCT tenant FROM items")) == [
        ("ann",),
        ("bob",),
    ]


def test_a_statement_that_forgets_its_tenant_filter_sees_only_the_call_s_tenant(
    app_store: PostgresStore,
) -> None:
    _two_tenants(app_store)
    with scoped("ann"), app_store.read() as tx:
        forgetful = sorted(row["tenant"] for row in tx.all("SELECT DISTINCT tenant FROM items"))
        marked = sorted(
            row["tenant"] for row in tx.all("SELECT DISTINCT tenant FROM items /* every tenant */")
        )
        after = sorted(row["tenant"] for row in tx.all("SELECT DISTINCT tenant FROM items"))
    assert forgetful == ["ann"]
    assert marked == ["ann", "bob"]  # marked memory-wide on purpose (tests/test_tenancy.py)
    assert after == ["ann"]  # the call's tenant again for the next statement


@pytest.mark.parametrize("marked", [True, False])
def test_a_marked_statement_run_for_many_rows_reaches_every_tenant_and_only_then(
    app_store: PostgresStore, marked: bool
) -> None:
    """``executemany`` honours the memory-wide mark as the one-row calls do: the store's own
    memory-wide batches (the words of restored chunks) would otherwise change nothing of the
    other tenants' rows, and loop on them."""
    _two_tenants(app_store)
    mark = " /* every tenant */" if marked else ""
    with app_store.read() as tx:
        rows = [(r["id"],) for r in tx.all("SELECT id FROM items WHERE item_type = 'entry'")]
    assert len(rows) == 2
    with scoped("ann"), app_store.write() as tx:
        changed = tx.executemany(f"UPDATE items{mark} SET content = 'swept' WHERE id = ?", rows)
        scope_after = tx.scalar("SELECT current_setting('recuerdo.tenant')")
    swept = _raw(app_store, "*", "SELECT tenant FROM items WHERE content = 'swept' ORDER BY 1")
    assert scope_after == "ann"  # the call's tenant again for the next statement
    if marked:
        assert changed == 2
        assert swept == [("ann",), ("bob",)]
    else:
        assert changed == 1
        assert swept == [("ann",)]


def test_a_role_that_may_not_use_a_memory_s_schema_is_refused_not_given_an_empty_one() -> None:
    """PostgreSQL leaves a schema the role may not use out of its search path without a word:
    the role's statements reached tables of the same names made in ``public``, a memory of its
    own, empty. Its reads said "nothing stored" and its writes went there."""
    import psycopg

    from recuerdo.errors import StoreError

    name = unique_memory("owned")
    owner = PostgresStore(contract_url(), name)  # made by another role (a superuser here)
    try:
        memory = recuerdo.open(name, store=owner, embedder="none")
        memory.remember("learning", "Kept in its schema")
        with psycopg.connect(contract_url()) as conn:
            public_before = conn.execute(_PUBLIC_TABLES).fetchone()
        with pytest.raises(StoreError, match="may not use the schema") as refused:
            PostgresStore(app_conninfo(), name)
        assert refused.value.code == "store_unavailable"
        with psycopg.connect(contract_url()) as conn:
            assert conn.execute(_PUBLIC_TABLES).fetchone() == public_before
        assert [e["content"] for e in memory.recall()] == ["Kept in its schema"]  # untouched
    finally:
        owner.drop()


_PUBLIC_TABLES = "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"


def test_a_role_granted_a_memory_s_tables_opens_it_without_create_on_its_schema() -> None:
    """A role the owner granted USAGE on the schema and rights on its tables (no CREATE) was
    refused at every open: the open made the schema and ``_migrations`` IF NOT EXISTS, and
    PostgreSQL checks CREATE before it looks whether they exist ("cannot reach the
    database ... permission denied for schema"). It reads and writes now, and the memory's
    steps are unchanged."""
    name = unique_memory("granted")
    owner = PostgresStore(contract_url(), name)
    try:
        kept = recuerdo.open(name, store=owner, embedder="none")
        kept.remember("learning", "Kept by the owner")
        kept.close()
        schema, role = sql.Identifier(schema_name(name)), sql.Identifier(ROLE)
        with psycopg.connect(contract_url(), autocommit=True) as conn:
            for grant in (
                "GRANT USAGE ON SCHEMA {} TO {}",
                "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {} TO {}",
                "GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA {} TO {}",
            ):
                conn.execute(sql.SQL(grant).format(schema, role))
            steps = conn.execute(
                sql.SQL("SELECT count(*) FROM {}._migrations").format(schema)
            ).fetchone()
        store = PostgresStore(app_conninfo(), name)
        with recuerdo.open(name, store=store, embedder="none") as granted:
            assert [r["preview"] for r in granted.search("owner")["results"]] == [
                "Kept by the owner"
            ]
            granted.remember("learning", "Added by the granted role")
        with psycopg.connect(contract_url()) as conn:
            assert (
                conn.execute(
                    sql.SQL("SELECT count(*) FROM {}._migrations").format(schema)
                ).fetchone()
                == steps
            )
            contents = conn.execute(
                sql.SQL("SELECT content FROM {}.items ORDER BY id").format(schema)
            ).fetchall()
        assert contents == [("Kept by the owner",), ("Added by the granted role",)]
    finally:
        owner.drop()


def test_every_family_works_under_the_policies(app_store: PostgresStore, tmp_path: Path) -> None:
    """The tenancy workload (every family, two tenants) runs as the ordinary role: no verb
    needs another tenant's rows, memory-wide work (indexing, audit) still sees every tenant,
    and each tenant reads only its own."""
    memory = recuerdo.open(app_store.memory, store=app_store, embedder="none")
    try:
        workload(memory, tmp_path)
        for tenant in ("ann", "bob"):
            memory.for_tenant(tenant).remember("learning", f"{tenant} reads the tide tables")
        memory._upkeep.drain()
        recalled = [e["content"] for e in memory.for_tenant("ann").recall(search="tide", from_="*")]
        found = memory.for_tenant("bob").search("tide tables")
    finally:
        memory.close()
    assert recalled == ["ann reads the tide tables"]
    assert "bob reads the tide tables" in str(found)
    assert "ann reads" not in str(found)
    with app_store.read() as tx:
        unchunked = tx.scalar(
            "SELECT count(*) FROM items /* every tenant */"
            " WHERE id > (SELECT upto FROM index_marks WHERE name = 'chunks')"
        )
        audited = tx.scalar("SELECT count(DISTINCT tenant) FROM retrieval_audit /* every tenant */")
    assert unchunked == 0
    assert audited == 2


@pytest.fixture
def own_database() -> Iterator[str]:
    """A superuser's URL of a database made for the test, dropped after it: LEAKPROOF marks
    belong to a database's catalog, and the shared test database must never keep them (a run
    killed between marking and unmarking would leave them for every later run)."""
    name = f"recuerdo_marks_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(contract_url(), autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield psycopg.conninfo.make_conninfo(contract_url(), dbname=name)
    finally:
        with psycopg.connect(contract_url(), autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def _mark_leakproof(admin: str) -> None:
    with psycopg.connect(admin, autocommit=True) as conn:
        for name in [name for names in policies.MATCHERS.values() for name in names]:
            conn.execute(f"ALTER FUNCTION {name} LEAKPROOF")


def _plan(store: PostgresStore, query: str) -> str:
    """The plan of ``query`` for tenant ann, as the store's role, with sequential scans priced
    out: a table this small is read whole whatever its indexes, and the question is only
    whether the GIN index may choose the rows."""
    with psycopg.connect(store.url) as conn:
        conn.execute(
            sql.SQL("SET search_path TO {}, public").format(
                sql.Identifier(schema_name(store.memory))
            )
        )
        conn.execute("SET enable_seqscan = off")
        conn.execute("SELECT set_config('recuerdo.tenant', 'ann', true)")
        return "\n".join(row[0] for row in conn.execute(f"EXPLAIN {query}").fetchall())


# The shapes of the stores' conditions (the trigram index holds entries only).
_WORDS = (
    "SELECT id FROM chunks WHERE tenant = 'ann'"
    " AND words @@ plainto_tsquery('recuerdo_words', 'quorbelax')"
)
_SUBSTRING = (
    "SELECT id FROM items WHERE tenant = 'ann' AND item_type = 'entry'"
    " AND lower(content) LIKE '%quorbel%'"
)


def test_the_status_says_which_searches_the_policies_keep_from_their_indexes(
    own_database: str,
) -> None:
    """Under the policies a search condition whose function is not LEAKPROOF is tested after
    the policy, so its GIN index cannot choose the rows: index_status says so, and says when a
    superuser's marks have let the indexes narrow the searches again (docs/tenancy.md)."""
    app_store = PostgresStore(app_conninfo(own_database), unique_memory("rls"))
    memory = recuerdo.open(app_store.memory, store=app_store, embedder="none")
    try:
        ann = memory.for_tenant("ann")
        ann.remember_many(
            [{"category": "learning", "content": f"harbour log {n} cranes"} for n in range(3000)]
        )
        ann.remember("learning", "Quorbelax guards the vault")
        memory._upkeep.drain()
        held = memory.index_status()["backend"]["tenant_policies"]
        trigrams = app_store.capabilities.substring_search == "trigram"
    finally:
        memory.close()
    with psycopg.connect(app_store.url, autocommit=True) as conn:  # the GIN pending lists
        schema = sql.Identifier(schema_name(app_store.memory))
        for table in ("items", "chunks"):
            conn.execute(sql.SQL("VACUUM (ANALYZE) {}.{}").format(schema, sql.Identifier(table)))
    slow = "word and substring" if trigrams else "word"
    assert held.startswith(f"held, indexes unused: {slow} searches read every row"), held
    assert ("textlike" in held) is trigrams and "ts_match_vq" in held, held
    assert "chunks_words" not in _plan(app_store, _WORDS)
    if trigrams:
        assert "items_trigrams" not in _plan(app_store, _SUBSTRING)
    as_superuser = PostgresStore(own_database, app_store.memory, create=False)
    lifted = as_superuser.capabilities.tenant_policies
    as_superuser.close()
    assert lifted.startswith("lifted:"), lifted

    _mark_leakproof(own_database)
    reopened = PostgresStore(app_store.url, app_store.memory)
    narrowed = reopened.capabilities.tenant_policies
    reopened.close()
    assert narrowed == f"held: {slow} searches are narrowed by their indexes"
    assert "chunks_words" in _plan(app_store, _WORDS)
    if trigrams:
        assert "items_trigrams" in _plan(app_store, _SUBSTRING)
    app_store.close()
