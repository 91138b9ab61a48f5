"""Ingesting a git repository: only what is new since the last ingest is read.

The branch's first-parent line is the spine: each of its commits gets the next ordinal and its
changes against its first parent (a merge's changes are what it brought in). Commits merged
from side branches are kept as commits (``merged_at`` names the merge), so a revision naming one
is recognised. When the ref moved (a force-push, a reset), the line is cut back to the last
commit the old and new lines share: the commits after it leave the branch (``dropped``, their
changes removed), and the new line continues with fresh ordinals, so an ordinal a caller holds
never comes to mean another commit.

Work is committed in batches of ``BATCH`` line commits, each a consistent state (the repository's
tip is the last commit of the batch), so a large first ingest shows progress and survives an
interruption; a batch checks that nobody else moved the tip meanwhile.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..core.clock import now_iso
from ..errors import Conflict, InvalidInput
from ..store.base import Row, Store, Tx
from . import blobs as blob_ops
from . import searchable
from .blobs import Blob, refused_name
from .git import Change, Commit, GitRepo
from .lookup import ingested_through, live_line, repo_row, state_at
from .model import CodeIngest

BATCH = 500
SYNC_BATCH = 1000
_CHANGE_COLUMNS = (
    *("ordinal", "path", "status", "kind", "other_path"),
    *("mode", "sha256", "git_blob", "size", "reason"),
)
Progress = Callable[[int, int], None]
STATUS_WORDS = {"A": "added", "M": "modified", "D": "deleted", "T": "type_changed", "R": "renamed"}


@dataclass
class _Plan:
    tip: str
    base: str | None
    base_ordinal: int
    line: list[Commit]
    dropped: int
    merged_by: dict[str, list[Commit]] = field(default_factory=dict)  # line id -> side commits


def _plan(store: Store, tenant: str, repo: str, git: GitRepo, row: Row | None, tip: str) -> _Plan:
    old = None if row is None else row["tip"]
    if old is None:
        return _with_sides(git, _Plan(tip, None, 0, git.line(tip, None), 0))
    line = git.line(tip, old)
    if line and line[0].parents[:1] == (old,):
        return _with_sides(git, _Plan(tip, old, int(row["tip_ordinal"]), line, 0))  # type: ignore[index]
    # The ref moved: keep the longest shared start of the two first-parent lines.
    new_line = git.first_parent_ids(tip)
    with store.read() as tx:
        live = live_line(tx, tenant, repo)
    shared = 0
    while shared < min(len(live), len(new_line)) and live[shared][0] == new_line[shared]:
        shared += 1
    base, base_ordinal = live[shared - 1] if shared else (None, 0)
    plan = _Plan(tip, base, base_ordinal, git.line(tip, base), len(live) - shared)
    return _with_sides(git, plan)


def _with_sides(git: GitRepo, plan: _Plan) -> _Plan:
    """Assign every commit that is new but not on the line to the merge that brought it in."""
    on_line = {c.id for c in plan.line}
    if not any(len(c.parents) > 1 for c in plan.line):
        return plan
    every = {c.id: c for c in git.commits(plan.tip, plan.base)}
    assigned: set[str] = set()
    for commit in plan.line:
        stack = list(commit.parents[1:])
        while stack:
            sha = stack.pop()
            if sha in on_line or sha in assigned or sha not in every:
                continue
            assigned.add(sha)
            plan.merged_by.setdefault(commit.id, []).append(every[sha])
            stack.extend(every[sha].parents)
    return plan


def _change_rows(
    ordinal: int, changes: Iterable[Change], kept: dict[str, Row | Blob]
) -> dict[str, dict[str, Any]]:
    """The rows a commit's changes become, by path (a path renamed away and re-added in the
    same commit keeps the addition)."""
    rows: dict[str, dict[str, Any]] = {}
    for change in changes:
        if change.status == "R" and change.old_path is not None:
            rows.setdefault(
                change.old_path,
                _row(ordinal, change.old_path, "renamed_away", "deleted", "000000", change.path),
            )
        status = STATUS_WORDS.get(change.status, "modified")
        if change.blob is None:
            rows[change.path] = _row(ordinal, change.path, status, "deleted", "000000", None)
        elif change.kind_hint == "gitlink":
            rows[change.path] = _row(
                ordinal, change.path, status, "gitlink", change.mode, change.old_path
            )
            rows[change.path]["git_blob"] = change.blob
        elif refused_name(change.path):
            rows[change.path] = _row(
                ordinal, change.path, status, "refused", change.mode, change.old_path
            )
            rows[change.path]["reason"] = "name"
        else:
            blob = kept[change.blob]
            credential = isinstance(blob, Blob) and blob.credential
            kind = "refused" if credential else "file"
            row = _row(ordinal, change.path, status, kind, change.mode, change.old_path)
            if credential:
                row["reason"] = "credential"
            else:
                digest = blob.sha256 if isinstance(blob, Blob) else blob["sha256"]
                row.update(sha256=digest, git_blob=change.blob, size=_size(blob))
            rows[change.path] = row
    return rows


def _size(blob: Row | Blob) -> int:
    return blob.size if isinstance(blob, Blob) else int(blob["size"])


def _row(
    ordinal: int, path: str, status: str, kind: str, mode: str, other: str | None
) -> dict[str, Any]:
    return {
        "ordinal": ordinal,
        "path": path,
        "status": status,
        "kind": kind,
        "other_path": other,
        "mode": mode,
        "sha256": None,
        "git_blob": None,
        "size": None,
        "reason": None,
    }


def _wanted(commits: list[Commit]) -> list[str]:
    wanted: dict[str, None] = {}
    for commit in commits:
        for change in commit.changes:
            if change.blob and change.kind_hint == "blob" and not refused_name(change.path):
                wanted.setdefault(change.blob)
    return list(wanted)


class _Batch:
    """One transaction's worth of the line."""

    def __init__(self, tenant: str, repo: str, commits: list[Commit], first_ordinal: int) -> None:
        self.tenant = tenant
        self.repo = repo
        self.commits = commits
        self.first_ordinal = first_ordinal
        self.touched: set[str] = set()

    def write(
        self,
        tx: Tx,
        plan: _Plan,
        fresh: dict[str, Blob],
        kept: dict[str, Row | Blob],
        extra_paths: set[str],
    ) -> tuple[int, int]:
        """Commits, changes, blobs, the tip's tree and its items; (refused, blob bytes)."""
        tenant, repo = self.tenant, self.repo
        blob_ops.store(tx, tenant, list(fresh.values()))
        final: dict[str, dict[str, Any]] = {}
        change_rows: list[tuple[Any, ...]] = []
        commit_rows: list[tuple[Any, ...]] = []
        refused = 0
        for offset, commit in enumerate(self.commits):
            ordinal = self.first_ordinal + offset
            rows = _change_rows(ordinal, commit.changes, kept)
            refused += sum(1 for r in rows.values() if r["kind"] == "refused")
            final.update(rows)
            change_rows += [
                (tenant, repo, *(r[column] for column in _CHANGE_COLUMNS)) for r in rows.values()
            ]
            commit_rows.append(_commit_row(tenant, repo, commit, ordinal, None, len(rows)))
            for side in plan.merged_by.get(commit.id, []):
                commit_rows.append(_commit_row(tenant, repo, side, None, ordinal, 0))
        tx.executemany(
            "INSERT INTO code_commits (tenant, repo, commit_id, ordinal, dropped, merged_at,"
            " parents, author, email, authored_at, committed_at, subject, message, changed)"
            " VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (tenant, repo, commit_id) DO UPDATE SET ordinal = excluded.ordinal,"
            " dropped = 0, merged_at = excluded.merged_at, changed = excluded.changed",
            commit_rows,
        )
        tx.executemany(
            "INSERT INTO code_changes (tenant, repo, ordinal, path, status, kind, other_path,"
            " mode, sha256, git_blob, size, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            change_rows,
        )
        last = self.first_ordinal + len(self.commits) - 1
        for path in extra_paths - set(final):
            final[path] = dict(state_at(tx, tenant, repo, path, last) or {"path": path})
        for path, state in final.items():
            _sync_tree(tx, tenant, repo, path, state)
        self.touched = set(final)
        return refused, sum(b.size for b in fresh.values() if not b.credential)


