"""``recuerdo --memory X import-from KIND SOURCE``: bring another memory system's memory in.

It reads files on this machine, so it is a command of the memory's owner (like ``backup``),
never a verb of the network doors. The work is :func:`recuerdo.importers.import_from`; this
module only runs it and prints its report.
"""

from __future__ import annotations

from typing import Any

import click

from ..errors import InvalidInput, RecuerdoError
from ..importers import ImportReport, import_from
from . import render


def _human(report: ImportReport) -> str:
    lines = [
        f"imported {report['kind']} from {report['source']} (origin {report['origin']}) "
        f"into {report['memory']}"
    ]
    rows = [{"records": thing, **counts} for thing, counts in report["counts"].items()]
    lines.append(render.table(rows))
    if report["skipped"]:
        lines.append("skipped:")
        lines += [f"  [{s['what']}] {s['ref']}: {s['reason']}" for s in report["skipped"]]
    if report["fields"]:
        lines.append("fields:")
        for note in report["fields"]:
            verb = "kept as" if note["outcome"] == "kept_as" else "skipped:"
            lines.append(f"  {note['field']}: {verb} {note['detail']}")
    return "\n".join(lines)


def register(cli: click.Group, emit_error: Any) -> None:
    @cli.command(
        "import-from",
        short_help="Import another memory system's memory: synsema, engram, markdown or "
        "mcp-memory.",
    )
    @click.argument("kind", metavar="KIND")
    @click.argument("source", type=click.Path())
    @click.option(
        "--scope",
        help="Scope for what has no scope of its own (default: none for Synsema entries, "
        "'user' for knowledge and notes); not for engram.",
    )
    @click.option(
        "--origin",
        help="A name for the source, to tell two sources of one kind apart (default: the "
        "Synsema memory's name, the Markdown folder's name, or the kind).",
    )
    @click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
    @click.pass_obj
    def import_command(
        state: Any, kind: str, source: str, scope: str | None, origin: str | None, as_json: bool
    ) -> None:
        """Import KIND's memory from SOURCE: synsema (a .synsema/state/<name>.db file), engram
        (the JSON file `engram export` writes), markdown (a folder of basic-memory or Notarium
        notes) or mcp-memory (the reference MCP memory server's JSON Lines file). Prints what
        was read, imported, updated, already there and skipped (with reasons). Importing the
        same source again writes nothing twice."""
        as_json = as_json or state.as_json
        try:
            if state.server:
                raise InvalidInput(
                    "import-from reads files on this machine into a local memory: run it "
                    "without --server"
                )
            with state.open() as memory:
                report = import_from(memory, kind, source, scope=scope, origin=origin)
        except RecuerdoError as error:
            emit_error(error, as_json)
        click.echo(render.to_json(report) if as_json else _human(report))
