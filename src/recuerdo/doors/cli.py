"""The command line, generated from the verb table.

``recuerdo --memory NAME <verb> ...`` runs one verb; every verb of :data:`recuerdo.verbs.VERBS`
becomes a command whose arguments and options come from the verb's typed parameters. This
module only translates: arguments in, results and errors out.
"""

from __future__ import annotations

import contextlib
import decimal
import errno
import json
import sys
import types
import typing
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import click

from ..engine import Memory, open_memory
from ..errors import (
    InvalidInput,
    MemoryNotNamed,
    RecuerdoError,
    StorageFull,
    StoreError,
    UnknownArgument,
)
from ..security.caps import check_memory_allowed
from ..verbs import VERBS, Verb
from . import render
from .client import RemoteError, remote_call
from .commands import register as register_door_commands
from .import_commands import register as register_import_commands
from .markdown_commands import register as register_markdown_commands
from .mirror import register as register_mirror
from .running import refused, running_server
from .store_commands import register as register_store_commands

MEMORY_ENV = "RECUERDO_MEMORY"
NO_MEMORY = (
    "No memory named. Name one with --memory NAME (or set RECUERDO_MEMORY=NAME), "
    "e.g. `recuerdo --memory support-agent recall`. Nothing was created."
)


class _State:
    def __init__(
        self,
        memory: str | None,
        state_dir: str | None,
        agent: str | None,
        as_json: bool,
        server: str | None = None,
        token: str | None = None,
        database_url: str | None = None,
    ) -> None:
        self.database_url = database_url
        self.memory_name = memory
        self.state_dir = state_dir
        self.agent = agent
        self.as_json = as_json
        self.server = server
        self.token = token
        self.declared = False
        """The command declares its memory (a read of it opens it even when new)."""
        self._holding = False
        self._held: tuple[Memory, Memory] | None = None  # (the memory, the view calls use)

    @contextlib.contextmanager
    def open(self, *, create: bool = True) -> Iterator[Memory]:
        """The named memory (as the agent, if one is given); closed (and its indexes brought
        up to date) when the command ends. A read (``create=False``) of a memory that does not
        exist is ``memory_not_found``: nothing is created."""
        memory, view = self._opened(create)
        try:
            yield view
        finally:
            memory.close()

    def _opened(self, create: bool) -> tuple[Memory, Memory]:
        if not self.memory_name:
            raise MemoryNotNamed(NO_MEMORY)
        memory = open_memory(
            self.memory_name, base_dir=self.state_dir, url=self.database_url, create=create
        )
        return memory, memory.agent(self.agent) if self.agent else memory

    @contextlib.contextmanager
    def holding(self) -> Iterator[None]:
        """The memory a local call opens stays open for the calls that follow, until the block
        ends: a command that makes a call per file (``mirror status``, ``mirror sync``) opened
        and closed it for each, 13-17 ms a file (its indexes brought up to date at each close).
        Once one is held, the calls go to it, not to a server that started meanwhile."""
        self._holding = True
        try:
            yield
        finally:
            held, self._held, self._holding = self._held, None, False
            if held is not None:
                held[0].close()

    def server_for(self, verb: Verb) -> str | None:
        """Where the verb runs: the --server given, else a ``recuerdo serve`` running for this
        state dir (it has the model loaded: no seconds spent loading it here), else None
        (locally). An agent's view and a local file path are this machine's business."""
        if self.server:
            return self.server
        if self.agent or verb.paths or not self.memory_name:
            return None
        check_memory_allowed(self.memory_name)  # the host ceiling holds through a server too
        return running_server(self.state_dir, have_token=bool(self.token))

    def call(self, verb: Verb, arguments: dict[str, Any]) -> Any:
        if self._held is not None:
            return verb.call(self._held[1], arguments)
        server = self.server_for(verb)
        if server:
            try:
                return remote_call(server, self.token, self.memory_name, verb, arguments)
            except RemoteError as error:
                # A server found running (not one named by --server) that has asked for tokens
                # since it started: this command then opens the memory itself.
                # The same when it answers memory_not_found to a read of a memory this command
                # declares (a workflow's first read of its new memory): opened here, created.
                declared_here = self.declared and error.code == "memory_not_found"
                if self.server or not (error.status == 401 or declared_here):
                    raise
            except StoreError as error:
                if self.server or not refused(error):
                    raise  # only a call that reached nobody may be run again here
        if self._holding:
            self._held = self._opened(self.declared or verb.creates)
            return verb.call(self._held[1], arguments)
        with self.open(create=self.declared or verb.creates) as memory:
            return verb.call(memory, arguments)


