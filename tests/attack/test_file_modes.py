"""Attack 9: another user of the machine reading (or replacing) a memory's files.

Whatever the umask (000 and 022 here), once the server and the CLI have created a memory and a
token: the state folders are 0700 and every memory file (``.db``, ``-wal``, ``-shm``) and the
token database are 0600. A file found with a looser mode is tightened on open, with a warning on
stderr that names it.
"""

from __future__ import annotations

import os
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ..forks import recuerdo_command
from .conftest import FAST_ENV, Launcher, local_memory

MASKS = (0o000, 0o022)


def _modes(base: Path) -> dict[str, int]:
    """The permission bits of every folder and file under ``<base>/.recuerdo``."""
    root = base / ".recuerdo"
    found = {".recuerdo": stat.S_IMODE(root.stat().st_mode)} if root.exists() else {}
    for path in root.rglob("*") if root.exists() else []:
        found[str(path.relative_to(base))] = stat.S_IMODE(path.stat().st_mode)
    return found


def _run(base: Path, mask: int, *args: str) -> subprocess.Popen[str]:
    def apply() -> None:
        os.umask(mask)

    return subprocess.Popen(
        recuerdo_command("--state-dir", str(base), *args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **FAST_ENV},
        preexec_fn=apply,
    )


@dataclass(repr=False)
class Seen:
    modes: dict[int, dict[str, int]] = field(default_factory=dict)  # umask -> path -> mode
    loose_before: dict[str, int] = field(default_factory=dict)
    loose_after: dict[str, int] = field(default_factory=dict)
    served_stderr: str = ""
    cli_stderr: str = ""
    cli_code: int = -1


@pytest.fixture(scope="module")
def seen(launch: Launcher, tmp_path_factory: pytest.TempPathFactory) -> Seen:
    """Per umask: a token and a memory made by the CLI, a memory written through the server
    (modes read while it runs, so -wal and -shm exist). Beside them (umask 022), two memories
    whose files were loosened to 0644 (their folder to 0755) before anything ran: one opened
    by the server, one by the CLI."""
    result = Seen()
    bases = {mask: tmp_path_factory.mktemp(f"umask{mask:03o}") for mask in MASKS}
    loose_base = bases[0o022]
    for name in ("loose-served", "loose-cli"):
        with local_memory(loose_base, name) as memory:
            memory.remember("learning", "made before the modes were loosened")
    state = loose_base / ".recuerdo" / "state"
    for name in ("loose-served.db", "loose-cli.db"):
        (state / name).chmod(0o644)
    state.chmod(0o755)
    result.loose_before = _modes(loose_base)
    made = [
        _run(base, mask, "token", "create", "--principal", "p", "--tenant", "t")
        for mask, base in bases.items()
    ] + [
        _run(base, mask, "--memory", "cli-made", "remember", "learning", "made by the CLI")
        for mask, base in bases.items()
    ]
    loose_cli = _run(loose_base, 0o022, "--memory", "loose-cli", "summary")
    servers = launch.many(*({"base": bases[mask], "umask": mask} for mask in MASKS))
    outputs = [process.communicate(timeout=120) for process in made]
    assert all(process.returncode == 0 for process in made), outputs
    _, result.cli_stderr = loose_cli.communicate(timeout=120)
    result.cli_code = loose_cli.returncode
    tokens = {mask: outputs[i][0].strip().splitlines()[-1] for i, mask in enumerate(MASKS)}
    for mask, server in zip(MASKS, servers, strict=True):
        if mask == 0o022:
            server.ok("recall", {}, memory="loose-served", token=tokens[mask])
        server.ok("remember", {"category": "learning", "content": "served"}, token=tokens[mask])
        result.modes[mask] = _modes(bases[mask])
    result.loose_after = result.modes[0o022]
    result.served_stderr = servers[-1].stderr()
    return result


@pytest.mark.parametrize("mask", MASKS, ids=[f"umask {m:03o}" for m in MASKS])
def test_state_folders_are_private(seen: Seen, mask: int) -> None:
    """``.recuerdo`` (which holds tokens.db) and ``.recuerdo/state`` are 0700: no one else
    lists, reads or replaces what is inside."""
    modes = seen.modes[mask]
    folders = {path: oct(mode) for path, mode in modes.items() if path in (".recuerdo",
               ".recuerdo/state")}  # fmt: skip
    assert folders == {".recuerdo": "0o700", ".recuerdo/state": "0o700"}


@pytest.mark.parametrize("mask", MASKS, ids=[f"umask {m:03o}" for m in MASKS])
def test_memory_files_and_tokens_are_0600(seen: Seen, mask: int) -> None:
    """Every memory file (.db, -wal, -shm, made by the CLI, by the server, or found loose)
    and tokens.db: 0600."""
    modes = seen.modes[mask]
    expected = {
        ".recuerdo/tokens.db",
        ".recuerdo/state/cli-made.db",
        ".recuerdo/state/m.db",
        ".recuerdo/state/m.db-wal",
        ".recuerdo/state/m.db-shm",
    }
    assert expected <= set(modes), sorted(modes)
    stored = {path: oct(mode) for path, mode in modes.items() if ".db" in path}
    assert stored == {path: "0o600" for path in stored}


def test_a_loose_mode_is_fixed_on_open_with_a_warning(seen: Seen) -> None:
    """Files loosened to 0644 (folder to 0755) are 0600 (0700) once the server and the CLI
    have opened them, and each says so on stderr, naming the file."""
    assert seen.loose_before[".recuerdo/state/loose-served.db"] == 0o644  # control
    after = seen.loose_after
    assert oct(after[".recuerdo/state"]) == "0o700"
    assert oct(after[".recuerdo/state/loose-served.db"]) == "0o600"
    assert oct(after[".recuerdo/state/loose-cli.db"]) == "0o600"
    assert "loose-served.db" in seen.served_stderr, seen.served_stderr[-2000:]
    assert seen.cli_code == 0, seen.cli_stderr[-2000:]
    assert "loose-cli.db" in seen.cli_stderr, seen.cli_stderr[-2000:]
