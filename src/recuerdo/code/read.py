"""The read verbs about one file or the whole repository: status, at, blame, history, verify."""

from __future__ import annotations

import base64
from typing import Any

from ..core.clock import now, parse_iso
from ..errors import LineBlameNotBuilt
from ..store.base import Row, Tx
from . import blobs as blob_ops
from .lookup import (
    LINE,
    bounded,
    check_path,
    check_repo,
    commit_at,
    ingested_repo,
    ingested_through,
    ref,
    revision,
    state_at,
)
from .model import BlameCommit, CodeAt, CodeBlame, CodeHistory, CodeStatus, CodeVerify

MAX_WINDOW = 262_144
EARLIER = 5
DEFAULT_STALE_AFTER = 3600


def status(
    tx: Tx,
    tenant: str,
    repo: str,
    branch: str | None,
    stale_after: int | None,
    lag: int | None,
    lag_detail: str | None,
) -> CodeStatus:
    row = ingested_repo(tx, tenant, repo, branch)
    stale = DEFAULT_STALE_AFTER if stale_after is None else bounded(stale_after, "stale_after", 1)
    key = (tenant, row["repo"])
    # Counts over everything ingested of the repository: read whole, by whichever way SQLite
    # finds cheaper (with one repository its index range is the table).
    counts = tx.one(
        "/* whole repository */ SELECT"
        f" (SELECT count(*) FROM code_commits WHERE tenant = ? AND repo = ? AND {LINE}) AS line,"
        " (SELECT count(*) FROM code_commits WHERE tenant = ? AND repo = ?"
        "  AND merged_at IS NOT NULL) AS side,"
        " (SELECT count(*) FROM code_commits WHERE tenant = ? AND repo = ? AND dropped = 1"
        "  AND merged_at IS NULL) AS dropped,"
        " (SELECT count(*) FROM code_tree WHERE tenant = ? AND repo = ?) AS entries,"
        " (SELECT count(DISTINCT path) FROM code_changes WHERE tenant = ? AND repo = ?"
        "  AND kind = 'refused') AS refused",
        key * 5,
    )
    assert counts is not None
    kept = tx.one(
        "/* whole repository */ SELECT count(*) AS n, coalesce(sum(size), 0) AS size"
        " FROM code_blobs WHERE tenant = ?"
        " AND sha256 IN (SELECT sha256 FROM code_changes WHERE tenant = ? AND repo = ?"
        " AND sha256 IS NOT NULL)",
        (tenant, tenant, row["repo"]),
    )
    assert kept is not None
    age = max(0, int((now() - parse_iso(row["ingested_at"])).total_seconds()))
    reply: CodeStatus = {
        "repo": row["repo"],
        "branch": row["branch"],
        "state": "answered",
        "ingested_through": ingested_through(tx, tenant, row["repo"]),
        "commits": int(counts["line"]),
        "side_commits": int(counts["side"]),
        "dropped_commits": int(counts["dropped"]),
        "file_entries": int(counts["entries"]),
        "blobs": int(kept["n"]),
        "bytes": int(kept["size"]),
        "refused_files": int(counts["refused"]),
        "lag": lag,
        "age_seconds": age,
        "fresh": age <= stale,
        "stale_after": stale,
    }
    if lag_detail:
        reply["lag_detail"] = lag_detail
    return reply


def _window(data: bytes, offset: int, size: int, utf8: bool) -> tuple[int, int]:
    """[start, end) of the bytes to serve; text windows never split a UTF-8 character."""
    start, end = min(offset, len(data)), min(offset + size, len(data))
    if utf8:
        while start < len(data) and data[start] & 0xC0 == 0x80:
            start += 1
        while start < end < len(data) and data[end] & 0xC0 == 0x80:
            end -= 1
    return start, max(start, end)


