"""Engram's JSON export (``engram export``): sessions, observations and user prompts.

The export is Engram's ``ExportData`` (``internal/store/store.go``): ``{version, exported_at,
sessions, observations, prompts}``. What goes where:

- a session becomes a recuerdo session (``session_start``; ``session_end`` with its summary,
  which becomes the session's summary note);
- an observation becomes a note in the scope Engram's profile uses (``personal`` is ``user``,
  otherwise ``project:<project>``, the project trimmed and lower-cased as Engram matches it:
  :mod:`recuerdo.profiles.engram_scopes`, shared with the profile), its type the note's kind,
  at the key the profile gives its topic key (so a later observation of the same topic
  updates it and keeps a revision; a personal one's key holds its project, and a note an
  earlier import keyed by the topic key alone is moved there: decision 0138) or, without
  one, at the key ``<origin>/observation/<id>``; a personal one records its project as the
  tag ``project:<project>``, as the profile's save does (decision 0148); observations
  deleted in Engram are skipped;
- a user prompt becomes a dated knowledge document in its project's scope, its source label
  naming the prompt and its session (a prompt is something said at a time, and knowledge keeps
  both; the same prompt imported again is recognised and stored once).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..engine import stored_text
from ..errors import CapabilityNotGranted, ImportSourceInvalid, RecuerdoError, StoreError
from ..profiles.engram_scopes import (
    engram_scope,
    observation_key,
    project_name,
    project_scope,
    recorded_project,
)
from .common import Outcome, Tally, holds, iso_time, marker, remember, save_note, tag

if TYPE_CHECKING:
    from ..engine import Memory

KIND = "engram"
DEFAULT_ORIGIN = "engram"
ID_TAG = "{origin}-id:{id}"
# A note kind is a short lower-case word (the notes family refuses anything else).
_KIND_WORD = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
_SECTIONS = ("sessions", "observations", "prompts")


def load(path: Path) -> dict[str, list[Any]]:
    """The export's three lists; refused whole when the file is not an Engram export."""
    if not path.is_file():
        raise ImportSourceInvalid(
            f"{str(path)!r} is a folder: give the JSON file `engram export` wrote"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ImportSourceInvalid(
            f"{str(path)!r} is not an Engram export (not JSON: {exc}); make one with "
            "`engram export FILE`"
        ) from exc
    except RecursionError as exc:  # JSON nested deeper than Python's parser goes
        raise ImportSourceInvalid(
            f"{str(path)!r} is not an Engram export: its JSON is nested too deep to read"
        ) from exc
    if not isinstance(data, dict) or "version" not in data or "observations" not in data:
        raise ImportSourceInvalid(
            f"{str(path)!r} is not an Engram export: expected an object with version, "
            "exported_at, sessions, observations and prompts"
        )
    sections: dict[str, list[Any]] = {}
    for name in _SECTIONS:
        value = data.get(name)
        if value is None:  # Go writes an empty slice as null
            value = []
        if not isinstance(value, list):
            raise ImportSourceInvalid(f"the export's {name} is not a list")
        sections[name] = value
    return sections


def run(memory: Memory, path: Path, *, origin: str | None) -> Tally:
    sections = load(path)
    label = origin or DEFAULT_ORIGIN
    tally = Tally(KIND, str(path), label, memory.name)
    tally.expect(*_SECTIONS)
    writer = memory.agent(f"import:{KIND}")
    # Sessions open first and close last, as they did: a session's summary note follows the
    # observations saved during it in the session's timeline.
    opened = [_start_session(writer, tally, session) for session in sections["sessions"]]
    _observations(writer, tally, sections["observations"], label)
    for prompt in sorted(sections["prompts"], key=_id_order):
        _prompt(writer, tally, prompt, label)
    for started in opened:
        if started is not None:
            _end_session(writer, tally, *started)
    _describe_fields(tally, label)
    return tally


def _id_order(record: object) -> tuple[int, str]:
    """Engram's own order (by id), so the newest observation of a topic key wins."""
    value = record.get("id") if isinstance(record, dict) else None
    return (value, "") if isinstance(value, int) else (0, str(value))


def _text(record: dict[str, Any], name: str) -> str | None:
    value = record.get(name)
    return value if isinstance(value, str) and value.strip() else None


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _start_session(
    writer: Memory, tally: Tally, record: object
) -> tuple[dict[str, Any], dict[str, Any], bool] | None:
    """Open the session; (record, recuerdo's session, whether it existed before), or None
    when it is skipped (and reported)."""
    if not isinstance(record, dict) or _text(record, "id") is None:
        tally.skip("sessions", _ref(record), "a session needs a text id")
        return None
    session_id = str(record["id"])
    before = _now()
    try:
        reply = writer.session_start(
            session_id,
            project=project_name(record.get("project")) or "default",
            directory=_text(record, "directory"),
        )
    except (StoreError, CapabilityNotGranted):
        raise
    except RecuerdoError as error:
        tally.skip("sessions", f"session {session_id}", f"refused ({error.code}): {error.detail}")
        return None
    return record, dict(reply), reply["started_at"] < before


def _end_session(
    writer: Memory, tally: Tally, record: dict[str, Any], current: dict[str, Any], existed: bool
) -> None:
    """Close an ended session with its summary (a session already closed with the same
    summary by an earlier import is left alone)."""
    session_id = str(record["id"])
    summary = _text(record, "summary")

    def write() -> Outcome:
        if record.get("ended_at") is None and summary is None:
            return "unchanged" if existed else "imported"
        if (
            existed
            and current["ended_at"] is not None
            and (summary is None or _holds_summary(writer, current["summary"], summary))
        ):
            return "unchanged"
        writer.session_end(session_id, summary=summary)
        return "updated" if existed else "imported"

    tally.attempt("sessions", f"session {session_id}", write)


def _holds_summary(writer: Memory, kept: str | None, summary: str) -> bool:
    """Whether the session holds ``summary`` as session_end keeps it: redacted, stripped, and
    cut to the note size limit as its summary note holds it (one over the limit, or holding a
    credential, was ended again at every import, the note's duplicate count going up)."""
    text = stored_text(summary)  # redacted as session_end stores it (a credential, <private>)
    if kept is None or kept == text:
        return kept == text
    limit = int(writer.configure()["note_limit_bytes"])  # read only: nothing given to change
    return kept == text.encode("utf-8")[:limit].decode("utf-8", errors="ignore")


def _observations(writer: Memory, tally: Tally, records: list[Any], origin: str) -> None:
    """Observations in id order, grouped by their note (scope and key). Engram keeps one
    observation per topic key, but an older export may hold several: they are saved in
    order (the earlier ones stay as revisions), and a group whose last text the note already
    holds was imported before and is left alone."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for record in sorted(records, key=_id_order):
        note = _observation_note(tally, record, origin)
        if note is not None:
            groups.setdefault((note["scope"], note["key"]), []).append(note)
    for group in groups.values():
        last = group[-1]
        if len(group) > 1 and _holds(writer, last, last["key"]):
            for _ in group:
                tally.add("observations", "unchanged")
            continue
        if len(group) > 1 and last["former_key"] and _holds(writer, last, last["former_key"]):
            # An earlier import keyed the group by its topic key alone and holds its last
            # text: the last save moves the note to its key, the others are its revisions.
            for _ in group[:-1]:
                tally.add("observations", "unchanged")
            group = group[-1:]
        for note in group:
            fields = {name: value for name, value in note.items() if name != "ref"}
            tally.attempt("observations", note["ref"], partial(save_note, writer, **fields))


def _holds(writer: Memory, note: dict[str, Any], key: str) -> bool:
    return holds(
        writer,
        key=key,
        scope=note["scope"],
        title=note["title"],
        content=note["content"],
        kind=note["kind"],
    )


def _observation_note(tally: Tally, record: object, origin: str) -> dict[str, Any] | None:
    """The note an observation becomes, or None when it is skipped (and reported)."""
    if not isinstance(record, dict):
        tally.skip("observations", _ref(record), "an observation is a JSON object")
        return None
    ref = f"observation {record.get('id')}"
    if record.get("deleted_at"):
        tally.skip("observations", ref, f"deleted in source (deleted_at {record['deleted_at']})")
        return None
    title, content = _text(record, "title"), _text(record, "content")
    if title is None or content is None:
        tally.skip("observations", ref, "no title or no content: nothing to keep")
        return None
    scope = engram_scope(record.get("project"), record.get("scope"))
    topic = _text(record, "topic_key")
    # The key the Engram profile gives the same observation (a personal one holds its
    # project); one without a topic key is keyed by its id, which no other observation has.
    key, former = observation_key(record.get("project"), record.get("scope"), topic)
    kind, tags = _kind_and_tags(record, origin)
    return {
        "ref": ref,
        "title": title,
        "content": content,
        "kind": kind,
        "scope": scope,
        "key": str(key).strip() if topic else f"{origin}/observation/{record.get('id')}",
        "former_key": former,
        "tags": tags,
        "session": _text(record, "session_id"),
        # A personal observation's project is recorded on its note, as the profile records
        # it (decision 0148): the reads with a project keep to it.
        "project": recorded_project(record.get("project"), record.get("scope")),
    }


def _kind_and_tags(record: dict[str, Any], origin: str) -> tuple[str, list[str]]:
    """The note's kind, and the tags that keep what a note has no field for."""
    tags = [marker(ID_TAG, origin, record.get("id"))]
    kind = str(record.get("type") or "").strip().lower()
    if not _KIND_WORD.fullmatch(kind):
        if kind:
            tags.append(tag("type", record.get("type")))
        kind = "manual"
    for name, label in (("created_at", "created"), ("updated_at", "updated")):
        moment = iso_time(record.get(name))
        if moment is not None:
            tags.append(tag(label, moment))
    if _text(record, "tool_name"):
        tags.append(tag("tool", record["tool_name"]))
    for name, label in (("revision_count", "revisions"), ("duplicate_count", "duplicates")):
        count = record.get(name)
        if isinstance(count, int) and count > 1:
            tags.append(tag(label, count))
    seen = iso_time(record.get("last_seen_at"))
    if seen is not None:
        tags.append(tag("last-seen", seen))
    return kind, tags


def _prompt(writer: Memory, tally: Tally, record: object, origin: str) -> None:
    if not isinstance(record, dict):
        tally.skip("prompts", _ref(record), "a prompt is a JSON object")
        return
    ref = f"prompt {record.get('id')}"
    content = _text(record, "content")
    if content is None:
        tally.skip("prompts", ref, "empty prompt: nothing to keep")
        return
    session = _text(record, "session_id")
    source = f"{origin} prompt {record.get('id')}" + (f" (session {session})" if session else "")
    tally.attempt(
        "prompts",
        ref,
        lambda: remember(
            writer,
            content=content,
            date=iso_time(record.get("created_at")),
            source=source[:200],
            scope=project_scope(record.get("project")),
        ),
    )


def _ref(record: object) -> str:
    if isinstance(record, dict) and "id" in record:
        return str(record["id"])
    return json.dumps(record, ensure_ascii=False, default=str)[:80]


def _describe_fields(tally: Tally, origin: str) -> None:
    tally.kept_as(
        "observations.created_at, updated_at",
        "tags created:<time> and updated:<time> (a note's own times are those of the import)",
    )
    tally.kept_as(
        "observations.id",
        f"the tag {marker(ID_TAG, origin, '<id>')}, and the key {origin}/observation/<id> "
        "when there is no topic key",
    )
    tally.kept_as(
        "observations.tool_name, revision_count, duplicate_count, last_seen_at",
        "tags tool:, revisions: and duplicates: (when above 1), last-seen:",
    )
    tally.kept_as(
        "observations.type",
        "the note's kind; a type that is not a short lower-case word is the tag type:<type> "
        "on a note of kind manual",
    )
    tally.kept_as(
        "prompts",
        f"a knowledge document dated created_at, source '{origin} prompt <id> (session <id>)'",
    )
    tally.not_kept(
        "sessions.started_at, ended_at",
        "recuerdo stamps a session's start and end itself; the summary is kept",
    )
