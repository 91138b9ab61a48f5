"""``recuerdo mirror``: a local document and its whole copy in memory, kept reconciled.

The local side of Engram's mirror workflow (the memory side is the ``mirror_push`` and
``mirror_get`` verbs, so it works on a local memory and through ``--server`` alike):

* ``push FILE --key K``: saves the whole file at the key with the version of the last sync, then
  prints the evidence (versions, both hashes, in sync or not). A memory that cannot be reached
  (a server down, a store busy or damaged, a full disk) leaves the push in a local queue:
  ``status`` says ``pending`` and ``sync`` retries; success is never claimed. Copies that both
  changed since the last sync are kept both (a conflict revision) and reported as diverged.
* ``status [FILE]``: ``in_sync``, ``in_sync_except_redacted`` (memory holds the file with its
  secrets replaced, decision 0101), ``local_ahead``, ``memory_ahead``, ``diverged`` or
  ``pending``.
* ``pull FILE``: the memory copy into the file; refused when the file is ahead (``--force``).
* ``resume FEATURE``: the seed's resume order in one command.

What was last synced lives in ``.recuerdo/mirror.json`` beside the state folder (file path ->
memory, key, scope, version, the file's hash and the memory copy's); queued pushes in
``.recuerdo/mirror-pending/``. Files are read and written as bytes (CRLF kept).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: one mirror command at a time is assumed
    fcntl = None  # type: ignore[assignment]

from ..errors import (
    Conflict,
    DocumentCorrupt,
    InvalidInput,
    RecuerdoError,
    StoreError,
    StoreTooNew,
    Timeout,
)
from ..verbs import VERBS
from . import render
from .mirror_resume import reconcile, resume_text

STATES = (
    "in_sync",
    "in_sync_except_redacted",
    "local_ahead",
    "memory_ahead",
    "diverged",
    "pending",
)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _read(file: Path) -> str:
    """The file's text as its bytes hold it: ``read_text`` turned CRLF into LF, so memory held
    another document than the file, and the hash reported was not the file's (decision 0101)."""
    held = file.read_bytes()
    try:
        return held.decode("utf-8")
    except UnicodeDecodeError as error:  # a raw traceback before (the review of 0101)
        raise InvalidInput(
            f"{file} is not UTF-8 text (byte {error.start} is not): the mirror keeps text"
            " documents; nothing was sent"
        ) from error


def _write_atomic(path: Path, text: str, *, private: bool = True) -> None:
    """Write through a temporary file and a rename: a crash leaves the old file or the new one,
    never half of one (a cut ledger or queue file stopped every mirror command). ``private``:
    the mirror's own state (0700 folder, 0600 file); else a user's file keeps its mode."""
    if private:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    else:  # the file a link names: replacing the link made a second file (the review of 0101)
        path = path.resolve()
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(text.encode("utf-8"))
            out.flush()
            os.fsync(out.fileno())  # on disk before the rename, or a crash may leave it empty
        if not private:  # mkstemp makes 0600: the file's own mode, or the umask's for a new one
            umask = os.umask(0)
            os.umask(umask)
            mode = path.stat().st_mode & 0o7777 if path.exists() else 0o666 & ~umask
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


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


def _json(path: Path) -> dict[str, Any]:
    """A ledger or queue file, or a named refusal saying which one is damaged (a raw
    JSONDecodeError stopped every mirror command, and named no file)."""
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except ValueError as error:  # JSONDecodeError and UnicodeDecodeError
        data = error
    if not isinstance(data, dict):
        raise DocumentCorrupt(
            f"{path.resolve()} is damaged (not a JSON object: {data}); the mirror's local "
            "state is not read or written until it is moved aside (the memory is untouched: "
            "`recuerdo mirror pull FILE --key KEY` rebuilds a file's entry)",
            path=str(path.resolve()),
        )
    return data


