"""Notes as Markdown files: the format of ``export-markdown`` and ``import-markdown``.

A note is one file, ``<axis>/<scope>/<title>.md``: ``user/`` for the user scope,
``project/<name>/`` for ``project:<name>``, ``other/<scope>/`` for any other scope. The file is
front matter, then the note's text exactly:

    ---
    id: 12
    title: "Checkout flow"
    key: "odd/checkout"
    kind: "decision"
    scope: "project:shop"
    version: 3
    tags: ["billing"]
    links: [{"id": 4, "type": "related", "title": "Payments"}]
    memory: "shop"
    ---
    The text, with its [[Title]] links as written.

Every value is one line of JSON, which is also YAML, so editors that read front matter read it
and no value can ever look like the closing ``---``. A file whose front matter an editor rewrote
in its own YAML is read with PyYAML (the ``import`` extra). The text is followed by one newline,
which reading takes off again: an editor that adds or keeps a final newline changes nothing.

Reading a file back (:func:`apply`) finds its note by ``id`` (only in the memory that wrote it,
and only when the key and scope still agree, or the note was moved to another key since), else
by key in the scope, else (a file naming no note: an import stopped before writing its front
matter) by the keyless note of its scope holding its title, kind, tags and text, else creates
one. A file whose text, title, kind and tags are the note's changes nothing; one edited outside
recuerdo becomes a new revision by principal ``markdown`` (operation ``external``); one whose
``version`` is not the note's current one and whose text differs both from that version and
from the current one is kept as a conflict revision (once), never written over the note; so is
one found by key whose version counts another note's revisions (a note deleted since, or
another memory's), when it differs from the note. A file of a note of this memory that was
deleted since (and whose key no other note took) is skipped: it would undo the deletion.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from ..core.items import visible
from ..core.secrets import redact_call
from ..core.settings import note_limit_bytes
from ..core.text import check_tags, checked_label
from ..errors import InvalidInput, RecuerdoError
from ..store.base import Row, Tx
from . import history
from . import links as note_links
from . import operations as notes
from .markdown_find import Moved, Unnamed, deleted_since, find, same

PRINCIPAL = "markdown"
OPERATION = "external"
FIELDS = ("id", "title", "key", "kind", "scope", "version", "tags", "links", "memory")
_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*):(?: (.*))?")
_UNSAFE = re.compile(r'[\x00-\x1f\x7f/\\:*?"<>|]')
_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10))}
_RESERVED |= {f"lpt{i}" for i in range(10)}
MAX_NAME_CHARS = 120

Outcome = Literal["created", "updated", "unchanged", "conflict", "behind", "skipped"]


class FileRefused(ValueError):
    """A file that cannot be read as a note (the reason is its message)."""


@dataclass
class Parsed:
    fields: dict[str, Any]
    body: str


@dataclass
class Applied:
    outcome: Outcome
    id: int | None = None
    version: int | None = None
    detail: str = ""
    conflict_revision_id: int | None = None
    links_added: int = 0
    rewrite: bool = False
    """Whether the file's front matter is to be written again (its note's new id and version)."""


# --- paths -------------------------------------------------------------------------------


def safe_name(text: str, fallback: str = "note") -> str:
    """A file or folder name for ``text`` on every common file system."""
    name = _UNSAFE.sub("-", unicodedata.normalize("NFC", text)).strip(" .")
    while len(name.encode("utf-8")) > MAX_NAME_CHARS * 2 or len(name) > MAX_NAME_CHARS:
        name = name[:-1]
    name = name.strip(" .")
    if not name or name.lower().split(".")[0] in _RESERVED:
        name = f"{name}-{fallback}" if name else fallback
    return name


def scope_folder(scope: str) -> PurePosixPath:
    if scope == "user":
        return PurePosixPath("user")
    if scope.startswith("project:") and scope[len("project:") :].strip():
        return PurePosixPath("project", safe_name(scope[len("project:") :], "project"))
    return PurePosixPath("other", safe_name(scope, "scope"))


def folder_scope(relative: PurePosixPath) -> str:
    """The scope a file's folder names (for a file whose front matter names none)."""
    parts = relative.parts[:-1]
    if len(parts) >= 2 and parts[0] == "project":
        return f"project:{parts[1]}"
    if len(parts) >= 2 and parts[0] == "other":
        return parts[1]
    return "user"


