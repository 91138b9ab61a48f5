"""``recuerdo mirror pull`` against another mirror command run, as a real second process, at the
step of the pull where the ledger could be lost or go stale: the pull reads the ledger once, at
its start, and records what it pulled at its end. The pull runs in this process (click's
runner) so that the other command can be started at a chosen step; both are the real commands,
on the same files."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import recuerdo
from recuerdo.doors import mirror as mirror_door
from recuerdo.doors.cli import cli

from .forks import recuerdo_command

KEY = "odd/race/tasks"


def other(base: Path, *args: str) -> subprocess.Popen[str]:
    """Another mirror command, in a process of its own, on the same ledger and memory."""
    command = recuerdo_command("--state-dir", str(base), "--json", "--memory", "work")
    return subprocess.Popen(
        [*command, "mirror", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def finished(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = process.communicate(timeout=120)
    try:
        reply: dict[str, Any] = json.loads(out)
    except ValueError:
        raise AssertionError(out + err) from None
    return reply


def ledger_of(base: Path) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((base / ".recuerdo" / "mirror.json").read_text())
    return found


def lock_held(base: Path) -> bool:
    """Whether a command holds the ledger's lock now (the other command would wait for it)."""
    with open(base / ".recuerdo" / "mirror.lock", "ab") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


@contextlib.contextmanager
def meanwhile(
    monkeypatch: pytest.MonkeyPatch,
    owner: Any,
    name: str,
    when: Callable[..., bool],
    base: Path,
    *args: str,
) -> Iterator[list[dict[str, Any]]]:
    """Run ``mirror ARGS`` in another process right after the first call of ``owner.name``
    that ``when`` picks, to its end (or, if this process holds the ledger's lock then, as far
    as the lock lets it, ending after). Its reply is yielded."""
    real = getattr(owner, name)
    started: list[subprocess.Popen[str]] = []
    replies: list[dict[str, Any]] = []

    def hooked(*call: Any, **named: Any) -> Any:
        result = real(*call, **named)
        if not started and when(*call, **named):
            started.append(other(base, *args))
            if not lock_held(base):
                replies.append(finished(started[0]))
        return result

    monkeypatch.setattr(owner, name, hooked)
    yield replies
    assert started, f"the other command never ran: no {name} call was picked"
    if not replies:
        replies.append(finished(started[0]))


