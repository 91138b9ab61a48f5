"""A Synsema state file: entries, owner rules, progress plans and recovery decisions.

The file's layout is read from the file itself (see :mod:`.synsema_db` and
``docs/importers.md``): the tables ``memory``, ``rules``, ``progress`` and ``decisions`` with
the columns Synsema writes are mapped; any other table, and any column without a home, is named
in the report.

- an active entry becomes an entry of the same category, tags and writer (``source``, through
  an agent view), tagged ``synsema:<origin>:<id>`` so a re-import finds it; its ``data`` map and
  unknown columns follow its content as a ``data:`` line (Synsema's own search reads them too);
  its creation time is the tag ``created:<time>``; forgotten entries (``active = 0``) are skipped;
- an active rule becomes the rule of that name (an explicit condition that its description does
  not state leads the description, since recuerdo reads the condition from it);
- the steps of a task become a plan of that name, each step moved to its status with its result
  or error;
- a recovery decision becomes a note of kind ``decision`` holding every field.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..engine import MAIN_SOURCE, owners_writer, stored_text
from ..errors import Conflict, ImportSourceInvalid, InvalidInput, TaskNotFound
from ..model import STEP_STATUSES, Step
from .common import (
    Outcome,
    Tally,
    cut_marker,
    fingerprint,
    iso_time,
    marker,
    one_line,
    save_note,
    tag,
)
from .synsema_db import Table, read_tables

if TYPE_CHECKING:
    from ..engine import Memory

KIND = "synsema"
MARKER = "synsema:{origin}:{id}"
ENTRY_COLUMNS: dict[str, tuple[str, ...]] = {
    "id": ("id",),
    "category": ("category",),
    "content": ("content", "text"),
    "data": ("data",),
    "tags": ("tags",),
    "source": ("source", "agent"),
    "confidence": ("confidence",),
    "active": ("active",),
    "created_at": ("created_at",),
    "updated_at": ("updated_at",),
}
RULE_COLUMNS: dict[str, tuple[str, ...]] = {
    "name": ("name",),
    "level": ("level",),
    "description": ("description",),
    "condition": ("condition",),
    "action": ("action",),
    "category": ("category",),
    "tags": ("tags",),
    "active": ("active",),
}
STEP_COLUMNS: dict[str, tuple[str, ...]] = {
    "task": ("task_name", "task"),
    "step": ("step_name", "step"),
    "status": ("status",),
    "started_at": ("started_at",),
    "finished_at": ("finished_at",),
    "result": ("result",),
    "error": ("error",),
    "metadata": ("metadata",),
    "retries": ("retries",),
}
TABLES = {
    "entries": ("memory", "memories", "entries"),
    "rules": ("rules", "owner_rules"),
    "plans": ("progress",),
    "decisions": ("decisions",),
}
MAPPED: dict[str, dict[str, tuple[str, ...]]] = {
    "entries": ENTRY_COLUMNS,
    "rules": RULE_COLUMNS,
    "plans": STEP_COLUMNS,
}
REQUIRED = {
    "entries": ("category", "content"),
    "rules": ("name", "level"),
    "plans": ("task", "step"),
}


def _columns(table: Table, wanted: dict[str, tuple[str, ...]]) -> dict[str, str]:
    """Our field name -> the table's column, for the columns the table has."""
    lower = {column.lower(): column for column in table.columns}
    found = {}
    for name, aliases in wanted.items():
        for alias in aliases:
            if alias in lower:
                found[name] = lower[alias]
                break
    return found


