"""How a CLI command finds a ``recuerdo serve`` already running for its state dir.

Loading the meaning model takes seconds; a server has it loaded. While it runs, a loopback
server leaves a marker in the state dir (``.recuerdo/state/server.json``: its URL, its process id
and whether it asks for tokens), removed when it stops. A CLI verb then goes to that server over
the HTTP door instead of opening the memory itself. A marker whose process is gone is ignored
(and removed), and so is a server that refuses the connection (nothing reached it).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

from ..engine import prepare_state_dir, state_root

MARKER = "server.json"
LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})


def marker_path(state_dir: str | None) -> Path:
    return state_root(state_dir) / MARKER


class _Terminated(Exception):
    pass


def _terminated(signum: int, frame: FrameType | None) -> None:
    raise _Terminated


@contextlib.contextmanager
def announced(state_dir: str | None, url: str, single_user: bool) -> Iterator[None]:
    """Leave the marker while the body runs (the server serving); remove it after, unless
    another server has replaced it meanwhile. Also on SIGTERM: uvicorn shuts down gracefully,
    then raises the signal again, which would end the process before any ``finally``; here it
    is caught, the marker removed, and the process then ends by the signal as before."""
    path = marker_path(state_dir)
    # The marker comes before any memory is opened: its folders are made as a memory's are
    # (0700, with the .gitignore), else `.recuerdo` came out 0755 and the first open warned.
    prepare_state_dir(path)
    record = {"url": url, "pid": os.getpid(), "single_user": single_user}
    partial = path.with_name(f".{MARKER}.{os.getpid()}")
    partial.write_text(json.dumps(record))
    os.chmod(partial, 0o600)
    os.replace(partial, path)
    previous = signal.signal(signal.SIGTERM, _terminated)
    terminated = False
    try:
        yield
    except _Terminated:
        terminated = True
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
        with contextlib.suppress(OSError, ValueError):
            if json.loads(path.read_text()).get("pid") == os.getpid():
                path.unlink()
    if terminated:
        os.kill(os.getpid(), signal.SIGTERM)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive, though not ours to use
    return True


def running_server(state_dir: str | None, *, have_token: bool) -> str | None:
    """The URL of a server running for this state dir that this command may use, else None."""
    path = marker_path(state_dir)
    try:
        record = json.loads(path.read_text())
        url, pid, single_user = record["url"], int(record["pid"]), bool(record["single_user"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(url, str) or urllib.parse.urlsplit(url).hostname not in LOOPBACK:
        return None
    if not _alive(pid):
        with contextlib.suppress(OSError):
            path.unlink()  # stale: its server died without cleaning up
        return None
    if not single_user and not have_token:
        return None  # it asks for a token this command does not have
    return url


def refused(error: BaseException) -> bool:
    """Whether a call failed because nothing listens at the server's address (it is starting
    or gone): nothing reached it, so the command may run locally instead."""
    cause = error.__cause__
    reason = getattr(cause, "reason", cause)
    return isinstance(reason, ConnectionRefusedError)
