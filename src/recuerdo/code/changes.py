"""The read verbs over a span of history: changes since a revision, and the diff of two."""

from __future__ import annotations

import base64
from typing import Any

from ..errors import DiffBinary, DiffTooLarge, RangeTooLarge
from ..store.base import Row, Tx
from . import blobs as blob_ops
from .lookup import (
    LINE,
    bounded,
    check_path,
    check_prefix,
    fork_point,
    ingested_repo,
    ingested_through,
    ref,
    revision,
    state_at,
)
from .model import ChangedCommit, CodeChanges, CodeDiff, DiffPath, Patch, PatchBlock

MAX_SCAN = 2000
MAX_FILES = 100
MAX_PATCH_BYTES = 256 * 1024
MAX_PATCH_LINES = 5000
_COMMITS = "commit_id, ordinal, authored_at, author, subject, message"


def _prefix_clause(prefix: str | None, column: str = "path") -> tuple[str, list[Any]]:
    if prefix is None:
        return "", []
    return f" AND substr({column}, 1, ?) = ?", [len(prefix), prefix]


def changes_since(
    tx: Tx,
    tenant: str,
    repo: str,
    rev: str,
    limit: int,
    path_prefix: str | None,
    after: int | None,
    branch: str | None,
) -> CodeChanges:
    row = ingested_repo(tx, tenant, repo, branch)
    name = row["repo"]
    count = bounded(limit, "limit", 1, 500)
    prefix = check_prefix(path_prefix)
    found = revision(tx, row, rev, allow_dropped=True)
    reply: CodeChanges = {"repo": name, "ingested_through": ingested_through(tx, tenant, name)}
    if found.on_line:
        start = found.ordinal
        reply["since"] = ref(found.row)
    else:
        fork = fork_point(tx, tenant, name, found.ordinal)
        start = 0 if fork is None else int(fork["ordinal"])
        reply["moved"] = {
            "rev": found.row["commit_id"],
            "fork_point": None if fork is None else ref(fork),
            "detail": "that commit left the branch when its ref moved: these are the changes "
            "since the last commit the old and new histories share",
        }
    if after is not None:
        start = max(start, bounded(after, "after", 0))
    key = (tenant, name)
    window = tx.all(
        f"SELECT ordinal FROM code_commits WHERE tenant = ? AND repo = ? AND {LINE}"
        " AND ordinal > ? ORDER BY ordinal LIMIT ?",
        (*key, start, MAX_SCAN),
    )
    if not window:
        reply.update({"state": "answered", "commits": [], "scanned": 0, "next_after": None})
        return reply
    end = int(window[-1]["ordinal"])
    clause, params = _prefix_clause(prefix)
    if prefix is None:
        chosen = [int(r["ordinal"]) for r in window[: count + 1]]
    else:
        chosen = [
            int(r["ordinal"])
            for r in tx.all(
                "SELECT DISTINCT ordinal FROM code_changes WHERE tenant = ? AND repo = ?"
                f" AND ordinal > ? AND ordinal <= ?{clause} ORDER BY ordinal LIMIT ?",
                (*key, start, end, *params, count + 1),
            )
        ]
    more = len(chosen) > count
    chosen = chosen[:count]
    commits = _commits(tx, tenant, name, chosen, clause, params)
    if more:
        next_after: int | None = chosen[-1]
        scanned = sum(1 for r in window if int(r["ordinal"]) <= chosen[-1])
    else:
        scanned = len(window)
        at_tip = end >= int(row["tip_ordinal"])
        next_after = None if at_tip else end
    reply.update(
        {"state": "answered", "commits": commits, "scanned": scanned, "next_after": next_after}
    )
    return reply


