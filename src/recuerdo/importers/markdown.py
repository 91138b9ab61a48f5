"""Folders of Markdown notes: basic-memory projects and Notarium folders.

Every ``.md`` file is read with its YAML front matter (PyYAML). A Notarium agent-memory file
(``class: agent-memory``) holds one category of observations and is imported as that category
(see :mod:`.markdown_memory`). Every other file becomes:

- a note: the body as its content, ``title`` (else the first heading, else the file name) as its
  title, ``type`` (or Notarium's ``class``) as its kind, ``tags`` as its tags, at the key
  ``permalink`` (else ``<origin>/<id>``, else ``<origin>/<path without .md>``);
- its ``- [category] text #tag (context)`` items: passages about the note's title in knowledge;
- its ``- relation_type [[Target]] (context)`` items: facts from the title to the target;
- its other front matter fields: attributes of the note's entity in knowledge.

Inline ``[[links]]`` stay in the note's text, where recuerdo links them to the note of that
title. Hidden files and folders (``.git``, ``.obsidian``) and files that are not Markdown are
left out and named in the report.
"""

from __future__ import annotations

import json
import os
import re
from datetime import date, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ImportSourceInvalid, RecuerdoError
from . import markdown_memory
from .common import Outcome, Tally, one_line, remember, remember_relations, save_note
from .markdown_lines import Observation, Relation, list_items, parse_item

if TYPE_CHECKING:
    from ..engine import Memory

KIND = "markdown"
DEFAULT_SCOPE = "user"
_KIND_WORD = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
_HEADING = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.MULTILINE)
# Front matter fields that have a home on the note itself.
_NOTE_FIELDS = {"title", "type", "class", "tags", "permalink", "id"}
THINGS = ("notes", "observations", "relations", "categories", "category_observations")


