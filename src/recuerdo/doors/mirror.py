"""``recuerdo mirror``: a local document and its whole copy in memory, kept reconciled.

The local side of Engram's mirror workflow (the memory side is the ``mirror_push`` and
``mirror_get`` verbs, so it works on a local memory and through ``--server`` alike):

* ``push FILE --key K``: saves the whole file at the key with the version of the last sync, then
  prints the evidence (versions, both hashes, in sync or not). A memory that cannot be reached
  (a server down, a store busy or damaged, a full disk) leaves the push in a local queue:
  ``status`` says ``pending`` and ``sync`` retries; success is never claimed. Copies that both
  changed since the last sync are kept both (a conflict revision) and reported as diverged.
* ``status [FILE]``: ``in_sync``, ``local_ahead``, ``memory_ahead``, ``diverged`` or ``pending``.
* ``pull FILE``: the memory copy into the file; refused when the file is ahead (``--force``).
* ``resume FEATURE``: the seed's resume order in one command.

What was last synced lives in ``.recuerdo/mirror.json`` beside the state folder (file path ->
memory, key, scope, version, hash); queued pushes in ``.recuerdo/mirror-pending/``.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import click

from ..errors import Conflict, RecuerdoError, StoreError, StoreTooNew, Timeout
from ..verbs import VERBS
from . import render

STATES = ("in_sync", "local_ahead", "memory_ahead", "diverged", "pending")
_TASK = re.compile(r"^\s*[-*]\s*\[ \]\s*(.+)$", re.MULTILINE)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _unreachable(error: RecuerdoError) -> bool:
    """A memory that may come back (the push waits in the queue), as opposed to a refusal."""
    return isinstance(error, StoreError | Timeout) and not isinstance(error, StoreTooNew)


def _locator(path: Path) -> str:
    """The file's path relative to its git repository (else to the current directory)."""
    try:
        top = subprocess.run(
            ["git", "-C", str(path.parent), "rev-parse", "--show-toplevel"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        top = ""
    base = Path(top) if top else Path.cwd()
    try:
        return path.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return path.name


class Ledger:
    """What was last synced, per file, and the pushes waiting for memory to come back."""

    def __init__(self, state_dir: str | None) -> None:
        root = Path(state_dir or os.getcwd()) / ".recuerdo"
        self.path = root / "mirror.json"
        self.queue = root / "mirror-pending"

    def load(self) -> dict[str, Any]:
        if not self.path.exists():
            return {}
        data: dict[str, Any] = json.loads(self.path.read_text())
        return data

    def save(self, files: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        partial = self.path.with_suffix(".partial")
        partial.write_text(json.dumps(files, indent=2, sort_keys=True))
        os.replace(partial, self.path)

    def record(self, file: Path, entry: dict[str, Any]) -> None:
        files = self.load()
        files[str(file.resolve())] = entry
        self.save(files)

    def entry(self, file: Path) -> dict[str, Any] | None:
        found: dict[str, Any] | None = self.load().get(str(file.resolve()))
        return found

    def _queued(self, file: Path) -> Path:
        digest = hashlib.sha256(str(file.resolve()).encode()).hexdigest()[:16]
        return self.queue / f"{digest}.json"

    def enqueue(self, file: Path, push: dict[str, Any]) -> Path:
        self.queue.mkdir(parents=True, exist_ok=True, mode=0o700)
        target = self._queued(file)
        target.write_text(json.dumps({"file": str(file.resolve()), **push}))
        return target

    def pending(self, file: Path) -> dict[str, Any] | None:
        target = self._queued(file)
        if not target.exists():
            return None
        found: dict[str, Any] = json.loads(target.read_text())
        return found

    def all_pending(self) -> list[dict[str, Any]]:
        if not self.queue.exists():
            return []
        return [json.loads(p.read_text()) for p in sorted(self.queue.glob("*.json"))]

    def done(self, file: Path) -> None:
        self._queued(file).unlink(missing_ok=True)


def _push(
    state: Any, ledger: Ledger, file: Path, key: str, scope: str | None, force: bool = False
) -> dict[str, Any]:
    content = file.read_text(encoding="utf-8")
    last = ledger.entry(file)
    # The version of the last sync, wherever it went: a push to a memory or scope holding
    # another note at the key is then a conflict (both kept), never an overwrite. Matching the
    # target too (the server's spelling, the database's) let a push overwrite unchecked when
    # one was spelled otherwise (decision 0084's review).
    expected = last["version"] if last and last.get("key") == key else None
    if force:  # the local copy wins; the memory's stays in the note's history
        scoped = {"scope": scope} if scope else {}
        expected = state.call(VERBS["mirror_get"], {"key": key, **scoped}).get("version")
    arguments: dict[str, Any] = {
        "key": key,
        "content": content,
        "locator": _locator(file),
        **({"scope": scope} if scope else {}),
        **({"expected_version": expected} if expected is not None else {}),
    }
    try:
        reply = state.call(VERBS["mirror_push"], arguments)
    except Conflict as error:
        deleted = "deleted_version" in error.extra
        return {
            "status": "diverged",
            "file": str(file),
            "key": key,
            "detail": (
                f"the memory's note at this key (note {error.extra.get('id')}) was deleted "
                "since the last sync: nothing was stored. Restore it and push again, or push "
                "with --force to start a new note."
                if deleted
                else "memory moved on since the last sync: both versions are kept (the "
                "pushed text as a conflict revision), nothing was overwritten. Reconcile, "
                "then pull or push with --force."
            ),
            **{k: v for k, v in error.extra.items() if "version" in k or "revision" in k},
        }
    except RecuerdoError as error:
        if not _unreachable(error):
            raise
        ledger.enqueue(file, {"key": key, "scope": scope, "content": content})
        return {
            "status": "pending",
            "file": str(file),
            "key": key,
            "detail": f"memory could not be reached ({error.code}: {error.detail}); the push "
            "waits in the local queue: run `recuerdo mirror sync` when memory is back",
        }
    ledger.done(file)
    ledger.record(
        file,
        {
            "memory": state.memory_name,
            "server": state.server,
            "key": key,
            "scope": reply["scope"],
            "version": reply["version"],
            "sha256": reply["memory_sha256"],
            "synced_at": time.time(),
        },
    )
    return {"status": "in_sync" if reply["in_sync"] else "memory_differs", **reply}


def _status(state: Any, ledger: Ledger, file: Path) -> dict[str, Any]:
    entry = ledger.entry(file)
    if ledger.pending(file) is not None:
        return {"file": str(file), "status": "pending", "detail": "a push waits in the queue"}
    if entry is None:
        return {"file": str(file), "status": "local_ahead", "detail": "never pushed"}
    local = _sha(file.read_text(encoding="utf-8")) if file.exists() else None
    copy = state.call(VERBS["mirror_get"], {"key": entry["key"], "scope": entry["scope"]})
    memory = copy.get("sha256")
    local_moved = local != entry["sha256"]
    memory_moved = memory != entry["sha256"] or copy.get("version") != entry["version"]
    status = {
        (False, False): "in_sync",
        (True, False): "local_ahead",
        (False, True): "memory_ahead",
        (True, True): "diverged",
    }[(local_moved, memory_moved)]
    return {
        "file": str(file),
        "status": status,
        "key": entry["key"],
        "scope": entry["scope"],
        "synced_version": entry["version"],
        "memory_version": copy.get("version"),
        "local_sha256": local,
        "memory_sha256": memory,
        "synced_sha256": entry["sha256"],
    }


def _next_task(text: str) -> str | None:
    found = _TASK.search(text)
    return found.group(1).strip() if found else None


def register(cli: click.Group, emit_error: Any) -> None:
    @cli.group("mirror")
    @click.pass_obj
    def mirror(state: Any) -> None:
        """Keep a local document and its whole copy in memory reconciled (Engram's mirror)."""
        # A workflow over its memory, which it declares (as recuerdo.open does): its reads
        # (the version before a push, the copy to compare) open the memory even when new.
        state.declared = True

    def finish(state: Any, report: dict[str, Any]) -> None:
        click.echo(render.to_json(report) if state.as_json else render.human(report))
        if report.get("status") in ("diverged", "pending"):
            sys.exit(1)  # never claim success

    @mirror.command("push")
    @click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
    @click.option("--key", required=True, help="The topic key, e.g. odd/auth/tasks.")
    @click.option("--scope", default=None, help="The scope, e.g. project:shop (default user).")
    @click.option(
        "--force",
        is_flag=True,
        help="Push over a memory copy that moved on (it stays in the note's history).",
    )
    @click.pass_obj
    def push(state: Any, file: Path, key: str, scope: str | None, force: bool) -> None:
        """Save the whole FILE at KEY, then read both copies back and compare."""
        try:
            finish(state, _push(state, Ledger(state.state_dir), file, key, scope, force))
        except RecuerdoError as error:
            emit_error(error, state.as_json)

    @mirror.command("status")
    @click.argument("file", required=False, type=click.Path(dir_okay=False, path_type=Path))
    @click.pass_obj
    def status(state: Any, file: Path | None) -> None:
        """in_sync, local_ahead, memory_ahead, diverged or pending, for FILE or every file."""
        ledger = Ledger(state.state_dir)
        files = [file] if file else [Path(p) for p in ledger.load()]
        files += [Path(p["file"]) for p in ledger.all_pending() if Path(p["file"]) not in files]
        try:
            reports = [_status(state, ledger, f) for f in files]
        except RecuerdoError as error:
            emit_error(error, state.as_json)
        click.echo(render.to_json(reports) if state.as_json else render.human(reports))

    @mirror.command("pull")
    @click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
    @click.option("--key", default=None, help="The topic key, for a file never synced here.")
    @click.option("--scope", default=None, help="Its scope, with --key.")
    @click.option("--force", is_flag=True, help="Overwrite local changes made since the sync.")
    @click.pass_obj
    def pull(state: Any, file: Path, key: str | None, scope: str | None, force: bool) -> None:
        """Write the memory copy into FILE (refused when FILE is ahead, unless --force)."""
        ledger = Ledger(state.state_dir)
        if ledger.entry(file) is None:
            if key is None:
                raise click.UsageError(f"{file} was never synced here: name its --key")
            ledger.record(file, {"memory": state.memory_name, "server": state.server,
                                 "key": key, "scope": scope or "user", "version": None,
                                 "sha256": None})  # fmt: skip
        try:
            now = _status(state, ledger, file)
            if not file.exists():
                now["status"] = "memory_ahead"
            if now["status"] in ("local_ahead", "diverged", "pending") and not force:
                now["detail"] = (
                    f"refused: the file is {now['status'].replace('_', ' ')}; pulling would "
                    "lose its changes (push them, or pull with --force)"
                )
                finish(state, {**now, "status": "refused"})
                sys.exit(1)
            entry = ledger.entry(file) or {}
            copy = state.call(VERBS["mirror_get"], {"key": entry["key"], "scope": entry["scope"]})
        except RecuerdoError as error:
            emit_error(error, state.as_json)
        if copy.get("state") == "nothing_stored":
            # The memory holds no note at the key (deleted or erased since): the file stays.
            finish(
                state,
                {
                    "file": str(file),
                    "status": "refused",
                    "key": entry["key"],
                    "detail": "the memory holds no note at this key any more: the file is "
                    "left as it is (push it to store it again)",
                },
            )
            sys.exit(1)
        file.write_text(copy["content"], encoding="utf-8")
        ledger.record(file, {**entry, "version": copy["version"], "sha256": copy["sha256"]})
        finish(state, {"file": str(file), "status": "in_sync", "version": copy["version"]})

    @mirror.command("sync")
    @click.pass_obj
    def sync(state: Any) -> None:
        """Retry the pushes waiting in the local queue."""
        ledger = Ledger(state.state_dir)
        reports = []
        try:
            for queued in ledger.all_pending():
                file = Path(queued["file"])
                file_now = file.read_text(encoding="utf-8") if file.exists() else None
                if file_now is not None and file_now != queued["content"]:
                    queued["content"] = file_now  # the file moved on: push what it holds now
                reports.append(_push(state, ledger, file, queued["key"], queued.get("scope")))
        except RecuerdoError as error:
            emit_error(error, state.as_json)
        click.echo(render.to_json(reports) if state.as_json else render.human(reports))
        if any(r["status"] in ("diverged", "pending") for r in reports):
            sys.exit(1)

    @mirror.command("resume")
    @click.argument("feature")
    @click.option("--project", default=None, help="The project (its scope is project:NAME).")
    @click.option("--file", "local", default=None, type=click.Path(path_type=Path),
                  help="The local task file (default: the one synced at the key, else "
                  "odd/tasks/FEATURE.md).")  # fmt: skip
    @click.pass_obj
    def resume(state: Any, feature: str, project: str | None, local: Path | None) -> None:
        """Resume a feature in the seed's order: recent context, a search in the project and
        feature, the full document (not a preview), the local file, then what differs and the
        next unfinished task."""
        scope = f"project:{project}" if project else None
        key = f"odd/{feature}/tasks"
        ledger = Ledger(state.state_dir)
        scoped = {"scope": scope} if scope else {}
        try:
            recent = state.call(VERBS["recent"], {**scoped, "max_bytes": 4000})
            found = state.call(VERBS["search"], {"query": feature, **scoped, "limit": 5})
            copy = state.call(VERBS["mirror_get"], {"key": key, **scoped})
        except RecuerdoError as error:
            emit_error(error, state.as_json)
        if local is None:
            synced = [Path(p) for p, e in ledger.load().items() if e.get("key") == key]
            local = synced[0] if synced else Path("odd") / "tasks" / f"{feature}.md"
        text = local.read_text(encoding="utf-8") if local.exists() else None
        memory_text = copy.get("content")
        report = {
            "1_recent": recent.get("context", recent),
            "2_search": [
                {"id": hit["id"], "title": hit["title"]} for hit in found.get("results", [])
            ],
            "3_document": {k: v for k, v in copy.items() if k != "content"}
            | ({"content": memory_text} if memory_text is not None else {}),
            "4_local_file": {"path": str(local), "exists": text is not None},
            "5_reconciliation": _reconcile(text, memory_text),
        }
        click.echo(render.to_json(report) if state.as_json else _resume_text(report))


def _reconcile(local: str | None, memory: str | None) -> dict[str, Any]:
    if local is None and memory is None:
        return {"state": "missing", "detail": "neither a local file nor a memory copy: nothing "
                "to resume (reported, not assumed)", "next_task": None}  # fmt: skip
    if local is None or memory is None:
        where = "memory" if local is None else "the local file"
        text = memory if local is None else local
        return {"state": "one_side", "detail": f"only {where} holds the document",
                "next_task": _next_task(text or "")}  # fmt: skip
    if local == memory:
        return {"state": "in_sync", "next_task": _next_task(local)}
    diff = list(difflib.unified_diff(memory.splitlines(), local.splitlines(), lineterm="", n=0))[
        2:
    ]  # past the two file header lines
    return {
        "state": "differs",
        "lines_only_in_local": [line[1:] for line in diff if line.startswith("+")],
        "lines_only_in_memory": [line[1:] for line in diff if line.startswith("-")],
        "next_task": _next_task(local),
    }


def _resume_text(report: dict[str, Any]) -> str:
    parts = []
    for step, value in report.items():
        parts.append(f"## {step[2:].replace('_', ' ')}")
        parts.append(value if isinstance(value, str) else render.to_json(value))
    return "\n".join(parts)