def _kind(annotation: Any) -> str:
    """How the CLI spells a parameter of this type: text, int, float, flag, list or json."""
    options = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
    origin = typing.get_origin(annotation)
    if origin not in (typing.Union, types.UnionType):
        options = [annotation]
    if _is_text_list(options):
        return "list"
    if len(options) == 1:
        only = options[0]
        if only is str:
            return "text"
        if only is bool:
            return "flag"
        if only is int:
            return "int"
        if only is float:
            return "float"
    if set(options) == {int, str}:
        return "text"  # the verb itself interprets the text (e.g. recall's lenient limit)
    return "json"


def _is_text_list(options: list[Any]) -> bool:
    for option in options:
        origin = typing.get_origin(option)
        if (
            origin is not None
            and isinstance(origin, type)
            and issubclass(origin, Sequence)
            and typing.get_args(option) == (str,)
        ):
            return True
    return False


def _click_params(verb: Verb) -> list[click.Parameter]:
    params: list[click.Parameter] = []
    for name, info in verb.params.model_fields.items():
        kind = _kind(info.annotation)
        required = info.is_required()
        help_text = info.description or ""
        click_type: Any = {"int": click.INT, "float": click.FLOAT}.get(kind, click.STRING)
        if name == verb.cli_batch:
            params.append(click.Argument([name], nargs=-1, type=click_type))
            continue
        if name in verb.arguments:
            # A Python name's trailing _ stays out of the usage line (FROM, not FROM_).
            shown = _shown(verb, name) if required else f"[{_shown(verb, name)}]"
            metavar = shown if name.endswith("_") else None
            params.append(
                click.Argument([name], required=required, type=click_type, metavar=metavar)
            )
            continue
        flag = _shown(verb, name)
        if kind == "flag":
            params.append(click.Option([flag, name], is_flag=True, default=None, help=help_text))
        elif kind == "list":
            params.append(
                click.Option(
                    [flag, name],
                    multiple=True,
                    type=click.STRING,
                    help=help_text + " Repeat for several.",
                )
            )
        else:
            if kind == "json":
                help_text += " (JSON; '-' reads it from standard input)"
            params.append(
                click.Option([flag, name], required=required, type=click_type, help=help_text)
            )
    params.append(
        click.Option(
            ["--json", "as_json"], is_flag=True, default=False, help="Print the result as JSON."
        )
    )
    return params


def _arguments(verb: Verb, values: Mapping[str, Any]) -> dict[str, Any]:
    """Click's values -> the verb's arguments, leaving out what the user did not give."""
    arguments: dict[str, Any] = {}
    stdin_for: list[str] = []
    for name, info in verb.params.model_fields.items():
        value = values.get(name)
        kind = _kind(info.annotation)
        if value is None or (kind == "list" and value == ()):
            continue
        if kind == "list":
            value = list(value)
        elif kind == "json":
            value = _parse_json(_shown(verb, name), value, stdin_for)
        arguments[name] = value
    return arguments


def _shown(verb: Verb, name: str) -> str:
    """A parameter as the command line spells it (``--context-set``, or ``IDS`` given in
    place): an error names what the user typed, not the Python name."""
    if name in verb.arguments or name == verb.cli_batch:
        return name.rstrip("_").upper()  # FROM, not the Python name's FROM_
    return "--" + verb.cli_names.get(name, name.rstrip("_")).replace("_", "-")


