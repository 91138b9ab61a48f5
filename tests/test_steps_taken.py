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
