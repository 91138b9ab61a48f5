"""What the attacks share: a real ``recuerdo serve`` that takes extra arguments, raw HTTP (the
bytes a polite client refuses to send), the one error shape, the CLI as a subprocess, MCP through
the official client, and a scan of every file a memory keeps on disk."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from http.client import HTTPResponse
from pathlib import Path
from typing import Any

import anyio
import pytest

import recuerdo

from ..conftest import Server
from ..forks import recuerdo_command
from ..test_mcp import http_session

# The meaning model is not under attack here and costs seconds per process: the servers run
# with full-text search only.
FAST_ENV = {"RECUERDO_EMBEDDER": "none"}
HeaderItems = Sequence[tuple[str | bytes, str | bytes]]


@dataclass
class Reply:
    status: int
    headers: dict[str, str]  # names lower-cased
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def __repr__(self) -> str:  # what a failed assertion shows
        return f"Reply({self.status}, {self.headers.get('content-type')!r}, {self.body[:400]!r})"


def _with_umask(mask: int | None) -> Callable[[], None] | None:
    """What a child process runs before exec: set its umask (None leaves it as inherited)."""
    if mask is None:
        return None

    def apply() -> None:
        os.umask(mask)

    return apply


def _bytes(value: str | bytes) -> bytes:
    return value if isinstance(value, bytes) else value.encode("latin-1")


@functools.lru_cache(maxsize=4)
def _chunked(body: bytes) -> bytes:
    """``body`` in chunked transfer coding, 64 KiB a chunk. Kept: the error-shape table sends
    the same 8 MiB and 64 MiB bodies to every route (a bytes object keeps its hash)."""
    step = 65536
    parts = [body[i : i + step] for i in range(0, len(body), step)]
    return b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in parts) + b"0\r\n\r\n"


class AttackServer(Server):
    """``recuerdo serve`` with extra arguments (``--ingest-root``, ``--allowed-host``), its own
    environment and umask; stderr goes to a file, so a chatty server never blocks on a pipe."""

    def __init__(
        self,
        base: Path,
        *,
        memory: str = "shared",
        profile: str = "native",
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        umask: int | None = None,
        wait: bool = True,
    ) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.base = base
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = base.parent / f"{base.name}.serve-{self.port}.log"
        self.failure: RuntimeError | None = None
        command = recuerdo_command("--memory", memory, "serve")
        command += ["--host", "127.0.0.1", "--port", str(self.port), "--profile", profile, *args]
        full_env = {**os.environ, **FAST_ENV, "RECUERDO_STATE_DIR": str(base), **(env or {})}
        with self.log.open("w") as err:
            self.process = subprocess.Popen(
                command,
                stdout=subprocess.DEVNULL,
                stderr=err,
                text=True,
                env=full_env,
                preexec_fn=_with_umask(umask),
            )
        if wait:
            self._wait()

    def ready(self) -> AttackServer:
        """Wait for a server started with ``wait=False`` (several start at once that way);
        a server that could not start raises its error each time it is asked for."""
        if self.failure is None:
            try:
                self._wait()
            except RuntimeError as error:
                self.failure = error
        if self.failure is not None:
            raise self.failure
        return self

    def _wait(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited: {self.stderr()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"server did not start: {self.stderr()}")

    def stderr(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> str:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.stderr()

    def kill9(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def send(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: HeaderItems = (),
        *,
        chunked: bool = False,
        timeout: float = 30,
    ) -> Reply:
        """One request written byte by byte: any header value, any body, chunked or not."""
        names = {_bytes(name).lower() for name, _ in headers}
        head = [f"{method} {path} HTTP/1.1".encode()]
        if b"host" not in names:
            head.append(f"Host: 127.0.0.1:{self.port}".encode())
        head += [_bytes(name) + b": " + _bytes(value) for name, value in headers]
        if body is not None and chunked:
            head.append(b"Transfer-Encoding: chunked")
        elif body is not None and b"content-length" not in names:
            head.append(f"Content-Length: {len(body)}".encode())
        head.append(b"Connection: close")
        sent = b"" if body is None else _chunked(body) if chunked else body
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as conn:
            # A server may answer (413) and close before reading everything.
            with contextlib.suppress(OSError):
                conn.sendall(b"\r\n".join(head) + b"\r\n\r\n")
                conn.sendall(sent)
            response = HTTPResponse(conn, method=method)
            response.begin()
            data = response.read()
            return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, data)

    def call(
        self,
        verb: str,
        body: object = None,
        *,
        token: str | None = None,
        memory: str | None = "m",
        headers: HeaderItems = (),
        prefix: str = "/v1/",
    ) -> Reply:
        """``POST /v1/<verb>?memory=...`` with a JSON body."""
        query = f"?memory={memory}" if memory else ""
        extra: list[tuple[str | bytes, str | bytes]] = [("Content-Type", "application/json")]
        if token:
            extra.append(("Authorization", f"Bearer {token}"))
        data = json.dumps({} if body is None else body).encode()
        return self.send("POST", f"{prefix}{verb}{query}", data, [*extra, *headers])

    def ok(self, verb: str, body: object = None, **kwargs: Any) -> Any:
        """A call that must succeed; its JSON result."""
        reply = self.call(verb, body, **kwargs)
        assert reply.status == 200, (verb, reply)
        return reply.json()


def assert_error(reply: Reply, status: int, code: str) -> dict[str, Any]:
    """The one error shape: that status, JSON, ``{ok: false, error: code, detail: text}``."""
    assert reply.status == status, reply
    media = reply.headers.get("content-type", "").split(";")[0].strip()
    assert media == "application/json", reply
    shape = json.loads(reply.body)
    assert isinstance(shape, dict), reply
    assert shape.get("ok") is False and shape.get("error") == code, reply
    assert isinstance(shape.get("detail"), str) and shape["detail"], reply
    return shape


def shape_problem(reply: Reply, status: int, code: str) -> str | None:
    """What is wrong with a refusal (status, media type, shape, code), or None when it is
    exactly ``status`` with ``{ok: false, error: code, detail: text}``."""
    media = reply.headers.get("content-type", "").split(";")[0].strip()
    try:
        shape = json.loads(reply.body)
    except ValueError:
        shape = None
    if (
        reply.status == status
        and media == "application/json"
        and isinstance(shape, dict)
        and shape.get("ok") is False
        and shape.get("error") == code
        and isinstance(shape.get("detail"), str)
        and shape["detail"]
    ):
        return None
    return f"{reply.status} {media} {reply.body[:160]!r}"


def assert_shape(reply: Reply) -> dict[str, Any]:
    """Any non-2xx answer: JSON ``{ok: false, error: <str>, detail: <str>}``."""
    media = reply.headers.get("content-type", "").split(";")[0].strip()
    assert media == "application/json", reply
    shape = json.loads(reply.body)
    assert isinstance(shape, dict) and shape.get("ok") is False, reply
    assert isinstance(shape.get("error"), str) and shape["error"], reply
    assert isinstance(shape.get("detail"), str), reply
    return shape


def snapshot(
    server: AttackServer,
    *,
    token: str | None = None,
    memory: str = "m",
    scopes: Sequence[str] = ("user",),
    queries: Sequence[str] = (),
) -> list[Any]:
    """What a memory holds as a client sees it: every exported record of the scopes (the export's
    own timestamp left out), every entry, and the results of some searches; a memory that
    does not exist (reads never create one) is seen as just that."""
    seen: list[Any] = []
    probe = server.call("recall", {"limit": 1}, token=token, memory=memory)
    if probe.status == 404:
        return [assert_error(probe, 404, "memory_not_found")["error"]]
    for scope in scopes:
        cursor = None
        while True:
            body: dict[str, Any] = {"scope": scope, "limit": 1024}
            if cursor:
                body["cursor"] = cursor
            page = server.ok("export", body, token=token, memory=memory)
            seen += [r for r in page["records"] if r["record"] != "export"]
            cursor = page["next"]
            if cursor is None:
                break
    seen.append(server.ok("recall", {"from": "*", "limit": 100_000}, token=token, memory=memory))
    for query in queries:
        found = server.ok("search", {"query": query}, token=token, memory=memory)
        seen.append([(r["item_type"], r["id"]) for r in found["results"]])
    return seen


def state_files(base: Path) -> list[Path]:
    """Every file recuerdo keeps under a base folder (memories, their -wal/-shm, tokens.db)."""
    return sorted(path for path in (base / ".recuerdo").rglob("*") if path.is_file())


def hits(base: Path, needles: Iterable[str], *, fold: bool = False) -> dict[str, list[str]]:
    """For each needle found in any state file, the files holding it (ASCII case folded on
    request)."""
    contents = {path.name: path.read_bytes() for path in state_files(base)}
    if fold:
        contents = {name: data.lower() for name, data in contents.items()}
    found: dict[str, list[str]] = {}
    for needle in needles:
        raw = needle.lower().encode() if fold else needle.encode()
        holders = [name for name, data in contents.items() if raw in data]
        if holders:
            found[needle] = holders
    return found


def cli(
    *args: str,
    base: Path | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    umask: int | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """``recuerdo [--state-dir BASE] ARGS`` as a subprocess."""
    command = recuerdo_command()
    if base is not None:
        command += ["--state-dir", str(base)]
    full_env = {**os.environ, **FAST_ENV, **(env or {})}
    return subprocess.run(
        [*command, *args],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd,
        timeout=timeout,
        check=False,
        preexec_fn=_with_umask(umask),
    )


@contextlib.contextmanager
def local_memory(base: Path, name: str) -> Iterator[recuerdo.Memory]:
    """A memory opened in this process (no interpreter to start), without the meaning model."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RECUERDO_EMBEDDER", "none")
        memory = recuerdo.open(name, base_dir=base)
        try:
            yield memory
        finally:
            memory.close()