def _parse_json(shown: str, text: str, stdin_for: list[str]) -> Any:
    if text == "-":
        if stdin_for:
            # The second one read nothing and was refused as "not JSON".
            raise InvalidInput(
                f"{stdin_for[0]} reads standard input already: give {shown} in place"
            )
        stdin_for.append(shown)
        text = sys.stdin.read()
    try:
        # Fractions as exact decimals, as the HTTP door reads them: a float lost digits
        # (12345678901234567.89 was stored as 1.2345678901234568e16).
        return json.loads(text, parse_float=decimal.Decimal)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{shown} must be JSON: {exc.msg}") from exc
    except RecursionError:  # a traceback before
        raise InvalidInput(f"{shown} is nested too deeply to read") from None
    except ValueError as exc:  # a number of thousands of digits: a traceback before
        raise InvalidInput(f"{shown} is not JSON this command can read ({exc})") from None


def _emit_error(error: RecuerdoError, as_json: bool) -> typing.NoReturn:
    if as_json:
        click.echo(render.to_json(error.to_dict()))
    else:
        click.echo(f"error: {error.code}: {error.detail}", err=True)
    sys.exit(2 if isinstance(error, MemoryNotNamed) else 1)


def _verb_command(verb: Verb) -> click.Command:
    def run(**values: Any) -> None:
        state: _State = click.get_current_context().find_object(_State)  # type: ignore[assignment]
        as_json = bool(values.pop("as_json")) or state.as_json
        batch = list(values.pop(verb.cli_batch, ()) or ()) if verb.cli_batch else []
        if verb.cli_batch and batch:
            _run_batch(verb, state, values, batch, as_json)
            return
        try:
            result = state.call(verb, _arguments(verb, values))
        except RecuerdoError as error:
            _emit_error(error, as_json)
        click.echo(render.to_json(result) if as_json else render.human(result))
        more = getattr(result, "more", None)
        if isinstance(result, list) and isinstance(more, int) and more:
            # A cut list says so (on stderr: stdout stays the result, JSON or table).
            click.echo(f"({more} more match; raise --limit to see them)", err=True)
        if verb.fails is not None and verb.fails(result):
            sys.exit(1)

    return click.Command(
        verb.name,
        callback=run,
        params=_click_params(verb),
        help=verb.description,
        short_help=verb.description.split(". ")[0].rstrip("."),
    )


def _run_batch(
    verb: Verb, state: _State, values: dict[str, Any], batch: list[str], as_json: bool
) -> None:
    """The verb once per value of its batch parameter (``recuerdo ingest a.pdf b.docx``),
    with a progress bar on the terminal; one failure does not stop the others."""
    assert verb.cli_batch is not None
    results: list[dict[str, Any]] = []
    failed = 0
    try:
        arguments = _arguments(verb, values)
        with (
            _one_memory(state, create=verb.creates) as memory,
            click.progressbar(
                batch,
                label=verb.name,
                file=sys.stderr,
                show_pos=True,
                hidden=len(batch) < 2 or not sys.stderr.isatty(),
            ) as values_bar,
        ):
            for value in values_bar:
                call = {**arguments, verb.cli_batch: value}
                try:
                    outcome = state.call(verb, call) if memory is None else verb.call(memory, call)
                    results.append({verb.cli_batch: value, "ok": True, "result": outcome})
                except RecuerdoError as error:
                    failed += 1
                    results.append({verb.cli_batch: value, **error.to_dict()})
    except RecuerdoError as error:
        _emit_error(error, as_json)
    if as_json:
        click.echo(render.to_json(results))
    else:
        click.echo(
            render.table(
                [
                    {
                        verb.cli_batch: r[verb.cli_batch],
                        "outcome": "ok" if r["ok"] else r["error"],
                        "detail": r.get("detail", ""),
                    }
                    for r in results
                ]
            )
        )
    if failed:
        sys.exit(1)


@contextlib.contextmanager
def _one_memory(state: _State, *, create: bool) -> Iterator[Memory | None]:
    """The local memory a batch runs on, opened once; None when the verbs go to a server."""
    if state.server:
        yield None
        return
    with state.open(create=create) as memory:
        yield memory


