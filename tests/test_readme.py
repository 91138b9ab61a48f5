"""Every code block of the README runs as printed, in order, in an empty folder.

The blocks are run by ``readme_driver.py`` in a process of their own, from an empty folder, with
this environment's ``recuerdo`` first on PATH and a HOME holding the git repository the code
section names (``~/src/shop``). That ``recuerdo`` runs the CLI as the installed command does,
forked from the suite's pre-imported process (``tests/forks.py``, decision 0036): some
fifteen commands, half a second of CPU each as new interpreters. The installed command itself
is run by ``test_cli.py``. The static embedder's table is read from this machine's cache
folder (``RECUERDO_CACHE_DIR``): the fake HOME would otherwise distil a private copy, half a
minute of CPU that ``test_static_embedder.py`` already covers. The one other liberty taken: the
README's port, 7700, is replaced by a free one (``RECUERDO_PORT`` for ``serve``, and in the
blocks' URLs). Servers (blocks marked ``<!-- readme: background -->``) run in the background
while the later blocks run; only blocks marked ``<!-- readme: skip (reason) -->`` are left out.
"""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from recuerdo.index.static import cache_dir

from .forks import recuerdo_command
from .gitrepo import Repo
from .readme_driver import blocks

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _home_with_a_repository(tmp_path: Path) -> Path:
    """The newcomer's own repository at ~/src/shop: a src/app.py changed in 25 commits."""
    home = tmp_path / "home"
    repo = Repo(home / "src" / "shop")
    for step in range(25):
        repo.commit(
            f"Tune the retry budget ({step})",
            {"src/app.py": f"RETRY_BUDGET = {step}\n\n\ndef retry():\n    return RETRY_BUDGET\n"},
        )
    return home


def test_every_skipped_block_says_why() -> None:
    skipped = [mark for _, _, mark, _ in blocks(README.read_text()) if mark.startswith("skip")]
    assert all(mark.removeprefix("skip").strip(" ()") for mark in skipped), skipped
    assert len(skipped) <= 1, "a README block that is not run must be the exception"


@pytest.mark.slow
def test_the_readme_runs_verbatim(tmp_path: Path) -> None:
    work = tmp_path / "newcomer"
    work.mkdir()
    home = _home_with_a_repository(tmp_path)
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("RECUERDO_") and key != "VIRTUAL_ENV"
    }
    commands = tmp_path / "bin"
    commands.mkdir()
    shim = commands / "recuerdo"
    shim.write_text(f'#!/bin/sh\nexec {shlex.join(recuerdo_command())} "$@"\n')
    shim.chmod(0o755)
    path = [str(commands), str(Path(sys.executable).parent), env.get("PATH", "")]
    env["PATH"] = os.pathsep.join(path)
    env["HOME"] = str(home)
    env["RECUERDO_CACHE_DIR"] = str(cache_dir())
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "readme_driver.py"), str(README), str(_free_port())],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-6000:]