def run(memory: Memory, path: Path, *, origin: str | None, scope: str | None) -> Tally:
    tables = read_tables(path)
    label = origin or path.stem
    chosen: dict[str, Table] = {}
    for thing, names in TABLES.items():
        for name in names:
            if name in tables:
                chosen[thing] = tables[name]
                break
    if "entries" not in chosen and "plans" not in chosen:
        # rules and decisions alone are names too common to tell a Synsema state by.
        raise ImportSourceInvalid(
            f"{str(path)!r} is not a Synsema state: it has no memory or progress table (its "
            f"tables: {', '.join(sorted(tables)) or 'none'})"
        )
    tally = Tally(KIND, str(path), label, memory.name)
    tally.expect(*TABLES)
    used = {table.name for table in chosen.values()}
    for table in tables.values():
        if table.name not in used:
            tally.leave_out(
                "table",
                table.name,
                f"no recuerdo home for it ({len(table.rows)} rows; columns "
                f"{', '.join(table.columns)})",
            )
    for thing, table in chosen.items():
        columns = _columns(table, MAPPED.get(thing, {}))
        missing = [name for name in REQUIRED.get(thing, ()) if name not in columns]
        if missing:
            tally.leave_out("table", table.name, f"it has no {' or '.join(missing)} column to map")
            continue
        if thing == "entries":
            _entries(memory, tally, table, columns, label, scope)
        elif thing == "rules":
            _rules(memory, tally, table, columns)
        elif thing == "plans":
            _plans(memory, tally, table, columns)
        else:
            _decisions(memory, tally, table, label, scope)
    return tally


def _json(value: object, default: Any) -> Any:
    if value is None or value == "":
        return default
    if isinstance(value, str):
        try:
            return json.loads(value)
        except (json.JSONDecodeError, RecursionError):  # nested past Python's depth: as text
            return value
    return value


def _is_inactive(row: dict[str, Any], column: str | None) -> bool:
    return column is not None and row.get(column) in (0, "0", False)


def _entries(
    memory: Memory,
    tally: Tally,
    table: Table,
    columns: dict[str, str],
    origin: str,
    scope: str | None,
) -> None:
    extra = [c for c in table.columns if c not in columns.values()]
    if "data" in columns or extra:
        tally.kept_as(
            f"{table.name}.data" + "".join(f", {table.name}.{c}" for c in extra),
            "a 'data: {...}' line after the entry's content",
        )
    shown = marker(MARKER, origin, "<id>")
    tally.kept_as(
        f"{table.name}.id",
        f"the tag {shown} (found again on re-import)"
        + (
            ""
            if shown.startswith(f"synsema:{origin}:")
            else "; the origin is too long for a tag: its digest stands for it"
        ),
    )
    tally.kept_as(f"{table.name}.created_at", "the tag created:<time>")
    tally.kept_as(f"{table.name}.confidence", "the tag confidence:<value> when it is not 1")
    tally.kept_as(f"{table.name}.updated_at", "the import order (recall lists newest first)")

    def order(row: dict[str, Any]) -> float:
        for name in ("updated_at", "created_at"):
            value = row.get(columns.get(name, ""))
            if isinstance(value, int | float):
                return float(value)
        return 0.0

    top = _top_level(memory)  # one handle for every entry (a view was made per entry)
    for index, row in sorted(enumerate(table.rows), key=lambda pair: order(pair[1])):
        ident = row.get(columns.get("id", ""), index + 1)
        ref = f"{table.name} {ident}"
        if _is_inactive(row, columns.get("active")):
            tally.skip("entries", ref, "forgotten in source (active = 0)")
            continue
        content = row.get(columns["content"])
        if not isinstance(content, str) or not content.strip():
            tally.skip("entries", ref, "empty content: nothing to keep")
            continue
        record = _entry_record(row, columns, extra, origin, content)
        tally.attempt("entries", ref, partial(_entry, top, record, scope))