class _VerbGroup(click.Group):
    """Accepts ``create-progress`` for ``create_progress``: both spellings are common.

    It also keeps the promise of ``--json`` (errors too in the JSON error shape) for what no
    command catches itself: a usage error (click printed its own text, then exit 2) and a file
    of this machine a command could not read or write (a Python traceback)."""

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return super().get_command(ctx, cmd_name) or super().get_command(
            ctx, cmd_name.replace("-", "_")
        )

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        given = ctx.meta[_GIVEN] = list(args)  # click's parser empties ``args`` as it reads
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as error:
            _usage_error(error, given)

    def invoke(self, ctx: click.Context) -> Any:
        given = ctx.meta.get(_GIVEN, [])
        try:
            return super().invoke(ctx)
        except click.UsageError as error:
            _usage_error(error, given)
        except OSError as error:
            if error.errno == errno.EPIPE:
                raise  # a reader that went away: click quiets it
            _emit_error(_file_error(error), _asks_json(given))


_GIVEN = "recuerdo.arguments"


def _asks_json(args: Sequence[str]) -> bool:
    """Whether the command line asks for JSON: the global flag, or a command's own ``--json``
    (a usage error comes before either is parsed). After ``--`` every word is a value."""
    words = list(args)
    return "--json" in words[: words.index("--")] if "--" in words else "--json" in words


def _usage_error(error: click.UsageError, args: Sequence[str]) -> typing.NoReturn:
    if not _asks_json(args):
        raise error
    code = UnknownArgument if isinstance(error, click.NoSuchOption) else InvalidInput
    click.echo(render.to_json(code(error.format_message()).to_dict()))
    sys.exit(error.exit_code)


_NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
"""No room to write: a full disk, a quota reached, a file past the largest one allowed."""


def _file_error(error: OSError) -> RecuerdoError:
    where = f"{error.filename}: " if error.filename else ""
    if error.errno in _NO_ROOM:
        return StorageFull(f"no room to write: {where}{error.strerror}")
    if error.errno == errno.EIO:  # the device failed, not the path given
        return StoreError(f"the disk failed to read or write: {where}{error.strerror}")
    return InvalidInput(f"{where}{error.strerror or error}")


@click.group(
    cls=_VerbGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "--memory",
    "-m",
    envvar=MEMORY_ENV,
    metavar="NAME",
    help="The memory to use (default: $RECUERDO_MEMORY).",
)
@click.option(
    "--state-dir",
    envvar="RECUERDO_STATE_DIR",
    metavar="DIR",
    type=click.Path(file_okay=False),
    help="Where .recuerdo/state lives (default: $RECUERDO_STATE_DIR, else the current directory).",
)
@click.option(
    "--agent",
    metavar="NAME",
    help="Act as this agent: write under its name, read its entries by default.",
)
@click.option("--json", "as_json", is_flag=True, help="Print results as JSON.")
@click.option(
    "--server",
    envvar="RECUERDO_SERVER",
    metavar="URL",
    help="Run the verb on a recuerdo server instead of a local file.",
)
@click.option(
    "--token", envvar="RECUERDO_TOKEN", metavar="TOKEN", help="The bearer token for --server."
)
@click.option(
    "--database-url",
    envvar="RECUERDO_DATABASE_URL",
    metavar="URL",
    help="Keep memories in this PostgreSQL database (postgresql://...) instead of files.",
)
@click.version_option(package_name="recuerdo")
@click.pass_context
def cli(
    ctx: click.Context,
    memory: str | None,
    state_dir: str | None,
    agent: str | None,
    as_json: bool,
    server: str | None,
    token: str | None,
    database_url: str | None,
) -> None:
    """recuerdo: persistent memory for AI agents.

    Every command below is a verb of the memory named by --memory (on this machine, or on a
    server with --server); serve, mcp and token run the doors.
    """
    ctx.obj = _State(memory, state_dir, agent, as_json, server, token, database_url)


for _verb in VERBS:
    cli.add_command(_verb_command(_verb))


@cli.command("demo")
@click.pass_obj
def demo(state: _State) -> None:
    """An interactive tour: remember facts, recall them, see the summary."""
    from .demo import run_demo

    if not state.memory_name:
        state.memory_name = "demo"
    try:
        with state.open() as memory:
            run_demo(memory)
    except RecuerdoError as error:
        _emit_error(error, state.as_json)


register_door_commands(cli, _State, _emit_error)
register_store_commands(cli, _emit_error)
register_import_commands(cli, _emit_error)
register_markdown_commands(cli, _emit_error)
register_mirror(cli, _emit_error)


def main() -> None:
    cli(prog_name="recuerdo")
