"""Attack 7: a full disk.

The state folder is a 2 MB tmpfs. Writes go on until the disk refuses one: the refusal is 507
``storage_full`` in the error shape (never 500), the store stays consistent, every
acknowledged write is still there, and once space is freed writes work again. Opening a new
memory on the full disk is refused the same way and leaves no file behind.
"""

from __future__ import annotations

import os
import random
import shutil
import string
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from recuerdo.store.sqlite import sqlite3

from .conftest import Launcher, Reply, assert_error

MAX_WRITES = 3000  # far more than 2 MB can hold: the loop always ends on a refusal


@pytest.fixture(scope="module")
def small_disk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a 2 MB tmpfs needs root")
    if shutil.which("mount") is None:
        pytest.skip("no mount command on this machine")
    folder = tmp_path_factory.mktemp("tmpfs")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        if subprocess.run(["umount", str(folder)], check=False).returncode != 0:
            subprocess.run(["umount", "-l", str(folder)], check=False)


@dataclass(repr=False)  # a failure report shows the test's own message, not every reply
class Filled:
    state: Path
    acknowledged: list[int] = field(default_factory=list)
    refusals: list[Reply] = field(default_factory=list)
    integrity: str = ""
    stored_ids: set[int] = field(default_factory=set)
    recalled: Reply | None = None
    new_memory: Reply | None = None
    new_memory_files: list[str] = field(default_factory=list)
    after_freeing: Reply | None = None
    kept_after_freeing: bool = False


def _text(rng: random.Random) -> str:
    # Random words: every trigram new, so the full-text indexes grow as fast as the text.
    return " ".join(
        "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 9)))
        for _ in range(900)
    )


@pytest.fixture(scope="module")
def filled(small_disk: Path, launch: Launcher) -> Filled:
    base = small_disk / "base"
    base.mkdir()
    server = launch(base)
    state = base / ".recuerdo" / "state"
    seen = Filled(state)
    rng = random.Random(7)
    seen.acknowledged.append(server.ok("remember", {"category": "learning", "content": "first"}))
    free = os.statvfs(small_disk).f_bavail * os.statvfs(small_disk).f_frsize
    filler = state / "filler.bin"
    filler.write_bytes(b"\0" * max(0, free - 700_000))
    for _ in range(MAX_WRITES):
        reply = server.call("remember", {"category": "learning", "content": _text(rng)})
        if reply.status == 200:
            seen.acknowledged.append(reply.json())
            continue
        seen.refusals.append(reply)
        if len(seen.refusals) == 5:
            break
    try:
        conn = sqlite3.connect(state / "m.db")
        try:
            seen.integrity = str(conn.execute("PRAGMA integrity_check").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.DatabaseError as error:
        seen.integrity = f"error: {error}"
    seen.new_memory = server.call(  # a write: the one call that creates a memory
        "remember", {"category": "learning", "content": "first"}, memory="newcomer"
    )
    seen.new_memory_files = sorted(p.name for p in state.glob("newcomer*"))
    filler.unlink()
    recalled = seen.recalled = server.call("recall", {"from": "*", "limit": 100_000})
    if recalled.status == 200:
        seen.stored_ids = {entry["id"] for entry in recalled.json()}
    seen.after_freeing = server.call(
        "remember", {"category": "learning", "content": "after the space came back"}
    )
    if seen.after_freeing.status == 200:
        again = server.ok("recall", {"search": "space came back", "from": "*"})
        seen.kept_after_freeing = [e["id"] for e in again] == [seen.after_freeing.json()]
    server.stop()
    return seen


def test_the_disk_filled_and_writes_were_refused(filled: Filled) -> None:
    """Control: some writes were acknowledged, then the disk refused writes (the loop did not
    run out first)."""
    assert len(filled.acknowledged) >= 2
    assert filled.refusals, "no write was refused: the disk never filled"


def test_a_full_disk_answers_507_storage_full(filled: Filled) -> None:
    """Every refused write (the first and the ones after it) is 507 storage_full in the error
    shape, never a 500."""
    for reply in filled.refusals:
        assert_error(reply, 507, "storage_full")


def test_the_store_stays_consistent_and_keeps_every_acknowledged_write(filled: Filled) -> None:
    """integrity_check is ok on the full disk, and every acknowledged id is still stored (read
    once space is back)."""
    assert filled.integrity == "ok"
    missing = set(filled.acknowledged) - filled.stored_ids
    assert filled.recalled is not None and filled.recalled.status == 200, filled.recalled
    assert not missing, f"{len(missing)} acknowledged writes lost"


def test_writes_work_again_once_space_is_freed(filled: Filled) -> None:
    """The filler file beside the store removed: the next write is acknowledged and kept."""
    assert filled.after_freeing is not None and filled.after_freeing.status == 200, (
        filled.after_freeing
    )
    assert filled.kept_after_freeing


def test_a_new_memory_on_a_full_disk_leaves_no_file(filled: Filled) -> None:
    """Creating a new memory (its first write) while the disk is full: 507 storage_full, and
    no file of it (not even an empty one) is left in the state folder."""
    assert filled.new_memory is not None
    assert_error(filled.new_memory, 507, "storage_full")
    assert filled.new_memory_files == []
