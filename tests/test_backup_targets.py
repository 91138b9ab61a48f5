"""Where a backup is written and where a restore lands (decision 0121): a backup replaces only
an earlier archive and is readable by its owner alone; a restore given a PostgreSQL database
makes the memory there, whole or not at all; `check` and `recover` name the memory of the
database they are given, not a file of the same name."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

import recuerdo
from recuerdo.doors.cli import cli
from recuerdo.engine import check_memory, restore_memory
from recuerdo.engine import memory_names as recuerdo_memory_names
from recuerdo.store import backup_files
from recuerdo.store.postgres import PostgresStore, memory_names

from .postgres import system_url, unique_memory
from .test_backup import _rewrite, deep_dump, play

SCRIPT = [
    ("entry", ("Zebras prefer gravel paths", ["animals"], "user")),
    ("note", ("runbook", ["Restart the queue first.", "Then the workers."], True)),
    ("plan", ("deploy", ["build", "ship"], 1)),
    ("rule", ("budget", 5)),
    ("fact", ("ann", "bob", False)),
    ("messages", ("chat", ["hello there", "hi ann"])),
    ("pin", ("kept", True)),
    ("mute", ("drinks",)),
    ("forget", ("gone",)),
]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "not a file"


def _own_file(base: Path) -> Path:
    return base / ".recuerdo" / "state" / "mine.db"


def _other_memory(base: Path) -> Path:
    with recuerdo.open("other", base_dir=base, embedder="none") as other:
        other.remember("learning", "the other memory's only entry")
    return base / ".recuerdo" / "state" / "other.db"


def _document(base: Path) -> Path:
    (base / "notes.txt").write_text("a document of the user's, not a backup\n")
    return base / "notes.txt"


def _earlier_raw_copy(base: Path) -> Path:
    with recuerdo.open("mine", base_dir=base, embedder="none") as memory:
        memory.backup(base / "copy.db", raw=True)
    return base / "copy.db"


TARGETS: dict[str, Callable[[Path], Path]] = {
    "the memory's own file": _own_file,
    "another memory's file": _other_memory,
    "a document": _document,
    "a folder": lambda base: base,
    "an earlier raw copy": _earlier_raw_copy,
}


@pytest.mark.parametrize("raw", [False, True], ids=["archive", "raw"])
@pytest.mark.parametrize("target", list(TARGETS))
def test_a_backup_never_replaces_what_is_not_an_earlier_archive(
    base: Path, target: str, raw: bool
) -> None:
    """A backup onto its own memory's file replaced the live store with the archive (the next
    open: store_damaged, the writes after it lost); onto another memory, that memory."""
    with recuerdo.open("mine", base_dir=base, embedder="none") as memory:
        memory.remember("learning", "the entry that must survive")
    path = TARGETS[target](base)
    before = _digest(path)
    with recuerdo.open("mine", base_dir=base, embedder="none") as memory:
        with pytest.raises(recuerdo.Conflict) as refused:
            memory.backup(path, raw=raw)
        assert refused.value.code == "conflict"
        memory.remember("learning", "written after the refusal")
    if path != _own_file(base):  # the live file changes with the write; the reads below tell
        assert _digest(path) == before
    assert not list(path.parent.glob("*.partial*"))
    with recuerdo.open("mine", base_dir=base, embedder="none") as memory:
        assert len(memory.recall()) == 2


def test_an_archive_replaces_an_earlier_archive(base: Path) -> None:
    with recuerdo.open("mine", base_dir=base, embedder="none") as memory:
        memory.remember("learning", "first")
        memory.backup(base / "nightly.rbk")
        memory.remember("learning", "second")
        assert memory.backup(base / "nightly.rbk")["tables"]["items"] == 2
    restore_memory("again", base / "nightly.rbk", base_dir=base)
    with recuerdo.open("again", base_dir=base, embedder="none") as copy:
        assert len(copy.recall()) == 2


@pytest.mark.parametrize("raw", [False, True], ids=["archive", "raw"])
def test_a_backup_is_readable_by_its_owner_alone(base: Path, raw: bool) -> None:
    """It holds every tenant's data, as the memory's file (0600) does: it was made 0644."""
    previous = os.umask(0o022)
    try:
        with recuerdo.open("mine", base_dir=base, embedder="none") as memory:
            memory.remember("learning", "not for other users of the machine")
            path = Path(memory.backup(base / "out.bak", raw=raw)["path"])
    finally:
        os.umask(previous)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@contextmanager
def _dropped(url: str, *names: str) -> Iterator[None]:
    try:
        yield
    finally:
        for name in names:
            if name in memory_names(url):
                PostgresStore(url, name).drop()


def _scratch_schemas(url: str) -> list[str]:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'recuerdo\\_restoring$%'"
        ).fetchall()
    return [row[0] for row in rows]


def test_a_file_memory_moves_to_postgresql_and_back_unchanged(base: Path) -> None:
    """restore_memory made a file whatever the database it was given: a memory could not move
    to PostgreSQL."""
    url = system_url()
    name = unique_memory("moved")
    with recuerdo.open("original", base_dir=base, embedder="none") as memory:
        play(memory, SCRIPT)
        memory._upkeep.drain()
        wanted = [hit["id"] for hit in memory.search("gravel")["results"]]
        memory.backup(base / "file.rbk")
    with _dropped(url, name):
        restore_memory(name, base / "file.rbk", url=url)
        assert not (base / ".recuerdo" / "state" / f"{name}.db").exists()
        with recuerdo.open(name, url=url, embedder="none", create=False) as moved:
            moved.backup(base / "postgres.rbk")  # before the search below adds to the audit
            assert [hit["id"] for hit in moved.search("gravel")["results"]] == wanted
    restore_memory("back", base / "postgres.rbk", base_dir=base)
    state = base / ".recuerdo" / "state"
    back = deep_dump(state / "back.db")
    # PostgreSQL's mark of the folded copies its server made (its restore drops it) rides along.
    back["index_marks"] = [m for m in back["index_marks"] if "folded_copies" not in m]
    assert back == deep_dump(state / "original.db")


def test_a_restore_into_postgresql_overwrites_nothing_and_leaves_nothing(base: Path) -> None:
    url = system_url()
    name = unique_memory("taken")
    with recuerdo.open("src", base_dir=base, embedder="none") as memory:
        memory.remember("learning", "one")
        memory.remember("learning", "two")
        memory.backup(base / "good.rbk")
    _rewrite(base / "good.rbk", base / "cut.rbk", lambda lines: lines[:-1])
    with _dropped(url, name):
        with pytest.raises(recuerdo.InvalidInput):
            restore_memory(name, base / "cut.rbk", url=url)
        assert name not in memory_names(url)
        with recuerdo.open(name, url=url, embedder="none") as existing:
            existing.remember("learning", "already here")
        with pytest.raises(recuerdo.Conflict) as refused:
            restore_memory(name, base / "good.rbk", url=url)
        assert refused.value.code == "conflict"
        with recuerdo.open(name, url=url, embedder="none") as existing:
            assert [e["content"] for e in existing.recall()] == ["already here"]
    assert not _scratch_schemas(url)


def _run(base: Path, url: str, *args: str) -> tuple[int, dict[str, object]]:
    result = CliRunner().invoke(
        cli, ["--state-dir", str(base), "--database-url", url, "--json", *args]
    )
    return result.exit_code, json.loads(result.output or "{}")


def test_the_cli_restores_checks_and_refuses_recover_in_the_database_it_is_given(
    base: Path,
) -> None:
    """With --database-url, `restore` wrote a file and said it restored the memory (which the
    database then did not hold); `check` and `recover` looked for a file of that name."""
    url = system_url()
    name = unique_memory("cli")
    with recuerdo.open(name, base_dir=base, embedder="none") as memory:
        memory.save("Runbook", "Restart the queue first.", key="runbook")
        memory.backup(base / "cli.rbk")
    with _dropped(url, name):
        code, _ = _run(base, url, "--memory", name, "restore", str(base / "cli.rbk"))
        assert code == 0
        with recuerdo.open(name, url=url, embedder="none", create=False) as restored:
            assert restored.search("queue")["results"]
        code, report = _run(base, url, "--memory", name, "check")
        assert (code, report["ok"]) == (0, True)
        assert str(report["path"]).endswith(f"#recuerdo_{name}")
        code, error = _run(base, url, "--memory", name, "recover", str(base / "out.db"))
        assert code != 0 and error["error"] == "invalid_input"
        assert not (base / "out.db").exists()


def test_a_backup_never_replaces_another_memorys_archive(base: Path) -> None:
    """Any archive was an "earlier archive": `mine`'s backup replaced `other`'s only one."""
    with recuerdo.open("other", base_dir=base, embedder="none") as other:
        other.remember("learning", "the other memory's only entry")
        other.backup(base / "other.rbk")
    before = _digest(base / "other.rbk")
    with (
        recuerdo.open("mine", base_dir=base, embedder="none") as memory,
        pytest.raises(recuerdo.Conflict) as refused,
    ):
        memory.backup(base / "other.rbk")
    assert refused.value.code == "conflict"
    assert _digest(base / "other.rbk") == before
    assert not list(base.glob("*.partial*"))


def test_two_restores_of_one_name_make_one_memory_whole(base: Path) -> None:
    """Both loaded into one `.NAME.db.restoring`: the loser's cleanup removed the winner's
    file, which then said it restored the memory and left it empty."""
    for name, count in (("first", 3), ("second", 4)):
        with recuerdo.open(name, base_dir=base, embedder="none") as memory:
            for i in range(count):
                memory.remember("learning", f"{name} entry {i}")
            memory.backup(base / f"{name}.rbk")
    outcome: dict[str, object] = {}

    def second() -> None:
        try:
            outcome["second"] = restore_memory("twin", base / "second.rbk", base_dir=base)
        except recuerdo.RecuerdoError as error:
            outcome["second"] = error

    def midway(done: int, total: int) -> None:  # the second restore runs while the first loads
        if "second" not in outcome and done:
            helper = threading.Thread(target=second)
            helper.start()
            helper.join(60)

    with pytest.raises(recuerdo.Conflict) as refused:
        restore_memory("twin", base / "first.rbk", base_dir=base, progress=midway)
    assert refused.value.code == "conflict"
    assert isinstance(outcome["second"], dict)
    with recuerdo.open("twin", base_dir=base, embedder="none", create=False) as twin:
        assert sorted(e["content"] for e in twin.recall()) == [
            f"second entry {i}" for i in range(4)
        ]
    assert [p.name for p in (base / ".recuerdo" / "state").iterdir() if "twin" in p.name] == [
        "twin.db"
    ]


_DIES_MIDWAY = """
import os, sys
from recuerdo.engine import restore_memory
def progress(done, total):
    if done:
        os._exit(9)