def file_names(rows: list[Row]) -> dict[int, PurePosixPath]:
    """Each note's path: its folder and title; a title taken in the folder (ignoring case,
    as some file systems do) gets the note's id added, and a count after it while that is
    taken too: a note titled "Plan (3)" holds the name the third "Plan" would get, and one of
    the two files was written over the other. Stable for the same notes."""
    taken: set[str] = set()
    paths: dict[int, PurePosixPath] = {}
    for row in sorted(rows, key=lambda r: r["id"]):
        folder = scope_folder(row["scope"])
        title = safe_name(row["title"] or "")
        stem, tries = title, 1
        while f"{folder}/{stem}".lower() in taken:
            stem = f"{title} ({row['id']})" if tries == 1 else f"{title} ({row['id']}-{tries})"
            tries += 1
        taken.add(f"{folder}/{stem}".lower())
        paths[row["id"]] = folder / f"{stem}.md"
    return paths


# --- the file format ---------------------------------------------------------------------


def render(front: dict[str, Any], body: str) -> str:
    lines = ["---"]
    lines += [f"{name}: {json.dumps(front[name], ensure_ascii=False)}" for name in front]
    lines += ["---", body]
    return "\n".join(lines) + "\n"


def parse(text: str) -> Parsed:
    """(front matter, text) of a file; a file without front matter is all text."""
    text = text.removeprefix("\ufeff")
    if not text.startswith("---\n") and not text.startswith("---\r\n"):
        return Parsed({}, _body(text))
    lines = text.split("\n")
    for index in range(1, len(lines)):
        if lines[index].rstrip("\r") == "---":
            block = [line.rstrip("\r") for line in lines[1:index]]
            return Parsed(_fields(block), _body("\n".join(lines[index + 1 :])))
    raise FileRefused("its front matter opened with --- is never closed")


def _body(text: str) -> str:
    return text[:-1] if text.endswith("\n") else text


