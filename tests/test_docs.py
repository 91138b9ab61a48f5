"""Generated documentation stays in step with the code."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from recuerdo.doors import reference
from recuerdo.doors.cli import cli
from recuerdo.verbs import VERBS

ROOT = Path(__file__).resolve().parent.parent


def test_cli_reference_is_current() -> None:
    current = (ROOT / reference.TARGET).read_text()
    assert current == reference.render(), "docs/cli.md is stale: run `make docs`"


def test_every_verb_is_documented() -> None:
    text = (ROOT / reference.TARGET).read_text()
    for verb in VERBS:
        assert f"### {verb.name} ({verb.mode})" in text


def _words(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("name", [verb.name for verb in VERBS if verb.arguments or verb.cli_batch])
def test_every_positional_argument_is_described_in_the_help(name: str) -> None:
    """`recuerdo remember --help` says what CATEGORY may be: a positional argument's line
    under Args: is in the command's help, as an option's is (it was left out)."""
    verb = VERBS[name]
    shown = _words(reference._help([name]))
    for argument in (*verb.arguments, *([verb.cli_batch] if verb.cli_batch else [])):
        description = verb.params.model_fields[argument].description
        assert description, f"{name}: {argument} has no description"
        assert _words(description) in shown, (argument, shown)


def _command_paths(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = []
    for name, command in group.commands.items():
        paths.append((*prefix, name))
        if isinstance(command, click.Group):
            paths += _command_paths(command, (*prefix, name))
    return paths


@pytest.mark.parametrize("path", _command_paths(cli), ids=" ".join)
def test_every_command_has_its_whole_help_in_the_reference(path: tuple[str, ...]) -> None:
    """Not only the verbs: `serve`, `token create`, `backup`, `import-from`... are in
    docs/cli.md with their options (the list cut their one-line summary mid-sentence)."""
    text = (ROOT / reference.TARGET).read_text()
    assert f"Usage: recuerdo {' '.join(path)} " in text


def test_the_top_help_names_every_command_that_is_not_a_verb() -> None:
    """The top help says every command is a verb "except these": the list is complete."""
    said = _words(cli.help or "")
    others = [name for name in cli.commands if name not in VERBS]
    assert [name for name in others if f" {name}" not in said] == []
