"""The commands that run doors rather than verbs: ``serve``, ``mcp``, ``token`` and ``code``."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import socket
import sys
import time
from pathlib import Path
from typing import Any

import click

from ..errors import MemoryNotNamed, RecuerdoError
from ..security.tokens import TokenStore
from . import running

DEFAULT_PORT = 7700
LOOPBACK = ("127.0.0.1", "::1", "localhost")
PROFILE_NAMES = ("native", "engram", "semurg", "notarium")
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_DOMAIN = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")  # as configure(mail_domains=...) checks


PROFILE_OPTION = click.option(
    "--profile",
    type=click.Choice(PROFILE_NAMES),
    default="native",
    show_default=True,
    help="Which tool names MCP clients see.",
)
# Users type `recuerdo mcp --memory NAME` as often as `recuerdo --memory NAME mcp`: both work.
MEMORY_OPTION = click.option(
    "--memory",
    "-m",
    "memory_name",
    metavar="NAME",
    default=None,
    help="The memory to serve (the same as recuerdo's own --memory, given here).",
)


def register(cli: click.Group, state_type: type[Any], emit_error: Any) -> None:
    @cli.command("serve")
    @click.option(
        "--host",
        default="127.0.0.1",
        show_default=True,
        help="The address to listen on; any other than loopback needs a token to exist first.",
    )
    @click.option(
        "--port",
        default=DEFAULT_PORT,
        type=int,
        envvar="RECUERDO_PORT",
        help="The port (default: $RECUERDO_PORT, else 7700).",
    )
    @PROFILE_OPTION
    @MEMORY_OPTION
    @click.option(
        "--workers",
        default=1,
        show_default=True,
        type=click.IntRange(1, 64),
        help="Server processes (each keeps one writer per memory; SQLite orders their writes).",
    )
    @click.option(
        "--code-repo",
        "code_repos",
        multiple=True,
        metavar="NAME=PATH",
        help="A git repository this server ingests (into --memory, on a schedule, and when a "
        "caller names it to code_ingest). Repeat for several.",
    )
    @click.option(
        "--code-interval",
        default=300.0,
        show_default=True,
        type=click.FloatRange(0),
        help="Seconds between scheduled ingests of the --code-repo repositories (0: only "
        "through code_ingest).",
    )
    @click.option(
        "--allowed-host",
        "allowed_hosts",
        multiple=True,
        metavar="NAME",
        help="A host name clients reach this server by, besides the address it is bound to "
        "(requests naming any other Host are refused). Repeat for several.",
    )
    @click.option(
        "--database-url",
        default=None,
        metavar="URL",
        help="Open memories in this PostgreSQL database (postgresql://...); any number of "
        "servers may share it. Default: the global --database-url ($RECUERDO_DATABASE_URL).",
    )
    @click.option(
        "--ingest-root",
        type=click.Path(exists=True, file_okay=False, resolve_path=True),
        default=None,
        help="Let remote callers name files under DIR to ingest (off: they send the bytes).",
    )
    @click.option(
        "--mail-domain",
        "mail_domains",
        multiple=True,
        metavar="DOMAIN",
        help="A domain addresses may be bound in (bind_address), for tenants that set none "
        "with configure(mail_domains=...). Repeat for several; default: local.",
    )
    @click.pass_obj
    def serve(
        state: Any,
        host: str,
        port: int,
        profile: str,
        memory_name: str | None,
        workers: int,
        code_repos: tuple[str, ...],
        code_interval: float,
        mail_domains: tuple[str, ...],
        allowed_hosts: tuple[str, ...],
        database_url: str | None,
        ingest_root: str | None,
    ) -> None:
        """Serve every memory under the state directory: HTTP API at /v1, MCP at /mcp."""
        if memory_name is not None:
            state.memory_name = memory_name
        try:
            import uvicorn

            from .http import ServerConfig, create_app, wrap
        except ImportError:
            raise click.ClickException(
                "the server needs the serve extra: pip install 'recuerdo[serve]'"
            ) from None
        tokens = TokenStore(state.state_dir)
        if host not in LOOPBACK and not tokens.any_active():
            click.echo(
                f"error: refusing to serve on {host} with no tokens: anyone who reaches "
                "it would read every memory. Create one first (recuerdo token create "
                "--principal NAME --tenant T), or bind 127.0.0.1.",
                err=True,
            )
            sys.exit(2)
        repos = _code_repos(code_repos)
        if repos and not state.memory_name:
            raise click.UsageError("--code-repo needs --memory: the memory the repositories go to")
        config = ServerConfig(
            base_dir=state.state_dir,
            default_memory=state.memory_name,
            profile=profile,
            host=host,
            code_repos=repos,
            code_interval=code_interval,
            mail_domains=_mail_domains(mail_domains),
            allowed_hosts=list(allowed_hosts),
            ingest_root=ingest_root,
            database_url=database_url or state.database_url,
        )
        _check_port(host, port)
        _announce(host, port, state, profile, tokens.any_active())
        marker = (
            running.announced(
                state.state_dir, _base_url(host, port), single_user=not tokens.any_active()
            )
            if host in LOOPBACK
            else contextlib.nullcontext()
        )
        with marker:
            if workers > 1:
                from dataclasses import asdict

                from .http import CONFIG_ENV

                os.environ[CONFIG_ENV] = json.dumps(asdict(config), default=str)
                uvicorn.run(
                    "recuerdo.doors.http:app_from_env",
                    factory=True,
                    workers=workers,
                    host=host,
                    port=port,
                    log_level="warning",
                    timeout_graceful_shutdown=10,
                )
                return
            uvicorn.run(
                wrap(create_app(config), config),
                host=host,
                port=port,
                log_level="warning",
                timeout_graceful_shutdown=10,
            )

    @cli.command("mcp")
    @PROFILE_OPTION
    @MEMORY_OPTION
    @click.pass_obj
    def mcp(state: Any, profile: str, memory_name: str | None) -> None:
        """Serve one memory over MCP on stdin/stdout (what agents launch)."""
        if memory_name is not None:
            state.memory_name = memory_name
        if not state.memory_name:
            # A stdio session has no ?memory= to name one later: every call would fail.
            emit_error(
                MemoryNotNamed(
                    "name the memory to serve: recuerdo --memory NAME mcp "
                    "(or set RECUERDO_MEMORY=NAME). Nothing was created."
                ),
                state.as_json,
            )
        import anyio

        from .gateway import MemoryPool
        from .mcp import serve_stdio

        pool = MemoryPool(state.state_dir, state.memory_name, database_url=state.database_url)
        try:
            pool.get(state.memory_name)  # a bad name fails now, not at the first call
            anyio.run(serve_stdio, pool, profile)
        except RecuerdoError as error:
            emit_error(error, state.as_json)
        finally:
            pool.close()

    _register_code(cli, emit_error)

    @cli.group("token")
    def token() -> None:
        """Create, list and revoke the tokens that let principals reach the server."""

    @token.command("create")
    @click.option("--principal", required=True, help="Who holds it (a person or an agent).")
    @click.option("--tenant", required=True, help="Whose memory it reaches (an end user).")
    @click.option("--caps", default=None, help="Memory names it may reach, e.g. memory=shop-*.")
    @click.option("--read-only", is_flag=True, help="It cannot call a verb that writes.")
    @click.option("--scopes", multiple=True, help="Only these scopes. Repeat for several.")
    @click.pass_obj
    def create(
        state: Any,
        principal: str,
        tenant: str,
        caps: str | None,
        read_only: bool,
        scopes: tuple[str, ...],
    ) -> None:
        """Create a token; it is shown once, alone on the last line."""
        try:
            token_id, secret = TokenStore(state.state_dir).create(
                principal=principal,
                tenant=tenant,
                caps=caps,
                read_only=read_only,
                scopes=list(scopes) or None,
            )
        except RecuerdoError as error:
            emit_error(error, state.as_json)
        click.echo(
            f"token {token_id} for {principal} (tenant {tenant}"
            f"{', read-only' if read_only else ''}); it is not stored, copy it now:"
        )
        click.echo(secret)

    @token.command("list")
    @click.pass_obj
    def listing(state: Any) -> None:
        """The tokens (never their secrets)."""
        from . import render

        rows = TokenStore(state.state_dir).list()
        click.echo(render.to_json(rows) if state.as_json else render.human(rows))

    @token.command("revoke")
    @click.argument("token_id")
    @click.pass_obj
    def revoke(state: Any, token_id: str) -> None:
        """Revoke a token: it stops working at once."""
        try:
            TokenStore(state.state_dir).revoke(token_id)
        except RecuerdoError as error:
            emit_error(error, state.as_json)
        click.echo(f"revoked {token_id}")


def _code_repos(values: tuple[str, ...]) -> dict[str, str]:
    repos: dict[str, str] = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise click.BadParameter(f"{value!r} is not NAME=PATH", param_hint="--code-repo")
        if not os.path.isdir(path):
            raise click.BadParameter(f"{path!r} is not a directory", param_hint="--code-repo")
        if name in repos:
            raise click.BadParameter(f"{name!r} is given twice", param_hint="--code-repo")
        repos[name] = os.path.abspath(path)
    return repos


def _mail_domains(values: tuple[str, ...]) -> list[str]:
    domains = [value.strip().lower() for value in values]
    for domain in domains:
        if len(domain) > 253 or not _DOMAIN.fullmatch(domain):
            raise click.BadParameter(f"{domain!r} is not a domain", param_hint="--mail-domain")
    return list(dict.fromkeys(domains))


def _register_code(cli: click.Group, emit_error: Any) -> None:
    @cli.group("code")
    def code() -> None:
        """Ingest git repositories into a memory, and check what is stored."""

    @code.command("ingest")
    @click.argument("path", type=click.Path(exists=True, file_okay=False))
    @click.option("--repo", required=True, help="The name callers will use for it.")
    @click.option("--branch", default=None, help="The branch to follow (default: HEAD's).")
    @click.pass_obj
    def ingest(state: Any, path: str, repo: str, branch: str | None) -> None:
        """Ingest the git repository at PATH (only commits new since the last ingest)."""
        from . import render

        report = _Progress(repo) if sys.stderr.isatty() else None
        try:
            with state.open() as memory:
                result = memory.code_ingest_path(path, repo, branch, progress=report)
        except RecuerdoError as error:
            emit_error(error, state.as_json)
        finally:
            if report is not None:
                report.done()
        click.echo(render.to_json(result) if state.as_json else render.human(result))

    @code.command("verify")
    @click.option("--repo", default=None, help="Only this repository (default: all).")
    @click.pass_obj
    def verify(state: Any, repo: str | None) -> None:
        """Re-hash every stored blob; exit 1 if any no longer matches its sha256."""
        from . import render

        try:
            with state.open(create=False) as memory:
                result = memory.code_verify(repo)
        except RecuerdoError as error:
            emit_error(error, state.as_json)
        click.echo(render.to_json(result) if state.as_json else render.human(result))
        if not result["ok"]:
            sys.exit(1)


class _Progress:
    """Commits per second and the time left, on one terminal line."""

    def __init__(self, repo: str) -> None:
        self.repo = repo
        self.started = time.monotonic()
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        seconds = max(time.monotonic() - self.started, 1e-6)
        rate = done / seconds
        left = (total - done) / rate if rate else 0.0
        click.echo(
            f"\r{self.repo}: {done:,}/{total:,} commits, {rate:,.0f} commits/s, "
            f"about {left:,.0f} s left   ",
            nl=False,
            err=True,
        )
        self.shown = True

    def done(self) -> None:
        if self.shown:
            click.echo("", err=True)


def _launcher() -> tuple[str, list[str]]:
    """How a client starts this very recuerdo, by absolute paths (a desktop client's PATH is
    not the shell's): its script beside this interpreter, else the interpreter with -m."""
    script = Path(sys.executable).parent / ("recuerdo.exe" if os.name == "nt" else "recuerdo")
    if script.is_file():
        return str(script), []
    return sys.executable, ["-m", "recuerdo"]


def _base_url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def _check_port(host: str, port: int) -> None:
    """Refuse a port something else listens on, in one line and before the banner (uvicorn
    would print the banner's promise, then a traceback)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            # As uvicorn binds: a port left in TIME_WAIT by an earlier server is free.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as exc:
        reason = "it is in use" if exc.errno == errno.EADDRINUSE else exc.strerror
        click.echo(
            f"error: cannot serve on {_base_url(host, port)}: {reason} "
            "(choose another with --port, or make serve PORT=...)",
            err=True,
        )
        sys.exit(1)


def _announce(host: str, port: int, state: Any, profile: str, tokens: bool) -> None:
    base = _base_url(host, port)
    name = state.memory_name or "NAME"
    click.echo(
        f"recuerdo serving on {base}  (profile {profile}; "
        f"{'tokens required' if tokens else 'single-user loopback mode, no tokens'})"
    )
    click.echo(f"  HTTP API  {base}/v1/<verb>?memory={name}   (OpenAPI: {base}/openapi.json)")
    click.echo(f"  MCP       {base}/mcp?memory={name}")
    click.echo(f"  Lens      {base}/  (every memory of the state dir, in a browser)")
    command, prefix = _launcher()
    state_dir = os.path.abspath(state.state_dir or os.getcwd())
    args = [*prefix, "--state-dir", state_dir, "--memory", name, "mcp", "--profile", profile]
    stdio = {"mcpServers": {"recuerdo": {"command": command, "args": args}}}
    http: dict[str, Any] = {
        "mcpServers": {"recuerdo": {"type": "http", "url": f"{base}/mcp?memory={name}"}}
    }
    if tokens:
        http["mcpServers"]["recuerdo"]["headers"] = {"Authorization": "Bearer <token>"}
    click.echo("MCP client configuration (stdio):")
    click.echo(json.dumps(stdio, indent=2))
    click.echo("MCP client configuration (streamable HTTP):")
    click.echo(json.dumps(http, indent=2))
    if state.memory_name is None:
        # Pasted as printed, the first write would make a memory called NAME.
        click.echo("(no --memory given: replace NAME with the memory a client should use)")
    click.echo("Ctrl-C stops the server; acknowledged writes are already on disk.", nl=True)
