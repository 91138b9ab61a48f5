"""Which schema steps a store has taken (``migrations.has_step``) is known once its opening
commits: a write asked ``_migrations`` again on every note (a round trip on PostgreSQL), and
a store at an older step must still say no to a later one (decision 0170)."""

from __future__ import annotations

from pathlib import Path

import pytest

import recuerdo
from recuerdo.store.migrations import has_step
from recuerdo.store.sqlite import SQLiteStore
from recuerdo.store.sqlite.schema import SCHEMA

from .conftest import statements_run, tx_class_of


def _reads_of_steps(memory: recuerdo.Memory, write: object) -> int:
    with (
        pytest.MonkeyPatch.context() as patch,
        statements_run(patch, tx_class_of(memory), this_thread_only=True) as seen,
    ):
        write()  # type: ignore[operator]
    return sum(1 for sql, _ in seen if "_migrations" in sql)


@pytest.mark.parametrize("write", ["remember", "save", "edit", "forget"])
def test_a_write_does_not_ask_which_steps_the_store_took(
    memory: recuerdo.Memory, write: str
) -> None:
    entry = memory.remember("learning", "An entry to forget")
    memory.save("Harbour plan", "The plan in full.")
    calls = {
        "remember": lambda: memory.remember("learning", "The harbour opens at six"),
        "save": lambda: memory.save("Second plan", "Another note."),
        "edit": lambda: memory.save("Harbour plan", "The plan, changed."),
        "forget": lambda: memory.forget(entry),
    }
    assert _reads_of_steps(memory, calls[write]) == 0
    assert memory.recall(search="harbour") or write != "remember"


def test_a_store_at_an_older_step_says_no_to_a_later_one_until_it_takes_it(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "restored.db")
    last = SCHEMA.names()[-1]
    older = SQLiteStore(path, steps=SCHEMA.version - 1)  # as a restore opens a backup
    try:
        with older.read() as tx:
            assert not has_step(tx, last)
            assert has_step(tx, SCHEMA.names()[0])
        current = SQLiteStore(path)  # the same file, brought up to date in this process
        try:
            for store in (current, older):  # one file: both handles see the step taken
                with store.read() as tx:
                    assert has_step(tx, last)
        finally:
            current.close()
    finally:
        older.close()


def test_an_opening_that_failed_leaves_its_steps_untaken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last step fails: the opening rolls back, and the store still says it lacks it."""
    path = str(tmp_path / "half.db")
    SQLiteStore(path, steps=SCHEMA.version - 1).close()
    name, step = SCHEMA.steps[-1]

    def failing(tx: object) -> None:
        step(tx)  # type: ignore[arg-type]
        raise RuntimeError("the step failed after its statements ran")

    failing.__name__ = name
    monkeypatch.setattr(SCHEMA, "steps", [*SCHEMA.steps[:-1], (name, failing)])
    older = SQLiteStore(path, steps=SCHEMA.version - 1)
    try:
        with pytest.raises(RuntimeError):
            SQLiteStore(path)
        with older.read() as tx:
            assert not has_step(tx, name)
    finally:
        older.close()


def test_a_schema_dropped_and_made_again_at_an_older_step_says_no_to_the_later_one() -> None:
    """PostgreSQL: one process's handles on a memory share what they know of it while any is
    open. A memory dropped through one handle and made again (a restore's ``steps=``, a
    test's) at an older step lacks the later steps, whatever the steps the first schema took."""
    from recuerdo.store.postgres import PostgresStore
    from recuerdo.store.postgres.schema import SCHEMA as PG_SCHEMA

    from .postgres import embedded_url, unique_memory

    url, name = embedded_url(), unique_memory()
    last = PG_SCHEMA.names()[-1]
    held = PostgresStore(url, name)  # keeps the process's state for the memory alive
    dropper = PostgresStore(url, name)
    dropper.drop()
    older = PostgresStore(url, name, steps=PG_SCHEMA.version - 1)
    try:
        with older.read() as tx:
            assert tx.scalar("SELECT 1 FROM _migrations WHERE name = ?", (last,)) is None
            assert not has_step(tx, last)
    finally:
        older.drop()
        held.close()


def test_an_opening_inside_a_write_that_rolls_back_leaves_its_steps_untaken(
    tmp_path: Path,
) -> None:
    """A handle opened inside a write on its file joins that write: the steps its opening
    applied are taken only if that write commits, and here it rolls back."""
    path = str(tmp_path / "nested.db")
    last = SCHEMA.names()[-1]
    older = SQLiteStore(path, steps=SCHEMA.version - 1)
    try:
        with pytest.raises(RuntimeError), older.write():
            SQLiteStore(path).close()  # applies the last step in the write around it
            raise RuntimeError("the write around the opening fails")
        with older.read() as tx:
            assert tx.scalar("SELECT 1 FROM _migrations WHERE name = ?", (last,)) is None
            assert not has_step(tx, last)
    finally:
        older.close()


def test_a_handle_on_a_dropped_schema_does_not_answer_for_one_renamed_into_its_place() -> None:
    """PostgreSQL: a restore renames a schema at the backup's step into a dropped memory's
    name, with no opening in this process; a handle left open on that name asks."""
    import psycopg

    from recuerdo.store.postgres import PostgresStore
    from recuerdo.store.postgres.pool import _quote
    from recuerdo.store.postgres.schema import SCHEMA as PG_SCHEMA
    from recuerdo.store.postgres.schemas import schema_name

    from .postgres import embedded_url, unique_memory

    url, name, loaded = embedded_url(), unique_memory(), unique_memory()
    last = PG_SCHEMA.names()[-1]
    held = PostgresStore(url, name)
    PostgresStore(url, name).drop()
    PostgresStore(url, loaded, steps=PG_SCHEMA.version - 1).close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            f"ALTER SCHEMA {_quote(schema_name(loaded))} RENAME TO {_quote(schema_name(name))}"
        )
    try:
        with held.read() as tx:
            assert not has_step(tx, last)
    finally:
        held.drop()