class Ledger:
    """What was last synced, per file, and the pushes waiting for memory to come back."""

    def __init__(self, state_dir: str | None) -> None:
        root = Path(state_dir or os.getcwd()) / ".recuerdo"
        self.path = root / "mirror.json"
        self.queue = root / "mirror-pending"

    def load(self) -> dict[str, Any]:
        return _json(self.path) if self.path.exists() else {}

    def save(self, files: dict[str, Any]) -> None:
        _write_atomic(self.path, json.dumps(files, indent=2, sort_keys=True))

    def record(self, file: Path, entry: dict[str, Any]) -> None:
        with self._locked():  # two mirror commands at once: one's entry was lost
            files = self.load()
            files[str(file.resolve())] = entry
            self.save(files)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """The ledger's read, change and write, one process at a time (a lock file beside it;
        where there is no ``fcntl``, one process at a time is assumed)."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(self.path.with_name("mirror.lock"), "ab") as handle:
            if fcntl is not None:
                fcntl.flock(handle, fcntl.LOCK_EX)
            yield  # closing the file lets the lock go

    def entry(self, file: Path) -> dict[str, Any] | None:
        found: dict[str, Any] | None = self.load().get(str(file.resolve()))
        return found

    def held_or(self, file: Path, entry: dict[str, Any]) -> dict[str, Any]:
        """``file``'s entry, ``entry`` if it had none (one hold of the lock: a push recording
        it since it was found missing lost its entry to ``entry``)."""
        with self._locked():
            files = self.load()
            held: dict[str, Any] = files.setdefault(str(file.resolve()), entry)
            if held is entry:
                self.save(files)
            return held

    def drop_if(self, file: Path, entry: dict[str, Any]) -> None:
        """``file``'s entry removed if it is still ``entry`` (one hold of the lock): a pull's
        placeholder, when the pull is refused. Left, it named no version, and the next push
        of the file went unchecked."""
        with self._locked():
            files = self.load()
            if files.get(str(file.resolve())) == entry:
                del files[str(file.resolve())]
                self.save(files)

    def swap(
        self, file: Path, seen: dict[str, Any], entry: dict[str, Any], write: Callable[[], None]
    ) -> bool:
        """``write()`` and ``entry`` recorded if ``file``'s entry is still ``seen`` (else False,
        nothing done), in one hold of the lock: a pull undid a sync made while it ran."""
        with self._locked():
            files = self.load()
            if files.get(str(file.resolve())) != seen:
                return False
            write()
            files[str(file.resolve())] = entry
            self.save(files)
            return True

    def _queued(self, file: Path) -> Path:
        digest = hashlib.sha256(str(file.resolve()).encode()).hexdigest()[:16]
        return self.queue / f"{digest}.json"

    def enqueue(self, file: Path, push: dict[str, Any]) -> Path:
        target = self._queued(file)
        _write_atomic(target, json.dumps({"file": str(file.resolve()), **push}))
        return target

    def pending(self, file: Path) -> dict[str, Any] | None:
        target = self._queued(file)
        return _json(target) if target.exists() else None

    def all_pending(self) -> list[dict[str, Any]]:
        if not self.queue.exists():
            return []
        return [_json(p) for p in sorted(self.queue.glob("*.json"))]

    def done(self, file: Path) -> None:
        self._queued(file).unlink(missing_ok=True)


def _push(
    state: Any,
    ledger: Ledger,
    file: Path,
    key: str,
    scope: str | None,
    force: bool = False,
    content: str | None = None,
) -> dict[str, Any]:
    """Push ``content`` (the file's, read whole, when not given: ``sync`` gives the queued)."""
    # The ledger before the file: a pull between the two recorded its version, and the text
    # read before it was pushed over that version unchecked.
    last = ledger.entry(file)
    content = _read(file) if content is None else content
    # The version of the last sync, wherever it went: a push to a memory or scope holding
    # another note at the key is then a conflict (both kept), never an overwrite. Matching the
    # target too (the server's spelling, the database's) let a push overwrite unchecked when
    # one was spelled otherwise (decision 0084's review). Never synced to this key: version 0,
    # so another document already at the key (another machine's first push) is a conflict,
    # not silently replaced (the upsert trap, decision 0101).
    expected: int | None = last["version"] if last and last.get("key") == key else 0
    scoped = {"scope": scope} if scope else {}
    try:
        if force:  # the local copy wins; the memory's stays in the note's history
            expected = state.call(VERBS["mirror_get"], {"key": key, **scoped}).get("version")
        arguments: dict[str, Any] = {
            "key": key,
            "content": content,
            "locator": _locator(file),
            **scoped,
            **({"expected_version": expected} if expected is not None else {}),
        }
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
                else "memory already holds another document at this key, never synced from "
                "here: both are kept (the pushed text as a conflict revision), nothing was "
                "overwritten. Reconcile, then pull or push with --force."
                if expected == 0
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
    # Both hashes are kept: the document's (the file's bytes) and the memory copy's. They
    # differ when the guard replaced a secret: the status compares each side with its own,
    # so the pair stays in sync (one hash for both said local_ahead forever, decision 0101).
    sent = _sha(content)
    redacted = reply.get("redacted") or {}
    ledger.record(
        file,
        {
            "memory": state.memory_name,
            "server": state.server,
            "key": key,
            "scope": reply["scope"],
            "version": reply["version"],
            "sha256": reply["memory_sha256"],
            "local_sha256": sent,
            "redacted": redacted,
            "synced_at": time.time(),
        },
    )
    alike = sent == reply["memory_sha256"]
    return {
        **reply,
        "file": str(file),
        "status": "in_sync" if alike else "in_sync_except_redacted",
        "local_sha256": sent,
        "in_sync": alike,
    }


def _status(state: Any, ledger: Ledger, file: Path, entry: dict[str, Any] | None) -> dict[str, Any]:
    """``file``'s state, from its ledger ``entry`` as the caller read it (the ledger read once
    for all the files: read again for each, a status of N files parsed it N times)."""
    if ledger.pending(file) is not None:
        return {"file": str(file), "status": "pending", "detail": "a push waits in the queue"}
    if entry is None:
        return {"file": str(file), "status": "local_ahead", "detail": "never pushed"}
    local = hashlib.sha256(file.read_bytes()).hexdigest() if file.exists() else None
    copy = state.call(VERBS["mirror_get"], {"key": entry["key"], "scope": entry["scope"]})
    memory = copy.get("sha256")
    synced_local = entry.get("local_sha256", entry["sha256"])  # older ledgers kept one hash
    local_moved = local != synced_local
    memory_moved = memory != entry["sha256"] or copy.get("version") != entry["version"]
    status = {
        (False, False): "in_sync",
        (True, False): "local_ahead",
        (False, True): "memory_ahead",
        (True, True): "diverged",
    }[(local_moved, memory_moved)]
    report: dict[str, Any] = {}
    if local is None:  # nothing local to lose: the memory copy is what there is
        status = "memory_ahead"
        report["detail"] = "the file is missing: `recuerdo mirror pull` writes the memory copy"
    elif status == "in_sync" and synced_local != entry["sha256"]:
        status = "in_sync_except_redacted"
        report["detail"] = (
            "neither side moved since the sync; the memory copy differs from the file by what "
            "the guard took out before storing (secrets replaced, <private> spans removed: "
            "memory never holds them)"
        )
        report["redacted"] = entry.get("redacted", {})
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
        "synced_local_sha256": synced_local,
        **report,
    }