def _commit_row(
    tenant: str, repo: str, commit: Commit, ordinal: int | None, merged_at: int | None, n: int
) -> tuple[Any, ...]:
    return (
        tenant,
        repo,
        commit.id,
        ordinal,
        merged_at,
        " ".join(commit.parents),
        commit.author,
        commit.email,
        commit.authored_at,
        commit.committed_at,
        commit.subject,
        commit.message,
        n,
    )


def _sync_tree(tx: Tx, tenant: str, repo: str, path: str, state: dict[str, Any]) -> None:
    """Make the tip's tree entry of ``path`` match ``state`` (its last change, or none)."""
    kind = state.get("kind")
    if kind is None or kind == "deleted":
        tx.execute(
            "DELETE FROM code_tree WHERE tenant = ? AND repo = ? AND path = ?",
            (tenant, repo, path),
        )
        return
    tx.execute(
        "INSERT INTO code_tree (tenant, repo, path, ordinal, kind, mode, sha256, git_blob, size)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, repo, path) DO"
        " UPDATE SET ordinal = excluded.ordinal, kind = excluded.kind, mode = excluded.mode,"
        " sha256 = excluded.sha256, git_blob = excluded.git_blob, size = excluded.size",
        (
            tenant,
            repo,
            path,
            state["ordinal"],
            kind,
            state["mode"],
            state.get("sha256"),
            state.get("git_blob"),
            state.get("size"),
        ),
    )