def _entry_record(
    row: dict[str, Any], columns: dict[str, str], extra: list[str], origin: str, content: str
) -> dict[str, Any]:
    """The entry one row becomes: writer, category, text (content, then its data) and tags."""
    data = _json(row.get(columns["data"]) if "data" in columns else None, {})
    data = data if isinstance(data, dict) else {"data": data}
    data.update({c: row[c] for c in extra if row.get(c) is not None})
    text = content
    if data:
        text += f"\n\ndata: {json.dumps(data, ensure_ascii=False, sort_keys=True, default=str)}"
    ident = row.get(columns.get("id", ""))
    found_by = marker(MARKER, origin, ident)
    tags = _tag_list(row.get(columns["tags"]) if "tags" in columns else None)
    own = len(tags)
    tags.append(found_by)
    created = iso_time(row.get(columns.get("created_at", "")))
    if created:
        tags.append(tag("created", created))
    confidence = row.get(columns.get("confidence", ""))
    if isinstance(confidence, int | float) and confidence != 1:
        tags.append(tag("confidence", confidence))
    source = row.get(columns.get("source", ""))
    category = str(row.get(columns["category"]) or "").strip().lower()
    said = fingerprint(category, text, tags)
    record: dict[str, Any] = {
        "writer": one_line(source) if isinstance(source, str) and source.strip() else "main",
        "category": category,
        "text": text,
        "marker": found_by,
        "said": said,
        "tags": [*tags, said],
        "cut": None,
    }
    cut = cut_marker(MARKER, origin, ident)
    if cut != found_by:
        # An import before decision 0102 stored this entry under the cut marker (shared by the
        # source's other entries): its tags were these, with that marker, so its fingerprint is
        # known exactly, and the entry it finds is this record's and no other's.
        tags[own] = cut
        record["cut"] = (cut, fingerprint(category, text, tags))
    return record


def _tag_list(value: object) -> list[str]:
    found = _json(value, [])
    if isinstance(found, str):
        found = [part for part in found.split(",")]
    if not isinstance(found, list):
        found = [found]
    tags = []
    for item in found:
        label = one_line(str(item))[:100]
        if label and label not in tags:
            tags.append(label)
    return tags


def _top_level(memory: Memory) -> Memory:
    """The owner's top-level handle (writer ``main``) of the memory imported into, whichever
    agent the import runs as (``recuerdo --agent bob import-from``): Synsema's top-level
    entries are written as ``main`` (an agent may not be named so) and a changed entry is
    replaced whoever wrote it. An agent's own view skipped the first and, refused the second,
    kept both texts of a changed entry. A token holder's view is no owner's: it stays as is."""
    if not memory.owner:
        return memory
    return memory.for_principal(MAIN_SOURCE, memory.tenant, owner=True, scopes=memory.scopes)


def _entry(top: Memory, record: dict[str, Any], scope: str | None) -> Outcome:
    """One entry, written through ``top`` (:func:`_top_level`) or its agent."""
    owners = owners_writer(record["writer"])  # as an agent, a look-alike is refused
    writer = top if owners else top.agent(record["writer"])
    category, text, tags = record["category"], record["text"], record["tags"]
    earlier = writer.recall(tags=[record["marker"]], from_="*", limit=1000)
    if record["cut"] is not None:
        cut, said = record["cut"]
        earlier += [
            entry
            for entry in writer.recall(tags=[cut], from_="*", limit=1000)
            if said in entry["tags"] and entry["source"] == writer.source
        ]
    for entry in earlier:
        if (
            record["said"] in entry["tags"]
            and entry["source"] == writer.source
            and (scope is None or entry["scope"] == scope)
        ):
            return "unchanged"
    # The source entry changed since it was imported: the new text replaces the old entry.
    writer.remember(category, text, tags, scope=scope)
    for entry in earlier:
        top.forget(entry["id"])  # the importer's, whoever wrote it: it may be another agent
    return "updated" if earlier else "imported"


