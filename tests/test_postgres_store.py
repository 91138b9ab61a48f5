"""The PostgreSQL store's own promises, on real servers: statements keep the families' ``?``
marks, rows read like SQLite's, the schema's steps are recorded once and a newer schema is
refused, numbers come back as Python numbers, and writes to one memory are serialized."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import recuerdo
from recuerdo.errors import InvalidInput, StoreTooNew
from recuerdo.store.postgres import PostgresStore, redact
from recuerdo.store.postgres.connection import PostgresTx
from recuerdo.store.postgres.rows import PGRow
from recuerdo.store.postgres.statements import numbered

from .conftest import statements_run
from .postgres import contract_url, embedded_url, system_url, unique_memory


@pytest.fixture
def store() -> Iterator[PostgresStore]:
    opened = PostgresStore(embedded_url(), unique_memory())
    yield opened
    opened.drop()


_literal = st.text(alphabet="ab?%$1' ", max_size=6).map(lambda t: "'" + t.replace("'", "''") + "'")
_bare = st.sampled_from(["?", "%", "$", " x ", "=", "LIKE"])


@given(st.lists(st.one_of(_literal, _bare), max_size=12))
def test_marks_outside_literals_become_numbered_placeholders(parts: list[str]) -> None:
    """The n-th ``?`` outside a literal is ``$n``; everything else is sent as it was."""
    converted, marks = numbered("".join(parts))
    expected, count = [], 0
    for part in parts:
        if part == "?":
            count += 1
            expected.append(f"${count}")
        else:
            expected.append(part)
    assert (converted, marks) == ("".join(expected), count)


@pytest.mark.parametrize("given", [(), (1,), (1, 2, 3)])
def test_parameters_that_do_not_match_the_marks_are_refused(
    store: PostgresStore, given: tuple[int, ...]
) -> None:
    """The raw statements skip psycopg's count of the parameters; the server refuses too few,
    but takes typed extra ones. Each way in refuses both, and nothing is written."""
    with store.write() as tx:
        tx.execute(
            "CREATE TABLE counted (id BIGINT GENERATED ALWAYS AS IDENTITY, a BIGINT, b BIGINT)"
        )
    calls = [
        lambda tx: tx.one("SELECT ? + ? AS total", given),
        lambda tx: tx.executemany("INSERT INTO counted (a, b) VALUES (?, ?)", [(1, 2), given]),
        lambda tx: tx.insert_returning_ids(
            "INSERT INTO counted (a, b) VALUES (?, ?) RETURNING id", [(1, 2)] * 11 + [given]
        ),
    ]
    for call in calls:
        with pytest.raises(recuerdo.StoreError, match=r"has 2 marks but"), store.write() as tx:
            call(tx)
    with store.read() as tx:
        assert tx.scalar("SELECT count(*) FROM counted") == 0


def test_literals_keep_their_marks_dollars_and_percents(store: PostgresStore) -> None:
    with store.read() as tx:
        row = tx.one("SELECT '?$1%s' AS text, ? AS first, ? % 3 AS second", ("value", 7))
    assert row is not None
    assert (row["text"], row["first"], row["second"]) == ("?$1%s", "value", 1)


def test_rows_read_by_name_by_position_and_as_values(store: PostgresStore) -> None:
    with store.read() as tx:
        row = tx.one("SELECT 1 AS one, 'two' AS two")
    assert isinstance(row, PGRow)
    assert (row["one"], row[1], list(row), dict(zip(row.keys(), row, strict=True))) == (
        1,
        "two",
        [1, "two"],
        {"one": 1, "two": "two"},
    )


def test_sums_and_averages_are_python_numbers(store: PostgresStore) -> None:
    with store.read() as tx:
        row = tx.one("SELECT sum(x) AS total, avg(x) AS mean FROM (VALUES (1), (2)) v(x)")
    assert row is not None
    assert (type(row["total"]), row["total"], type(row["mean"]), row["mean"]) == (
        int,
        3,
        float,
        1.5,
    )


def test_flags_are_stored_as_integers(store: PostgresStore) -> None:
    with store.read() as tx:
        assert tx.scalar("SELECT ? + 0", (True,)) == 1


def test_a_number_beyond_64_bits_is_invalid_input(store: PostgresStore) -> None:
    with pytest.raises(InvalidInput) as refused, store.read() as tx:
        tx.scalar("SELECT id FROM items WHERE id = ?", (2**70,))
    assert refused.value.code == "invalid_input"


def test_steps_are_recorded_once_and_reopening_applies_none(store: PostgresStore) -> None:
    again = PostgresStore(store.url, store.memory)
    try:
        with again.read() as tx:
            names = [row["name"] for row in tx.all("SELECT name FROM _migrations ORDER BY name")]
    finally:
        again.close()
    assert names == sorted(store.schema_steps)


def test_a_schema_from_a_newer_recuerdo_is_refused(store: PostgresStore) -> None:
    with store.write() as tx:
        tx.execute("INSERT INTO _migrations (name, applied_at) VALUES ('m999_future', 'x')")
    with pytest.raises(StoreTooNew) as refused:
        PostgresStore(store.url, store.memory)
    assert "m999_future" in str(refused.value)


def test_writes_to_one_memory_are_serialized_across_connections(store: PostgresStore) -> None:
    """Two writers that each read a counter and write it back never lose an increment (the
    advisory lock orders them; without it both would read the same value)."""
    with store.write() as tx:
        tx.execute("INSERT INTO settings (tenant, name, value) VALUES ('local', 'n', '0')")
    other = PostgresStore(store.url, store.memory)

    def bump(handle: PostgresStore) -> None:
        for _ in range(20):
            with handle.write() as tx:
                value = int(tx.scalar("SELECT value FROM settings WHERE name = 'n'"))
                tx.execute("UPDATE settings SET value = ? WHERE name = 'n'", (str(value + 1),))

    threads = [threading.Thread(target=bump, args=(h,)) for h in (store, other, store, other)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    other.close()
    with store.read() as tx:
        assert tx.scalar("SELECT value FROM settings WHERE name = 'n'") == "80"


def test_a_read_inside_a_write_sees_the_write(store: PostgresStore) -> None:
    with store.write() as tx:
        tx.execute("INSERT INTO settings (tenant, name, value) VALUES ('local', 'seen', '1')")
        with store.read() as inner:
            assert inner.scalar("SELECT value FROM settings WHERE name = 'seen'") == "1"


def test_a_failed_write_leaves_nothing(store: PostgresStore) -> None:
    with pytest.raises(RuntimeError), store.write() as tx:
        tx.execute("INSERT INTO settings (tenant, name, value) VALUES ('local', 'gone', '1')")
        raise RuntimeError("the caller changed its mind")
    with store.read() as tx:
        assert tx.scalar("SELECT count(*) FROM settings WHERE name = 'gone'") == 0


def test_the_location_never_shows_the_password() -> None:
    assert redact("postgresql://ann:s3cret@db:5432/x") == "postgresql://ann:***@db:5432/x"
    assert "s3cret" not in redact("postgresql://ann:s3cret@db/x?sslmode=require")


def test_a_forget_vacuums_the_memory_s_tables(store: PostgresStore) -> None:
    """After a forget commits, the memory's tables are vacuumed (their dead row versions'
    space freed): PostgreSQL's statistics record a vacuum of ``items`` done after the forget."""
    import time

    import recuerdo

    memory = recuerdo.open("vacuumed", store=store, embedder="none")
    try:
        entry = memory.remember("learning", "Qorvantix is a word to forget")
        memory._upkeep.drain()
        before = _vacuums(store)
        assert memory.forget(entry)
        assert memory.recall(search="Qorvantix") == []
        deadline = time.monotonic() + 30  # statistics reach the view asynchronously
        while _vacuums(store) <= before and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _vacuums(store) > before
    finally:
        memory.close()


