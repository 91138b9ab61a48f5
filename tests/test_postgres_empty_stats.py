"""A table a forget leaves empty keeps no statistics of what it held (decision 0076): an
ANALYZE that finds no row writes none, and PostgreSQL kept the old ones, whole short texts
and words of what was forgotten among them. Both ways of clearing them run: a change of each
text column to its own type before PostgreSQL 18 (the system server), and
``pg_clear_attribute_stats`` from 18 on (the embedded one)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

import recuerdo
from recuerdo.store.postgres import PostgresStore
from recuerdo.store.postgres.connection import schema_name

from .postgres import (
    SETTLED_WITHIN,
    app_conninfo,
    leave_invalid_index,
    sampled_values,
    unique_memory,
    url_for,
)

WORD = "zanquibrelox"
TAG = "quorvatag"
Opened = tuple[recuerdo.Memory, str]


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
    sampled = sampled_values(admin, memory.name)
    return {column for column, values in sampled.items() if WORD in values or TAG in values}


def _drained_and_held(memory: recuerdo.Memory) -> None:
    """The memory's indexing done, and its worker stopped: before 18 a clear waits 100 ms for
    a table's lock, and a round of the worker (which reads the entries and the marks) on a
    loaded machine could hold it longer. ``_still_works`` drains what it writes itself."""
    memory._upkeep.drain()
    memory._upkeep.stop(drain=False)


def _analysed_then_forgotten(memory: recuerdo.Memory, admin: str) -> None:
    """Entries quoting the word, tagged with the tag, analysed, then every one forgotten (the
    tags' table left empty, and the entries' and chunks' too unless other entries stay), and
    the forgets' VACUUM run."""
    ids = [memory.remember("learning", f"the vault word {WORD} {n}", tags=[TAG]) for n in range(30)]
    _drained_and_held(memory)
    store = memory._store
    assert isinstance(store, PostgresStore)
    store.optimize()
    assert {"items.content", "item_tags.tag", "chunks.words"} <= _quoting(memory, admin)
    # The forgets' VACUUM waits for this lock: it analyses the entries once all are gone, not
    # a few rows in between (whose statistics would quote none of them: nothing to clear).
    with psycopg.connect(admin) as holder:
        holder.execute(
            f'LOCK TABLE "{schema_name(memory.name)}".items IN SHARE UPDATE EXCLUSIVE MODE'
        )
        for entry in ids:
            assert memory.forget(entry)
    assert store.settle(SETTLED_WITHIN)


def _still_works(memory: recuerdo.Memory) -> None:
    """What the emptied tables serve, after their columns changed under them."""
    memory.remember("learning", "harbour cranes lift containers", tags=["docks"])
    memory.save("Harbour note", "the harbour master keeps the tide tables")
    memory._upkeep.drain()
    assert [e["tags"] for e in memory.recall(search="harbour")] == [["docks"]]
    assert len(memory.search("harbour tide")["results"]) == 2


@pytest.mark.parametrize("others", [0, 1])
def test_a_forget_that_empties_tables_leaves_no_statistics_of_them(
    opened: Opened, others: int
) -> None:
    """With an entry that stays, the forget empties the tags alone (fails before 0076:
    ``item_tags.tag``); with none, the entries, their chunks and, before 18, the trigram
    index over them too, at the forget's VACUUM (compact is not run)."""
    memory, admin = opened
    for _ in range(others):
        memory.remember("learning", "an entry that stays, untagged")
    _analysed_then_forgotten(memory, admin)
    assert _quoting(memory, admin) == set()
    _still_works(memory)


def _tags_emptied_by_hand(memory: recuerdo.Memory, admin: str) -> Any:
    """Tagged entries analysed, then the tags' table emptied and analysed empty by a superuser
    (not a forget: no VACUUM of the memory's clears anything); the memory's shared state."""
    for n in range(30):
        memory.remember("learning", f"tide table {n}", tags=[f"{TAG}{n % 3}"])
    _drained_and_held(memory)
    store = memory._store
    assert isinstance(store, PostgresStore)
    store.optimize()
    schema = schema_name(memory.name)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DELETE FROM "{schema}".item_tags')
        conn.execute(f'VACUUM (ANALYZE) "{schema}".item_tags')
    assert "item_tags.tag" in _quoting(memory, admin)  # an ANALYZE of no row kept them
    return store._live()


def test_a_table_in_use_keeps_them_till_this_processs_next_vacuum_before_postgresql_18(
    opened: Opened,
) -> None:
    """Before 18 the change takes the table's strongest lock, waited for a moment only: a
    table another transaction has read stays owed, and what the next VACUUM of this process
    does after it (``_clear_emptied``, driven here) clears it. On 18 the clear takes a
    VACUUM's lock, which a reader does not hold off. Then compact finds nothing owed."""
    from recuerdo.store.postgres import empty_stats, maintenance

    memory, admin = opened
    shared = _tags_emptied_by_hand(memory, admin)
    schema = shared.schema
    with psycopg.connect(admin) as reader, shared.pool.connection() as conn:
        reader.execute(f'SELECT 1 FROM "{schema}".item_tags LIMIT 1')
        retyping = conn.info.server_version < empty_stats.CLEAR_FUNCTION_SINCE
        # What the VACUUM after a forget does with the tables it found emptied.
        maintenance._clear_emptied(conn, shared, {"item_tags": 30.0}, behind=False)
        assert shared.statistics_owed == ({"item_tags"} if retyping else set())
        assert _written_down(memory) == shared.statistics_owed  # for a process after this one
        assert ("item_tags.tag" in _quoting(memory, admin)) is retyping
    with shared.pool.connection() as conn:  # the next one, the reader gone, counts nothing new
        maintenance._clear_emptied(conn, shared, {}, behind=False)
    assert shared.statistics_owed == set() == _written_down(memory)
    assert "item_tags.tag" not in _quoting(memory, admin)  # (the entries, kept, quote it)
    report = memory.compact()
    assert report["statistics_owed"] == [] and "item_tags" in report["statistics_cleared"]


def _written_down(memory: recuerdo.Memory) -> set[str]:
    from recuerdo.store.postgres import empty_stats

    with memory._store.read() as tx:
        return empty_stats.owed_tables(tx)


def test_tables_still_owed_when_a_process_ends_are_cleared_when_the_memory_opens_again() -> None:
    """Before 0078 the owed tables were the process's alone: they kept their statistics until
    a compact. A reader holds the table while the first store ends (before 18: on 18 a clear
    waits for no reader); the next store to open the memory clears it."""
    from recuerdo.store.postgres import empty_stats, maintenance

    admin = url_for("system")
    name = unique_memory("stats")
    store = PostgresStore(app_conninfo(admin), name)
    memory = recuerdo.open(name, store=store, embedder="none")
    shared = _tags_emptied_by_hand(memory, admin)
    with psycopg.connect(admin) as reader:
        reader.execute(f'SELECT 1 FROM "{shared.schema}".item_tags LIMIT 1')
        with shared.pool.connection() as conn:
            if conn.info.server_version >= empty_stats.CLEAR_FUNCTION_SINCE:
                memory.close()
                store.drop()
                pytest.skip("the system server clears a table in use (PostgreSQL 18)")
            maintenance._clear_emptied(conn, shared, {"item_tags": 30.0}, behind=False)
        assert shared.statistics_owed == {"item_tags"}
        memory.close()
        store.close()  # the process ends, owing the table
    again = PostgresStore(app_conninfo(admin), name)
    try:
        assert again.settle(SETTLED_WITHIN)
        assert TAG not in sampled_values(admin, name).get("item_tags.tag", "")
        assert again._live().statistics_owed == set()
        with again.read() as tx:
            assert empty_stats.owed_tables(tx) == set()
    finally:
        again.drop()


def test_after_a_vacuum_that_came_too_early_the_tables_stay_owed_before_postgresql_18(
    opened: Opened,
) -> None:
    """A VACUUM that ran before older transactions ended left the deleted rows: a change of
    type then would rebuild the indexes over them under the table's strongest lock. What the
    VACUUM does after it (``_clear_emptied``, driven here) leaves the emptied tables owed, and
    the retry, which counts them empty before and after, clears them. On 18 nothing is
    rebuilt: they are cleared at once."""
    from recuerdo.store.postgres import empty_stats, maintenance

    memory, admin = opened
    shared = _tags_emptied_by_hand(memory, admin)
    with shared.pool.connection() as conn:
        retyping = conn.info.server_version < empty_stats.CLEAR_FUNCTION_SINCE
        maintenance._clear_emptied(conn, shared, {"item_tags": 1.0}, behind=True)
        assert shared.statistics_owed == ({"item_tags"} if retyping else set())
        assert ("item_tags.tag" in _quoting(memory, admin)) is retyping
        maintenance._clear_emptied(conn, shared, {"item_tags": 0.0}, behind=False)
    assert shared.statistics_owed == set()
    assert "item_tags.tag" not in _quoting(memory, admin)


_NO_TEXT = {"comms_counters", "mentions", "retrieval_audit_items"}
"""Tables whose only text column is their tenant (before 18 nothing of them is changed)."""
_LEFT_BEFORE_18 = {
    "comms_conversations.id",
    "comms_inboxes.conversation_id",
    "comms_members.conversation_id",
}
"""The text columns, other than the tenants, that a change of type would not reach: each is
in a foreign key (and, with pgvector, ``embeddings.vector``, read by a generated column). A
step that puts a view, a policy or another key over a text column must add it here, knowing
its statistics stay (0076)."""


def _left_as_they_are(admin: str, schema: str) -> set[str]:
    """The text columns of the schema a change of type leaves, less the tenants."""
    from recuerdo.store.postgres import empty_stats

    with psycopg.connect(admin) as conn:
        texts = {
            f"{table}.{column}"
            for table, column in conn.execute(
                "SELECT c.relname, a.attname FROM pg_class c JOIN pg_attribute a"
                " ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped"
                " JOIN pg_type t ON t.oid = a.atttypid WHERE c.relnamespace = %s::regnamespace"
                " AND c.relkind = 'r' AND t.typcategory NOT IN ('N', 'D', 'B')"
                " AND a.attname <> 'tenant'",
                [schema],
            ).fetchall()
        }
        tables = sorted({column.split(".")[0] for column in texts})
        changed = {
            f"{row[0]}.{row[1]}"
            for row in conn.execute(
                empty_stats._TEXT_COLUMNS, {"schema": schema, "tables": tables}
            ).fetchall()
        }
    return texts - changed


_CATALOG = {
    "columns": "SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod),"
    " a.attcollation::regcollation::text, a.attnotnull, a.attidentity, a.attgenerated,"
    " pg_get_expr(d.adbin, d.adrelid) FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"
    " LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum"
    " WHERE c.relnamespace = %s::regnamespace AND c.relkind = 'r' AND a.attnum > 0"
    " AND NOT a.attisdropped",
    "indexes": "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s",
    "valid": "SELECT c.relname, i.indisvalid FROM pg_index i JOIN pg_class c"
    " ON c.oid = i.indexrelid WHERE c.relnamespace = %s::regnamespace",
    "triggers": "SELECT t.tgname, pg_get_triggerdef(t.oid), t.tgenabled FROM pg_trigger t"
    " JOIN pg_class c ON c.oid = t.tgrelid WHERE c.relnamespace = %s::regnamespace"
    " AND NOT t.tgisinternal",
    "constraints": "SELECT conname, pg_get_constraintdef(k.oid) FROM pg_constraint k"
    " WHERE k.connamespace = %s::regnamespace",
    "policies": "SELECT tablename, policyname, qual, with_check FROM pg_policies"
    " WHERE schemaname = %s",
}


def _catalog(admin: str, schema: str) -> dict[str, list[tuple[object, ...]]]:
    """The memory's schema as the catalog describes it (what a change of type could alter)."""
    with psycopg.connect(admin) as conn:
        return {
            name: sorted(conn.execute(query, [schema]).fetchall(), key=repr)
            for name, query in _CATALOG.items()
        }


def test_every_table_of_a_memory_can_be_cleared(
    opened: Opened, caplog: pytest.LogCaptureFixture
) -> None:
    """What compact does to every empty table: none is refused (a schema step that adds a
    trigger, a view or a key over a text column must keep it so), a table holding rows of any
    tenant is analysed instead, nothing of the schema changes (types, collations, defaults,
    indexes, triggers and their state, keys, policies), and the memory works after."""
    from recuerdo.store.postgres import empty_stats

    memory, admin = opened
    store = memory._store
    assert isinstance(store, PostgresStore)
    shared = store._live()
    # Rows another tenant holds, which this handle's tenant does not see.
    memory.for_tenant("ann").remember("learning", "ann keeps the tide tables", tags=["tides"])
    _drained_and_held(memory)
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
    assert {"_migrations", "index_marks", "items", "chunks", "item_tags"} <= holding
    before = _catalog(admin, shared.schema)
    with shared.pool.connection() as conn, caplog.at_level(logging.INFO, "recuerdo.store"):
        tables = sorted(empty_stats.row_counts(conn, shared.schema))
        done = empty_stats.clear(conn, shared.schema, tables)
        retyping = conn.info.server_version < empty_stats.CLEAR_FUNCTION_SINCE
    assert caplog.records == []
    assert done.owed == []
    assert set(done.cleared) == set(tables) - (_NO_TEXT if retyping else set())
    # The tables holding ann's rows were analysed, not cleared: they have statistics.
    assert {"items.content", "item_tags.tag"} <= set(sampled_values(admin, memory.name))
    if retyping:
        vector = {"embeddings.vector"} if shared.vectors is not None else set()
        assert _left_as_they_are(admin, shared.schema) == _LEFT_BEFORE_18 | vector
    assert _catalog(admin, shared.schema) == before
    _still_works(memory)


def test_an_interrupted_rebuilds_leftover_stays_for_compact_to_drop(opened: Opened) -> None:
    """An invalid index (what an interrupted concurrent rebuild leaves, decision 0066) is not
    built again by a change of type: it would become valid, and compact drops only invalid
    ones. Its table is left to compact, which drops the leftover first."""
    memory, admin = opened
    schema = schema_name(memory.name)
    leftover = "chunks_words_ccnew"
    leave_invalid_index(admin, memory.name, leftover, "chunks", "USING gin (words)")
    _analysed_then_forgotten(memory, admin)
    valid = dict(_catalog(admin, schema)["valid"])  # type: ignore[arg-type]
    assert valid[leftover] is False
    report = memory.compact()
    assert report["dropped"] == [leftover]
    assert "chunks" in report["statistics_cleared"]
    assert _quoting(memory, admin) == set()


def test_a_vacuum_that_fails_leaves_the_tables_it_emptied_owed(
    opened: Opened, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tables a VACUUM analysed before it failed count empty already: its retry would not
    find them emptied. They are owed (before 18; on 18 cleared at once), and the failure
    still reaches the reclaimer, which retries."""
    from recuerdo.store.postgres import empty_stats, maintenance

    memory, admin = opened
    shared = _tags_emptied_by_hand(memory, admin)
    counted = maintenance._tables
    reads: list[str] = []

    def with_tags_before(conn: Any, schema: str) -> Any:
        # The tags held rows when the reclaimer first counted (they were emptied by hand).
        listed, owned, rows = counted(conn, schema)
        reads.append(schema)
        return listed, owned, {**rows, "item_tags": 30.0} if len(reads) == 1 else rows

    monkeypatch.setattr(maintenance, "_tables", with_tags_before)
    for form in ("VACUUM_EVERY_INDEX", "VACUUM_WAITING_FOR_PINS"):  # whichever runs
        monkeypatch.setattr(maintenance, form, "VACUUM (NO_SUCH_OPTION)")
    with pytest.raises(psycopg.Error):
        maintenance.reclaim_owed(shared, patience=0)
    with shared.pool.connection() as conn:
        retyping = conn.info.server_version < empty_stats.CLEAR_FUNCTION_SINCE
    assert shared.statistics_owed == ({"item_tags"} if retyping else set())
    assert ("item_tags.tag" in _quoting(memory, admin)) is retyping


def test_compact_reports_and_keeps_owed_a_table_in_use_before_postgresql_18(
    opened: Opened,
) -> None:
    memory, admin = opened
    shared = _tags_emptied_by_hand(memory, admin)
    with psycopg.connect(admin) as reader:
        reader.execute(f'SELECT 1 FROM "{shared.schema}".item_tags LIMIT 1')
        report = memory.compact()
        retyping = reader.info.server_version < 180000
    assert report["statistics_owed"] == (["item_tags"] if retyping else [])
    assert ("item_tags" in report["statistics_cleared"]) is not retyping
    assert shared.statistics_owed == ({"item_tags"} if retyping else set())
    assert ("item_tags.tag" in _quoting(memory, admin)) is retyping


def test_a_vacuum_behind_an_older_transaction_leaves_its_tables_owed_before_postgresql_18(
    opened: Opened, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the reclaimer's own VACUUM (the tests above drive what follows it): a
    transaction older than the forgets runs past its patience, so the VACUUM could not remove
    their rows; the mark stays, and before 18 the tables it emptied stay owed rather than be
    rebuilt over those rows. Once that transaction ends, the next round clears both."""
    from recuerdo.store.base import RECLAIM_OWED
    from recuerdo.store.postgres import empty_stats, maintenance

    memory, admin = opened
    ids = [memory.remember("learning", f"tide {WORD} {n}", tags=[TAG]) for n in range(30)]
    _drained_and_held(memory)
    store = memory._store
    assert isinstance(store, PostgresStore)
    store.optimize()
    assert "item_tags.tag" in _quoting(memory, admin)
    shared = store._live()
    monkeypatch.setattr(shared.reclaimer, "ask", lambda: None)  # the rounds are driven here
    with psycopg.connect(admin) as older:
        older.execute("SELECT txid_current()")  # holds a transaction id older than the forgets
        for entry in ids:
            assert memory.forget(entry)
        assert maintenance.reclaim_owed(shared, patience=0.2) is False
        with shared.pool.connection() as conn:
            assert maintenance.owed_mark(conn, RECLAIM_OWED) is not None
            retyping = conn.info.server_version < empty_stats.CLEAR_FUNCTION_SINCE
        # Every table the forgets emptied: the entries, their chunks, tags and tallies.
        assert ("item_tags" in shared.statistics_owed) is retyping
        assert shared.statistics_owed == _written_down(memory)
        assert ("item_tags.tag" in _quoting(memory, admin)) is retyping
    assert maintenance.reclaim_owed(shared, patience=10) is True
    with shared.pool.connection() as conn:
        assert maintenance.owed_mark(conn, RECLAIM_OWED) is None
    assert shared.statistics_owed == set() == _written_down(memory)
    assert _quoting(memory, admin) == set()


def test_a_table_holding_rows_again_is_analysed_not_left_with_the_old_statistics(
    opened: Opened,
) -> None:
    """Found by the review of 0078: a table the forget emptied that took a row before its
    clear was left to the next ANALYZE, which autovacuum runs after 50 changed rows and more:
    the forgotten tags stayed quoted until a compact."""
    from recuerdo.store.postgres import maintenance

    memory, admin = opened
    shared = _tags_emptied_by_hand(memory, admin)
    memory.remember("learning", "a new entry", tags=["freshly"])
    with shared.pool.connection() as conn:
        maintenance._clear_emptied(conn, shared, {"item_tags": 30.0}, behind=False)
    assert TAG not in sampled_values(admin, memory.name)["item_tags.tag"]  # (one row: no sample)
    assert shared.statistics_owed == set() == _written_down(memory)


def test_compact_strikes_out_only_the_marks_of_the_tables_it_settled(opened: Opened) -> None:
    """Found by the review of 0078: compact struck out every mark it did not find owed itself,
    among them one another process wrote after compact counted the tables (its table then
    kept its statistics through the next open). A table holding rows is not compact's to
    settle: its mark stays for the clear that reads it."""
    from recuerdo.store.base import STATISTICS_OWED

    memory, _ = opened
    memory.remember("learning", "a tagged entry", tags=["kept"])
    _drained_and_held(memory)
    with memory._store.write() as tx:  # as another process's reclaimer writes it
        tx.execute(
            "INSERT INTO index_marks (name, upto) VALUES (?, 0)", (f"{STATISTICS_OWED}item_tags",)
        )
    report = memory.compact()
    assert "item_tags" not in report["statistics_cleared"]
    assert _written_down(memory) == {"item_tags"}