def _rules(memory: Memory, tally: Tally, table: Table, columns: dict[str, str]) -> None:
    writer = memory.agent(f"import:{KIND}")
    current = {rule["name"]: rule for rule in writer.get_rules()}
    for column in [c for c in table.columns if c not in columns.values()]:
        tally.not_kept(f"{table.name}.{column}", "recuerdo rules have no such field")
    for index, row in enumerate(table.rows):
        name = row.get(columns["name"])
        ref = f"{table.name} {name if name else index + 1}"
        if _is_inactive(row, columns.get("active")):
            tally.skip("rules", ref, "removed in source (active = 0)")
            continue
        action = row.get(columns.get("action", ""))
        if action not in (None, "", "warn"):
            tally.not_kept(f"{table.name}.action", "recuerdo reports violations (Synsema's warn)")
        if _tag_list(row.get(columns.get("tags", ""))):
            tally.not_kept(f"{table.name}.tags", "recuerdo rules have no tags")
        rule = _rule_record(row, columns)
        tally.attempt("rules", ref, partial(_rule, writer, current, rule))


def _rule_record(row: dict[str, Any], columns: dict[str, str]) -> dict[str, Any]:
    """The rule one row becomes. recuerdo reads a rule's condition from its description, so an
    explicit condition the description does not state leads it."""
    description = str(row.get(columns.get("description", "")) or "").strip()
    condition = row.get(columns.get("condition", ""))
    if isinstance(condition, str) and condition.strip():
        stated = condition.strip()
        if stated not in description:
            description = f"{stated}: {description}" if description else stated
    category = row.get(columns.get("category", ""))
    return {
        "name": str(row.get(columns["name"])),
        "level": str(row.get(columns["level"]) or "").strip().lower(),
        "description": description,
        "category": one_line(category) if isinstance(category, str) and category.strip() else None,
    }


def _rule(writer: Memory, current: dict[str, Any], rule: dict[str, Any]) -> Outcome:
    before = current.get(rule["name"])
    wanted = (rule["level"], rule["description"], rule["category"])
    if before and (before["level"], before["description"], before["category"]) == wanted:
        return "unchanged"
    # Kept as Synsema kept it, without a condition when its bound cannot be read (a skip lost
    # the rule); get_rules then shows condition null.
    writer.add_rule(
        rule["name"], rule["level"], rule["description"], rule["category"], unreadable="store"
    )
    return "updated" if before else "imported"


def _plans(memory: Memory, tally: Tally, table: Table, columns: dict[str, str]) -> None:
    writer = memory.agent(f"import:{KIND}")
    for name, default, why in (
        ("started_at", None, "a step's times are stamped when the import moves it"),
        ("finished_at", None, "a step's times are stamped when the import moves it"),
        ("metadata", "{}", "recuerdo steps have no such field"),
        ("retries", 0, "recuerdo steps have no such field"),
    ):
        column = columns.get(name)
        if column and any(row.get(column) not in (None, "", default) for row in table.rows):
            tally.not_kept(f"{table.name}.{column}", why)
    tally.kept_as(
        f"{table.name}.result, {table.name}.error",
        "a done or skipped step's result (an error after it as 'error: ...'); a failed step's "
        "error (a result after it as 'result: ...'): a recuerdo step keeps one of the two",
    )
    tasks: dict[str, list[dict[str, Any]]] = {}
    for row in table.rows:
        tasks.setdefault(str(row.get(columns["task"])), []).append(row)
    for task, rows in tasks.items():
        steps = [
            _step(
                str(row.get(columns["step"])),
                str(row.get(columns.get("status", "")) or "pending").strip().lower(),
                row.get(columns.get("result", "")),
                row.get(columns.get("error", "")),
            )
            for row in rows
        ]
        for step in steps:
            if step["lost"]:
                tally.not_kept(
                    f"{table.name}.result, {table.name}.error of a {step['status']} step",
                    "a pending or started recuerdo step has no result or error",
                )
        tally.attempt("plans", f"task {task}", partial(_plan, writer, task, steps))


def _text(value: object) -> str | None:
    return None if value is None or value == "" else stored_text(str(value), body=False)