class FrontMatterError(ValueError):
    pass


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """(front matter, body). A file without a ``---`` block has none."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, text
    try:
        import yaml  # the import extra: only Markdown sources need it
    except ImportError as exc:  # pragma: no cover - the extra is installed with the tests
        raise RecuerdoError(
            "importing Markdown reads YAML front matter: pip install 'recuerdo[import]'"
        ) from exc

    for index in range(1, len(lines)):
        if lines[index].strip() in ("---", "..."):
            block = "\n".join(lines[1:index])
            try:
                data = yaml.safe_load(block) if block.strip() else {}
            except yaml.YAMLError as exc:
                raise FrontMatterError(f"front matter is not valid YAML: {exc}") from exc
            if data is None:
                data = {}
            if not isinstance(data, dict):
                raise FrontMatterError("front matter is not a mapping of fields")
            return {str(k): v for k, v in data.items()}, "\n".join(lines[index + 1 :])
    raise FrontMatterError("front matter opened with --- is never closed")


def markdown_files(root: Path, tally: Tally) -> list[Path]:
    """The Markdown files under ``root`` in path order; what is left out is reported."""
    if root.is_file():
        if root.suffix.lower() != ".md":
            raise ImportSourceInvalid(
                f"{str(root)!r} is not a Markdown file or folder (give a folder of .md notes)"
            )
        return [root]
    found: list[Path] = []
    inside = root.resolve()
    for folder, folders, names in os.walk(root):
        here = Path(folder)
        for name in sorted(folders):
            if name.startswith("."):
                tally.leave_out("folder", (here / name).relative_to(root), "hidden")
            elif (here / name).is_symlink():
                tally.leave_out(
                    "folder", (here / name).relative_to(root), _link(here / name, inside)
                )
        folders[:] = sorted(
            name for name in folders if not name.startswith(".") and not (here / name).is_symlink()
        )
        for name in sorted(names):
            relative = (here / name).relative_to(root)
            if name.startswith("."):
                tally.leave_out("file", relative, "hidden")
            elif (here / name).is_symlink():
                tally.leave_out("file", relative, _link(here / name, inside))
            elif name.lower().endswith(".md"):
                found.append(here / name)
            else:
                tally.leave_out("file", relative, "not a Markdown file")
    return sorted(found)


def _link(path: Path, inside: Path) -> str:
    """Why a symbolic link under the folder is not read. An import reads the folder it was
    given and nothing else: a link may lead anywhere (a diary, a home folder), and one inside
    the folder leads to what is imported where it is (following it would import it twice)."""
    try:
        target = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return "a symbolic link to nothing (broken, or a loop): not read"
    if target == inside or inside in target.parents:
        return (
            f"a symbolic link to {target.relative_to(inside).as_posix() or '.'} in the folder: "
            "not followed (that is imported where it is)"
        )
    return "a symbolic link leading outside the imported folder: not read"


def run(memory: Memory, root: Path, *, origin: str | None, scope: str | None) -> Tally:
    label = origin or (root.stem if root.is_file() else root.resolve().name) or KIND
    tally = Tally(KIND, str(root), label, memory.name)
    files = markdown_files(root, tally)
    if not files:
        raise ImportSourceInvalid(f"{str(root)!r} holds no Markdown (.md) file")
    tally.expect(*THINGS)
    writer = memory.agent(f"import:{KIND}")
    base = root.parent if root.is_file() else root
    # The key each note took, and the file that took it: files are read in path order, so
    # when two files name one permalink the first keeps it, on every run.
    claimed: dict[str, str] = {}
    for path in files:
        relative = path.relative_to(base).as_posix()
        try:
            # An editor may save a byte order mark first: it would hide the front matter.
            text = path.read_text(encoding="utf-8").removeprefix("\ufeff")
            front, body = split_front_matter(text)
        except (FrontMatterError, UnicodeDecodeError) as exc:
            tally.skip("notes", relative, str(exc))
            continue
        except RecursionError:  # YAML nested past Python's depth: a raw traceback before
            tally.skip("notes", relative, "its front matter is nested too deep to read")
            continue
        if str(front.get("class", "")).strip().lower() in markdown_memory.CLASSES:
            markdown_memory.import_category(writer, tally, relative, front, body)
        else:
            _note(writer, tally, relative, front, body, label, scope or DEFAULT_SCOPE, claimed)
    _describe_fields(tally)
    return tally


def title_of(front: dict[str, Any], body: str, relative: str) -> str:
    title = front.get("title")
    if isinstance(title, str | int | float) and str(title).strip():
        return one_line(str(title))
    heading = _HEADING.search(body)
    if heading:
        return one_line(heading.group(1))
    return Path(relative).stem


def _kind(front: dict[str, Any]) -> tuple[str, list[str]]:
    given = front.get("type", front.get("class"))
    kind = str(given).strip().lower() if given is not None else ""
    if _KIND_WORD.fullmatch(kind):
        return kind, []
    return "note", ([f"type:{one_line(str(given))}"[:100]] if kind else [])


def _tags(front: dict[str, Any]) -> list[str]:
    given = front.get("tags") or []
    values = given if isinstance(given, list) else re.split(r"[,\s]+", str(given))
    return [one_line(str(v)).lstrip("#")[:100] for v in values if one_line(str(v)).lstrip("#")]


def _key(front: dict[str, Any], relative: str, origin: str) -> str:
    permalink = front.get("permalink")
    if isinstance(permalink, str) and permalink.strip():
        return one_line(permalink)
    if front.get("id") not in (None, ""):
        return f"{origin}/{one_line(str(front['id']))}"
    return f"{origin}/{relative.removesuffix('.md')}"


def attribute_value(value: object) -> object:
    """A front matter value as a knowledge attribute (typed where knowledge has the type)."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list) and all(isinstance(v, str | int | float | bool) for v in value):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _note(
    writer: Memory,
    tally: Tally,
    relative: str,
    front: dict[str, Any],
    body: str,
    origin: str,
    scope: str,
    claimed: dict[str, str],
) -> None:
    title = title_of(front, body, relative)
    kind, extra_tags = _kind(front)
    key = _key(front, relative, origin)
    # The key is claimed by the file whose note is written: a file that stores nothing (no
    # body, a refusal) left the key to no note and dropped the next (the review of 0102).
    first = claimed.get(key, relative)
    source = f"{origin}:{key}"[:200]
    attributes = {
        name: attribute_value(value)
        for name, value in front.items()
        if name not in _NOTE_FIELDS and value is not None
    }
    content = body.strip("\n")
    if first != relative:
        # Two notes at one key would replace each other on every import.
        tally.skip(
            "notes", relative, f"its key {key!r} is the note of {first}: a key holds one note"
        )
        return  # its items too: they would be filed under the other note's source
    if not content.strip():
        tally.skip("notes", relative, "no body: a note needs text")
    else:

        def write() -> Outcome:
            outcome = save_note(
                writer,
                title=title,
                content=content,
                kind=kind,
                scope=scope,
                key=key,
                tags=_tags(front) + extra_tags,
            )
            claimed.setdefault(key, relative)
            if attributes:
                entity = {"name": title, "type": kind, "attributes": attributes}
                added = remember(writer, facts={"entities": [entity]}, source=source, scope=scope)
                if outcome == "unchanged" and added == "imported":
                    outcome = "updated"
            return outcome

        tally.attempt("notes", relative, write)
    relations: list[tuple[str, dict[str, Any]]] = []
    for number, text in list_items(body):
        ref = f"{relative}:{number}"
        found = parse_item(text)
        if isinstance(found, Observation):
            _observation(writer, tally, ref, title, text, source, scope)
        elif isinstance(found, Relation):
            relation: dict[str, Any] = {"source": title, "target": found.target, "type": found.type}
            if found.context:
                relation["attributes"] = {"context": found.context}
            relations.append((ref, relation))
    if relations:
        remember_relations(writer, tally, "relations", relations, source=source, scope=scope)


def _observation(
    writer: Memory, tally: Tally, ref: str, title: str, text: str, source: str, scope: str
) -> None:
    passage = {"text": f"{title}: {text}", "mentions": [title]}
    tally.attempt(
        "observations",
        ref,
        partial(remember, writer, passages=[passage], source=source, scope=scope),
    )


def _describe_fields(tally: Tally) -> None:
    tally.kept_as("title, type (or class), tags", "the note's title, kind and tags")
    tally.kept_as("permalink (or id)", "the note's key, so a re-import updates the same note")
    tally.kept_as("other front matter fields", "attributes of the entity named by the note's title")
    tally.kept_as(
        "observation items",
        "passages '<title>: <item>' in knowledge, category, #tags and (context) in the text; "
        "the note keeps them too",
    )
    tally.kept_as(
        "relation items", "facts title -type-> target; a (context) is the fact's attribute"
    )