def at(
    tx: Tx,
    tenant: str,
    repo: str,
    path: str,
    rev: str | None,
    offset: int,
    max_bytes: int,
    branch: str | None,
) -> CodeAt:
    row = ingested_repo(tx, tenant, repo, branch)
    name, clean = row["repo"], check_path(path)
    start_at = bounded(offset, "offset", 0)
    window = bounded(max_bytes, "max_bytes", 1, MAX_WINDOW)
    found = revision(tx, row, rev)
    reply: CodeAt = {
        "repo": name,
        "path": clean,
        "ingested_through": ingested_through(tx, tenant, name),
        "rev": ref(found.row),
    }
    state = state_at(tx, tenant, name, clean, found.ordinal)
    if state is None:
        reply["state"] = "nothing_stored"
        return reply
    rests_on = commit_at(tx, tenant, name, int(state["ordinal"]))
    assert rests_on is not None
    reply.update(
        {
            "state": "answered",
            "kind": state["kind"],
            "mode": state["mode"],
            "rests_on": ref(rests_on),
        }
    )
    if state["kind"] == "refused":
        reply["reason"] = state["reason"]
        return reply
    if state["kind"] == "gitlink":
        reply["git_blob"] = state["git_blob"]
        return reply
    if state["kind"] != "file":
        return reply
    blob, data = blob_ops.read(tx, tenant, state["sha256"])
    size = int(blob["size"])
    reply.update(
        {
            "size": size,
            "sha256": blob["sha256"],
            "git_blob": blob["git_blob"],
            "binary": blob["encoding"] == "binary",
            "encoding": blob["encoding"],
        }
    )
    if data is None:  # binary or oversize: only the hash and the size are kept
        reply.update(
            {
                "offset": start_at,
                "returned_bytes": 0,
                "next_offset": None,
                "truncated": size > 0,
                "read_amplification": None,
            }
        )
        return reply
    utf8 = blob["encoding"] == "utf-8"
    first, last = _window(data, start_at, window, utf8)
    piece = data[first:last]
    if utf8:
        reply["content"] = piece.decode("utf-8")
    else:
        reply["content_base64"] = base64.b64encode(piece).decode("ascii")
    reply.update(
        {
            "offset": first,
            "returned_bytes": len(piece),
            "next_offset": last if last < size else None,
            "truncated": first > 0 or last < size,
            "read_amplification": round(size / len(piece), 2) if piece else None,
        }
    )
    return reply


def _change_ref(tx: Tx, tenant: str, repo: str, change: Row) -> BlameCommit:
    commit = commit_at(tx, tenant, repo, int(change["ordinal"]))
    assert commit is not None
    entry: BlameCommit = {**ref(commit), "did": change["status"], "size": change["size"]}  # type: ignore[typeddict-item]
    if change["other_path"]:
        entry["other_path"] = change["other_path"]
    return entry


def blame(
    tx: Tx,
    tenant: str,
    repo: str,
    path: str,
    rev: str | None,
    line: int | None,
    branch: str | None,
) -> CodeBlame:
    row = ingested_repo(tx, tenant, repo, branch)
    name, clean = row["repo"], check_path(path)
    if line is not None:
        raise LineBlameNotBuilt(
            "line-level blame is not built: code_blame answers per file (produced_by and the "
            "changes before it); read the versions with code_history and code_at"
        )
    found = revision(tx, row, rev)
    reply: CodeBlame = {
        "repo": name,
        "path": clean,
        "level": "file",
        "ingested_through": ingested_through(tx, tenant, name),
        "rev": ref(found.row),
    }
    state = state_at(tx, tenant, name, clean, found.ordinal)
    if state is None:
        reply["state"] = "nothing_stored"
        return reply
    reply.update(
        {
            "state": "answered",
            "kind": state["kind"],
            "produced_by": _change_ref(tx, tenant, name, state),
        }
    )
    earlier: list[BlameCommit] = []
    before = int(state["ordinal"])
    # Follow the file back through its renames: its earlier changes are under the old name.
    following = state["other_path"] if state["status"] == "renamed" else clean
    while following and len(earlier) <= EARLIER:
        change = tx.one(
            "SELECT ordinal, path, status, kind, other_path, size FROM code_changes WHERE"
            " tenant = ? AND repo = ? AND path = ? AND ordinal < ? ORDER BY ordinal DESC"
            " LIMIT 1",
            (tenant, name, following, before),
        )
        if change is None:
            break
        earlier.append(_change_ref(tx, tenant, name, change))
        before = int(change["ordinal"])
        if change["status"] == "renamed":
            following = change["other_path"]
    reply["earlier"] = earlier[:EARLIER]
    reply["earlier_more"] = len(earlier) > EARLIER
    return reply


