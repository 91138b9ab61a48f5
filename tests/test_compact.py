"""``compact``: the owner's maintenance after deletions (decision 0066). On SQLite the file is
written again without the pages deletions freed; on PostgreSQL the GIN indexes, which keep a
key that only forgotten text held, are built again, and ``index_status`` says until then that
the rebuild is owed."""

from __future__ import annotations

import gzip
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import sql

import recuerdo
from recuerdo.doors.cli import cli
from recuerdo.engine import restore_memory
from recuerdo.store.base import OWED_MARKS, REBUILD_OWED, STATISTICS_OWED
from recuerdo.store.postgres import PostgresStore, empty_stats
from recuerdo.store.postgres.connection import schema_name
from recuerdo.store.postgres.maintenance import MAINTAIN_SINCE

from .postgres import (
    ROLE,
    SETTLED_WITHIN,
    app_conninfo,
    contract_url,
    leave_invalid_index,
    sampled_values,
    unique_memory,
)

WORD = "zanquibrelox"


def _fill(memory: recuerdo.Memory, count: int) -> list[int]:
    ids = [
        memory.remember("learning", f"harbour crane {n} lifts containers at dawn")
        for n in range(count)
    ]
    memory._upkeep.drain()
    return ids


def test_compact_keeps_what_stays_findable_and_owes_nothing(memory: recuerdo.Memory) -> None:
    ids = _fill(memory, 60)
    secret = memory.remember("learning", f"the vault word is {WORD}")
    memory._upkeep.drain()
    for entry_id in [*ids[:50], secret]:
        assert memory.forget(entry_id)
    owed_before = memory.index_status()["backend"]["rebuild_owed"]
    report = memory.compact()
    assert report["memory"] == memory.name
    assert report["dialect"] == memory._store.dialect
    assert memory.index_status()["backend"]["rebuild_owed"] is False
    # Only PostgreSQL's GIN indexes keep the words of deleted rows.
    assert owed_before is (memory._store.dialect == "postgres")
    found = {hit["id"] for hit in memory.search("harbour crane", limit=100)["results"]}
    assert found == set(ids[50:])
    assert {row["id"] for row in memory.recall(search="containers", limit=100)} == set(ids[50:])


def test_the_sqlite_file_gives_back_the_pages_deletions_freed(file_memory: recuerdo.Memory) -> None:
    ids = _fill(file_memory, 1500)
    for entry_id in ids[:1400]:
        assert file_memory.forget(entry_id)
    path = Path(file_memory.location)
    with file_memory._store.read() as tx:
        free = tx.scalar("PRAGMA freelist_count") * tx.scalar("PRAGMA page_size")
    assert free > 0
    report = file_memory.compact()
    assert report["bytes_after"] <= report["bytes_before"] - free, report
    assert path.stat().st_size == report["bytes_after"]
    with file_memory._store.read() as tx:
        assert tx.scalar("PRAGMA freelist_count") == 0
    assert len(file_memory.recall(limit=200)) == 100


