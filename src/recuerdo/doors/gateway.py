"""What the network doors share: one open memory per name (one writer), and who may call what.

A request names its memory; the caller is a :class:`~recuerdo.security.tokens.Principal`. Its
tenant is applied to every read and write (a memory view bound to that tenant), its memory
patterns and the host ceiling decide which memories it reaches, a read-only principal cannot
call a write verb, and a principal limited to scopes must name one of them (of the scopes a
tool chose itself for a call naming none, it reads those it reaches: ``_within_reach``).
"""

from __future__ import annotations

import asyncio
import base64
import fnmatch
import functools
import json
import logging
import os
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio

from ..engine import Memory, missing_memory, open_memory, validate_name
from ..errors import (
    CapabilityNotGranted,
    InvalidInput,
    MemoryNotFound,
    MemoryNotNamed,
    PathNotAllowed,
    PayloadTooLarge,
    UnknownArgument,
)
from ..security.caps import check_memory_allowed
from ..security.tokens import Principal
from ..verbs import VERBS, check_door_text, check_reach
from .profiles import ToolMap

log = logging.getLogger("recuerdo.code")
MAX_SERVER_FILE = 5_000_000  # what ingest takes


class MemoryPool:
    """Open memories by name, once per process: every request to a name shares its writer."""

    def __init__(
        self,
        base_dir: str | os.PathLike[str] | None,
        default: str | None,
        code_repos: Mapping[str, str] | None = None,
        mail_domains: Sequence[str] = (),
        *,
        remote: bool = False,
        ingest_root: str | os.PathLike[str] | None = None,
        database_url: str | None = None,
    ) -> None:
        self.base_dir = base_dir
        self.default = default
        self.code_repos = dict(code_repos or {})
        self.mail_domains = list(mail_domains)
        self.remote = remote
        """Callers are on another machine, as far as we know (HTTP, MCP over HTTP): they never
        name a file of this machine, unless it is under ``ingest_root``."""
        self.ingest_root = None if ingest_root is None else os.path.realpath(ingest_root)
        self.database_url = database_url
        """Memories are opened in this PostgreSQL database (any number of servers may share
        it), else as files under ``base_dir``."""
        self._open: dict[str, Memory] = {}
        self._lock = threading.Lock()

    def name(self, name: str | None) -> str:
        """The memory a request names, else the server's default; refused when neither."""
        chosen = name or self.default
        if not chosen:
            raise MemoryNotNamed(
                "name the memory (?memory=NAME, or start the server with --memory NAME)"
            )
        return validate_name(chosen)

    def get(
        self,
        name: str | None,
        *,
        create: bool = True,
        reachable: Callable[[str], bool] | None = None,
    ) -> Memory:
        """The open memory ``name``. One that does not exist yet is created only when
        ``create`` (a write); otherwise it is ``memory_not_found``, naming the close names
        ``reachable`` lets the caller see, and nothing is created. The server's own memory
        (``--memory``, declared by whoever started the server) is always opened."""
        chosen = self.name(name)
        with self._lock:
            memory = self._open.get(chosen)
            if memory is None:
                try:
                    memory = open_memory(
                        chosen,
                        base_dir=self.base_dir,
                        url=self.database_url,
                        create=create or chosen == self.default,
                    )
                except MemoryNotFound:
                    raise missing_memory(
                        chosen, self.base_dir, url=self.database_url, reachable=reachable
                    ) from None
                memory.serve_code(self.code_repos)
                memory.serve_mail(self.mail_domains)
                self._open[chosen] = memory
            return memory

    def close(self) -> None:
        with self._lock:
            for memory in self._open.values():
                memory.close()  # finishes index upkeep; every acknowledged write is on disk
            self._open.clear()


