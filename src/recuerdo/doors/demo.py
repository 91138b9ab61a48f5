"""``recuerdo demo``: a small interactive tour of a memory (what ``make serve`` runs for now)."""

from __future__ import annotations

import re
import sys

import click

from ..engine import Memory
from ..errors import RecuerdoError
from ..model import CATEGORIES
from . import render

_FACT = re.compile(r"^\s*(\w+)\s*:\s*(.+?)\s*$")
_TAG = re.compile(r"(?<!\S)#([^\s#]+)")

HELP = f"""\
Type a fact as      CATEGORY: text #tag #tag     (categories: {", ".join(CATEGORIES)})
     ?words         recall the entries containing the words (?#tag recalls by tag)
     summary        show the memory's summary
     quit           leave (the memory stays on disk)"""


def _remember(memory: Memory, category: str, text: str) -> None:
    tags = _TAG.findall(text)
    content = _TAG.sub("", text).strip()
    entry_id = memory.remember(category.lower(), content, tags)
    click.echo(
        f"remembered #{entry_id}: [{category.lower()}] {content}"
        + (f"  tags: {', '.join(tags)}" if tags else "")
    )


def _recall(memory: Memory, query: str) -> None:
    query = query.strip()
    if query.startswith("#"):
        found = memory.recall(tags=[query[1:]])
    else:
        found = memory.recall(search=query or None)
    rows = [
        {k: entry[k] for k in ("id", "category", "content", "source", "tags")} for entry in found
    ]
    click.echo(render.human(rows))


def _tour(memory: Memory) -> None:
    click.echo("This memory is empty; a short tour first:")
    for category, text in (
        ("learning", "The billing API is slow on Mondays #api #billing"),
        ("preference", "The user likes answers in Spanish #language"),
    ):
        click.echo(f"> {category}: {text}")
        _remember(memory, category, text)
    click.echo("> ?monday")
    _recall(memory, "monday")
    click.echo("")


def run_demo(memory: Memory) -> None:
    click.echo(f"recuerdo demo: memory {memory.name!r} at {memory.location}")
    if not memory.recall(limit=1, from_="*"):
        _tour(memory)
    click.echo(HELP)
    interactive = sys.stdin.isatty()
    while True:
        try:
            line = input("> " if interactive else "")
        except (EOFError, KeyboardInterrupt):
            click.echo("")
            break
        if not interactive:
            click.echo(f"> {line}")  # a piped session reads as a transcript
        command = line.strip()
        if not command:
            continue
        if command in ("quit", "exit", "q"):
            break
        try:
            if command == "summary":
                click.echo(memory.summary()["text"])
            elif command.startswith("?"):
                _recall(memory, command[1:])
            elif (match := _FACT.match(command)) is not None:
                _remember(memory, match.group(1), match.group(2))
            else:
                click.echo(HELP)
        except RecuerdoError as error:
            click.echo(f"refused ({error.code}): {error.detail}")
    click.echo(memory.summary()["text"])
