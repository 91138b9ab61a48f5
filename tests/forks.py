"""The suite's ``recuerdo`` commands, forked from one pre-imported process.

The suite starts some 200 ``recuerdo`` processes (CLI calls, ``serve``, stdio MCP servers). A new
interpreter spends 0.4-0.9 s of CPU importing recuerdo, FastAPI, uvicorn and the MCP SDK before
it does anything, which was a quarter of the suite's CPU. Here each pytest worker starts one
process that imports all that once (:func:`serve`); :func:`recuerdo_command` gives the argv of a
tiny launcher (``tests/launch.py``) that asks it for a child to run the command in, and
:func:`python_command` the same for ``python -c`` helpers that use recuerdo.

What the test sees is the command's own behaviour: the child runs ``python -m recuerdo ARGS``
through ``runpy`` (or the code, as ``-c`` runs it) with the launcher's stdin, stdout, stderr,
environment, working directory and umask, and ends as an interpreter does (threads joined,
``atexit``, buffers flushed); the launcher exits with its code or dies of its signal. What it
does not see is the import itself: ``tests/test_start_cost.py`` and the README's commands still
start real interpreters, and ``RECUERDO_TEST_FORKS=0`` turns this off for the whole run.

An environment that asks Python for something else (another ``PYTHONPATH``, say) is refused,
and the launcher starts a real interpreter instead. The forking process has no threads when it
forks: anything imported that starts one turns it off.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import marshal
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import types
from pathlib import Path

LAUNCH = Path(__file__).resolve().parent / "launch.py"
SWITCH = "RECUERDO_TEST_FORKS"
# What a child of this process could not honour: it has already read them.
INTERPRETER_ENV = (
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSAFEPATH",
    "PYTHONNOUSERSITE",
    "PYTHONOPTIMIZE",
)

# What chooses and finds the embedder (read when a memory first embeds).
EMBEDDER_ENV = (
    "RECUERDO_EMBEDDER",
    "RECUERDO_EMBED_URL",
    "RECUERDO_EMBED_MODEL",
    "RECUERDO_EMBED_KEY",
    "RECUERDO_EMBED_MIN_SIMILARITY",
    "RECUERDO_CACHE_DIR",
    "XDG_CACHE_HOME",
    "HOME",
)

_lock = threading.Lock()
_started: dict[str, object] = {}
# The worker's environment before any test changed it: the forking process starts at some
# test's first command, and must not keep that test's monkeypatched variables.
_WORKER_ENV = dict(os.environ)


def recuerdo_command(*args: str) -> list[str]:
    """The argv of ``python -m recuerdo ARGS``, forked from this worker's pre-imported process
    when there is one."""
    return _command("-m", "recuerdo", *args)


def python_command(code: str, *args: str) -> list[str]:
    """The argv of ``python -c CODE ARGS``, forked likewise. Only for code that imports
    recuerdo as it is: code that changes what an import finds, or checks what importing does,
    needs a real interpreter."""
    return _command("-c", code, *args)


def _command(*interpreter_args: str) -> list[str]:
    socket_path = _forking_process()
    if socket_path is None:
        return [sys.executable, *interpreter_args]
    return [sys.executable, "-I", "-S", str(LAUNCH), socket_path, *interpreter_args]


def _forking_process() -> str | None:
    if os.environ.get(SWITCH) == "0":
        return None
    with _lock:
        if "path" not in _started:
            _started["path"] = _start()
        return _started["path"]  # type: ignore[return-value]


def _start() -> str | None:
    folder = tempfile.mkdtemp(prefix="forks-")
    path = os.path.join(folder, "socket")
    process = subprocess.Popen(
        [sys.executable, __file__, path],
        env=_WORKER_ENV,
        cwd=folder,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=None,
        text=True,
    )
    assert process.stdout is not None
    ready = process.stdout.readline().strip()
    if ready != "ready":
        process.kill()
        process.wait()
        return None

    def stop() -> None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(folder, ignore_errors=True)

    atexit.register(stop)
    return path


# The forking process itself (run as a script).


class _Request:
    def __init__(self, link: socket.socket) -> None:
        head, fds, _flags, _address = socket.recv_fds(link, 4, 3)
        if len(head) != 4 or len(fds) != 3:
            for fd in fds:
                os.close(fd)
            raise OSError("incomplete request")
        self.fds = fds
        (size,) = struct.unpack("!I", head)
        body = b""
        while len(body) < size:
            chunk = link.recv(size - len(body))
            if not chunk:
                raise OSError("incomplete request")
            body += chunk
        fields = marshal.loads(body)  # the launcher's own, over a socket only we can reach
        self.args: list[str] = fields["args"]
        self.env: dict[str, str] = fields["env"]
        self.cwd: str = fields["cwd"]
        self.umask: int = fields["umask"]
        self.link = link


def _prepare() -> bool:
    """Import what the commands use, then check that nothing left a thread running."""
    import recuerdo
    import recuerdo.doors.cli

    # (What a server imports as it starts or at its first request, measured with py-spy.)
    for optional in (
        "recuerdo.doors.http",
        "recuerdo.doors.mcp",
        "recuerdo.doors.web",
        "jsonschema",
        "numpy.ma",
        "anyio._backends._asyncio",
        "uvicorn",
        "uvloop",
        "uvicorn.protocols.http.auto",
    ):
        with contextlib.suppress(ImportError):
            __import__(optional)
    # A new store's schema is built once per process (decision 0034): once here, for all.
    recuerdo.open("warm", in_memory=True, embedder="none").close()
    # So are the MCP tool listings (JSON schemas written from the reply types) ...
    with contextlib.suppress(ImportError):
        from recuerdo.doors.mcp import build_server
        from recuerdo.doors.profiles import PROFILES

        for name in PROFILES:
            build_server(None, name)  # type: ignore[arg-type]
    # ... and the default embedder (its files hashed, its table checked, its tokenizer read),
    # where its table is cached or shipped: distilling one is a test's business, not this one's.
    with contextlib.suppress(Exception):
        from recuerdo.index import embed, static

        key = static.source_key(*static.minilm_files())
        if static.table_path(key).exists() or static.shipped_path(key).exists():
            embed.load_embedder("auto")
    gc.collect()
    gc.freeze()  # the children inherit these objects: leave their pages shared
    return threading.active_count() == 1


def serve(path: str) -> _Request | None:
    """Answer launchers until the worker that started this goes; in a child, return its
    request (the caller turns into the command)."""
    parent = os.getppid()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    stopping = False

    def on_term(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_term)
    print("ready", flush=True)
    running: dict[int, socket.socket] = {}  # child pid -> its launcher's link

    while not stopping and os.getppid() == parent:
        links = {link.fileno(): (pid, link) for pid, link in running.items()}
        readable, _, _ = select.select([listener, wake_read, *links], [], [], 1.0)
        if wake_read in readable:
            os.read(wake_read, 4096)
            _reap(running)
        for fd in readable:
            if fd in links:  # the launcher is gone (killed): so goes its command
                pid, link = links[fd]
                try:
                    gone = not link.recv(1)
                except OSError:
                    gone = True
                if gone:
                    _kill(pid)
        if listener in readable:
            link, _ = listener.accept()
            try:
                request = _Request(link)
            except (OSError, ValueError, KeyError):
                link.close()
                continue
            if any(request.env.get(name) != os.environ.get(name) for name in INTERPRETER_ENV):
                link.sendall(b"refused\n")
                link.close()
                for fd in request.fds:
                    os.close(fd)
                continue
            pid = os.fork()
            if pid == 0:
                signal.set_wakeup_fd(-1)
                for number in (signal.SIGCHLD, signal.SIGTERM):
                    signal.signal(number, signal.SIG_DFL)
                os.close(wake_read)
                os.close(wake_write)
                listener.close()
                for other in running.values():
                    other.close()
                return request
            for fd in request.fds:
                os.close(fd)
            running[pid] = link
            link.sendall(f"pid {pid}\n".encode())
    for pid in list(running):
        _kill(pid)
    _reap(running)
    listener.close()
    os.unlink(path)
    return None


def _reap(running: dict[int, socket.socket]) -> None:
    while running:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        link = running.pop(pid, None)
        if link is not None:
            with contextlib.suppress(OSError):
                link.sendall(f"exit {os.waitstatus_to_exitcode(status)}\n".encode())
            link.close()


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def become(request: _Request) -> None:
    """Turn this child into the command (``-m recuerdo ARGS`` or ``-c CODE ARGS``) as the
    launcher would have run it."""
    import runpy

    if any(request.env.get(name) != os.environ.get(name) for name in EMBEDDER_ENV):
        from recuerdo.index import embed

        embed._cache.clear()  # the embedder warmed here is not the one this command asks for
    request.link.close()
    for number, fd in enumerate(request.fds):
        os.dup2(fd, number)
        os.close(fd)
    os.umask(request.umask)
    os.chdir(request.cwd)
    os.environ.clear()
    os.environ.update(request.env)
    option, target, *args = request.args
    if option == "-m":
        sys.path[0] = os.getcwd()  # as ``-m`` puts it
        sys.argv = ["-m", *args]
        runpy.run_module(target, run_name="__main__", alter_sys=True)
        return
    sys.path[0] = ""  # as ``-c`` puts it
    sys.argv = ["-c", *args]
    main = types.ModuleType("__main__")
    sys.modules["__main__"] = main
    exec(compile(target, "<string>", "exec"), main.__dict__)


if __name__ == "__main__":
    if not _prepare():
        print("threads at start: not forking", flush=True)
        sys.exit(0)
    child_request = serve(sys.argv[1])
    if child_request is not None:
        become(child_request)