def tokens_at_once(base: Path, *principals: Sequence[str]) -> list[str]:
    """Several ``recuerdo token create`` at once (each pays the interpreter's start); the
    secrets, in order."""
    running = [
        subprocess.Popen(
            recuerdo_command("--state-dir", str(base), "token", "create", *args),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **FAST_ENV},
        )
        for args in principals
    ]
    secrets = []
    for process in running:
        out, err = process.communicate(timeout=60)
        assert process.returncode == 0, err
        secrets.append(out.strip().splitlines()[-1])
    return secrets


def mcp_call(
    server: Server,
    tool: str,
    arguments: dict[str, Any],
    *,
    memory: str = "m",
    token: str | None = None,
) -> tuple[bool, Any]:
    """One tool call through the official MCP client over /mcp: (is_error, structured content)."""

    async def scenario() -> tuple[bool, Any]:
        headers = {"Authorization": f"Bearer {token}"} if token else None
        async with http_session(server, memory=memory, headers=headers) as session:
            result = await session.call_tool(tool, arguments)
            return bool(result.is_error), result.structured_content

    return anyio.run(scenario)


class Launcher:
    """Starts servers for one module and stops them all at its end."""

    def __init__(self, factory: pytest.TempPathFactory) -> None:
        self.factory = factory
        self.started: list[AttackServer] = []

    def __call__(self, base: Path | None = None, **options: Any) -> AttackServer:
        server = AttackServer(base or self.factory.mktemp("attack"), **options)
        self.started.append(server)
        return server

    def many(self, *configs: dict[str, Any]) -> list[AttackServer]:
        """Several servers started at once (their start-up costs overlap). Each is ready, or
        raises its own start-up error from ``ready()`` in the test that uses it."""
        servers = [self(**{**config, "wait": False}) for config in configs]
        for server in servers:
            with contextlib.suppress(RuntimeError):
                server.ready()
        return servers

    def stop_all(self) -> None:
        for server in self.started:
            server.stop()


@pytest.fixture(scope="module")
def launch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Launcher]:
    """``launch(base=None, **options)`` or ``launch.many(options, ...)``: servers of a module."""
    launcher = Launcher(tmp_path_factory)
    yield launcher
    launcher.stop_all()


@pytest.fixture(scope="session")
def semurg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AttackServer]:
    """One loopback server with the semurg profile (it serves /v1/<verb>, /v1/memory/* and
    /mcp), shared by the modules that only send it requests."""
    server = AttackServer(tmp_path_factory.mktemp("semurg"), profile="semurg")
    yield server
    server.stop()