class CodeSchedule:
    """Keeps the served repositories up to date in the default memory: at start and every
    ``interval`` seconds, for every tenant that holds one (and, in single-user mode, for the
    local tenant, which then gets its first ingest without asking)."""

    def __init__(self, pool: MemoryPool, interval: float, single_user: bool) -> None:
        self.pool = pool
        self.interval = interval
        self.single_user = single_user
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if not self.pool.code_repos or not self.pool.default or self.interval <= 0:
            return
        self._thread = threading.Thread(target=self._run, name="recuerdo-code", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            memory = self.pool.get(self.pool.default)
            for repo in self.pool.code_repos:
                if self._stop.is_set():
                    return
                for outcome in memory.code_refresh(repo, include_own=self.single_user):
                    if "error" in outcome:
                        log.warning("scheduled ingest of %s: %s", repo, outcome["detail"])
            self._stop.wait(self.interval)


def tenant_for(principal: Principal, user_id: object) -> str:
    if user_id is None:
        return principal.tenant
    if not isinstance(user_id, str) or not user_id or ":" in user_id or len(user_id.encode()) > 256:
        raise InvalidInput("user_id is non-empty text without ':' of at most 256 bytes")
    return f"{principal.tenant}:{user_id}"


def reaches(principal: Principal, memory_name: str) -> bool:
    """Whether the host ceiling and the principal's memory patterns let it reach a memory."""
    try:
        check_memory_allowed(memory_name)
    except CapabilityNotGranted:
        return False
    return any(fnmatch.fnmatchcase(memory_name, p) for p in principal.memory_patterns)


def authorize(
    principal: Principal, memory_name: str, tool: ToolMap, arguments: Mapping[str, Any]
) -> None:
    check_memory_allowed(memory_name)
    if not any(fnmatch.fnmatchcase(memory_name, p) for p in principal.memory_patterns):
        raise CapabilityNotGranted(
            f"Capability not granted: this token does not reach memory {memory_name!r}"
        )
    verb = VERBS[tool.verb]
    if principal.read_only and verb.mode == "write":
        raise CapabilityNotGranted(
            f"Capability not granted: this token is read-only and {tool.name} writes"
        )
    if not verb.unscoped:
        check_reach(principal.scopes, "scope" in verb.params.model_fields, arguments.get("scope"))


def call(
    pool: MemoryPool,
    principal: Principal,
    memory_name: str | None,
    tool: ToolMap,
    arguments: Mapping[str, Any],
) -> Any:
    """Run one tool call for a principal; every refusal is a named RecuerdoError."""
    check_door_text(arguments)
    if not tool.native:
        check_schema(tool, arguments)
    given = dict(arguments)
    # An end user inside the tenant is a Semurg feature (decision 0006): only a tool whose schema
    # declares user_id takes it; to a native verb it is an unknown argument, never a silent
    # switch of tenant (decision 0094).
    declared = "user_id" in tool.schema.get("properties", {})
    user_id = given.pop("user_id", None) if declared else None
    native = tool.translate(given)
    out_of_reach = _within_reach(tool, given, native, principal.scopes)
    if pool.remote:
        native = server_files(pool.ingest_root, VERBS[tool.verb].paths, native)
    # Who may reach the memory is decided before whether it exists: a caller never learns
    # which names exist beyond its reach, and never creates one it may not reach.
    name = pool.name(memory_name)
    authorize(principal, name, tool, native)
    memory = pool.get(
        name,
        create=VERBS[tool.verb].creates,
        reachable=functools.partial(reaches, principal),
    )
    view = memory.for_principal(
        principal.name if not principal.local else "main",
        tenant_for(principal, user_id),
        owner=principal.local,
        scopes=principal.scopes,
    )
    reply = VERBS[tool.verb].call(view, native)
    reply = reply if tool.present is None else tool.present(reply, view)
    if out_of_reach and isinstance(reply, dict):
        reply["scopes_out_of_reach"] = out_of_reach
    return reply


def _within_reach(
    tool: ToolMap,
    given: Mapping[str, Any],
    native: dict[str, Any],
    reach: Sequence[str] | None,
) -> list[str]:
    """Narrow the scopes a tool chose itself (``ToolMap.scopes_of_its_own``) to those a token
    limited to ``reach`` reaches, in ``native``; the ones left out, for the reply to name.
    When it reaches none of them, nothing is narrowed and the call is refused as any other
    (an empty reading would pass for an empty memory)."""
    chosen = native.get("scope")
    if reach is None or tool.scopes_of_its_own is None or not isinstance(chosen, list):
        return []
    if not tool.scopes_of_its_own(dict(given)):
        return []
    kept = [scope for scope in chosen if scope in reach]
    if not kept:
        return []
    native["scope"] = kept
    return [scope for scope in chosen if scope not in reach]


def check_schema(tool: ToolMap, arguments: Mapping[str, Any]) -> None:
    """A profile tool's arguments against its published schema: an unknown argument is refused
    by name (nothing is ever dropped), a wrong type or value by what was expected."""
    validator = _validator(tool.name, json.dumps(tool.schema, sort_keys=True))
    for error in sorted(validator.iter_errors(dict(arguments)), key=lambda e: list(e.path)):
        if error.validator == "additionalProperties":
            allowed = set(tool.schema.get("properties", {}))
            unknown = sorted(set(arguments) - allowed)
            name = unknown[0] if unknown else "?"
            raise UnknownArgument(
                f"{tool.name} takes no argument {name!r}; it takes: {', '.join(sorted(allowed))}",
                argument=name,
            )
        where = ".".join(str(part) for part in error.path) or "arguments"
        raise InvalidInput(f"{tool.name}: {where}: {error.message}")


@functools.cache
def _validator(name: str, schema: str) -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(json.loads(schema))


def server_files(
    root: str | None, paths: Mapping[str, str], arguments: dict[str, Any]
) -> dict[str, Any]:
    """A remote caller's arguments with every server-side path replaced by the file's bytes,
    read here only when the path lies inside ``root`` (its real path: symlinks and ``..``
    resolved); otherwise ``path_not_allowed`` and nothing is read."""
    for name, carrier in paths.items():
        given = arguments.get(name)
        if given is None:
            continue
        if root is None:
            raise PathNotAllowed(
                f"{name}: a remote caller sends the file's bytes ({carrier}), never a path on "
                "the server (a server reads paths only under its --ingest-root)"
            )
        if not isinstance(given, str) or "\x00" in given:
            raise InvalidInput(f"{name} must be a file path")
        real = os.path.realpath(os.path.join(root, given))
        if os.path.commonpath([root, real]) != root:
            raise PathNotAllowed(f"{name}: {given!r} is outside the server's --ingest-root")
        # O_NONBLOCK: opening a named pipe waits for a writer, and would hold the write lane
        # for ever; the descriptor then says what was opened, and only a regular file is read
        # (a directory failed as IsADirectoryError, a 500).
        try:
            fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
        except OSError as exc:
            raise InvalidInput(f"{name}: no readable file at {given!r}") from exc
        import stat

        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise InvalidInput(f"{name}: {given!r} is not a regular file")
        with os.fdopen(fd, "rb") as file:
            data = file.read(MAX_SERVER_FILE + 1)
        if len(data) > MAX_SERVER_FILE:
            raise PayloadTooLarge(f"{given!r} is over {MAX_SERVER_FILE} bytes")
        arguments = {k: v for k, v in arguments.items() if k != name}
        arguments[carrier] = base64.b64encode(data).decode("ascii")
        arguments.setdefault("name", os.path.basename(real))
    return arguments


# Per event loop: a limiter belongs to the loop it was first used in.
_lanes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[bool, anyio.CapacityLimiter]] = (
    weakref.WeakKeyDictionary()
)


async def run(
    pool: MemoryPool,
    principal: Principal,
    memory_name: str | None,
    tool: ToolMap,
    arguments: Mapping[str, Any],
) -> Any:
    """:func:`call` in a worker thread, in one of two lanes (reads, writes) of one thread each.

    The verbs are Python holding the GIL most of the time: more threads only make them take
    turns at a higher cost (16 clients, 80% reads on 2 cores: 40 threads 289 requests/s, p95
    190 ms; one per lane about 400 requests/s, p95 80 ms). Writes queue on the store's one
    writer anyway, and their own lane keeps a slow one (a large document) from holding up
    reads."""
    lanes = _lanes.setdefault(asyncio.get_running_loop(), {})
    lane = lanes.get(tool.read_only)
    if lane is None:
        lane = lanes.setdefault(tool.read_only, anyio.CapacityLimiter(1))
    work = functools.partial(call, pool, principal, memory_name, tool, arguments)
    return await anyio.to_thread.run_sync(work, limiter=lane)