def _step(name: str, status: str, result: object, error: object) -> dict[str, Any]:
    """A source step as the plan keeps it. A step keeps one text: a done or skipped step its
    result (skip_step's reason), a failed step its error (fail_step keeps no result); the
    other, when the source has both, follows it, so neither is dropped. Texts are compared as
    stored (credentials redacted), so a second import finds the step unchanged."""
    said, wrong = _text(result), _text(error)
    note: str | None = None
    if status == "failed":
        note = (
            wrong
            if said is None
            else (f"{wrong}\n\nresult: {said}" if wrong else f"result: {said}")
        )
    elif status in ("done", "skipped"):
        note = said if wrong is None else (f"{said}\n\nerror: {wrong}" if said else wrong)
    return {
        "name": name,
        "status": status,
        "note": note,
        "lost": status in ("pending", "in_progress") and (said, wrong) != (None, None),
    }


def _held(step: Step) -> tuple[str, str, str | None]:
    """What a stored step says: its status and its one text (a failed step's result is what
    an earlier move left, not the source's, so it is not compared)."""
    if step["status"] == "failed":
        return step["name"], step["status"], step["error"]
    if step["status"] in ("done", "skipped"):
        return step["name"], step["status"], step["result"]
    return step["name"], step["status"], None


def _plan(writer: Memory, task: str, steps: Sequence[dict[str, Any]]) -> Outcome:
    unknown = sorted({s["status"] for s in steps} - set(STEP_STATUSES))
    if unknown:
        raise InvalidInput(f"unknown step status {', '.join(unknown)}")
    try:
        before = writer.get_progress(task)
    except TaskNotFound:
        before = None
    wanted = [(s["name"], s["status"], s["note"]) for s in steps]
    if before is not None and [_held(s) for s in before["steps"]] == wanted:
        return "unchanged"
    plan = writer.create_progress(task, [s["name"] for s in steps])
    have = {s["name"]: _held(s) for s in plan["steps"]}
    if [s["name"] for s in plan["steps"]] != [s["name"] for s in steps] or any(
        s["status"] == "pending" and have[s["name"]][1] != "pending" for s in steps
    ):
        raise Conflict(
            f"memory already tracks an unfinished task {task!r} with other steps or progress; "
            "it is left as it is"
        )
    for step, said in zip(steps, wanted, strict=True):
        status = step["status"]
        if status == "pending" or have[step["name"]] == said:
            continue
        if have[step["name"]][1] == status and step["note"] is None:
            # Marked again as it is, a step keeps its text (decision 0108): started anew, it
            # holds none, as the source's step (its times are the import's anyway).
            writer.start_step(task, step["name"])
        if status == "skipped":
            writer.skip_step(task, step["name"], step["note"])
        elif status == "in_progress":
            writer.start_step(task, step["name"])
        elif status == "done":
            writer.complete_step(task, step["name"], step["note"])
        else:
            writer.fail_step(task, step["name"], step["note"])
    return "updated" if before is not None else "imported"


def _decisions(memory: Memory, tally: Tally, table: Table, origin: str, scope: str | None) -> None:
    writer = memory.agent(f"import:{KIND}")
    tally.kept_as(f"{table.name}.*", "a note of kind decision holding every field")
    for index, row in enumerate(table.rows):
        ident = row.get("id", index + 1)
        kind_of_error = row.get("error_type")
        title = f"Recovery decision {ident}" + (f": {kind_of_error}" if kind_of_error else "")
        lines = []
        for column in table.columns:
            value = row.get(column)
            if column == "id" or value in (None, ""):
                continue
            if column == "timestamp":
                value = iso_time(value) or value
            lines.append(f"- {column}: {value}")
        write = partial(
            save_note,
            writer,
            title=title,
            content="\n".join(lines) or title,
            kind="decision",
            scope=scope or "user",
            key=f"synsema/{origin}/decision/{ident}",
            tags=["synsema"],
        )
        tally.attempt("decisions", f"{table.name} {ident}", write)
