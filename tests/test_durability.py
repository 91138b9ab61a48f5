"""Crash safety and concurrency with real processes on a real file."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import recuerdo
from recuerdo.store.sqlite import sqlite3
from recuerdo.store.sqlite.schema import SCHEMA

from .conftest import run_python
from .forks import python_command

WRITER = """
import sys, recuerdo
mem = recuerdo.open("crashy", base_dir=sys.argv[1])
i = 0
while True:
    entry_id = mem.remember("context", f"entry {i}", ["crash"])
    print(entry_id, flush=True)
    i += 1
"""


@pytest.mark.slow
def test_acknowledged_writes_survive_sigkill(base: Path) -> None:
    proc = subprocess.Popen(python_command(WRITER, str(base)), stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    acknowledged: list[int] = []
    deadline = time.monotonic() + 60
    while len(acknowledged) < 300 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        acknowledged.append(int(line))
    os.kill(proc.pid, signal.SIGKILL)
    # whatever the pipe still holds was acknowledged too
    acknowledged += [int(line) for line in proc.stdout.read().split()]
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert len(acknowledged) >= 300
    path = base / ".recuerdo" / "state" / "crashy.db"
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    with recuerdo.open("crashy", base_dir=base) as mem:
        stored = {e["id"] for e in mem.recall(tags=["crash"], limit=1_000_000)}
        assert set(acknowledged) <= stored
        # and the memory keeps working after the crash
        assert mem.remember("context", "after the crash") > max(acknowledged)


CONCURRENT = """
import sys, recuerdo
worker = sys.argv[2]
mem = recuerdo.open("busy", base_dir=sys.argv[1]).agent("w" + worker)
for i in range(500):
    mem.remember("context", f"w{worker}-{i}", ["load"])
print("done")
"""


@pytest.mark.slow
def test_four_processes_write_concurrently_without_loss(base: Path) -> None:
    recuerdo.open("busy", base_dir=base).close()  # create the file first, as a host would
    procs = [
        subprocess.Popen(
            python_command(CONCURRENT, str(base), str(n)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(4)
    ]
    outputs = [proc.communicate(timeout=300) for proc in procs]
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
        assert out.strip() == "done"
        assert err == ""
    with recuerdo.open("busy", base_dir=base) as mem:
        everything = mem.recall(tags=["load"], limit=10_000)
    assert len(everything) == 2000
    assert {e["content"] for e in everything} == {f"w{w}-{i}" for w in range(4) for i in range(500)}
    assert len({e["id"] for e in everything}) == 2000


def test_two_new_processes_opening_one_new_file(base: Path) -> None:
    """Both create and migrate the same new file at once: neither fails, schema applied once."""
    code = f"import recuerdo; recuerdo.open('race', base_dir={str(base)!r}).remember('rule', 'r')"
    procs = [
        subprocess.Popen(python_command(code), stderr=subprocess.PIPE, text=True) for _ in range(3)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    with recuerdo.open("race", base_dir=base) as mem:
        assert len(mem.recall()) == 3
    state = base / ".recuerdo" / "state"
    conn = sqlite3.connect(state / "race.db")
    names = [r[0] for r in conn.execute("SELECT name FROM _migrations")]
    conn.close()
    assert len(names) == len(set(names))
    assert sorted(p.name for p in state.iterdir()) == ["race.db"]  # no draft of the losers


CREATOR = """
import os, sys, recuerdo
print(os.getpid(), flush=True)
i = 0
while True:
    recuerdo.open(f"new-{i}", base_dir=sys.argv[1]).close()
    print(i, flush=True)
    i += 1