def _vacuums(store: PostgresStore) -> int:
    with store.read() as tx:
        tx.execute("SELECT pg_stat_clear_snapshot()")
        count = tx.scalar(
            "SELECT vacuum_count FROM pg_stat_user_tables"
            " WHERE schemaname = current_schema() AND relname = 'items'"
        )
    return int(count or 0)


def _items_counted(store: PostgresStore) -> float:
    """The items table's row count as the planner knows it (-1: never analysed)."""
    with store.read() as tx:
        return float(tx.scalar("SELECT reltuples FROM pg_class WHERE oid = 'items'::regclass"))


def test_a_load_gives_the_planner_its_statistics_at_once(
    loaded: tuple[PostgresStore, recuerdo.Memory],
) -> None:
    """A table just filled had no statistics until autovacuum came (up to a minute), and the
    planner, expecting one row, joined the matches of a common word by walking an index once
    per row (103 ms instead of 5.6 over 1,300 entries). A trickle of writes leaves it to
    autovacuum; a load analyses the memory's tables once written."""
    store, memory = loaded
    memory.remember_many([{"category": "context", "content": f"n{i}"} for i in range(10)])
    assert _items_counted(store) == -1
    memory.remember_many([{"category": "context", "content": f"m{i}"} for i in range(600)])
    assert _items_counted(store) == 610


