"""Commands that look after a memory's file rather than run a verb: ``check`` and ``recover``.

They work on a damaged memory too (which every verb refuses with ``store_damaged``)."""

from __future__ import annotations

import sys
from typing import Any

import click

from ..engine import check_memory, recover_memory
from ..errors import MemoryNotNamed, RecuerdoError
from . import render


def register(cli: click.Group, emit_error: Any) -> None:
    @cli.command("check")
    @click.pass_obj
    def check(state: Any) -> None:
        """Check a memory's file: integrity, full-text indexes, chunks, vectors and index marks.
        Exits 1 when anything is wrong."""
        try:
            if not state.memory_name:
                raise MemoryNotNamed("name the memory to check: recuerdo --memory NAME check")
            report = check_memory(state.memory_name, base_dir=state.state_dir)
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
            report = recover_memory(state.memory_name, out, base_dir=state.state_dir)
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