"""


def test_a_process_killed_while_creating_memories_leaves_only_whole_ones(base: Path) -> None:
    """Killed at any moment of making new memories, a process leaves each name either absent
    or a whole store (every step recorded), and nothing else: never an empty file that a
    read would take for a memory, nor a half-written draft."""
    # A new store takes some milliseconds to make: each kill comes a little later into one.
    for attempt, delay in enumerate((0.0005, 0.002, 0.004, 0.006, 0.008)):
        folder = base / f"kill{attempt}"
        proc = subprocess.Popen(python_command(CREATOR, str(folder)), stdout=subprocess.PIPE)
        assert proc.stdout is not None
        guard = threading.Timer(60, proc.kill)  # a hung child fails the test, never the run
        guard.start()
        try:
            creator = int(proc.stdout.readline())
            for _ in range(3):  # a few stores made, then somewhere in the next
                assert proc.stdout.readline(), "the creating process ended"
            time.sleep(delay)
            os.kill(creator, signal.SIGKILL)  # the process itself, not a launcher before it
            proc.stdout.read()
            proc.wait(timeout=30)
        finally:
            guard.cancel()
        state = folder / ".recuerdo" / "state"
        names = sorted(p.name for p in state.iterdir())
        # (SQLite's own companions may stay: it finishes or undoes their work at the next open.)
        companions = (".db", ".db-wal", ".db-shm", ".db-journal")
        assert names == [n for n in names if n.endswith(companions)], names
        for name in (n for n in names if n.endswith(".db")):
            conn = sqlite3.connect(state / name)
            try:
                steps = sorted(r[0] for r in conn.execute("SELECT name FROM _migrations"))
            except sqlite3.DatabaseError as exc:
                steps = [f"{name}: {exc}"]
            finally:
                conn.close()
            assert steps == sorted(SCHEMA.names()), name


def test_opening_the_same_name_twice_in_one_process_shares_state(base: Path) -> None:
    first = recuerdo.open("twice", base_dir=base)
    second = recuerdo.open("twice", base_dir=base)
    first.remember("learning", "from the first handle")
    assert second.recall()[0]["content"] == "from the first handle"
    first.close()
    second.remember("learning", "second handle still works")
    assert len(second.recall()) == 2
    second.close()
    done = run_python(
        f"import recuerdo; print(len(recuerdo.open('twice', base_dir={str(base)!r}).recall()))"
    )
    assert done.stdout.strip() == "2", done.stderr


def _commit_mode(tx: object, dialect: str = "sqlite") -> str:
    """How the open transaction will commit: ``durable`` (waits for the disk) or ``relaxed``."""
    dialect_probe = {
        "sqlite": ("PRAGMA synchronous", {2: "durable", 3: "durable", 1: "relaxed"}),
        "postgres": ("SHOW synchronous_commit", {"on": "durable", "off": "relaxed"}),
    }
    statement, meaning = dialect_probe[dialect]
    return meaning[tx.scalar(statement)]  # type: ignore[attr-defined]


def test_a_rebuildable_write_commits_without_waiting_and_the_next_write_is_durable(
    memory: recuerdo.Memory,
) -> None:
    store = memory._store
    dialect = store.dialect
    # A memory held in RAM has no disk to wait for: its commits are the same either way.
    relaxed = "durable" if store.location == ":memory:" else "relaxed"
    with store.write() as tx:
        assert _commit_mode(tx, dialect) == "durable"
    with store.write(durable=False) as tx:
        assert _commit_mode(tx, dialect) == relaxed
        tx.execute("INSERT INTO index_marks (name, upto) VALUES ('probe', 7)")
    with store.read() as tx:  # committed all the same
        assert tx.scalar("SELECT upto FROM index_marks WHERE name = 'probe'") == 7
    with pytest.raises(RuntimeError), store.write(durable=False):
        raise RuntimeError("the block fails")
    with store.write() as tx:  # a failed relaxed write leaves the next one durable
        assert _commit_mode(tx, dialect) == "durable"
        with store.write(durable=False) as inner:  # a nested write joins the outer one
            assert _commit_mode(inner, dialect) == "durable"


def test_index_upkeep_commits_relaxed_and_every_acknowledged_write_durably(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker's chunking and re-cut rows are made again from the items after a machine
    crash, so they need not wait for the disk; the note's own save always does."""
    from recuerdo.index import chunks

    seen: dict[str, list[str]] = {"chunk": [], "recut": [], "save": []}
    for name, step in (("chunk", "chunk_backlog"), ("recut", "rechunk_backlog")):
        original = getattr(chunks, step)

        def probe(tx: object, _original: object = original, _name: str = name) -> int:
            seen[_name].append(_commit_mode(tx))
            return _original(tx)  # type: ignore[operator, no-any-return]

        monkeypatch.setattr(chunks, step, probe)
    from recuerdo.notes import operations

    saving = operations.save

    def save_probe(tx: object, **kwargs: object) -> object:
        seen["save"].append(_commit_mode(tx))
        return saving(tx, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(operations, "save", save_probe)
    with recuerdo.open("relaxed", base_dir=base) as memory:
        memory.save("Deploys", "Deploys go out on Tuesdays.", key="deploys")
        memory._upkeep.drain()
        memory.save("Deploys", "Deploys go out on Thursdays.", key="deploys")
        memory._upkeep.drain()
        assert memory.search("Thursdays", stages=["lexical"])["results"]
    assert seen["save"] == ["durable", "durable"]
    assert seen["chunk"] and set(seen["chunk"]) == {"relaxed"}
    assert seen["recut"] and set(seen["recut"]) == {"relaxed"}


def test_vectors_are_written_durably_because_the_saved_index_names_them(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The saved HNSW file is written by a thread of its own, outside the WAL's order, and
    names the highest vector it covers: a vector it holds must never be undone by a machine
    crash, or its reused id would point the file at other text (and a forget would miss it)."""
    from recuerdo.store.sqlite.connection import SQLiteStore

    writes: list[tuple[str, bool]] = []
    original = SQLiteStore.write

    def spy(self: SQLiteStore, *, durable: bool = True) -> object:
        writes.append((sys._getframe(1).f_code.co_name, durable))
        return original(self, durable=durable)

    monkeypatch.setattr(SQLiteStore, "write", spy)
    with recuerdo.open("vectors", base_dir=base) as memory:
        memory.remember("learning", "the deploy runbook lives in the wiki")
        memory._upkeep.drain()
        assert memory.meaning_state() == "armed"
    embedding = [durable for caller, durable in writes if caller == "embed_backlog"]
    assert embedding and all(embedding)
    assert any(not durable for _, durable in writes)  # the spy sees the relaxed ones too