def test_an_analysis_takes_only_its_own_memory(
    loaded: tuple[PostgresStore, recuerdo.Memory], store: PostgresStore
) -> None:
    """``optimize`` analyses the memory's own tables, not every memory of the database (a bare
    ``ANALYZE`` did)."""
    other, memory = loaded
    memory.remember_many([{"category": "context", "content": f"n{i}"} for i in range(10)])
    store.optimize()
    assert _items_counted(other) == -1
    assert _items_counted(store) == 0


def _random_page_cost(store: PostgresStore) -> str:
    with store.read() as tx:
        return str(tx.scalar("SHOW random_page_cost"))


def test_a_listing_by_one_tag_reads_its_rows_not_every_item(
    loaded: tuple[PostgresStore, recuerdo.Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under PostgreSQL's stock cost of a page read at random (4, a spinning disk's), the
    planner read every item of the memory to join them with one tag's rows: 9.9 of the
    listing's 10 ms over 30,000 entries (decision 0048). A memory's connections state 1.1
    unless the server's operator set a cost, and the tag's rows drive the listing."""
    store, memory = loaded
    memory.remember_many(
        [{"category": "context", "content": f"n{i}", "tags": [f"t{i % 30}"]} for i in range(3000)]
    )
    with statements_run(monkeypatch, PostgresTx) as seen:
        found = memory.recall(tags=["t7"], limit=20)
    assert [e["content"] for e in found] == [f"n{i}" for i in range(2977, 0, -30)][:20]
    assert found.more == 100 - 20
    [(sql, params)] = [(sql, p) for sql, p in seen if "listed_id" in sql]
    assert _random_page_cost(store) == "1.1"
    with store.read() as tx:
        plan = [str(row[0]) for row in tx.all(f"EXPLAIN {sql}", params)]
    assert not any("Seq Scan on items" in line for line in plan), "\n".join(plan)


@pytest.mark.parametrize(
    ("setting", "value"), [("random_page_cost", "2.5"), ("plan_cache_mode", "force_generic_plan")]
)
def test_a_planner_setting_the_operator_set_is_kept(
    monkeypatch: pytest.MonkeyPatch, setting: str, value: str
) -> None:
    """A value set for the connection (here through libpq's PGOPTIONS, as a server's, a
    database's or a role's setting would be) is the operator's choice: it stays (decisions
    0048 and 0056 set both otherwise)."""
    monkeypatch.setenv("PGOPTIONS", f"-c {setting}={value}")
    opened = PostgresStore(embedded_url(), unique_memory())
    try:
        with opened.read() as tx:
            assert str(tx.scalar(f"SHOW {setting}")) == value
    finally:
        opened.drop()


def _plan_cache_mode(store: PostgresStore) -> str:
    with store.read() as tx:
        return str(tx.scalar("SHOW plan_cache_mode"))


def test_an_entry_search_is_planned_for_its_needle_however_often_it_runs() -> None:
    """psycopg prepares a statement run five times on a connection, and PostgreSQL then
    plans it once for any parameters when that looks as cheap: the entry search walked every
    id testing each row (23-25 ms at 20,000 entries, against 2.7 ms through the trigram
    indexes; decision 0056). Run as a prepared statement more than five times, the listing
    is still planned for the needle it is given (no parameter is left in its plan, which
    reads the trigram indexes); on the code before, the plan kept its parameters. (Here the
    generic plan happens to read the indexes too: this shows the planning, not the walk.)"""
    from .postgres import system_url

    store = PostgresStore(system_url(), unique_memory())
    memory = recuerdo.open(store.memory, store=store, embedder="none")
    try:
        rng = random.Random(5)
        words = ["Straße", "Größe", "Köln", "Haus", *(f"w{k}" for k in range(2000))]
        for _ in range(2):
            memory.remember_many(
                [
                    {"category": "context", "content": " ".join(rng.choices(words, k=20))}
                    for _ in range(10_000)
                ]
            )
        assert _plan_cache_mode(store) == "force_custom_plan"
        with store.write() as tx:
            tx.execute("ANALYZE items")
            part = tx.substrings.candidates("STRASSE")[0]
            listing = (
                f"SELECT items.id FROM {part.source} WHERE {part.condition}"
                f" AND items.item_type = 'entry' ORDER BY {part.newest_first} LIMIT 1020"
            )
            numbered = listing
            for n in range(1, len(part.params) + 1):
                numbered = numbered.replace("?", f"${n}", 1)
            types = ", ".join("text" for _ in part.params)
            tx.execute(f"PREPARE listing ({types}) AS {numbered}")
            literals = ", ".join(f"'{p}'" for p in part.params)
            for _ in range(8):
                tx.execute(f"EXECUTE listing ({literals})")
            plan = "\n".join(str(row[0]) for row in tx.all(f"EXPLAIN EXECUTE listing ({literals})"))
            tx.execute("DEALLOCATE listing")
        assert "Bitmap" in plan and "$1" not in plan, plan
    finally:
        memory.close()
        store.drop()


@pytest.mark.parametrize("count", [1, 7, 100, 253])
def test_a_batch_goes_in_groups_of_rows_and_its_ids_come_back_in_order(
    store: PostgresStore, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    """``remember_many`` sends its entries a group of rows a statement (100, 10, 1: 253 entries
    are 2 + 5 + 3 statements, not 253), so the tallies' statement trigger runs once a group
    (decision 0057); the ids still come back in the entries' order."""
    import psycopg

    sent: list[str] = []
    execute = psycopg.Cursor.execute

    def spied(
        cursor: psycopg.Cursor[object], query: object, *args: object, **kwargs: object
    ) -> object:
        if str(query).startswith("INSERT INTO items"):
            sent.append(str(query))
        return execute(cursor, query, *args, **kwargs)  # type: ignore[arg-type]

    with recuerdo.open(unique_memory("groups"), store=store, embedder="none") as memory:
        monkeypatch.setattr(psycopg.Cursor, "execute", spied)
        contents = [f"entry number {n}" for n in range(count)]
        ids = memory.remember_many([{"category": "context", "content": c} for c in contents])
        monkeypatch.undo()
        assert ids == sorted(ids) and len(set(ids)) == count
        assert [memory.get(entry)["content"] for entry in ids] == contents
    hundreds, rest = divmod(count, 100)
    assert len(sent) == hundreds + sum(divmod(rest, 10))


