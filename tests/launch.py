"""``python -I -S launch.py SOCKET -m recuerdo ARGS...`` (or ``-c CODE ARGS...``): that command,
started in a child of the suite's pre-imported process (``tests/forks.py``) instead of a new
interpreter.

To whoever started it, it behaves as that command would: the child gets this process's stdin,
stdout and stderr (the same pipes), environment, working directory and umask; a signal this
process gets is passed on; it exits with the child's code, or dies of the child's signal. If it
is killed outright (SIGKILL), the forking process kills the child. Where that process is gone,
or refuses the environment, this process becomes ``python -m recuerdo ARGS`` (or ``python -c``)
itself.

Built-in modules only (``socket``, ``json`` and ``signal`` would import ``re`` and ``enum``), and
no ``site``: it starts in about 10 ms of CPU.
"""

import _signal
import _socket
import marshal
import os
import sys

PASSED_ON = (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP, _signal.SIGQUIT, _signal.SIGUSR1)


def become_the_command(args: list[str]) -> None:
    os.execv(sys.executable, [sys.executable, *args])


def read_line(link: _socket.socket, pending: bytearray) -> bytes:
    while b"\n" not in pending:
        chunk = link.recv(4096)
        if not chunk:
            return b""
        pending += chunk
    line, _, rest = bytes(pending).partition(b"\n")
    pending[:] = rest
    return line


def main() -> None:
    path, args = sys.argv[1], sys.argv[2:]
    umask = os.umask(0)
    os.umask(umask)
    pending = bytearray()
    try:
        request = marshal.dumps(
            {"args": args, "env": dict(os.environ), "cwd": os.getcwd(), "umask": umask}
        )
        link = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        link.connect(path)
        fds = b"".join(n.to_bytes(4, sys.byteorder) for n in (0, 1, 2))  # C ints
        link.sendmsg(
            [len(request).to_bytes(4, "big")], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)]
        )
        link.sendall(request)
        first = read_line(link, pending)
    except OSError:
        become_the_command(args)
        return
    if not first.startswith(b"pid "):
        become_the_command(args)  # refused: the environment asks for another interpreter
        return
    child = int(first.split()[1])
    for number in PASSED_ON:
        _signal.signal(number, lambda received, _frame: os.kill(child, received))
    last = read_line(link, pending)
    if not last.startswith(b"exit "):
        sys.exit(f"launch.py: the forking process went away before {args} ended")
    code = int(last.split()[1])
    if code < 0:
        if -code != _signal.SIGKILL:  # whose handling cannot be set (nor needs to be)
            _signal.signal(-code, _signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code)


if __name__ == "__main__":
    main()
