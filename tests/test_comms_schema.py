"""The messaging schema step, m012_comms: its place among the steps of both backends, and a
store written before it (by a recuerdo that already had m013) opened by this one."""

from __future__ import annotations

from pathlib import Path

import pytest

import recuerdo
from recuerdo.store import SQLiteStore
from recuerdo.store.postgres.schema import SCHEMA as POSTGRES
from recuerdo.store.sqlite import sqlite3
from recuerdo.store.sqlite.schema import SCHEMA


def test_the_comms_step_comes_before_pending_wikilinks() -> None:
    """m012_comms sits between m011 and m013 on SQLite, and the PostgreSQL steps follow the
    same order (a step name means the same place on both backends)."""
    names = SCHEMA.names()
    assert names.index("m012_comms") == names.index("m011_forgotten") + 1
    assert names.index("m013_pending_wikilinks") == names.index("m012_comms") + 1
    postgres = POSTGRES.names()
    assert "m012_comms" in postgres
    assert postgres == [name for name in names if name in postgres]


def test_a_store_written_without_the_comms_step_gains_it_on_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store that recorded m013 but not m012_comms (written by a recuerdo without messaging)
    opens: the missing step is applied and recorded, the version moves to this schema's, what
    the store held is kept, and two agents can then message each other."""
    path = tmp_path / ".recuerdo" / "state" / "older.db"
    path.parent.mkdir(parents=True)
    steps = list(SCHEMA.steps)
    monkeypatch.setattr(SCHEMA, "steps", [s for s in steps if s[0] != "m012_comms"])
    SQLiteStore(str(path)).close()
    monkeypatch.setattr(SCHEMA, "steps", steps)
    conn = sqlite3.connect(path)
    before = [r[0] for r in conn.execute("SELECT name FROM _migrations ORDER BY rowid")]
    assert "m013_pending_wikilinks" in before and "m012_comms" not in before
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA.version - 1
    conn.execute(
        "INSERT INTO items (tenant, scope, item_type, content, source, created_at, updated_at)"
        " VALUES ('local', 'user', 'entry', 'kept across the upgrade', 'old', 'x', 'x')"
    )
    conn.commit()
    conn.close()

    with recuerdo.open("older", base_dir=tmp_path) as memory:
        ann, bob = memory.agent("ann"), memory.agent("bob")
        ann.bind_address("ann@local")
        bob.bind_address("bob@local")
        sent = ann.send_message(["bob@local"], "hello", "after the upgrade")
        assert bob.inbox()["conversations"][0]["unread"] == 1
        assert bob.read_message(sent["id"])["body"] == "after the upgrade"

    conn = sqlite3.connect(path)
    after = [r[0] for r in conn.execute("SELECT name FROM _migrations ORDER BY rowid")]
    assert after == [*before, "m012_comms"]
    assert sorted(after) == sorted(SCHEMA.names())
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA.version
    kept = conn.execute("SELECT count(*) FROM items WHERE content = 'kept across the upgrade'")
    assert kept.fetchone()[0] == 1
    conn.close()