def test_long_statements_go_to_the_server_as_they_are(
    store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch's grouped inserts and a search's read of its best chunks have hundreds of
    parameters: psycopg rewrites ``%s`` marks again at every call of such a statement (it keeps
    the rewrite only up to 50 parameters), so they are sent numbered, on the raw cursor
    (decision 0058)."""
    import psycopg

    long_ones: list[tuple[bool, str]] = []

    def spy(name: str) -> None:
        send = getattr(psycopg.Cursor, name)

        def spied(cursor: Any, query: Any, params: Any = None, *args: Any, **kw: Any) -> Any:
            counts = [len(params or ())] if name == "execute" else [len(p) for p in params]
            if max(counts, default=0) > 50:
                long_ones.append((isinstance(cursor, psycopg.RawCursor), str(query)))
            return send(cursor, query, params, *args, **kw)

        monkeypatch.setattr(psycopg.Cursor, name, spied)

    with recuerdo.open(unique_memory("raw"), store=store, embedder="none") as memory:
        spy("execute")
        spy("executemany")
        ids = memory.remember_many(
            [{"category": "context", "content": f"common entry {n}"} for n in range(150)]
        )
        memory._upkeep.drain()
        found = memory.search("common entry", limit=5)["results"]
        monkeypatch.undo()
        assert [memory.get(i)["content"] for i in ids[:3]] == [
            f"common entry {n}" for n in range(3)
        ]
    assert found
    starts = {query.split(" (")[0].split(",")[0] for _, query in long_ones}
    assert {"INSERT INTO items", "INSERT INTO chunks", "SELECT c.id"} <= starts
    assert all(raw for raw, _ in long_ones), [q[:60] for raw, q in long_ones if not raw]


def test_a_name_postgresql_would_cut_is_refused_and_nothing_is_made() -> None:
    """A schema name past 63 bytes is cut by PostgreSQL with a notice: the open failed as
    "cannot reach the database" (store_unavailable), and two names alike in their first 54
    characters would be one schema (a hunt over store maintenance)."""
    import psycopg

    name = unique_memory("long") + "-" + "x" * 60
    with pytest.raises(InvalidInput) as refused:
        PostgresStore(contract_url(), name)
    assert refused.value.code == "invalid_input" and "at most 54 bytes" in refused.value.detail
    with psycopg.connect(system_url(), autocommit=True) as conn:
        made = conn.execute(
            "SELECT count(*) FROM pg_namespace WHERE nspname LIKE %s", [f"recuerdo_{name[:20]}%"]
        ).fetchone()
    assert made == (0,)
    fits = unique_memory("fit")
    fits += "-" + "y" * (54 - len(fits) - 1)
    assert len(fits) == 54
    store = PostgresStore(contract_url(), fits)
    try:
        assert store.dialect == "postgres"
    finally:
        store.drop()