def test_compact_through_the_cli(tmp_path: Path) -> None:
    with recuerdo.open("cli-compact", base_dir=tmp_path) as memory:
        for entry_id in _fill(memory, 300):
            memory.forget(entry_id)
    runner = CliRunner(env={"RECUERDO_STATE_DIR": str(tmp_path)})
    result = runner.invoke(cli, ["--memory", "cli-compact", "--json", "compact"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["memory"] == "cli-compact"
    assert report["bytes_after"] < report["bytes_before"]
    before = sorted(path.name for path in tmp_path.rglob("*"))
    missing = runner.invoke(cli, ["--memory", "no-such-memory", "--json", "compact"])
    assert missing.exit_code != 0
    assert json.loads(missing.output)["error"] == "memory_not_found"
    assert sorted(path.name for path in tmp_path.rglob("*")) == before  # nothing made


def _index_file(store: PostgresStore, index: str) -> bytes:
    """The bytes of ``index`` as the server keeps them on disk, read after a checkpoint (a
    superuser's functions: what is in the file, not what a query sees)."""
    with psycopg.connect(contract_url(), autocommit=True) as conn:
        conn.execute("CHECKPOINT")
        name = f"{sql.Identifier(schema_name(store.memory)).as_string(conn)}.{index}"
        row = conn.execute(
            "SELECT pg_read_binary_file(pg_relation_filepath(%s::regclass))", [name]
        ).fetchone()
    assert row is not None
    return bytes(row[0])


@pytest.fixture
def app_memory() -> Iterator[recuerdo.Memory]:
    store = PostgresStore(app_conninfo(), unique_memory("compact"))
    memory = recuerdo.open(store.memory, store=store, embedder="none")
    yield memory
    memory.close()
    store.drop()


def _stats(store: PostgresStore) -> str:
    """What the planner's statistics of the memory's tables hold, as text."""
    return " ".join(sampled_values(contract_url(), store.memory).values())


def _forgotten_and_vacuumed(memory: recuerdo.Memory) -> PostgresStore:
    """An entry holding ``WORD`` among 200 others, quoted by the statistics, then forgotten;
    its store once the forget's VACUUM has run."""
    _fill(memory, 200)
    secret = memory.remember("learning", f"zz the vault word is {WORD}")
    memory._upkeep.drain()
    store = memory._store
    assert isinstance(store, PostgresStore)
    store.optimize()
    assert WORD in _stats(store)
    assert memory.forget(secret)
    assert store.settle(SETTLED_WITHIN)
    return store


def test_a_forgotten_word_leaves_the_postgres_words_index_only_at_compact(
    app_memory: recuerdo.Memory,
) -> None:
    """The word is in the words index's file after the forget and its VACUUM; compact builds
    the index again, and the old file is emptied. (The statistics, which sampled the entry's
    text, were taken again by the forget's VACUUM already: the test below.)"""
    store = _forgotten_and_vacuumed(app_memory)
    # VACUUM took the row's id from the key's list, and left the key.
    old_file = _index_path(store, "chunks_words")
    assert WORD.encode() in _index_file(store, "chunks_words")
    assert app_memory.index_status()["backend"]["rebuild_owed"] is True
    report = app_memory.compact()
    assert "chunks_words" in report["rebuilt"] and report["vacuumed"] is True
    assert _index_path(store, "chunks_words") != old_file
    assert _file_bytes(old_file) in (None, 0)
    assert WORD.encode() not in _index_file(store, "chunks_words")
    assert WORD not in _stats(store)
    assert app_memory.index_status()["backend"]["rebuild_owed"] is False
    assert len(app_memory.search("harbour crane", limit=100)["results"]) == 100


def test_a_forgotten_text_leaves_the_postgres_statistics_with_the_forgets_vacuum(
    app_memory: recuerdo.Memory,
) -> None:
    """The statistics sample whole short texts (the largest text is a bound of the
    histogram): they quoted a forgotten entry until ``compact`` or autovacuum analysed."""
    store = _forgotten_and_vacuumed(app_memory)
    assert WORD not in _stats(store)
    assert "harbour" in _stats(store)  # taken again, not dropped


def _index_path(store: PostgresStore, index: str) -> str:
    with psycopg.connect(contract_url()) as conn:
        name = f"{sql.Identifier(schema_name(store.memory)).as_string(conn)}.{index}"
        row = conn.execute("SELECT pg_relation_filepath(%s::regclass)", [name]).fetchone()
    assert row is not None
    return str(row[0])


def _gin_files(store: PostgresStore) -> dict[str, str]:
    """Each GIN index of the memory and its file (which a rebuild replaces)."""
    with psycopg.connect(contract_url()) as conn:
        rows = conn.execute(
            "SELECT c.relname, pg_relation_filepath(c.oid) FROM pg_class c"
            " JOIN pg_am a ON a.oid = c.relam WHERE a.amname = 'gin'"
            " AND c.relnamespace = %s::regnamespace",
            [schema_name(store.memory)],
        ).fetchall()
    assert rows
    return {name: path for name, path in rows}


def _file_bytes(path: str) -> int | None:
    """The size of a file of the data directory after a checkpoint; None once it is gone."""
    with psycopg.connect(contract_url(), autocommit=True) as conn:
        conn.execute("CHECKPOINT")
        row = conn.execute("SELECT size FROM pg_stat_file(%s, true)", [path]).fetchone()
    return None if row is None or row[0] is None else int(row[0])


@pytest.mark.parametrize("ending", ["_ccnew", "_ccold"])
def test_an_index_an_interrupted_rebuild_left_is_dropped(
    app_memory: recuerdo.Memory, ending: str
) -> None:
    """An interrupted concurrent rebuild leaves an invalid index: the new one (``_ccnew``)
    before the swap, the old one (``_ccold``, every key still in it) after. Writes keep it up
    to date until it is dropped, so compact drops it rather than rebuild it."""
    _fill(app_memory, 20)
    leftover = f"chunks_words{ending}"
    memory_name = app_memory._store.memory  # type: ignore[attr-defined]
    leave_invalid_index(contract_url(), memory_name, leftover, "chunks", "USING gin (words)")
    report = app_memory.compact()
    assert report["dropped"] == [leftover]
    assert leftover not in report["rebuilt"]
    with psycopg.connect(contract_url()) as conn:
        left = conn.execute(
            "SELECT count(*) FROM pg_class WHERE relname = %s AND relnamespace = %s::regnamespace",
            [leftover, schema_name(memory_name)],
        ).fetchone()
    assert left == (0,)


def test_a_second_compact_at_once_is_told_so(app_memory: recuerdo.Memory) -> None:
    """Refused at once, and nothing done: no index built again, the rebuild still owed."""
    store = app_memory._store
    assert isinstance(store, PostgresStore)
    assert app_memory.forget(app_memory.remember("learning", f"the vault word is {WORD}"))
    assert store.settle(SETTLED_WITHIN)
    indexes = _gin_files(store)  # each file changes when its index is rebuilt
    with store.claim("compact") as mine:  # what a compact of another process holds
        assert mine
        with pytest.raises(recuerdo.Conflict, match="another process is compacting") as refused:
            app_memory.compact()
    assert refused.value.code == "conflict" and refused.value.status == 409
    assert _gin_files(store) == indexes
    assert app_memory.index_status()["backend"]["rebuild_owed"] is True


def _lend(memory_name: str, *, maintain: bool) -> None:
    """Let the ordinary role use a memory it does not own: with MAINTAIN on its tables and only
    the rights to read and write rows besides (PostgreSQL 17 and later), or with every right
    of the tables but MAINTAIN (before 17, ``ALL`` has none to give)."""
    with psycopg.connect(contract_url(), autocommit=True) as conn:
        since = conn.info.server_version >= MAINTAIN_SINCE
        if maintain and not since:
            pytest.skip("no MAINTAIN privilege before PostgreSQL 17: only the owner maintains")
        grants = [
            # CREATE: opening runs CREATE TABLE IF NOT EXISTS, refused without it.
            "GRANT USAGE, CREATE ON SCHEMA {} TO {}",
            "GRANT USAGE ON ALL SEQUENCES IN SCHEMA {} TO {}",
            "GRANT SELECT, INSERT, UPDATE, DELETE, MAINTAIN ON ALL TABLES IN SCHEMA {} TO {}"
            if maintain
            else "GRANT ALL ON ALL TABLES IN SCHEMA {} TO {}",
        ]
        if since and not maintain:
            grants.append("REVOKE MAINTAIN ON ALL TABLES IN SCHEMA {} FROM {}")
        for grant in grants:
            schema = sql.Identifier(schema_name(memory_name))
            conn.execute(sql.SQL(grant).format(schema, sql.Identifier(ROLE)))


def _vacuums(store: PostgresStore) -> int:
    """How many VACUUMs were run by hand over the memory's tables (not autovacuum's)."""
    with psycopg.connect(contract_url()) as conn:
        row = conn.execute(
            "SELECT sum(vacuum_count) FROM pg_stat_user_tables WHERE schemaname = %s",
            [schema_name(store.memory)],
        ).fetchone()
    assert row is not None
    return int(row[0])


def _owed_marks(store: PostgresStore) -> list[str]:
    with psycopg.connect(contract_url()) as conn:
        query = sql.SQL("SELECT name FROM {}.index_marks ORDER BY name")
        marks = conn.execute(query.format(sql.Identifier(schema_name(store.memory)))).fetchall()
    return [name for (name,) in marks if "owed" in name]


@pytest.mark.parametrize("maintain", [False, True], ids=["without-maintain", "with-maintain"])
def test_who_may_not_own_a_memory_but_maintain_it_compacts_it(maintain: bool) -> None:
    """Decision 0149. A role that may use the memory but neither owns it nor holds MAINTAIN is
    refused with a named error, before anything is done: no index built again, both the
    rebuild and the VACUUM its forget owes left owed (its VACUUM would skip every table). From
    PostgreSQL 17 a role granted MAINTAIN on the tables runs the forget's VACUUM and ANALYZE,
    and the whole compact."""
    owner = PostgresStore(contract_url(), unique_memory("compact"))
    try:
        memory = recuerdo.open(owner.memory, store=owner, embedder="none")
        _fill(memory, 200)
        secret = memory.remember("learning", f"zz the vault word is {WORD}")
        memory._upkeep.drain()
        owner.optimize()
        assert WORD in _stats(owner)
        memory.close()
        _lend(owner.memory, maintain=maintain)
        borrowed = PostgresStore(app_conninfo(), owner.memory, create=False)
        user = recuerdo.open(owner.memory, store=borrowed, embedder="none")
        vacuums = _vacuums(owner)
        assert user.forget(secret)
        assert borrowed.settle(SETTLED_WITHIN)
        indexes = _gin_files(owner)
        if not maintain:
            with pytest.raises(recuerdo.StoreError) as refused:
                user.compact()
            assert refused.value.code == "store_unavailable"
            assert "owner" in refused.value.detail
            assert _vacuums(owner) == vacuums
            assert _gin_files(owner) == indexes  # none built again
            assert user.index_status()["backend"]["rebuild_owed"] is True
            assert _owed_marks(owner) == ["gin_rebuild_owed", "reclaim_owed"]
        else:
            # The forget's VACUUM ran, and its ANALYZE: the statistics quote the text no more.
            assert _vacuums(owner) > vacuums
            assert WORD not in _stats(owner)
            assert WORD.encode() in _index_file(owner, "chunks_words")
            report = user.compact()
            assert sorted(report["rebuilt"]) == sorted(indexes) and report["vacuumed"] is True
            assert not set(_gin_files(owner).values()) & set(indexes.values())
            assert WORD.encode() not in _index_file(owner, "chunks_words")
            assert WORD not in _stats(owner) and "harbour" in _stats(owner)
            assert user.index_status()["backend"]["rebuild_owed"] is False
            assert "gin_rebuild_owed" not in _owed_marks(owner)
            assert len(user.search("harbour crane", limit=100)["results"]) == 100
        user.close()
        borrowed.close()
    finally:
        owner.drop()


def test_a_maintainer_leaves_an_interrupted_rebuilds_index_to_the_owner() -> None:
    """Only the owner may drop an index an interrupted rebuild left: a MAINTAIN holder is
    refused, naming it, before anything is done, rather than rebuild beside a leftover that
    keeps every key. The owner's compact then drops it."""
    owner = PostgresStore(contract_url(), unique_memory("compact"))
    try:
        memory = recuerdo.open(owner.memory, store=owner, embedder="none")
        ids = _fill(memory, 20)
        leftover = "chunks_words_ccnew"
        leave_invalid_index(contract_url(), owner.memory, leftover, "chunks", "USING gin (words)")
        _lend(owner.memory, maintain=True)
        borrowed = PostgresStore(app_conninfo(), owner.memory, create=False)
        with recuerdo.open(owner.memory, store=borrowed, embedder="none") as user:
            assert user.forget(ids[0])
            assert borrowed.settle(SETTLED_WITHIN)
            indexes, vacuums = _gin_files(owner), _vacuums(owner)
            with pytest.raises(recuerdo.StoreError) as refused:
                user.compact()
            assert refused.value.code == "store_unavailable"
            assert leftover in refused.value.detail and "owner" in refused.value.detail
            assert _gin_files(owner) == indexes
            assert _vacuums(owner) == vacuums  # refused before the VACUUM compact runs first
            assert user.index_status()["backend"]["rebuild_owed"] is True
        borrowed.close()
        assert memory.compact()["dropped"] == [leftover]
        memory.close()
    finally:
        owner.drop()


def test_before_18_a_maintainer_leaves_the_statistics_clear_to_the_owner_quietly(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """On PostgreSQL 17 the statistics of an emptied table are cleared by a change of column
    type, which only the owner may make (decision 0149). A MAINTAIN holder leaves them owed
    without trying: before, each try took the table's strongest lock and logged a warning,
    for every owed table at every forget, compact and open, and every open of the memory
    ran a VACUUM of all its tables for the tables it could never clear. Simulated on 18 by
    hiding ``pg_clear_attribute_stats``."""
    monkeypatch.setattr(empty_stats, "CLEAR_FUNCTION_SINCE", 10**7)
    owner = PostgresStore(contract_url(), unique_memory("compact"))
    try:
        memory = recuerdo.open(owner.memory, store=owner, embedder="none")
        only = memory.remember("learning", f"the only entry names {WORD}")
        memory._upkeep.drain()
        owner.optimize()
        memory.close()
        _lend(owner.memory, maintain=True)
        caplog.set_level(logging.INFO, "recuerdo.store")
        borrowed = PostgresStore(app_conninfo(), owner.memory, create=False)
        with recuerdo.open(owner.memory, store=borrowed, embedder="none") as user:
            assert user.forget(only)
            assert borrowed.settle(SETTLED_WITHIN)
            user.compact()
        borrowed.close()
        owed = [name for name in _owed_marks(owner) if name.startswith(STATISTICS_OWED)]
        assert STATISTICS_OWED + "items" in owed  # kept for the owner
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
        vacuums = _vacuums(owner)
        again = PostgresStore(app_conninfo(), owner.memory, create=False)
        assert again.settle(SETTLED_WITHIN)
        assert _vacuums(owner) == vacuums  # an open that could clear none runs no VACUUM
        again.close()
        mine = PostgresStore(contract_url(), owner.memory, create=False)
        assert mine.settle(SETTLED_WITHIN)
        assert not [n for n in _owed_marks(owner) if n.startswith(STATISTICS_OWED)]
        mine.close()
    finally:
        owner.drop()


def test_a_rebuild_owed_by_a_postgres_memory_is_not_owed_by_its_restored_copy(
    app_memory: recuerdo.Memory, tmp_path: Path
) -> None:
    """The archive carries the memory's marks; a copy restored into a file has indexes that
    hold only the rows restored, and nothing of its own to rebuild."""
    assert app_memory.forget(app_memory.remember("learning", f"the vault word is {WORD}"))
    assert app_memory.index_status()["backend"]["rebuild_owed"] is True
    app_memory.backup(tmp_path / "memory.jsonl.gz")
    restore_memory("restored", tmp_path / "memory.jsonl.gz", base_dir=tmp_path)
    with recuerdo.open("restored", base_dir=tmp_path, create=False) as restored:
        assert restored.index_status()["backend"]["rebuild_owed"] is False


def test_statistics_owed_by_a_postgres_memory_are_not_owed_by_its_restored_copy(
    app_memory: recuerdo.Memory, tmp_path: Path
) -> None:
    """The archive carries the marks of the tables whose statistics a forget left to clear
    (decision 0078); a copy restored into a file has no such statistics."""
    with app_memory._store.write() as tx:
        tx.execute(
            "INSERT INTO index_marks (name, upto) VALUES (?, 0)", (f"{STATISTICS_OWED}item_tags",)
        )
    app_memory.backup(tmp_path / "memory.jsonl.gz")
    with gzip.open(tmp_path / "memory.jsonl.gz", "rt") as archive:
        assert f"{STATISTICS_OWED}item_tags" in archive.read()  # the archive carries it
    restore_memory("restored", tmp_path / "memory.jsonl.gz", base_dir=tmp_path)
    restored = recuerdo.open("restored", base_dir=tmp_path, create=False)
    with restored, restored._store.read() as tx:
        marks = [row["name"] for row in tx.all("SELECT name FROM index_marks")]
    assert marks and not [name for name in marks if name.startswith(STATISTICS_OWED)]


def _owed(memory: recuerdo.Memory) -> dict[str, int]:
    with memory._store.read() as tx:
        rows = tx.all("SELECT name, upto FROM index_marks WHERE name IN (?, ?)", OWED_MARKS)
    return {row["name"]: int(row["upto"]) for row in rows}


def test_a_forget_that_finds_nothing_owes_nothing(app_memory: recuerdo.Memory) -> None:
    """A forget of an id that is not there, or no longer, changed no row: it marked a VACUUM of
    every table and a rebuild of the GIN indexes as owed all the same. One that deletes still
    owes both. (The VACUUM's mark is cleared by the VACUUM, once every older transaction of
    the database has ended: another test's may not have.)"""
    ids = _fill(app_memory, 3)
    assert app_memory.forget(ids[0]) is True
    assert REBUILD_OWED in _owed(app_memory)
    app_memory.compact()
    before = _owed(app_memory)
    assert REBUILD_OWED not in before
    for missing in (ids[0], ids[-1] + 1000):
        assert app_memory.forget(missing) is False
    assert _owed(app_memory).items() <= before.items()  # nothing written; a VACUUM may clear
    assert app_memory.index_status()["backend"]["rebuild_owed"] is False
    assert app_memory.forget(ids[1]) is True
    assert REBUILD_OWED in _owed(app_memory)
    assert app_memory.index_status()["backend"]["rebuild_owed"] is True