def history(
    tx: Tx,
    tenant: str,
    repo: str,
    path: str,
    limit: int,
    before: int | None,
    branch: str | None,
) -> CodeHistory:
    row = ingested_repo(tx, tenant, repo, branch)
    name, clean = row["repo"], check_path(path)
    count = bounded(limit, "limit", 1, 200)
    upto = int(row["tip_ordinal"]) + 1 if before is None else bounded(before, "before", 0)
    rows = tx.all(
        "SELECT ch.ordinal, ch.status, ch.kind, ch.other_path, ch.size, c.commit_id,"
        " c.authored_at, c.author, c.subject, c.message FROM code_changes ch JOIN code_commits c"
        " ON c.tenant = ch.tenant AND c.repo = ch.repo AND c.ordinal = ch.ordinal"
        " WHERE ch.tenant = ? AND ch.repo = ? AND ch.path = ? AND ch.ordinal < ?"
        " ORDER BY ch.ordinal DESC LIMIT ?",
        (tenant, name, clean, upto, count + 1),
    )
    reply: CodeHistory = {
        "repo": name,
        "path": clean,
        "ingested_through": ingested_through(tx, tenant, name),
    }
    if not rows and before is None:
        reply.update({"state": "nothing_stored", "history": [], "next_before": None})
        return reply
    entries: list[Any] = []
    for r in rows[:count]:
        entry = {
            "ordinal": int(r["ordinal"]),
            "commit": r["commit_id"],
            "time": r["authored_at"],
            "author": r["author"],
            "subject": r["subject"],
            "message_head": r["message"][:300],
            "did": r["status"],
            "kind": r["kind"],
            "size": r["size"],
            "refused": r["kind"] == "refused",
        }
        if r["other_path"]:
            entry["other_path"] = r["other_path"]
        entries.append(entry)
    more = len(rows) > count
    reply.update(
        {
            "state": "answered",
            "history": entries,
            "next_before": entries[-1]["ordinal"] if more else None,
        }
    )
    return reply


def verify(tx: Tx, tenant: str, repo: str | None) -> CodeVerify:
    """Re-hash every kept blob (of one repository, or of the whole memory)."""
    name = None if repo is None else ingested_repo(tx, tenant, check_repo(repo))["repo"]
    scope = (
        ""
        if name is None
        else (" AND sha256 IN (SELECT sha256 FROM code_changes WHERE tenant = ? AND repo = ?)")
    )
    extra: tuple[str, ...] = () if name is None else (tenant, name)
    checked = not_kept = total = 0
    corrupt = []
    last = ""
    while True:
        rows = tx.all(
            "SELECT sha256, git_blob, size, compression, content FROM code_blobs"
            f" WHERE tenant = ? AND sha256 > ?{scope} ORDER BY sha256 LIMIT 500",
            (tenant, last, *extra),
        )
        if not rows:
            break
        for row in rows:
            last = row["sha256"]
            if row["content"] is None:
                not_kept += 1
                continue
            checked += 1
            total += int(row["size"])
            if blob_ops.intact(row) is None:
                paths = [
                    f"{p['repo']}:{p['path']}"
                    for p in tx.all(
                        "SELECT DISTINCT repo, path FROM code_changes WHERE tenant = ?"
                        " AND sha256 = ? ORDER BY repo, path LIMIT 10",
                        (tenant, row["sha256"]),
                    )
                ]
                corrupt.append(
                    {"sha256": row["sha256"], "git_blob": row["git_blob"], "paths": paths}
                )
    return {
        "repo": name,
        "ok": not corrupt,
        "checked": checked,
        "bytes": total,
        "not_kept": not_kept,
        "corrupt": corrupt,  # type: ignore[typeddict-item]
    }