def pull(base: Path, *args: str) -> tuple[int, dict[str, Any]]:
    runner = CliRunner(env={"RECUERDO_STATE_DIR": str(base), "RECUERDO_MEMORY": "work"})
    result = runner.invoke(cli, ["--json", "mirror", "pull", *args], catch_exceptions=False)
    reply: dict[str, Any] = json.loads(result.stdout)
    return result.exit_code, reply


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_a_push_made_while_a_pull_of_a_file_never_synced_starts_keeps_its_entry(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pull found no entry, then recorded one of no version: a push that recorded the
    file in between lost its entry (the status said diverged after, and the next push went
    unchecked: no version to expect)."""
    (base / "elsewhere.md").write_text("# Elsewhere\n")
    assert finished(other(base, "push", str(base / "elsewhere.md"), "--key", "odd/e"))["version"]
    file = base / "tasks.md"
    file.write_text("# Tasks\n- [ ] one\n")
    ledger_file = (base / ".recuerdo" / "mirror.json").resolve()
    with meanwhile(
        monkeypatch, mirror_door, "_json", lambda path: path.resolve() == ledger_file, base,
        "push", str(file), "--key", KEY,
    ) as pushed:  # fmt: skip
        code, report = pull(base, str(file), "--key", KEY)
    assert pushed[0]["status"] == "in_sync", pushed
    entry = ledger_of(base)[str(file.resolve())]
    assert entry["version"] == pushed[0]["version"]
    assert entry["local_sha256"] == sha(file.read_text())
    assert (code, report["status"]) == (0, "in_sync"), report
    assert set(ledger_of(base)) == {str(file.resolve()), str((base / "elsewhere.md").resolve())}


@pytest.mark.parametrize("moved", ["push --force", "pull"])
def test_a_sync_made_while_a_pull_runs_is_not_replaced_by_an_older_version(
    base: Path, monkeypatch: pytest.MonkeyPatch, moved: str
) -> None:
    """The pull judged the file's state, fetched the memory's copy, then wrote it and recorded
    its version: another command that synced the file in between (a forced push, a pull of a
    newer version) was undone, the file and the ledger sent back to the older version (with
    a forced push, the ledger then named a version older than the memory's note it came
    from; the file lost the text pushed)."""
    from recuerdo.doors.cli import _State

    file = base / "tasks.md"
    file.write_text("# Tasks v1\n")
    assert finished(other(base, "push", str(file), "--key", KEY))["version"] == 1
    with recuerdo.open("work", base_dir=base) as memory:
        memory.save("tasks", "# Tasks v2\n", key=KEY, kind="mirror")
    if moved == "pull":  # the other pull finds a newer version still
        later = "# Tasks v3\n"
        command = ["pull", str(file)]
    else:  # the other command forces the local text back in
        later = "# Tasks v1\n"
        command = ["push", str(file), "--key", KEY, "--force"]
    copies: list[Any] = []

    def after_the_copy(state: Any, verb: Any, arguments: Any) -> bool:
        copies.append(verb.name)
        # The first mirror_get is the status's; the second, the copy the pull writes.
        if copies.count("mirror_get") != 2 or verb.name != "mirror_get":
            return False
        if moved == "pull":
            with recuerdo.open("work", base_dir=base) as memory:
                memory.save("tasks", later, key=KEY, kind="mirror")
        return True

    with meanwhile(monkeypatch, _State, "call", after_the_copy, base, *command) as synced:
        code, report = pull(base, str(file))
    assert synced[0]["status"] == "in_sync", synced
    entry = ledger_of(base)[str(file.resolve())]
    assert file.read_text() == later, report
    assert entry["version"] == 3 and entry["local_sha256"] == sha(later), (entry, report)
    assert (code, report["status"]) == (1, "refused"), report
    assert subprocess_status(base, file)[1][0]["status"] == "in_sync"


def subprocess_status(base: Path, file: Path) -> tuple[int, Any]:
    process = other(base, "status", str(file))
    out, err = process.communicate(timeout=120)
    try:
        return process.returncode, json.loads(out)
    except ValueError:
        raise AssertionError(out + err) from None


def test_a_pull_made_while_a_push_reads_its_file_is_not_undone(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A push read the file, then the ledger: a pull between the two wrote the memory's newer
    version and recorded it, so the push expected that version and stored the older text over
    it, unchecked (the memory's copy went back; the file then held what the memory no longer
    did). Read the other way round, the push expects the version its text was read against."""
    file = base / "tasks.md"
    file.write_text("# Tasks v1\n")
    assert finished(other(base, "push", str(file), "--key", KEY))["version"] == 1
    with recuerdo.open("work", base_dir=base) as memory:
        memory.save("tasks", "# Tasks v2\n", key=KEY, kind="mirror")
    runner = CliRunner(env={"RECUERDO_STATE_DIR": str(base), "RECUERDO_MEMORY": "work"})
    picked = lambda path: path.resolve() == file.resolve()  # noqa: E731
    with meanwhile(monkeypatch, mirror_door, "_read", picked, base, "pull", str(file)) as pulled:
        result = runner.invoke(cli, ["--json", "mirror", "push", str(file), "--key", KEY])
    assert pulled[0]["status"] == "in_sync", pulled
    pushed = json.loads(result.stdout)
    assert (result.exit_code, pushed["status"]) == (1, "diverged"), pushed
    with recuerdo.open("work", base_dir=base) as memory:
        assert memory.mirror_get(KEY)["content"] == "# Tasks v2\n"
    assert file.read_text() == "# Tasks v2\n"
    assert subprocess_status(base, file)[1][0]["status"] == "in_sync"