def ingest(
    store: Store,
    tenant: str,
    repo: str,
    git: GitRepo,
    branch: str | None,
    principal: str,
    progress: Progress | None = None,
) -> CodeIngest:
    """Bring ``repo`` up to date with ``branch`` of ``git``; see the module docstring."""
    started = time.perf_counter()
    git.check()
    with store.read() as tx:
        row = repo_row(tx, tenant, repo)
    if row is not None and branch is not None and branch != row["branch"]:
        raise InvalidInput(
            f"repository {repo!r} follows branch {row['branch']!r}; ingest {branch!r} under "
            "another repository name"
        )
    chosen = row["branch"] if row is not None else (branch or git.default_branch())
    tip = git.resolve(chosen)
    at = now_iso()
    if row is not None and row["tip"] == tip:
        with store.write() as tx:
            _claim(tx, tenant, repo, row["tip"])
            tx.execute(
                "UPDATE code_repos SET ingested_at = ? WHERE tenant = ? AND repo = ?",
                (at, tenant, repo),
            )
            through = ingested_through(tx, tenant, repo)
        return {
            "repo": repo,
            "branch": chosen,
            "state": "unchanged",
            "ingested_through": through,
            "new_commits": 0,
            "seconds": round(time.perf_counter() - started, 3),
        }
    plan = _plan(store, tenant, repo, git, row, tip)
    next_ordinal = 1 if row is None else int(row["next_ordinal"])
    expected = None if row is None else row["tip"]
    moved = expected is not None and plan.base != expected
    totals = {"blobs": 0, "bytes": 0, "refused": 0}
    batches = [plan.line[i : i + BATCH] for i in range(0, len(plan.line), BATCH)] or [[]]
    done = 0
    changed_paths: set[str] = set()
    for number, commits in enumerate(batches):
        wanted = _wanted(commits)
        with store.read() as tx:
            kept: dict[str, Row | Blob] = dict(blob_ops.known(tx, tenant, wanted))
        fresh = {
            gid: blob_ops.classify(gid, data)
            for gid, data in git.blobs([w for w in wanted if w not in kept])
        }
        kept.update(fresh)
        with store.write() as tx:
            if number == 0 and row is None:
                _create(tx, tenant, repo, chosen, principal, at)
            _claim(tx, tenant, repo, expected)
            if not blob_ops.still_stored(tx, tenant, [g for g in kept if g not in fresh]):
                raise Conflict(f"a forget erased blobs the ingest of {repo!r} reuses; try again")
            touched: set[str] = set()
            if number == 0 and moved:
                touched = _drop_after(tx, tenant, repo, plan.base_ordinal)
            batch = _Batch(tenant, repo, commits, next_ordinal)
            refused, added_bytes = batch.write(tx, plan, fresh, kept, touched)
            next_ordinal += len(commits)
            tip_id: str | None = commits[-1].id if commits else plan.base
            tip_ordinal = next_ordinal - 1 if commits else plan.base_ordinal
            tx.execute(
                "UPDATE code_repos SET tip = ?, tip_ordinal = ?, next_ordinal = ?,"
                " ingested_at = ? WHERE tenant = ? AND repo = ?",
                (tip_id, tip_ordinal, next_ordinal, at, tenant, repo),
            )
            expected = tip_id
        changed_paths |= batch.touched
        totals["blobs"] += sum(1 for b in fresh.values() if not b.credential)
        totals["bytes"] += added_bytes
        totals["refused"] += refused
        done += len(commits)
        if progress is not None:
            progress(done, len(plan.line))
    # The searchable text follows the tip once the history is in: each file written once.
    ordered = sorted(changed_paths)
    for first in range(0, len(ordered), SYNC_BATCH):
        with store.write() as tx:
            searchable.sync(tx, tenant, repo, ordered[first : first + SYNC_BATCH], principal, at)
    seconds = time.perf_counter() - started
    with store.read() as tx:
        through = ingested_through(tx, tenant, repo)
    return {
        "repo": repo,
        "branch": chosen,
        "state": "ingested",
        "ingested_through": through,
        "new_commits": len(plan.line),
        "side_commits": sum(len(s) for s in plan.merged_by.values()),
        "dropped_commits": plan.dropped,
        "moved": moved,
        "blobs_added": totals["blobs"],
        "bytes_added": totals["bytes"],
        "refused_added": totals["refused"],
        "seconds": round(seconds, 3),
        "commits_per_s": round(len(plan.line) / seconds, 1) if seconds else 0.0,
    }