def _commits(
    tx: Tx, tenant: str, repo: str, ordinals: list[int], clause: str, params: list[Any]
) -> list[ChangedCommit]:
    if not ordinals:
        return []
    low, high = ordinals[0], ordinals[-1]
    key = (tenant, repo)
    wanted = set(ordinals)
    rows = {
        int(r["ordinal"]): r
        for r in tx.all(
            f"SELECT {_COMMITS} FROM code_commits WHERE tenant = ? AND repo = ? AND {LINE}"
            " AND ordinal >= ? AND ordinal <= ?",
            (*key, low, high),
        )
        if int(r["ordinal"]) in wanted
    }
    files: dict[int, list[Row]] = {}
    for change in tx.all(
        "SELECT ordinal, path, status, kind, other_path, size FROM code_changes"
        f" WHERE tenant = ? AND repo = ? AND ordinal >= ? AND ordinal <= ?{clause}"
        " ORDER BY ordinal, path",
        (*key, low, high, *params),
    ):
        files.setdefault(int(change["ordinal"]), []).append(change)
    sides: dict[int, list[Row]] = {}
    for side in tx.all(
        "SELECT commit_id, merged_at, authored_at, author, subject FROM code_commits"
        " WHERE tenant = ? AND repo = ? AND merged_at >= ? AND merged_at <= ?",
        (*key, low, high),
    ):
        sides.setdefault(int(side["merged_at"]), []).append(side)
    out: list[ChangedCommit] = []
    for ordinal in ordinals:
        commit = rows[ordinal]
        changed = files.get(ordinal, [])
        entry: ChangedCommit = {
            "ordinal": ordinal,
            "commit": commit["commit_id"],
            "time": commit["authored_at"],
            "author": commit["author"],
            "subject": commit["subject"],
            "message": commit["message"],
            "files": [_file(c) for c in changed[:MAX_FILES]],
            "files_more": max(0, len(changed) - MAX_FILES),
        }
        if ordinal in sides:
            entry["merged"] = [
                {
                    "commit": s["commit_id"],
                    "author": s["author"],
                    "time": s["authored_at"],
                    "subject": s["subject"],
                }
                for s in sides[ordinal]
            ]
        out.append(entry)
    return out


def _file(change: Row) -> Any:
    entry = {
        "path": change["path"],
        "status": change["status"],
        "kind": change["kind"],
        "size": change["size"],
    }
    if change["other_path"]:
        entry["other_path"] = change["other_path"]
    return entry


def diff(
    tx: Tx,
    tenant: str,
    repo: str,
    from_: str,
    to: str | None,
    limit: int,
    path_prefix: str | None,
    patch: str | None,
    branch: str | None,
) -> CodeDiff:
    row = ingested_repo(tx, tenant, repo, branch)
    name = row["repo"]
    count = bounded(limit, "limit", 1, 2000)
    prefix = check_prefix(path_prefix)
    patch_path = None if patch is None else check_path(patch, "patch")
    start, stop = revision(tx, row, from_), revision(tx, row, to)
    low, high = sorted((start.ordinal, stop.ordinal))
    key = (tenant, name)
    span = int(
        tx.scalar(
            "SELECT count(*) FROM (SELECT 1 FROM code_commits WHERE tenant = ? AND repo = ?"
            f" AND {LINE} AND ordinal > ? AND ordinal <= ? LIMIT ?) AS span",
            (*key, low, high, MAX_SCAN + 1),
        )
    )
    if span > MAX_SCAN:
        raise RangeTooLarge(
            f"more than {MAX_SCAN} commits lie between {from_!r} and {to or 'HEAD'!r}; "
            "diff a shorter range, or page through code_changes_since"
        )
    reply: CodeDiff = {
        "repo": name,
        "ingested_through": ingested_through(tx, tenant, name),
        "from": ref(start.row),
        "to": ref(stop.row),
        "commits": span,
    }
    if patch_path is not None:
        reply["patch"] = _patch(tx, tenant, name, patch_path, start.ordinal, stop.ordinal)
    clause, params = _prefix_clause(prefix)
    touched = tx.all(
        "SELECT path, count(*) AS n FROM code_changes WHERE tenant = ? AND repo = ?"
        f" AND ordinal > ? AND ordinal <= ?{clause} GROUP BY path ORDER BY path",
        (*key, low, high, *params),
    )
    listed = touched[:count]
    touches = _touches(tx, tenant, name, [r["path"] for r in listed], low, high)
    paths: list[DiffPath] = []
    for entry in listed:
        path = entry["path"]
        before = state_at(tx, tenant, name, path, start.ordinal)
        after = state_at(tx, tenant, name, path, stop.ordinal)
        status = _status(before, after)
        if status is None:
            continue
        item: DiffPath = {
            "path": path,
            "status": status,
            "kind": "deleted" if after is None else after["kind"],
            "commits": int(entry["n"]),
            "touched_by": touches.get(path, [])[-10:],
            "size_after": None if after is None else after["size"],
        }
        if status == "added" and after is not None and after["status"] == "renamed":
            item["renamed_from"] = after["other_path"]
        paths.append(item)
    reply.update(
        {
            "state": "answered" if paths or patch_path else "nothing_stored",
            "paths": paths,
            "paths_more": max(0, len(touched) - count),
        }
    )
    return reply


