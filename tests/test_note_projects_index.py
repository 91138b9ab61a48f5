"""The project of a note of ``user``, indexed (decision 0148, its review; step
``m046_note_projects``): ``items.project`` follows the note's project tag at every write, a
store written before the step gains it from its tags, and ``recent(scope=user, project=)``
walks the index instead of every note of ``user``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import recuerdo
from recuerdo.store.note_projects import NONE, SEVERAL, STEP
from recuerdo.store.sqlite import files

from .conftest import statements_run, tx_class_of
from .grown import grown_copy
from .postgres import opened_on
from .test_notes_projects import found

BACKENDS = ["sqlite", "postgres"]


def _columns(memory: recuerdo.Memory) -> dict[str, str]:
    with memory._store.read() as tx:
        rows = tx.all("SELECT title, project FROM items WHERE item_type = 'note'")
    return {row["title"]: row["project"] for row in rows}


def _write(memory: recuerdo.Memory) -> dict[str, int]:
    """Notes of two projects, of none, and of both (free tags can name several)."""
    ids = {
        name: memory.save(name, f"{name} zebra", project=name)["id"] for name in ("shop", "bill")
    }
    ids["nobody"] = memory.save("nobody", "nobody zebra", tags=["mine"])["id"]
    ids["both"] = memory.save("both", "both zebra", tags=["project:shop", "project:bill"])["id"]
    return ids


def _as_before_the_step(memory: recuerdo.Memory) -> None:
    """The store as the code before the step left it: the tags, no column, the step not taken."""
    with memory._store.write() as tx:
        tx.execute("DROP INDEX items_note_projects")
        tx.execute("ALTER TABLE items DROP COLUMN project")
        tx.execute("DELETE FROM _migrations WHERE name = ?", (STEP,))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_store_written_before_the_step_is_read_by_project(
    backend: str, base: Path, tmp_path: Path
) -> None:
    with opened_on(backend, base, "projcol") as (name, where):
        with recuerdo.open(name, **where) as memory:
            ids = _write(memory)
            _as_before_the_step(memory)
        with recuerdo.open(name, **where) as memory:
            assert _columns(memory) == {
                "shop": "project:shop",
                "bill": "project:bill",
                "nobody": NONE,
                "both": SEVERAL,
            }
            for read in ("recent", "search"):
                for project in ("shop", "bill"):
                    kept = {ids[project], ids["nobody"], ids["both"]}
                    assert found(memory, read, scope="user", project=project) == kept
                    assert found(memory, read, project=project) == kept
                assert found(memory, read, scope="user", project="other") == {ids["nobody"]}
            plan = _recent_plan(memory, tmp_path)
    assert _walks_the_index(plan), plan


@pytest.mark.parametrize(
    ("change", "expected", "shop_reads_it"),
    [
        ({"project": "bill"}, "project:bill", False),
        ({"tags": ["mine"]}, NONE, True),  # a save's tags replace the note's: the project goes
        ({"tags": ["project:a", "project:b"]}, SEVERAL, False),
        ({"tags": ["project:shop", "project:b"]}, SEVERAL, True),
        ({"tags": ["project:a", "mine"]}, "project:a", False),
        ({}, "project:shop", True),  # the text alone: the tags and the column stay
    ],
    ids=["another project", "no project tag", "several", "several, shop's", "a tag", "text"],
)
def test_the_column_follows_the_tags_at_every_save(
    memory: recuerdo.Memory, change: dict[str, Any], expected: str, shop_reads_it: bool
) -> None:
    saved = memory.save("Editor", "vim zebra", key="editor", project="shop")["id"]
    memory.save("Editor", "neovim zebra", key="editor", **change)
    assert _columns(memory) == {"Editor": expected}
    for read in ("recent", "search"):
        shown = found(memory, read, scope="user", project="shop")
        assert shown == ({saved} if shop_reads_it else set())


def _recent_plan(memory: recuerdo.Memory, tmp_path: Path) -> list[str]:
    """The plans of the queries of ``recent(scope=user, project=shop)``, one after another: on
    SQLite under the figures of a store of 100,000 items (as the hot-plan tests read them), on
    PostgreSQL with table scans priced out (a small table is read whole anyway)."""
    with statements_run(pytest.MonkeyPatch(), tx_class_of(memory)) as seen:
        memory.recent(scope="user", project="shop")
    queries = [(sql, params) for sql, params in seen if "ORDER BY updated_at" in sql]
    assert queries
    if not memory.location.startswith("postgresql"):
        grown = grown_copy(memory.location, tmp_path / "grown.db", 100_000)
        conn = files.connect(grown, read_only=True)
        try:
            return [
                str(row[3])
                for sql, params in queries
                for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params)
            ]
        finally:
            conn.close()
    with memory._store.read() as tx:
        tx.execute("SET LOCAL enable_seqscan = off")
        return [str(row[0]) for sql, params in queries for row in tx.all(f"EXPLAIN {sql}", params)]


def _walks_the_index(plan: list[str]) -> bool:
    """Each kind of note the read keeps is a range of the index, read newest first: no walk
    of every note of ``user``, and no sort of all the notes kept to return the newest."""
    walks = [line for line in plan if re.search(r"SCAN items|TEMP B-TREE|Sort|Seq Scan", line)]
    return any("items_note_projects" in line for line in plan) and not walks


@pytest.mark.parametrize("backend", BACKENDS)
def test_recent_of_a_project_walks_the_index(backend: str, base: Path, tmp_path: Path) -> None:
    """The notes of no project were found by walking every note of ``user`` (103 ms at
    50,000 notes on SQLite; on PostgreSQL a scan of every tag, each query)."""
    with opened_on(backend, base, "projplan") as (name, where), recuerdo.open(name, **where) as m:
        _write(m)
        plan = _recent_plan(m, tmp_path)
    assert _walks_the_index(plan), plan


def test_the_index_is_usable_at_once_beside_an_older_transaction(base: Path) -> None:
    """A transaction open elsewhere on the server (a backup, a long write) while a store takes
    the step: the step filled the column, then built the index, and PostgreSQL marked the index
    unusable (``indcheckxmin``: the fill left HOT chains) by any plan until every transaction
    older than the step's had ended; ``recent`` of a project walked every note of ``user``
    meanwhile. Built first, then filled, the index is usable at once."""
    import psycopg

    from .postgres import system_url

    with opened_on("postgres", base, "projxmin") as (name, where):
        with recuerdo.open(name, **where) as memory:
            _write(memory)
            _as_before_the_step(memory)
        older = psycopg.connect(system_url())
        try:
            older.execute("SELECT txid_current()")  # an xid held open: the horizon stays
            with recuerdo.open(name, **where) as memory, memory._store.read() as tx:
                waits = tx.scalar(
                    "SELECT i.indcheckxmin FROM pg_index i JOIN pg_class c"
                    " ON c.oid = i.indexrelid WHERE c.relname = 'items_note_projects'"
                    " AND c.relnamespace = current_schema()::regnamespace"
                )
        finally:
            older.close()
    assert waits is False