def _create(tx: Tx, tenant: str, repo: str, branch: str, principal: str, at: str) -> None:
    created = tx.execute(
        "INSERT INTO code_repos (tenant, repo, branch, tip, source, created_at, ingested_at)"
        " VALUES (?, ?, ?, NULL, ?, ?, ?) ON CONFLICT (tenant, repo) DO NOTHING",
        (tenant, repo, branch, principal, at, at),
    )
    if not created:
        raise Conflict(f"another ingest of {repo!r} started at the same time; try again")


def _claim(tx: Tx, tenant: str, repo: str, expected: str | None) -> None:
    """Refuse to write over an ingest that moved the tip since this one read it."""
    row = repo_row(tx, tenant, repo)
    if row is None or row["tip"] != expected:
        raise Conflict(f"another ingest of {repo!r} moved its tip meanwhile; try again")


def _drop_after(tx: Tx, tenant: str, repo: str, base_ordinal: int) -> set[str]:
    """Take the line commits after ``base_ordinal`` off the branch; the paths they touched."""
    params = (tenant, repo, base_ordinal)
    paths = {
        r["path"]
        for r in tx.all(
            "SELECT DISTINCT path FROM code_changes WHERE tenant = ? AND repo = ? AND ordinal > ?",
            params,
        )
    }
    tx.execute("DELETE FROM code_changes WHERE tenant = ? AND repo = ? AND ordinal > ?", params)
    tx.execute(
        "UPDATE code_commits SET dropped = 1 WHERE tenant = ? AND repo = ? AND ordinal > ?"
        " AND dropped = 0",
        params,
    )
    tx.execute(
        "UPDATE code_commits SET merged_at = NULL WHERE tenant = ? AND repo = ? AND merged_at > ?",
        params,
    )
    return paths
