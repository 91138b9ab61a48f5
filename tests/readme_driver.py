"""Runs the README's code blocks in order, as a newcomer pasting them would.

Usage: ``python readme_driver.py README.md PORT`` from an empty folder. Python blocks run in one
namespace (a later block uses the ``memory`` an earlier one opened); shell blocks run in bash,
stopping at the first failing line. A block preceded by ``<!-- readme: background -->`` starts a
server: it runs in the background while the blocks after it run, until the next such block or
the end. ``<!-- readme: skip (reason) -->`` skips a block. The README's port (7700) becomes PORT
(in the blocks' text, and as ``RECUERDO_PORT`` for ``serve``), so the run never meets another
server. Prints the block that failed and exits 1.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import traceback
import urllib.request
from pathlib import Path

BLOCK = re.compile(
    r"^(?:<!-- readme: (?P<mark>[^\n]*?) -->\n)?```(?P<lang>\w*)\n(?P<body>.*?)^```$",
    re.S | re.M,
)
README_PORT = "7700"


def blocks(text: str) -> list[tuple[int, str, str, str]]:
    """(line, language, mark, body) of every fenced block."""
    return [
        (text[: m.start()].count("\n") + 1, m["lang"], m["mark"] or "", m["body"])
        for m in BLOCK.finditer(text)
    ]


def wait_for(port: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the server ended with {server.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("the server did not answer")


def stop(server: subprocess.Popen[bytes] | None) -> None:
    if server is None or server.poll() is not None:
        return
    os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()


def main() -> int:
    readme, port = Path(sys.argv[1]), sys.argv[2]
    os.environ["RECUERDO_PORT"] = port
    namespace: dict[str, object] = {"__name__": "__readme__"}
    server: subprocess.Popen[bytes] | None = None
    try:
        for line, language, mark, body in blocks(readme.read_text()):
            if mark.startswith("skip"):
                print(f"line {line}: skipped {mark[4:].strip()}", flush=True)
                continue
            print(f"line {line}: {language} block", flush=True)
            try:
                if language == "python":
                    exec(compile(body, f"README.md block at line {line}", "exec"), namespace)
                elif language in ("sh", "bash"):
                    script = body.replace(README_PORT, port)
                    if mark == "background":
                        stop(server)
                        server = subprocess.Popen(
                            ["bash", "-c", f"exec {script.strip()}"],
                            stdin=subprocess.DEVNULL,
                            start_new_session=True,
                        )
                        wait_for(port, server)
                        continue
                    subprocess.run(
                        ["bash", "-e", "-o", "pipefail", "-c", script],
                        stdin=subprocess.DEVNULL,
                        check=True,
                        timeout=300,
                    )
            except Exception:
                traceback.print_exc()
                print(f"README.md: the {language} block at line {line} failed", flush=True)
                return 1
    finally:
        stop(server)
        for value in namespace.values():
            close = getattr(value, "close", None)
            if type(value).__name__ == "Memory" and callable(close):
                close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
