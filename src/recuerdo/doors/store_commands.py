"""Commands that look after a memory as a whole rather than run a verb: ``memories``,
``backup``, ``restore``, ``compact``, ``check`` and ``recover`` (the last two work on a damaged
memory too, which every verb refuses with ``store_damaged``)."""

from __future__ import annotations

import sys
from typing import Any

import click

from ..engine import (
    check_memory,
    memory_names,
    open_memory,
    recover_memory,
    restore_memory,
    state_size,
)
from ..errors import MemoryNotNamed, RecuerdoError
from ..model import whole_number
from . import render
from .helptext import DescribedCommand


class _Bar:
    """A progress bar on a terminal (nothing elsewhere), told (done, total) by the work."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.bar: Any = None

    def __call__(self, done: int, total: int) -> None:
        if not sys.stderr.isatty() or total <= 0:
            return
        if self.bar is None:
            self.bar = click.progressbar(length=total, label=self.label, file=sys.stderr)
            self.bar.__enter__()
        self.bar.update(done - self.bar.pos)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)


_COUNTED = ("entries", "notes", "messages", "entities", "facts", "documents", "plans", "rules")


def memory_rows(state_dir: str | None) -> list[dict[str, Any]]:
    """One row per memory of the state dir: what its summary counts, and its bytes on disk.
    Each is opened only to be read (no model is loaded, nothing is created); a memory that
    cannot be read says why in its row."""
    rows: list[dict[str, Any]] = []
    for name in memory_names(state_dir):
        row: dict[str, Any] = {"memory": name}
        try:
            with open_memory(name, base_dir=state_dir, create=False, embedder="none") as memory:
                counts = memory.summary()
            row.update({key: counts[key] for key in _COUNTED})  # type: ignore[literal-required]
        except RecuerdoError as error:
            row["error"] = error.code
        row["bytes"] = state_size(name, state_dir)
        rows.append(row)
    return rows


def register(cli: click.Group, emit_error: Any) -> None:
    @cli.command("memories")
    @click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
    @click.pass_obj
    def memories(state: Any, as_json: bool) -> None:
        """List the memories of the state dir, with what each holds and its size on disk."""
        rows = memory_rows(state.state_dir)
        if as_json or state.as_json:
            click.echo(render.to_json(rows))
        elif rows:
            click.echo(render.table(rows))
        else:
            where = state.state_dir or "the current directory"
            click.echo(f"(no memories under {where}; a first write creates one)")

    @cli.command("backup")
    @click.argument("out", type=click.Path(dir_okay=False))
    @click.option(
        "--raw",
        is_flag=True,
        help="A copy of the live store file (SQLite's online backup) instead of an archive.",
    )
    @click.pass_obj
    def backup(state: Any, out: str, raw: bool) -> None:
        """Write the whole memory to OUT: a portable archive (gzip JSON Lines of every table:
        entries, rules, plans, notes with every revision, conversations, knowledge with its
        history, links, settings, mutes, sessions, pins, code, messages, the audit), from
        whichever backend holds the memory; `restore` makes a new memory of it, on either.
        OUT is created readable by you alone; it may replace an earlier archive, never
        another file."""
        bar = _Bar("backup")
        try:
            with state.open(create=False) as memory:
                report = memory.backup(out, raw=raw, progress=bar)
        except RecuerdoError as error:
            emit_error(error, state.as_json)
        finally:
            bar.close()
        if state.as_json:
            click.echo(render.to_json(report))
        else:
            rows = f", {report['rows']} rows" if "rows" in report else ""
            click.echo(f"wrote {report['path']} ({report['bytes']} bytes{rows})")

    # `restore` is also the verb that brings back a deleted note (`restore ID`): one command
    # answers both, told apart by its argument (a note id is a number; an archive is a file).
    note_restore = cli.commands.get("restore")

    @cli.command(
        "restore",
        help=(
            (note_restore.help or "") + " With a FILE instead of an ID: rebuild the memory "
            "named by --memory (a new one; in the --database-url database when one is given) "
            "from that backup archive (see `backup`)."
            if note_restore is not None
            else "Rebuild the memory named by --memory (a new one) from a backup ARCHIVE."
        ),
        short_help="Bring back a deleted note (ID), or a whole memory from a backup (FILE)",
        cls=DescribedCommand,
        described=[
            (
                "TARGET",
                "The note's id. Or a backup archive FILE: the memory is rebuilt from it.",
            )
        ],
    )
    @click.argument("target")
    @click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
    @click.pass_context
    def restore(ctx: click.Context, target: str, as_json: bool) -> None:
        state = ctx.obj
        note_id = whole_number(target.strip())
        if note_id is not None and note_restore is not None:
            ctx.invoke(note_restore, id=note_id, as_json=as_json)
            return
        as_json = as_json or state.as_json
        bar = _Bar("restore")
        try:
            if not state.memory_name:
                raise MemoryNotNamed("name the memory to restore into: recuerdo --memory NAME")
            report = restore_memory(
                state.memory_name,
                target,
                base_dir=state.state_dir,
                url=state.database_url,
                progress=bar,
            )
        except RecuerdoError as error:
            emit_error(error, as_json)
        finally:
            bar.close()
        if as_json:
            click.echo(render.to_json(report))
        else:
            click.echo(f"restored {report['rows']} rows into {report['memory']}")

    @cli.command("compact")
    @click.pass_obj
    def compact(state: Any) -> None:
        """Finish forgets and give back space: SQLite merges its full-text indexes and writes
        the file again (VACUUM: it holds writers off meanwhile and needs memory about the
        file's size, disk about twice it); PostgreSQL builds the memory's GIN indexes again,
        where words of forgotten text stay keys until then (index_status says rebuild_owed),
        with reads and writes going on."""
        try:
            with state.open(create=False) as memory:
                report = memory.compact()
        except RecuerdoError as error:
            emit_error(error, state.as_json)
        if state.as_json:
            click.echo(render.to_json(report))
        elif report["dialect"] == "sqlite":
            click.echo(
                f"compacted {report['memory']}: {report['bytes_before']} -> "
                f"{report['bytes_after']} bytes in {report['seconds']} s"
            )
        else:
            rebuilt = ", ".join(report["rebuilt"]) or "none"
            click.echo(
                f"rebuilt the indexes of {report['memory']} ({rebuilt}) in {report['seconds']} s"
            )
            if not report["vacuumed"]:
                click.echo("the VACUUM the forgets owe waits for older transactions; it runs later")

    @cli.command("check")
    @click.pass_obj
    def check(state: Any) -> None:
        """Check a memory's file: integrity, full-text indexes, chunks, vectors and index marks
        (with --database-url, the memory there: tallies, chunks, vectors, folded copies).
        Exits 1 when anything is wrong."""
        try:
            if not state.memory_name:
                raise MemoryNotNamed("name the memory to check: recuerdo --memory NAME check")
            report = check_memory(
                state.memory_name, base_dir=state.state_dir, url=state.database_url
            )
        except RecuerdoError as error:
            emit_error(error, state.as_json)
        if state.as_json:
            click.echo(render.to_json(report))
        elif report["ok"]:
            click.echo(f"ok: {report['path']} is whole and its indexes agree with its tables")
        else:
            click.echo(f"damaged: {report['path']}")
            for problem in report["problems"]:
                click.echo(f"  {problem}")
            click.echo(
                f"Salvage what is readable: recuerdo --memory {state.memory_name} recover OUT.db"
            )
        if report["dead_restores"] and not state.as_json:
            click.echo(
                "left by restores that died (every tenant's data; removed by the next open of a "
                "memory file beside them, or the next restore):"
            )
            for left in report["dead_restores"]:
                click.echo(f"  {left}")
        sys.exit(0 if report["ok"] else 1)

    @cli.command("recover")
    @click.argument("out", type=click.Path(dir_okay=False))
    @click.pass_obj
    def recover(state: Any, out: str) -> None:
        """Copy what is readable of a damaged memory into a new file OUT, and report what was
        recovered and what was lost, table by table."""
        try:
            if not state.memory_name:
                raise MemoryNotNamed("name the memory to recover: recuerdo --memory NAME recover")
            report = recover_memory(
                state.memory_name, out, base_dir=state.state_dir, url=state.database_url
            )
        except RecuerdoError as error:
            emit_error(error, state.as_json)
        if state.as_json:
            click.echo(render.to_json(report))
            return
        rows = [{"table": name, **counts} for name, counts in report["tables"].items()]
        click.echo(render.table([r for r in rows if r["recovered"] or r["lost"]]))
        click.echo(
            f"recovered {report['recovered']} rows, lost {report['lost']}"
            + (
                f" (incomplete: {', '.join(report['incomplete_tables'])})"
                if report["incomplete_tables"]
                else ""
            )
        )
        click.echo(
            f"The recovered memory is {out}: move it in place of the damaged file to use it."
        )