restore_memory(sys.argv[1], sys.argv[2], url=sys.argv[3], progress=progress)
"""


def test_a_restore_that_died_leaves_no_memory_and_the_next_removes_its_schema(
    base: Path,
) -> None:
    """Its scratch schema (`restoring-<hex>`) was listed as a memory, and stayed for good."""
    url = system_url()
    name, other = unique_memory("died"), unique_memory("after")
    with recuerdo.open("src", base_dir=base, embedder="none") as memory:
        memory.remember("learning", "one")
        memory.backup(base / "good.rbk")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    died = subprocess.run(
        [sys.executable, "-c", _DIES_MIDWAY, name, str(base / "good.rbk"), url], env=env
    )
    assert died.returncode == 9
    left = _scratch_schemas(url)
    assert left
    listed = set(recuerdo_memory_names(url=url))
    assert not {schema.removeprefix("recuerdo_") for schema in left} & listed
    with _dropped(url, other):
        restore_memory(other, base / "good.rbk", url=url)
        assert not set(left) & set(_scratch_schemas(url))
        assert name not in memory_names(url)


_FILE_RESTORE_DIES = """
import os, sys
from recuerdo.engine import restore_memory
def progress(done, total):
    if done:
        os._exit(9)
restore_memory(sys.argv[1], sys.argv[2], base_dir=sys.argv[3], progress=progress)
"""


def test_a_file_restore_that_died_leaves_no_copy_once_the_next_runs(base: Path) -> None:
    """Its `.NAME.db.restoring-<hex>` stayed in the state dir for good: every tenant's data,
    out of reach of any forget (decision 0128). A restore still loading keeps its own."""
    with recuerdo.open("src", base_dir=base, embedder="none") as memory:
        memory.remember_many(
            [{"category": "learning", "content": f"secret {i}"} for i in range(600)]
        )
        memory.backup(base / "good.rbk")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    died = subprocess.run(
        [sys.executable, "-c", _FILE_RESTORE_DIES, "died", str(base / "good.rbk"), str(base)],
        env=env,
        check=False,
    )
    assert died.returncode == 9
    state = base / ".recuerdo" / "state"
    left = [p.name for p in state.iterdir() if ".died.db.restoring-" in p.name]
    assert left  # the dead restore's copy is there until the next restore
    seen: list[list[str]] = []

    def midway(done: int, total: int) -> None:  # the live restore's own copy is never swept
        if done and not seen:
            seen.append([p.name for p in state.iterdir() if "restoring" in p.name])

    restore_memory("after", base / "good.rbk", base_dir=base, progress=midway)
    assert any(".after.db.restoring-" in name for name in seen[0])
    assert sorted(p.name for p in state.iterdir()) == ["after.db", "src.db"]
    with recuerdo.open("after", base_dir=base, embedder="none", create=False) as after:
        assert len(after.recall(limit=1000)) == 600


def _scratch_copy(state: Path, name: str) -> Path:
    copy = state / f".{name}.db.restoring-{os.urandom(6).hex()}"
    copy.write_bytes(b"every tenant's rows")
    Path(f"{copy}-wal").write_bytes(b"more rows")
    return copy


@pytest.mark.parametrize("door", ["library", "cli"])
def test_check_names_a_dead_restores_copy_and_the_next_open_removes_it(
    base: Path, door: str
) -> None:
    """Only the next restore looked for them (decision 0128): `check` said nothing of a dead
    restore's copy beside the memory, and opening memories there left it for good. A copy
    whose restore still holds its lock is named by neither and kept (decision 0135)."""
    with recuerdo.open("mine", base_dir=base, embedder="none") as memory:
        memory.remember("learning", "kept")
    state = base / ".recuerdo" / "state"
    dead, live = _scratch_copy(state, "died"), _scratch_copy(state, "loading")
    held = os.open(live, os.O_RDWR)
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a restore under way holds it
        if door == "cli":
            result = CliRunner().invoke(
                cli, ["--state-dir", str(base), "--memory", "mine", "check"]
            )
            assert result.exit_code == 0 and dead.name in result.output
            assert live.name not in result.output
        else:
            assert check_memory("mine", base_dir=base)["dead_restores"] == [dead.name]
        assert dead.exists()  # check only names it
        with recuerdo.open("mine", base_dir=base, embedder="none", create=False) as memory:
            assert memory.recall()[0]["content"] == "kept"
        assert sorted(p.name for p in state.iterdir() if "restoring" in p.name) == [
            live.name,
            f"{live.name}-wal",
        ]
        assert check_memory("mine", base_dir=base)["dead_restores"] == []
    finally:
        os.close(held)


def test_check_names_a_dead_restores_schema_in_the_database(base: Path) -> None:
    """`check` of a memory in PostgreSQL said nothing of the scratch schemas restores that
    died left in its database; one whose restore holds its lock is not named (0135)."""
    url = system_url()
    name = unique_memory("checked")
    dead, live = (f"recuerdo_restoring${os.urandom(6).hex()}" for _ in range(2))
    with psycopg.connect(url, autocommit=True) as conn, _dropped(url, name):
        recuerdo.open(name, url=url, embedder="none").close()
        for schema in (dead, live):
            conn.execute(f'CREATE SCHEMA "{schema}"')
        try:
            conn.execute(
                "SELECT pg_advisory_lock(hashtextextended(%s, 0))",
                [f"recuerdo-restoring:{live}"],
            )
            report = check_memory(name, url=url)
            assert dead in report["dead_restores"] and live not in report["dead_restores"]
            assert {dead, live} <= set(_scratch_schemas(url))  # named, not dropped
        finally:
            for schema in (dead, live):
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_a_restore_never_loads_into_a_copy_a_sweep_removed_as_it_began(tmp_path: Path) -> None:
    """Between creating its scratch file and locking it, a restore's copy looked dead to a
    sweep (an open's, another restore's), which removed it: the restore went on with a path
    naming no file, where SQLite then made a copy of its own, unlocked (about 1 claim in 100
    against a sweeping thread, here). It now takes another name (0135)."""
    stop = threading.Event()

    def sweeping() -> None:
        while not stop.is_set():
            backup_files.sweep_dead_restores(tmp_path)

    sweeper = threading.Thread(target=sweeping)
    sweeper.start()
    lost = refused = 0
    try:
        for _ in range(6000):
            try:
                copy, fd = backup_files.scratch_copy(tmp_path / "m.db")
            except (
                recuerdo.Conflict
            ):  # five claims in a row swept (once in a CI run): said, not lost
                refused += 1
                continue
            lost += not copy.exists()
            os.close(fd)
            copy.unlink(missing_ok=True)
    finally:
        stop.set()
        sweeper.join()
    assert lost == 0
    assert refused < 600  # the claims were made, most of them at the first name


def test_a_name_too_long_for_postgresql_is_refused_before_the_archive_is_loaded(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The name's schema was made only at the rename: the whole archive was loaded into a
    scratch schema first, then dropped, for a name refused whatever the archive."""
    url = system_url()
    with recuerdo.open("src", base_dir=base, embedder="none") as memory:
        memory.remember("learning", "one")
        memory.backup(base / "good.rbk")
    loads: list[object] = []
    monkeypatch.setattr(backup_files.archive, "load", lambda *a, **k: loads.append(a))
    name = unique_memory("long") + "-" + "x" * 60
    with pytest.raises(recuerdo.InvalidInput) as refused:
        restore_memory(name, base / "good.rbk", url=url)
    assert refused.value.code == "invalid_input" and "at most 54 bytes" in refused.value.detail
    assert loads == []
    assert name not in memory_names(url)
    assert not _scratch_schemas(url)
