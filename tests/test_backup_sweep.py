"""What an open's sweep of dead restores' scratch copies (decisions 0128, 0135) leaves alone:
anything under a scratch name that is no plain file a restore made, and the copy of a restore
that another process is running."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import recuerdo
from recuerdo.engine import check_memory

SCRATCH_NAME = ".x.db.restoring-0123456789ab"


def _memory(base: Path) -> Path:
    with recuerdo.open("mine", base_dir=base, embedder="none") as memory:
        memory.remember("learning", "kept")
    return base / ".recuerdo" / "state"


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


@pytest.mark.parametrize("kind", ["directory", "link to a file", "link to a folder"])
def test_an_open_leaves_what_is_no_scratch_copy_under_a_scratch_name(
    tmp_path: Path, kind: str
) -> None:
    """The sweep opened whatever bore the name: a directory made every open of a memory
    beside it fail (IsADirectoryError), and a link was removed."""
    state = _memory(tmp_path)
    odd = state / SCRATCH_NAME
    folder, document = tmp_path / "folder", tmp_path / "notes.txt"
    folder.mkdir()
    document.write_text("the user's")
    if kind == "directory":
        odd.mkdir()
        (odd / "inside.txt").write_text("the user's")
    else:
        odd.symlink_to(document if kind == "link to a file" else folder)
    with recuerdo.open("mine", base_dir=tmp_path, embedder="none", create=False) as memory:
        assert memory.recall()[0]["content"] == "kept"
    assert check_memory("mine", base_dir=tmp_path)["dead_restores"] == []
    assert os.path.lexists(odd) and document.read_text() == "the user's" and folder.is_dir()


def test_a_sweep_that_stops_partway_leaves_the_copys_name_for_the_next(tmp_path: Path) -> None:
    """The copy's name went first, then its `-wal` and `-shm`: a sweep stopped between them
    (killed, or a companion it could not remove: a folder here) left a `-wal` of every
    tenant's rows that no sweep or check looks for, as only the name is matched."""
    state = _memory(tmp_path)
    dead = state / SCRATCH_NAME
    dead.write_bytes(b"every tenant's rows")
    Path(f"{dead}-shm").write_bytes(b"an index of them")
    Path(f"{dead}-wal").mkdir()
    recuerdo.open("mine", base_dir=tmp_path, embedder="none", create=False).close()
    assert check_memory("mine", base_dir=tmp_path)["dead_restores"] == [SCRATCH_NAME]
    Path(f"{dead}-wal").rmdir()
    recuerdo.open("mine", base_dir=tmp_path, embedder="none", create=False).close()
    assert sorted(p.name for p in state.iterdir()) == ["mine.db"]


_OPEN_AND_CHECK = """
import sys, recuerdo
from recuerdo.engine import check_memory
recuerdo.open("mine", base_dir=sys.argv[1], embedder="none", create=False).close()
print(check_memory("mine", base_dir=sys.argv[1])["dead_restores"])
"""


@pytest.mark.parametrize("linked", [False, True])
def test_an_open_never_waits_on_a_pipe_under_a_scratch_name(tmp_path: Path, linked: bool) -> None:
    """The sweep's read-only open of a pipe waits for a writer that never comes: every open
    (and `check`) of a memory beside it hung."""
    state = _memory(tmp_path)
    pipe = state / SCRATCH_NAME
    if linked:
        os.mkfifo(tmp_path / "pipe")
        pipe.symlink_to(tmp_path / "pipe")
    else:
        os.mkfifo(pipe)
    run = subprocess.run(
        [sys.executable, "-c", _OPEN_AND_CHECK, str(tmp_path)],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]" and os.path.lexists(pipe)


_PAUSED_RESTORE = """
import sys, time
from pathlib import Path
from recuerdo.engine import restore_memory
base = Path(sys.argv[1])
calls = []
def progress(done, total):
    calls.append(done)
    if len(calls) == 2:  # its copy is made, locked and half loaded
        (base / "loading").write_text("")
        while not (base / "go on").exists():
            time.sleep(0.01)
restore_memory("restored", base / "whole.rbk", base_dir=base, progress=progress)
"""


def test_opens_and_checks_leave_the_copy_of_a_restore_another_process_runs(
    tmp_path: Path,
) -> None:
    """A restore in another process, paused mid-load, holds its copy's lock: twenty opens
    of a memory beside it and a check neither remove nor name it, and it restores whole."""
    with recuerdo.open("mine", base_dir=tmp_path, embedder="none") as memory:
        memory.remember_many([{"category": "learning", "content": f"row {i}"} for i in range(600)])
        memory.backup(tmp_path / "whole.rbk")
    restore = subprocess.Popen([sys.executable, "-c", _PAUSED_RESTORE, str(tmp_path)], env=_env())
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "loading").exists():
            assert restore.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
        state = tmp_path / ".recuerdo" / "state"
        copies = {p.name for p in state.iterdir() if ".restored.db.restoring-" in p.name}
        assert copies
        for _ in range(20):
            recuerdo.open("mine", base_dir=tmp_path, embedder="none", create=False).close()
        assert check_memory("mine", base_dir=tmp_path)["dead_restores"] == []
        assert copies <= {p.name for p in state.iterdir()}
        (tmp_path / "go on").write_text("")
        assert restore.wait(timeout=60) == 0
    finally:
        if restore.poll() is None:
            restore.kill()
            restore.wait()
    with recuerdo.open("restored", base_dir=tmp_path, embedder="none", create=False) as memory:
        assert len(memory.recall(limit=1000)) == 600
