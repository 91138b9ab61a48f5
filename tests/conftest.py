from __future__ import annotations

import copy
import functools
import json
import os
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import recuerdo
from recuerdo.store import audit_sweep, chunk_text
from recuerdo.store.postgres import PostgresStore
from recuerdo.store.postgres.chunk_spans import WORDS
from recuerdo.store.sqlite import sqlite3
from recuerdo.store.sqlite.connection import SQLiteStore, SQLiteTx

from .forks import python_command, recuerdo_command
from .postgres import (
    contract_store,
    contract_url,
    drop_contract_store,
    embedded_url,
    unique_memory,
)

ROOT = Path(__file__).resolve().parent.parent
OverHttp = Callable[[str, dict[str, Any]], Any]
"""A verb's call over HTTP: its name and arguments, and its reply (:func:`over_http`)."""


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    drop_contract_store()


# The suite runs on two workers, and xdist hands each one a file at a time, in the order
# collected (``--no-loadscope-reorder``: by default it orders files by their number of tests,
# which put slow files of one or two tests, the README's or schemathesis's, at the very end,
# and one worker idled for 14 s while the other finished them). The slowest files start
# first, so the run ends on short ones. Slowest first, from the test times of two whole runs
# (junit XML, setup included); a file not listed starts after these, in its usual order.
SLOWEST_FIRST = (
    "attack/test_error_shape.py",
    "web/test_lens_single_user.py",
    "test_pgvector.py",
    "test_static_embedder.py",
    "test_comms_doors.py",
    "test_comms.py",
    "test_search.py",
    "test_postgres_erasure.py",
    "test_reads_never_create.py",
    "web/test_lens_tokens.py",
    "test_knowledge.py",
    "test_schemathesis.py",
    "test_postgres_rls.py",
    "test_first_minutes.py",
    "contracts/test_semurg_lifecycle.py",
    "test_postgres_servers.py",
    "test_isolation.py",
    "test_forks.py",
    "test_postgres_claims.py",
    "test_mcp.py",
    "test_common_words.py",
    "test_whole_words.py",
    "web/test_lens_missing_memory.py",
    "contracts/test_notarium.py",
    "test_postgres_store.py",
    "test_readme.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: position for position, name in enumerate(SLOWEST_FIRST)}
    here = Path(__file__).parent

    def place(item: pytest.Item) -> int:
        return rank.get(item.path.relative_to(here).as_posix(), len(rank))

    items.sort(key=place)  # stable: each file's tests stay together and in their order


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test sees the developer's environment or writes outside its own folder."""
    for name in ("RECUERDO_STATE_DIR", "RECUERDO_MEMORY", "RECUERDO_CAPS", "RECUERDO_DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def held_upkeep(monkeypatch: pytest.MonkeyPatch) -> None:
    """The upkeep's worker is never started by a write: it works when the test drains it
    (or, if the test stops it too, not at all)."""
    from recuerdo.core.upkeep import Upkeep

    monkeypatch.setattr(Upkeep, "poke", lambda self, *args, **kwargs: None)


@pytest.fixture
def base(tmp_path: Path) -> Path:
    folder = tmp_path / "base"
    folder.mkdir()
    return folder


@pytest.fixture(params=["file", "in_memory", "postgres"])
def memory(request: pytest.FixtureRequest, base: Path) -> Iterator[recuerdo.Memory]:
    """The same behaviour is expected of the file store, the in-memory store and PostgreSQL
    (a test that holds for SQLite only is marked ``sqlite_only`` with its reason)."""
    if request.param == "postgres":
        only = request.node.get_closest_marker("sqlite_only")
        if only is not None:
            pytest.skip(f"SQLite only: {only.args[0]}")
        mem = recuerdo.open("test-memory", store=contract_store())
    else:
        mem = recuerdo.open("test-memory", base_dir=base, in_memory=request.param == "in_memory")
    yield mem
    mem.close()


@pytest.fixture
def loaded() -> Iterator[tuple[Any, recuerdo.Memory]]:
    """A PostgreSQL memory of its own on the embedded server, with no embedder (nothing runs
    in its upkeep but what a test drains), closed before its schema is dropped."""
    from recuerdo.store.postgres import PostgresStore

    store = PostgresStore(embedded_url(), unique_memory())
    memory = recuerdo.open("loaded", store=store, embedder="none")
    yield store, memory
    memory.close()  # a store it was given stays open: the drop closes it
    store.drop()


@pytest.fixture
def over_http(tmp_path: Path) -> Iterator[OverHttp]:
    """A verb called over the HTTP door of an app in process (its own folder, no token): the
    reply's JSON, once it answered 200."""
    from starlette.testclient import TestClient

    from recuerdo.doors.http import ServerConfig, create_app, wrap

    config = ServerConfig(base_dir=tmp_path / "http", default_memory="demo")
    with TestClient(wrap(create_app(config), config), base_url="http://127.0.0.1") as client:

        def call(verb: str, body: dict[str, Any]) -> Any:
            reply = client.post(f"/v1/{verb}", json=body)
            assert reply.status_code == 200, reply.text
            return reply.json()

        yield call


@pytest.fixture
def file_memory(base: Path) -> Iterator[recuerdo.Memory]:
    mem = recuerdo.open("test-memory", base_dir=base)
    yield mem
    mem.close()


@contextmanager
def statements_run(
    monkeypatch: pytest.MonkeyPatch,
    tx_class: type[Any] = SQLiteTx,
    this_thread_only: bool = False,
) -> Iterator[list[tuple[str, Any]]]:
    """Every statement (with its parameters) that transactions of ``tx_class`` (a store's
    ``Tx``, whose ``_run`` sends one statement) send inside the block, in order; with
    ``this_thread_only``, only the calling thread's: a count compared with another must not
    take in the upkeep's statements, which a loaded machine moves into the block."""
    seen: list[tuple[str, Any]] = []
    send = tx_class._run
    caller = threading.get_ident()

    def recorded(tx: Any, sql: str, params: Any) -> Any:
        if not this_thread_only or threading.get_ident() == caller:
            seen.append((sql, params))
        return send(tx, sql, params)

    with monkeypatch.context() as patch:
        patch.setattr(tx_class, "_run", recorded)
        yield seen


def tx_class_of(memory: recuerdo.Memory) -> type[Any]:
    """The ``Tx`` class of ``memory``'s store, for :func:`statements_run`."""
    if isinstance(memory._store, SQLiteStore):
        return SQLiteTx
    from recuerdo.store.postgres.connection import PostgresTx

    return PostgresTx


def eventually(done: Callable[[], bool], seconds: float = 20) -> bool:
    """Whether ``done()`` comes true within ``seconds`` (asked every 20 ms): for what a
    background thread does."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not done():
        time.sleep(0.02)
    return done()


def exported(memory: recuerdo.Memory, **options: Any) -> list[dict[str, Any]]:
    """Every record ``memory.export(**options)`` gives, page after page."""
    records: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = memory.export(cursor=cursor, **options)
        records += page["records"]
        cursor = page.get("next")
        if not cursor:
            return records


def rewrite_postgres_words(
    memory: recuerdo.Memory, given: Callable[[str | None], str | None]
) -> None:
    """PostgreSQL's words of every chunk of tenant ``local`` made again from its (title, body,
    context) as ``given`` gives each text: as the code before a step of the words wrote them."""
    with memory._store.write() as tx:
        chunks = chunk_text.chunks_with_text(tx, "c.tenant = ?", ("local",))
        tx.executemany(
            f"UPDATE chunks SET words = {WORDS} WHERE id = ?",
            [
                (*(given(c[field]) for field in ("title", "body", "context")), c["id"])
                for c in chunks
            ],
        )


def audit_kept(memory: recuerdo.Memory, column: str = "query", tenant: str = "local") -> list[Any]:
    """``column`` of the audit records of ``tenant`` a read shows, in id order: not those a
    forget emptied, which wait for the upkeep's sweep (``store/audit_sweep.py``)."""
    with memory._store.read() as tx:
        live = f" AND {audit_sweep.LIVE}" if audit_sweep.applied(tx) else ""
        rows = tx.all(
            f"SELECT {column} FROM retrieval_audit WHERE tenant = ?{live} ORDER BY id", (tenant,)
        )
    return [row[column] for row in rows]


@pytest.fixture
def no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """No embedding model: memories opened by the test search by words alone."""
    monkeypatch.setenv("RECUERDO_EMBEDDER", "none")


@pytest.fixture
def old_store(base: Path, request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """A kind of store (``sqlite`` or ``postgres``, given by ``indirect`` parametrization) and
    a new memory's name for it, written at an older schema by the test: its PostgreSQL schema
    dropped after."""
    name = unique_memory("old")
    yield request.param, name
    if request.param == "postgres":
        PostgresStore(contract_url(), name).drop()


def query_plan(memory: recuerdo.Memory, sql: str, params: Any = ()) -> list[str]:
    """SQLite's plan of a statement (one step a line), explained on ``memory``'s own store as
    it is now: for a statement recorded by :func:`statements_run`."""
    with memory._store.read() as tx:
        return [str(row[3]) for row in tx.all(f"EXPLAIN QUERY PLAN {sql}", params)]


def db_dump(path: str | Path) -> list[str]:
    """Every row of every table, through a separate connection (what is really on disk)."""
    conn = sqlite3.connect(path)
    try:
        lines = []
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
        ]
        for table in tables:
            if table.startswith("sqlite_"):
                continue
            try:
                rows = conn.execute(f'SELECT * FROM "{table}"').fetchall()
            except sqlite3.DatabaseError:
                continue  # virtual tables answer only through their module
            lines += [f"{table}: {row!r}" for row in sorted(rows, key=repr)]
        return lines
    finally:
        conn.close()


def settled_dump(memory: recuerdo.Memory) -> list[str]:
    """:func:`db_dump` of a memory once its background indexing has caught up: a refusal is
    checked against a store that nothing else is changing meanwhile (the worker may otherwise
    chunk a note written just before, between the two dumps)."""
    memory._upkeep.drain()
    return db_dump(memory.location)


def tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@functools.cache
def tls_context() -> ssl.SSLContext:
    """One TLS context for every HTTP client of the suite. The servers here speak plain HTTP,
    but a client makes a context by default, reading the whole CA bundle: 29 ms of CPU for each
    MCP session the suite opens."""
    return ssl.create_default_context()


def _share_mcp_output_validators() -> None:
    """The MCP SDK's client checks every structured reply against its tool's outputSchema with
    a validator it compiles once per session and tool. Compiling is checking the schema itself
    against JSON Schema's 2020-12 meta-schema: 19 ms for ``search``, 108 ms for ``ask``, and
    the suite opens hundreds of sessions (8 s of CPU). Here a validator compiled for a schema
    serves every later session that lists the same schema; each reply is still checked by the
    SDK, against the schema its own session listed."""
    try:
        from mcp.client.session import ClientSession
    except ImportError:
        return
    compile_once = getattr(ClientSession, "_output_schema_validator", None)
    if compile_once is None:  # another SDK release: its sessions compile their own
        return
    compiled: dict[str, Any] = {}

    def shared(self: Any, name: str, output_schema: dict[str, Any]) -> Any:
        validator = self._tool_output_validators.get(name)
        if validator is not None:
            return validator
        key = json.dumps(output_schema, sort_keys=True)
        validator = compiled.get(key)
        if validator is None:
            # A copy: the session's own dict may change after, the key would not.
            validator = compiled[key] = compile_once(self, name, copy.deepcopy(output_schema))
        self._tool_output_validators[name] = validator
        return validator

    ClientSession._output_schema_validator = shared  # type: ignore[method-assign]


_share_mcp_output_validators()


def run_python(
    code: str,
    *args: str,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 120,
    forked: bool = True,
) -> subprocess.CompletedProcess[str]:
    """``python -c CODE ARGS``; forked (``forks.python_command``) unless the code needs a new
    interpreter (it checks what importing does)."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        python_command(code, *args) if forked else [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd,
        timeout=timeout,
        check=False,
    )


def ended_without_closing(base: Path, name: str, *steps: str) -> None:
    """A process that opens memory ``name`` under ``base`` (no embedder) as ``memory``, runs
    ``steps`` (lines of Python) and ends without closing it, as a killed CLI call does."""
    child = run_python(
        "import os, sys, recuerdo\n"
        f"memory = recuerdo.open({name!r}, base_dir=sys.argv[1], embedder='none')\n"
        + "".join(f"{step}\n" for step in steps)
        + "os._exit(0)\n",
        str(base),
    )
    assert child.returncode == 0, child.stderr


class Server:
    """A real ``recuerdo serve`` process on a free port, stopped at the end of the test."""

    def __init__(
        self,
        base: Path,
        *,
        memory: str = "shared",
        profile: str = "native",
        host: str = "127.0.0.1",
        args: tuple[str, ...] = (),
    ) -> None:
        import socket

        with socket.socket() as probe:
            probe.bind((host, 0))
            self.port = probe.getsockname()[1]
        self.base = base
        self.url = f"http://{host}:{self.port}"
        env = {**os.environ, "RECUERDO_STATE_DIR": str(base)}
        self.process = subprocess.Popen(
            recuerdo_command(
                "--memory",
                memory,
                "serve",
                "--host",
                host,
                "--port",
                str(self.port),
                "--profile",
                profile,
                *args,
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self._wait()

    def _wait(self) -> None:
        import time
        import urllib.request

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited: {self.process.stderr.read()}")  # type: ignore[union-attr]
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=1):
                    return
            except OSError:
                time.sleep(0.1)
        # A server that never answered must not outlive the test (it would hold its port and
        # its store, and slow every later test on a loaded machine).
        self.process.kill()
        _, stderr = self.process.communicate(timeout=10)
        raise RuntimeError(f"server did not start within 60 s: {stderr[-2000:]}")

    def post(
        self,
        path: str,
        body: object = None,
        *,
        token: str | None = None,
        memory: str | None = None,
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, object]:
        import json
        import urllib.error
        import urllib.request

        query = f"?memory={memory}" if memory else ""
        data = raw if raw is not None else json.dumps(body if body is not None else {}).encode()
        request = urllib.request.Request(
            f"{self.url}{path}{query}",
            data=data,
            method="POST",
            headers={
                "Content-Type": "application/json",
                **({"Authorization": f"Bearer {token}"} if token else {}),
                **(headers or {}),
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    def ok(self, token: str, verb: str, args: dict[str, Any]) -> Any:
        """``verb``'s reply over ``/v1`` with ``token``, once it answered 200."""
        status, reply = self.post(f"/v1/{verb}", args, token=token)
        assert status == 200, (verb, reply)
        return reply

    def stop(self) -> str:
        import signal

        self.process.send_signal(signal.SIGTERM)
        try:
            _, err = self.process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, err = self.process.communicate()
        return err


def create_token(base: Path, *args: str) -> tuple[str, str]:
    """(token id, secret) through the real CLI; the secret is the last line of its output."""
    done = subprocess.run(
        recuerdo_command("--state-dir", str(base), "token", "create", *args),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    lines = done.stdout.strip().splitlines()
    return lines[0].split()[1], lines[-1]


def boss_and_lim(base: Path) -> tuple[str, str]:
    """The secrets of two tokens of tenant ``t``: boss's, unlimited, and lim's, limited to
    project:a."""
    _, owner = create_token(base, "--principal", "boss", "--tenant", "t")
    _, limited = create_token(base, "--principal", "lim", "--tenant", "t", "--scopes", "project:a")
    return owner, limited