def _unplace(ledger: Ledger, file: Path, placed: dict[str, Any] | None) -> None:
    """A refused pull takes back the placeholder it recorded (nothing was synced)."""
    if placed is not None:
        ledger.drop_if(file, placed)


def _retry_queued(state: Any, ledger: Ledger, queued: dict[str, Any]) -> dict[str, Any]:
    """A queued push sent again, on its own: a file gone or a refusal is reported with its
    item, and the others are still sent (one raised, and the queue never drained)."""
    file = Path(queued["file"])
    now = None  # unread: a file that cannot be read is reported with its item
    try:
        # The queued push holds the whole document; the file, when it is still there and
        # moved on, holds newer text: that is pushed instead.
        now = _read(file) if file.exists() else None
        report = _push(state, ledger, file, queued["key"], queued.get("scope"),
                       content=queued["content"] if now is None else now)  # fmt: skip
    except RecuerdoError as error:
        report = {"file": str(file), "status": "refused", **error.to_dict()}
    except (OSError, UnicodeDecodeError) as error:
        report = {"file": str(file), "status": "refused",
                  "detail": f"the file could not be read: {error}"}  # fmt: skip
    if now is None and report["status"] in ("in_sync", "in_sync_except_redacted"):
        # Memory holds the document, the file is gone: what `status` says of it.
        report["status"] = "memory_ahead"
        report["detail"] = (
            "the file is gone: the queued copy was pushed (`recuerdo mirror pull` writes it back)"
        )
    return report


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
        """in_sync, in_sync_except_redacted, local_ahead, memory_ahead, diverged or pending,
        for FILE or every file."""
        ledger = Ledger(state.state_dir)
        try:
            synced = ledger.load()
            files = [file] if file else [Path(p) for p in synced]
            queued = [Path(p["file"]) for p in ledger.all_pending()]
            listed = set(files)  # a queued file already listed is listed once
            files += [f for f in queued if f not in listed]
            with state.holding():
                reports = [_status(state, ledger, f, synced.get(str(f.resolve()))) for f in files]
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
        placed: dict[str, Any] | None = None  # the placeholder this pull recorded, if any
        try:
            if not file.resolve().parent.is_dir():
                # Before the ledger names the file: the write failed after it, in a traceback.
                raise InvalidInput(f"no folder {str(file.parent)!r} to write {file} in")
            found = ledger.entry(file)  # read once: the status and the pull go by it
            if found is None:
                if key is None:
                    raise click.UsageError(f"{file} was never synced here: name its --key")
                placed = {"memory": state.memory_name, "server": state.server, "key": key,
                          "scope": scope or "user", "version": None, "sha256": None}  # fmt: skip
                found = ledger.held_or(file, placed)
            entry: dict[str, Any] = found
            now = _status(state, ledger, file, entry)
            # The file holds secrets the memory copy has replaced: writing that copy would put
            # the placeholders in place of the credentials (decision 0101).
            secrets = (
                file.exists() and entry.get("local_sha256", entry["sha256"]) != entry["sha256"]
            )
            refused = ("local_ahead", "diverged", "pending") + (
                ("memory_ahead",) if secrets else ()
            )
            if now["status"] in refused and not force:
                now["detail"] = (
                    f"refused: the file is {now['status'].replace('_', ' ')}; pulling would "
                    "lose its changes (push them, or pull with --force)"
                    if now["status"] != "memory_ahead"
                    else "refused: the memory copy lacks what the guard took out of the file "
                    "(secrets, <private> spans); pulling would write that over them (merge by "
                    "hand, `recuerdo mirror resume` shows the lines, or pull with --force)"
                )
                _unplace(ledger, file, placed)
                finish(state, {**now, "status": "refused"})
                sys.exit(1)
            if now["status"] == "in_sync_except_redacted" and not force:
                finish(state, {**now, "detail": "nothing to pull: " + now["detail"]})
                return
            copy = state.call(VERBS["mirror_get"], {"key": entry["key"], "scope": entry["scope"]})
        except RecuerdoError as error:
            _unplace(ledger, file, placed)
            emit_error(error, state.as_json)
        if copy.get("state") == "nothing_stored":
            _unplace(ledger, file, placed)
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
        # Its bytes as memory holds them (CRLF kept: write_text turned them into LF), written
        # only if no other command synced the file since the status above was judged.
        if not ledger.swap(
            file,
            entry,
            {**entry, "version": copy["version"], "sha256": copy["sha256"],
             "local_sha256": copy["sha256"], "redacted": {}},
            lambda: _write_atomic(file, copy["content"], private=False),
        ):  # fmt: skip
            detail = ("another mirror command synced the file while it was pulled: nothing "
                      "was written; see `recuerdo mirror status`, then pull again")  # fmt: skip
            finish(state, {"file": str(file), "status": "refused", "detail": detail})
            sys.exit(1)
        finish(state, {"file": str(file), "status": "in_sync", "version": copy["version"]})

    @mirror.command("sync")
    @click.pass_obj
    def sync(state: Any) -> None:
        """Retry the pushes waiting in the local queue."""
        ledger = Ledger(state.state_dir)
        try:
            queue = ledger.all_pending()
        except RecuerdoError as error:
            emit_error(error, state.as_json)
        with state.holding():
            reports = [_retry_queued(state, ledger, queued) for queued in queue]
        click.echo(render.to_json(reports) if state.as_json else render.human(reports))
        if any(r["status"] in ("diverged", "pending", "refused") for r in reports):
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
            if local is None:
                synced = [Path(p) for p, e in ledger.load().items() if e.get("key") == key]
                local = synced[0] if synced else Path("odd") / "tasks" / f"{feature}.md"
        except RecuerdoError as error:
            emit_error(error, state.as_json)
        assert local is not None  # set in the try (emit_error exits)
        text = _read(local) if local.exists() else None
        memory_text = copy.get("content")
        report = {
            "1_recent": recent.get("context", recent),
            "2_search": [
                {"id": hit["id"], "title": hit["title"]} for hit in found.get("results", [])
            ],
            "3_document": {k: v for k, v in copy.items() if k != "content"}
            | ({"content": memory_text} if memory_text is not None else {}),
            "4_local_file": {"path": str(local), "exists": text is not None},
            "5_reconciliation": reconcile(text, memory_text),
        }
        click.echo(render.to_json(report) if state.as_json else resume_text(report))
