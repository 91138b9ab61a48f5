"""``export-markdown DIR`` and ``import-markdown DIR``: a memory's notes as Markdown files.

They read and write files on this machine, so they are commands of the memory's owner (like
``backup`` and ``import-from``), never verbs of the network doors. The work is
``Memory.export_markdown`` / ``Memory.import_markdown``; this module runs it and prints the
report.
"""

from __future__ import annotations

from typing import Any

import click

from ..errors import InvalidInput, RecuerdoError
from . import render


def _local(state: Any, command: str) -> None:
    if state.server:
        raise InvalidInput(f"{command} works on files on this machine: run it without --server")


def register(cli: click.Group, emit_error: Any) -> None:
    @cli.command("export-markdown")
    @click.argument("folder", metavar="DIR", type=click.Path(file_okay=False))
    @click.option("--scope", help="Only the notes of this scope (default: every note).")
    @click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
    @click.pass_obj
    def export_markdown(state: Any, folder: str, scope: str | None, as_json: bool) -> None:
        """Write every note to DIR as one Markdown file with front matter (id, title, key, kind,
        scope, version, tags, links), in folders by axis and scope: user/, project/<name>/,
        other/<scope>/. Edit the files anywhere, then read them back with import-markdown."""
        as_json = as_json or state.as_json
        try:
            _local(state, "export-markdown")
            with state.open() as memory:
                report = memory.export_markdown(folder, scope=scope)
        except RecuerdoError as error:
            emit_error(error, as_json)
        if as_json:
            click.echo(render.to_json(report))
        else:
            click.echo(
                f"exported {report['notes']} notes to {report['directory']} "
                f"({report['written']} files written, {report['unchanged']} already up to date)"
            )

    @cli.command("import-markdown")
    @click.argument("folder", metavar="DIR", type=click.Path(file_okay=False))
    @click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
    @click.pass_obj
    def import_markdown(state: Any, folder: str, as_json: bool) -> None:
        """Read the Markdown files under DIR back as notes, by id or key (a file with neither
        makes a new note, in the scope its folder names). A file edited outside recuerdo becomes
        a new revision by principal `markdown`; one edited from an older version than the
        note's is kept as a conflict revision, never written over the note; an unedited file
        changes nothing. Files that made or changed a note get its new id and version in their
        front matter."""
        as_json = as_json or state.as_json
        try:
            _local(state, "import-markdown")
            with state.open() as memory:
                report = memory.import_markdown(folder)
        except RecuerdoError as error:
            emit_error(error, as_json)
        if as_json:
            click.echo(render.to_json(report))
            return
        click.echo(
            f"read {report['files']} files from {report['directory']}: "
            f"{report['created']} created, {report['updated']} updated, "
            f"{report['unchanged']} unchanged, {report['conflicts']} conflicts, "
            f"{report['behind']} behind the memory, {report['skipped']} skipped"
        )
        for change in report["changes"]:
            if change["outcome"] in ("conflict", "skipped", "behind"):
                click.echo(f"  [{change['outcome']}] {change['path']}: {change.get('detail', '')}")
