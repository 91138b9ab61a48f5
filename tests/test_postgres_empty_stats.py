"""A table a forget leaves empty keeps no statistics of what it held (decision 0076): an
ANALYZE that finds no row writes none, and PostgreSQL kept the old ones, whole short texts
and words of what was forgotten among them. Both ways of clearing them run: a change of each
text column to its own type before PostgreSQL 18 (the system server), and
``pg_clear_attribute_stats`` from 18 on (the embedded one)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import psycopg
import pytest

import recuerdo
from recuerdo.store.postgres import PostgresStore
from recuerdo.store.postgres.connection import schema_name

from .postgres import app_conninfo, unique_memory, url_for

WORD = "zanquibrelox"
TAG = "quorvatag"
Opened = tuple[recuerdo.Memory, str]
_ITEMS = {"items", "items_trigrams"}


@pytest.fixture(params=["system", "embedded"])
def opened(request: pytest.FixtureRequest) -> Iterator[Opened]:
    """A memory owned by an ordinary role (row-level security applies to it: it reads no
    statistics of its own tables), and its server's superuser URL."""
    admin = url_for(request.param)
    store = PostgresStore(app_conninfo(admin), unique_memory("stats"))
    memory = recuerdo.open(store.memory, store=store, embedder="none")
    yield memory, admin
    memory.close()
    store.drop()


def _quoting(memory: recuerdo.Memory, admin: str) -> set[str]:
    """The columns (``table.column``) whose statistics quote the word or the tag."""
    with psycopg.connect(admin) as conn:
        rows = conn.execute(
            "SELECT tablename, attname, coalesce(most_common_vals::text, '')"
            " || coalesce(histogram_bounds::text, '') || coalesce(most_common_elems::text, '')"
            " FROM pg_stats WHERE schemaname = %s",
            [schema_name(memory.name)],
        ).fetchall()
    return {
        f"{table}.{column}" for table, column, values in rows if WORD in values or TAG in values
    }


def _analysed_then_forgotten(memory: recuerdo.Memory, admin: str) -> None:
    """Entries quoting the word, tagged with the tag, analysed, then every one forgotten (the
    tables of entries, chunks and tags left empty), and the forgets' VACUUM run."""
    ids = [memory.remember("learning", f"the vault word {WORD} {n}", tags=[TAG]) for n in range(30)]
    memory._upkeep.drain()
    store = memory._store
    assert isinstance(store, PostgresStore)
    store.optimize()
    assert {"items.content", "item_tags.tag", "chunks.words"} <= _quoting(memory, admin)
    for entry in ids:
        assert memory.forget(entry)
    assert store.settle(30)


def _still_works(memory: recuerdo.Memory) -> None:
    """What the emptied tables serve, after their columns changed under them."""
    memory.remember("learning", "harbour cranes lift containers", tags=["docks"])
    memory.save("Harbour note", "the harbour master keeps the tide tables")
    memory._upkeep.drain()
    assert [e["tags"] for e in memory.recall(search="harbour")] == [["docks"]]
    assert len(memory.search("harbour tide")["results"]) == 2


def test_a_forget_that_empties_tables_leaves_no_statistics_of_them(opened: Opened) -> None:
    memory, admin = opened
    memory.remember("learning", "an entry that stays, untagged")
    _analysed_then_forgotten(memory, admin)
    assert _quoting(memory, admin) == set()
    _still_works(memory)


def test_a_table_in_use_keeps_them_until_compact_before_postgresql_18(opened: Opened) -> None:
    """Before 18 the change takes the table's strongest lock, waited for a moment only: a
    table another transaction has read is left to compact (or a later forget's VACUUM)."""
    memory, admin = opened
    with psycopg.connect(admin) as reader:
        reader.execute(f'SELECT 1 FROM "{schema_name(memory.name)}".items LIMIT 1')
        _analysed_then_forgotten(memory, admin)  # the reader's transaction is still open
        kept = _quoting(memory, admin)
        retyping = reader.info.server_version < 180000
    if retyping:  # the items' columns and their trigram index's, and no other table's
        assert "items.content" in kept and {c.split(".")[0] for c in kept} <= _ITEMS
    else:
        assert kept == set()
    assert "items" in memory.compact()["statistics_cleared"]  # every empty table
    assert _quoting(memory, admin) == set()
    _still_works(memory)


def test_every_table_of_a_memory_can_be_cleared(
    opened: Opened, caplog: pytest.LogCaptureFixture
) -> None:
    """What compact does to every empty table: none is refused (a schema step that adds a
    trigger, a view or a key over a text column must keep it so), a table holding rows is
    left as it is, and the memory works after."""
    from recuerdo.store.postgres import empty_stats

    memory, admin = opened
    store = memory._store
    assert isinstance(store, PostgresStore)
    shared = store._live()
    with psycopg.connect(admin) as conn:  # a superuser sees every tenant's rows
        holding = {
            table
            for (table,) in conn.execute(
                "SELECT relname FROM pg_class WHERE relnamespace = %s::regnamespace"
                " AND relkind = 'r'",
                [shared.schema],
            ).fetchall()
            if conn.execute(f'SELECT 1 FROM "{shared.schema}"."{table}" LIMIT 1').fetchone()
        }
    assert {"_migrations", "index_marks"} <= holding
    with shared.pool.connection() as conn, caplog.at_level(logging.INFO, "recuerdo.store"):
        tables = sorted(empty_stats.row_counts(conn, shared.schema))
        cleared = empty_stats.clear(conn, shared.schema, tables)
        retyping = conn.info.server_version < empty_stats.CLEAR_FUNCTION_SINCE
        with_text = {
            row["table_name"]
            for row in conn.execute(
                empty_stats._TEXT_COLUMNS, {"schema": shared.schema, "tables": tables}
            ).fetchall()
        }
    assert caplog.records == []
    assert set(cleared) == (with_text if retyping else set(tables)) - holding
    assert {"items", "chunks", "item_tags", "retrieval_audit"} <= set(cleared)
    _still_works(memory)