def _fields(block: list[str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for line in block:
        if not line.strip():
            continue
        match = _LINE.fullmatch(line)
        if match is None:
            return _yaml_fields(block)
        try:
            values[match.group(1)] = json.loads(match.group(2) or "null")
        except ValueError:
            return _yaml_fields(block)
    return values


def _yaml_fields(block: list[str]) -> dict[str, Any]:
    """Front matter an editor rewrote in its own YAML style."""
    try:
        import yaml
    except ImportError as exc:  # pragma: no cover - the extra is installed with the tests
        raise FileRefused(
            "its front matter is YAML that is not one JSON value a line: reading it needs "
            "PyYAML (pip install 'recuerdo[import]')"
        ) from exc
    try:
        data = yaml.safe_load("\n".join(block))
    except yaml.YAMLError as exc:
        raise FileRefused(f"its front matter is not valid YAML ({exc})") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise FileRefused("its front matter is not a mapping of fields")
    return {str(name): value for name, value in data.items()}


# --- export ------------------------------------------------------------------------------


def note_rows(tx: Tx, tenant: str, scope: str | None) -> list[Row]:
    where = "tenant = ? AND item_type = 'note' AND status <> 'deleted'"
    params: list[object] = [tenant]
    if scope is not None:
        where += " AND scope = ?"
        params.append(notes.check_scope(scope))
    return tx.all(f"SELECT * FROM items WHERE {where} ORDER BY id", params)


def explicit_links(
    tx: Tx, tenant: str, viewer: str, item_id: int | None = None
) -> dict[int, list[dict[str, Any]]]:
    """Each note's links written by the link verb (``[[Title]]`` links live in its text), to
    the items ``viewer`` may read (a linked message's subject was written for anyone)."""
    found: dict[int, list[dict[str, Any]]] = {}
    one = "" if item_id is None else " AND l.from_id = ?"
    members_only, shown = visible("i", viewer)
    for row in tx.iterate(
        "SELECT l.from_id, l.to_id, l.type, i.title FROM links l JOIN items f ON f.id = l.from_id"
        " JOIN items i ON i.id = l.to_id WHERE f.tenant = ? AND f.item_type = 'note'"
        f" AND l.origin <> 'wikilink' AND i.status <> 'deleted' AND {members_only}{one}"
        " ORDER BY l.from_id, l.to_id, l.type",
        (tenant, *shown) if item_id is None else (tenant, *shown, item_id),
    ):
        found.setdefault(row["from_id"], []).append(
            {"id": row["to_id"], "type": row["type"], "title": row["title"]}
        )
    return found


def front_matter(row: Row, linked: list[dict[str, Any]], memory: str) -> dict[str, Any]:
    return {
        "id": row["id"],
        "title": row["title"],
        "key": row["key"],
        "kind": row["category"],
        "scope": row["scope"],
        "version": row["version"],
        "tags": json.loads(row["tags"]),
        "links": linked,
        "memory": memory,
    }


# --- import ------------------------------------------------------------------------------


def _int_field(fields: dict[str, Any], name: str) -> int | None:
    value = fields.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise FileRefused(f"its {name} is not a whole number: {value!r}")
    return value


def _text_field(fields: dict[str, Any], name: str) -> str | None:
    value = fields.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise FileRefused(f"its {name} is not text: {value!r}")
    return str(value)


@dataclass
class Incoming:
    """A file, read and checked as the note it asks to be."""

    title: str
    kind: str
    scope: str
    key: str | None
    tags: list[str]
    content: str
    id: int | None
    version: int | None
    links: list[tuple[int, str]]
    trusted: bool


def incoming(parsed: Parsed, relative: PurePosixPath, memory: str) -> Incoming:
    fields = parsed.fields
    try:
        title = notes.check_title(_text_field(fields, "title") or relative.stem)
        kind = notes.check_kind(_text_field(fields, "kind"))
        scope = notes.check_scope(_text_field(fields, "scope") or folder_scope(relative))
        key_text = _text_field(fields, "key")
        key = None if key_text is None else checked_label(key_text, "key")
        tags = check_tags(fields.get("tags"))
    except RecuerdoError as error:
        raise FileRefused(error.detail) from error
    cleaned = redact_call({"title": title, "content": parsed.body})
    try:
        content = notes.check_body(cleaned["content"])
    except RecuerdoError as error:
        raise FileRefused(error.detail) from error
    if not content.strip():
        raise FileRefused("its text is empty")
    wanted: list[tuple[int, str]] = []
    listed = fields.get("links") or []
    if not isinstance(listed, list):
        raise FileRefused("its links are not a list")
    for link in listed:
        if isinstance(link, dict) and isinstance(link.get("id"), int):
            wanted.append((int(link["id"]), str(link.get("type") or "related")))
    written_by = fields.get("memory")
    return Incoming(
        title=notes.check_title(cleaned["title"]),
        kind=kind,
        scope=scope,
        key=key,
        tags=tags,
        content=content,
        id=_int_field(fields, "id"),
        version=_int_field(fields, "version"),
        links=wanted,
        trusted=written_by is None or written_by == memory,
    )


def _add_links(tx: Tx, tenant: str, item_id: int, note: Incoming) -> int:
    if not note.trusted:
        return 0  # ids name items of the memory that wrote the file, not of this one
    added = 0
    for target, kind in note.links:
        try:
            if (
                note_links.link(tx, tenant, item_id, target, kind, viewer=None)["outcome"]
                == "created"
            ):
                added += 1
        except RecuerdoError:
            continue  # the target is gone: nothing to link to
    return added


def apply(
    tx: Tx,
    tenant: str,
    note: Incoming,
    moved: Moved | None = None,
    unnamed: Unnamed | None = None,
) -> Applied:
    """Bring one file's note into the memory (see the module docstring). ``moved`` and
    ``unnamed``: the same ones for every file read in ``tx``."""
    limit = note_limit_bytes(tx, tenant)
    if len(note.content.encode("utf-8")) > limit:
        return Applied("skipped", detail=f"its text is over the note size limit ({limit} bytes)")
    row = find(tx, tenant, note, moved or Moved(tx, tenant))
    if row is None and (made := (unnamed or Unnamed(tx, tenant, [note]))(note)) is not None:
        added = _add_links(tx, tenant, made["id"], note)
        return Applied("unchanged", made["id"], made["version"], links_added=added, rewrite=True)
    if row is None and (deleted := deleted_since(tx, tenant, note)) is not None:
        return Applied(
            "skipped",
            deleted,
            detail=f"its note ({deleted}) was deleted since the file was written: nothing was "
            "stored (restore the note to read the file into it, or take the id out of the "
            "file's front matter to make a new note)",
        )
    if row is None:
        item_id = notes.create(
            tx,
            tenant=tenant,
            principal=PRINCIPAL,
            title=note.title,
            content=note.content,
            kind=note.kind,
            scope=note.scope,
            key=note.key,
            tags=note.tags,
        )
        added = _add_links(tx, tenant, item_id, note)
        return Applied("created", item_id, 1, links_added=added, rewrite=True)
    if same(row, note):
        added = _add_links(tx, tenant, row["id"], note)
        # A file of this memory not naming the note's id and version (an import stopped
        # first) gets them: at an older one, its next edit was a conflict, not an update.
        stale = note.trusted and (note.id, note.version) != (row["id"], row["version"])
        return Applied("unchanged", row["id"], row["version"], links_added=added, rewrite=stale)
    if note.version is not None and (
        not note.trusted or (note.id is not None and note.id != row["id"])
    ):
        # Found by key, but the file's version counts another note's revisions (one deleted
        # since, or another memory's): equal to this note's by chance, an unedited file wrote
        # its old text over this note. What it differs by is not known to be an edit.
        return _conflict(tx, row, note, based_on=row["version"], foreign=True)
    if note.version is not None and note.version != row["version"]:
        base = tx.one(
            "SELECT title, kind FROM revisions WHERE tenant = ? AND item_id = ? AND version = ?",
            (tenant, row["id"], note.version),
        )
        if (
            base is not None
            and (base["title"], base["kind"]) == (note.title, note.kind)
            and history.version_text(tx, tenant, row["id"], note.version) == note.content
        ):
            return Applied(
                "behind",
                row["id"],
                row["version"],
                detail=f"the file is version {note.version}; the note has moved on to "
                f"{row['version']} (export again to refresh the file)",
            )
        return _conflict(tx, row, note, based_on=note.version)
    version, _, _ = notes.write_version(
        tx,
        row,
        principal=PRINCIPAL,
        operation=OPERATION,
        content=note.content,
        title=note.title,
        kind=note.kind,
        tags=note.tags,
    )
    added = _add_links(tx, tenant, row["id"], note)
    return Applied("updated", row["id"], version, links_added=added, rewrite=True)


def _conflict(tx: Tx, row: Row, note: Incoming, *, based_on: int, foreign: bool = False) -> Applied:
    # Another note's file is kept once whatever this note's version is now (its conflicts
    # were based on the version each import found: a copy an import, the review found).
    based = "" if foreign else " AND based_on = ?"
    kept = tx.scalar(
        "SELECT id FROM revisions WHERE item_id = ? AND operation = 'conflict'"
        f"{based} AND content = ? AND title = ? AND kind = ? ORDER BY id DESC LIMIT 1",
        (row["id"], *(() if foreign else (based_on,)), note.content, note.title, note.kind),
    )
    if kept is None:
        conflict = notes.keep_conflict(
            tx,
            row,
            principal=PRINCIPAL,
            title=note.title,
            kind=note.kind,
            body=note.content,
            expected_version=based_on,
        )
        kept = conflict.conflict_revision_id
    return Applied(
        "conflict",
        row["id"],
        row["version"],
        detail=(
            f"the file is another note's with this key (version {note.version} of note "
            f"{note.id} of its memory)"
            if foreign
            else f"the file was edited from version {note.version}, but the note is at "
            f"{row['version']}"
        )
        + f": the file's text is kept as conflict revision {kept}, nothing was overwritten",
        conflict_revision_id=int(kept),
    )


def read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FileRefused(f"it cannot be read ({exc.strerror or exc})") from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileRefused("it is not UTF-8 text") from exc


def front_of(tx: Tx, tenant: str, item_id: int, memory: str, viewer: str) -> dict[str, Any]:
    """The front matter of a note as it now is."""
    row = tx.one("SELECT * FROM items WHERE id = ? AND tenant = ?", (item_id, tenant))
    assert row is not None
    linked = explicit_links(tx, tenant, viewer, item_id).get(item_id, [])
    return front_matter(row, linked, memory)


def rewrite_front(text: str, front: dict[str, Any]) -> str:
    """``text`` with this front matter (the fields of ours, then any others it had); the text
    after it is untouched."""
    parsed = parse(text)
    extra = {name: value for name, value in parsed.fields.items() if name not in front}
    return render({**front, **extra}, parsed.body)


def check_folder(folder: str | os.PathLike[str], *, must_exist: bool) -> Path:
    path = Path(folder)
    if must_exist and not path.is_dir():
        raise InvalidInput(f"{folder} is not a folder")
    if not must_exist and path.exists() and not path.is_dir():
        raise InvalidInput(f"{folder} exists and is not a folder")
    return path
