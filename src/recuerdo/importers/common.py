"""What every importer shares: the report, its tally, and the few ways of writing once.

An importer reads its whole source first (a source that is not what its kind expects is
refused before anything is written), then writes each record through the memory's public
verbs. Every record read ends in exactly one outcome: ``imported`` (new), ``updated`` (an
earlier import of it changed), ``unchanged`` (already there: re-running an import writes
nothing twice) or ``skipped`` with a reason. Fields that have no home of their own are either
kept somewhere else (a tag, an attribute, the text) or named as skipped: never dropped silently.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict

from ..errors import (
    CapabilityNotGranted,
    ImportSourceNotFound,
    RecuerdoError,
    StoreError,
)

if TYPE_CHECKING:
    from ..engine import Memory

Outcome = Literal["imported", "updated", "unchanged", "skipped"]
MAX_TAG_CHARS = 100
T = TypeVar("T")


@with_config(ConfigDict(extra="forbid"))
class Counts(TypedDict):
    """What became of the records of one kind: read = imported + updated + unchanged +
    skipped."""

    read: int
    imported: int
    updated: int
    unchanged: int
    skipped: int


@with_config(ConfigDict(extra="forbid"))
class Skipped(TypedDict):
    """One record, table or file left out, and why."""

    what: str
    ref: str
    reason: str


@with_config(ConfigDict(extra="forbid"))
class FieldNote(TypedDict):
    """A source field with no home of its own: where it was kept, or why it was not."""

    field: str
    outcome: Literal["kept_as", "skipped"]
    detail: str


@with_config(ConfigDict(extra="forbid"))
class ImportReport(TypedDict):
    """What an import read, wrote and left out."""

    kind: str
    source: str
    origin: str
    memory: str
    counts: dict[str, Counts]
    skipped: list[Skipped]
    fields: list[FieldNote]


@dataclass
class Tally:
    """The report as an import goes: one call per record read."""

    kind: str
    source: str
    origin: str
    memory: str
    counts: dict[str, Counts] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)
    fields: list[FieldNote] = field(default_factory=list)

    def expect(self, *things: str) -> None:
        """Name the kinds of records this source has (listed even when none are read)."""
        for thing in things:
            self._counts(thing)

    def _counts(self, thing: str) -> Counts:
        if thing not in self.counts:
            self.counts[thing] = {
                "read": 0,
                "imported": 0,
                "updated": 0,
                "unchanged": 0,
                "skipped": 0,
            }
        return self.counts[thing]

    def add(self, thing: str, outcome: Outcome) -> None:
        counts = self._counts(thing)
        counts["read"] += 1
        counts[outcome] += 1

    def skip(self, thing: str, ref: object, reason: str) -> None:
        self.add(thing, "skipped")
        self.skipped.append({"what": thing, "ref": str(ref), "reason": reason})

    def leave_out(self, what: str, ref: object, reason: str) -> None:
        """A table, file or folder left out whole (not a record: it is not counted)."""
        self.skipped.append({"what": what, "ref": str(ref), "reason": reason})

    def kept_as(self, name: str, detail: str) -> None:
        self._field(name, "kept_as", detail)

    def not_kept(self, name: str, detail: str) -> None:
        self._field(name, "skipped", detail)

    def _field(self, name: str, outcome: Literal["kept_as", "skipped"], detail: str) -> None:
        note: FieldNote = {"field": name, "outcome": outcome, "detail": detail}
        if note not in self.fields:
            self.fields.append(note)

    def report(self) -> ImportReport:
        return {
            "kind": self.kind,
            "source": self.source,
            "origin": self.origin,
            "memory": self.memory,
            "counts": self.counts,
            "skipped": self.skipped,
            "fields": self.fields,
        }

    def attempt(self, thing: str, ref: object, write: Callable[[], Outcome]) -> None:
        """Run one record's write; a refusal skips that record (with the refusal's code and
        detail), while a store that cannot be written stops the import."""
        try:
            outcome = write()
        except (StoreError, CapabilityNotGranted):
            raise
        except RecuerdoError as error:
            self.skip(thing, ref, f"refused ({error.code}): {error.detail}")
            return
        self.add(thing, outcome)


def existing_path(source: str | Path) -> Path:
    path = Path(source).expanduser()
    if not path.exists():
        raise ImportSourceNotFound(f"no file or folder at {str(path)!r}: nothing was imported")
    return path


def iso_time(value: object) -> str | None:
    """A source time (ISO 8601 text, with or without zone, or Unix seconds) as ISO 8601 UTC;
    None when it is empty or not a time."""
    if value is None or value == "":
        return None
    try:
        if isinstance(value, bool):
            return None
        if isinstance(value, int | float):
            moment = datetime.fromtimestamp(float(value), UTC)
        elif isinstance(value, str):
            moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        else:
            return None
    except (ValueError, OverflowError, OSError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    text = moment.astimezone(UTC).isoformat()
    return text.replace("+00:00", "Z")


def tag(name: str, value: object) -> str:
    """A ``name:value`` tag on one line, cut to the tag limit (for what a tag keeps of a
    record; a tag that finds a record again is a :func:`marker`, never cut)."""
    text = " ".join(f"{name}:{value}".split())
    return text[:MAX_TAG_CHARS]


def digest(text: str) -> str:
    """A short stable stand-in for a text too long for its place: ``~`` and the first 12 hex
    digits of its SHA-256 (the ``~`` tells it from the text itself)."""
    return "~" + hashlib.sha256(text.encode()).hexdigest()[:12]


def marker(form: str, origin: str, ident: object) -> str:
    """The tag by which a re-import finds a record again: ``form`` (such as
    ``synsema:{origin}:{id}``) filled with the source's origin and the record's id.

    A tag holds at most 100 characters, and a marker is never cut: a cut that drops the id
    gives every record of the source one marker, and each then replaces the one before. When
    the marker is too long, the origin is replaced by its :func:`digest`, then the id too. A
    marker that fits is the plain one, as earlier imports wrote it."""
    plain, short = one_line(origin), one_line(str(ident))
    for origin_part, id_part in (
        (plain, short),
        (digest(plain), short),
        (digest(plain), digest(short)),
    ):
        text = form.format(origin=origin_part, id=id_part)
        if len(text) <= MAX_TAG_CHARS:
            return text
    raise ValueError(f"the marker form {form!r} leaves no room for a digest")


def cut_marker(form: str, origin: str, ident: object) -> str:
    """The marker as imports before decision 0102 wrote it: cut to the tag limit. Only to
    find, and replace, what those imports stored under a marker too long to be whole."""
    return one_line(form.format(origin=origin, id=ident))[:MAX_TAG_CHARS]


def one_line(text: str) -> str:
    return " ".join(text.split())


def fingerprint(*parts: object) -> str:
    """A tag naming what a record said in its source. The memory may store the text otherwise
    (credentials and private spans are redacted, whitespace trimmed), so a re-import compares
    this tag, not the stored text."""
    digest = hashlib.sha256(json.dumps(parts, ensure_ascii=False, default=str).encode())
    return f"sha256:{digest.hexdigest()[:16]}"


def holds(writer: Memory, *, key: str, scope: str, title: str, content: str, kind: str) -> bool:
    """Whether the note at ``key`` in ``scope`` already holds this title, content and kind."""
    found = writer.mirror_get(key, scope=scope)
    if found["state"] != "answered" or "id" not in found:
        return False
    current: dict[str, Any] = dict(writer.get(found["id"]))
    if current["title"] != one_line(title) or current["kind"] != kind:
        return False
    return bool(
        current["content"] == content or fingerprint(title, content, kind) in current["tags"]
    )


def save_note(
    writer: Memory,
    *,
    title: str,
    content: str,
    kind: str,
    scope: str,
    key: str,
    tags: Sequence[str] = (),
    session: str | None = None,
    former_key: str | None = None,
    project: str | None = None,
) -> Outcome:
    """Save a note at its key unless the note there already says the same (then nothing is
    written). Over-long content is refused, never cut: an import loses nothing silently. A note
    found at ``former_key`` (an earlier import's key) is moved to ``key``: that is an update,
    even when its text is the same."""
    if holds(writer, key=key, scope=scope, title=title, content=content, kind=kind):
        return "unchanged"
    reply = writer.save(
        title,
        content,
        kind=kind,
        scope=scope,
        key=key,
        tags=[*tags, fingerprint(title, content, kind)],
        session=session,
        strict=True,
        former_key=former_key,
        project=project,
    )
    if reply["outcome"] == "created":
        return "imported"
    return "updated" if reply["outcome"] == "updated" or "former_key" in reply else "unchanged"


def remember(writer: Memory, **arguments: Any) -> Outcome:
    """One remember_knowledge call: the same call made again answers ``already``."""
    reply = writer.remember_knowledge(**arguments)
    return "unchanged" if reply["outcome"] == "already" else "imported"


def chunks(items: Sequence[T], size: int) -> list[Sequence[T]]:
    return [items[start : start + size] for start in range(0, len(items), size)]


def remember_relations(
    writer: Memory,
    tally: Tally,
    thing: str,
    batch: Sequence[tuple[str, dict[str, Any]]],
    *,
    source: str,
    scope: str,
) -> None:
    """A batch of (ref, relation) in one remember_knowledge call; when the batch is refused,
    one call each, so a bad relation is skipped with its reason and the others are kept."""
    try:
        reply = writer.remember_knowledge(
            facts={"relations": [relation for _, relation in batch]}, source=source, scope=scope
        )
    except (StoreError, CapabilityNotGranted):
        raise
    except RecuerdoError:
        for ref, relation in batch:
            call = partial(
                remember, writer, facts={"relations": [relation]}, source=source, scope=scope
            )
            tally.attempt(thing, ref, call)
        return
    # The reply counts new facts; which of the batch they were does not matter to the report.
    created = 0 if reply["outcome"] == "already" else int(reply["facts_created"])
    for position in range(len(batch)):
        tally.add(thing, "imported" if position < created else "unchanged")