def _status(before: Row | None, after: Row | None) -> str | None:
    gone_before = before is None or before["kind"] == "deleted"
    gone_after = after is None or after["kind"] == "deleted"
    if gone_before and gone_after:
        return None
    if gone_before:
        return "added"
    if gone_after:
        return "deleted"
    assert before is not None and after is not None
    same = all(before[k] == after[k] for k in ("kind", "mode", "sha256", "git_blob"))
    return None if same else "modified"


def _touches(
    tx: Tx, tenant: str, repo: str, paths: list[str], low: int, high: int
) -> dict[str, list[str]]:
    """The commits that changed each path in (low, high], oldest first."""
    if not paths:
        return {}
    marks = ",".join("?" * len(paths))
    rows = tx.all(
        "SELECT ch.path, c.commit_id FROM code_changes ch JOIN code_commits c ON"
        " c.tenant = ch.tenant AND c.repo = ch.repo AND c.ordinal = ch.ordinal"
        " WHERE ch.tenant = ? AND ch.repo = ? AND ch.ordinal > ? AND ch.ordinal <= ?"
        f" AND ch.path IN ({marks}) ORDER BY ch.ordinal",
        (tenant, repo, low, high, *paths),
    )
    found: dict[str, list[str]] = {}
    for r in rows:
        found.setdefault(r["path"], []).append(r["commit_id"])
    return found


def _patch(tx: Tx, tenant: str, repo: str, path: str, first: int, second: int) -> Patch:
    return {
        "path": path,
        "before": _block(tx, tenant, state_at(tx, tenant, repo, path, first), path),
        "after": _block(tx, tenant, state_at(tx, tenant, repo, path, second), path),
    }


def _block(tx: Tx, tenant: str, state: Row | None, path: str) -> PatchBlock | None:
    if state is None or state["kind"] == "deleted":
        return None
    if state["kind"] != "file":
        return {"kind": state["kind"]}
    if state["size"] is not None and int(state["size"]) > MAX_PATCH_BYTES:
        raise DiffTooLarge(
            f"{path} is {state['size']} bytes at one end (a patch side is at most "
            f"{MAX_PATCH_BYTES} bytes); read it with code_at"
        )
    blob, data = blob_ops.read(tx, tenant, state["sha256"])
    if data is None:
        raise DiffBinary(f"{path} is binary at one end: only its hash and size are kept")
    lines = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    if lines > MAX_PATCH_LINES:
        raise DiffTooLarge(
            f"{path} has {lines} lines at one end (a patch side is at most {MAX_PATCH_LINES}); "
            "read it with code_at"
        )
    block: PatchBlock = {
        "kind": "file",
        "sha256": blob["sha256"],
        "size": len(data),
        "lines": lines,
    }
    if blob["encoding"] == "utf-8":
        block["content"] = data.decode("utf-8")
    else:
        block["content_base64"] = base64.b64encode(data).decode("ascii")
    return block
