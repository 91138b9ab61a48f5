"""The suite's forked ``recuerdo`` commands (tests/forks.py) behave as ``python -m recuerdo``
does to whoever started them: each check runs the real command and the forked one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from recuerdo.doors.running import marker_path

from .conftest import Server
from .forks import LAUNCH, SWITCH, python_command, recuerdo_command

REAL = "real"
FORKED = "forked"


def command(how: str, *args: str) -> list[str]:
    if how == REAL:
        return [sys.executable, "-m", "recuerdo", *args]
    if os.environ.get(SWITCH) == "0":
        pytest.skip("the suite's commands are not forked in this run")
    forked = recuerdo_command(*args)
    assert forked[2:4] == ["-S", str(LAUNCH)], forked
    return forked


def run(how: str, *args: str, **options: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command(how, *args), capture_output=True, text=True, timeout=60, check=False, **options
    )  # type: ignore[call-overload]


@pytest.mark.parametrize(
    "args",
    [
        ("--help",),
        ("--memory", "absent", "summary"),
        ("--memory", "a/b", "recall"),
        ("remember", "no-such-category", "text"),
    ],
    ids=["help", "missing-memory", "bad-name", "bad-category"],
)
def test_the_same_output_and_exit_code(args: tuple[str, ...], tmp_path: Path) -> None:
    real = run(REAL, "--state-dir", str(tmp_path), *args)
    forked = run(FORKED, "--state-dir", str(tmp_path), *args)
    assert (forked.returncode, forked.stdout, forked.stderr) == (
        real.returncode,
        real.stdout,
        real.stderr,
    )
    assert "Traceback" not in forked.stderr


@pytest.mark.parametrize(
    "code",
    [
        "import sys; print(sys.argv[1:], __name__); sys.exit(3)",
        "import sys, recuerdo; print(recuerdo.__name__, file=sys.stderr)",
        "raise ValueError('from the code')",
    ],
    ids=["argv-and-exit", "stderr", "exception"],
)
def test_python_code_runs_as_with_dash_c(code: str) -> None:
    if os.environ.get(SWITCH) == "0":
        pytest.skip("the suite's commands are not forked in this run")
    real = subprocess.run(
        [sys.executable, "-c", code, "one", "two"], capture_output=True, text=True, timeout=60
    )
    argv = python_command(code, "one", "two")
    assert argv[2:4] == ["-S", str(LAUNCH)], argv
    forked = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert (forked.returncode, forked.stdout) == (real.returncode, real.stdout)
    # A traceback names the forking process's frames too: its last line is the same.
    assert forked.stderr.splitlines()[-1:] == real.stderr.splitlines()[-1:]


def test_stdin_environment_working_directory_and_umask_reach_the_command(tmp_path: Path) -> None:
    """The state directory comes from the environment (relative to the caller's working
    directory), the entries from stdin; files are made under the caller's umask."""
    entries = json.dumps([{"category": "rule", "content": "from stdin"}])
    state = tmp_path / "state"
    state.mkdir()
    done = subprocess.run(
        recuerdo_command("--memory", "m", "--json", "remember_many", "--entries", "-"),
        input=entries,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "RECUERDO_STATE_DIR": "state"},
        cwd=tmp_path,
        preexec_fn=lambda: os.umask(0o077),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)) == 1
    # The store itself is made private whatever the umask; the folder's .gitignore is not.
    assert (state / ".recuerdo" / ".gitignore").stat().st_mode & 0o777 == 0o600
    listed = run(FORKED, "--state-dir", str(state), "--memory", "m", "--json", "recall")
    assert [e["content"] for e in json.loads(listed.stdout)] == ["from stdin"]


def test_another_python_path_gets_a_real_interpreter(tmp_path: Path) -> None:
    """A forked child could not honour PYTHONPATH (its interpreter started long before): the
    launcher starts a real one, whose startup runs the sitecustomize found there."""
    site = tmp_path / "site"
    site.mkdir()
    mark = tmp_path / "started"
    (site / "sitecustomize.py").write_text(f"open({str(mark)!r}, 'w').close()\n")
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run(recuerdo_command("--help"), env=env, capture_output=True, timeout=60)
    assert done.returncode == 0
    assert mark.exists()


@pytest.mark.parametrize("how", [REAL, FORKED])
def test_a_terminated_server_ends_by_its_signal(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    command(how)  # skips the forked case where forks are off
    if how == REAL:
        monkeypatch.setenv(SWITCH, "0")
    server = Server(tmp_path)
    assert (server.process.args[3] == str(LAUNCH)) == (how == FORKED)
    server.process.send_signal(signal.SIGTERM)
    server.process.communicate(timeout=30)
    assert server.process.returncode == -signal.SIGTERM
    assert not marker_path(str(tmp_path)).exists()


@pytest.mark.parametrize("number", [signal.SIGKILL, signal.SIGTERM], ids=["kill", "term"])
def test_a_command_killed_by_a_signal_is_a_launcher_killed_by_it(number: int) -> None:
    """A command that dies of a signal (a crash test kills the command's own process) leaves
    its launcher dead of the same signal, with nothing written: for SIGKILL the launcher died
    of a traceback instead (its handler cannot be set)."""
    code = f"import os; os.kill(os.getpid(), {int(number)})"
    if os.environ.get(SWITCH) == "0":
        pytest.skip("the suite's commands are not forked in this run")
    forked = subprocess.run(python_command(code), capture_output=True, text=True, timeout=60)
    assert (forked.returncode, forked.stderr) == (-number, "")


def test_a_killed_launcher_takes_its_command_with_it(tmp_path: Path) -> None:
    """SIGKILL cannot be passed on: the forking process sees the launcher go and kills the
    command (a server here), as a test that kills its server expects."""
    command(FORKED)
    server = Server(tmp_path)
    serving = json.loads(marker_path(str(tmp_path)).read_text())["pid"]
    assert serving != server.process.pid
    server.process.kill()
    server.process.wait(timeout=30)
    deadline = time.monotonic() + 30
    while _alive(serving) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(serving)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
