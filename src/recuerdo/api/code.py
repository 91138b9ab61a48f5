"""The code store's verbs: read-only views of ingested git repositories, and ingest."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..code import changes as change_ops
from ..code import ingest as ingest_ops
from ..code import read as read_ops
from ..code.git import GitRepo
from ..code.lookup import check_repo, ingested_repo, tenants_holding
from ..code.model import (
    CodeAt,
    CodeBlame,
    CodeChanges,
    CodeDiff,
    CodeHistory,
    CodeIngest,
    CodeStatus,
    CodeVerify,
)
from ..errors import RecuerdoError, RepoNotServed
from .base import MemoryBase, guarded


@dataclass
class CodeSources:
    """The repositories this process may ingest by name (a server's ``--code-repo``), and one
    lock per repository so two ingests in this process take turns."""

    paths: dict[str, str] = field(default_factory=dict)
    _locks: dict[str, threading.Lock] = field(default_factory=dict)
    _guard: threading.Lock = field(default_factory=threading.Lock)

    def lock(self, repo: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(repo, threading.Lock())


class CodeVerbs(MemoryBase):
    _code: CodeSources

    def serve_code(self, repos: Mapping[str, str | os.PathLike[str]]) -> None:
        """Let ``code_ingest(repo)`` read these repositories (name -> local path); callers
        then name a repository, never a path."""
        for name, path in repos.items():
            self._code.paths[check_repo(name)] = os.path.abspath(path)

    @guarded
    def code_ingest_path(
        self,
        path: str | os.PathLike[str],
        repo: str,
        branch: str | None = None,
        progress: ingest_ops.Progress | None = None,
    ) -> CodeIngest:
        """Ingest (or bring up to date) the git repository at ``path`` as ``repo``: only the
        commits new since the last ingest are read. ``progress(done, total)`` is told after
        each batch of commits."""
        name = check_repo(repo)
        with self._code.lock(name):
            reply = ingest_ops.ingest(
                self._store,
                self.tenant,
                name,
                GitRepo(os.fspath(path)),
                branch,
                self.principal,
                progress,
            )
        self._upkeep.poke(int(reply.get("new_commits", 0)))
        return reply

    @guarded
    def code_ingest(self, repo: str, branch: str | None = None) -> CodeIngest:
        """Bring a repository this process serves up to date with its branch (new commits
        only)."""
        name = check_repo(repo)
        path = self._code.paths.get(name)
        if path is None:
            served = ", ".join(sorted(self._code.paths)) or "none"
            raise RepoNotServed(
                f"this server does not serve a repository named {name!r} (served: {served}); "
                "a server ingests only the repositories it was started with (--code-repo)"
            )
        return self.code_ingest_path(path, name, branch)

    def code_refresh(self, repo: str, *, include_own: bool = False) -> list[dict[str, Any]]:
        """Bring a served repository up to date for every tenant of this memory that holds
        it (and for this handle's tenant with ``include_own``): what the server's schedule
        runs. One outcome per tenant; a failure is reported, not raised."""
        name = check_repo(repo)
        with self._store.read() as tx:
            tenants = tenants_holding(tx, name)
        if include_own and self.tenant not in tenants:
            tenants.append(self.tenant)
        outcomes: list[dict[str, Any]] = []
        for tenant in tenants:
            try:
                done = self.for_tenant(tenant).code_ingest(name)  # type: ignore[attr-defined]
                outcomes.append({"tenant": tenant, **done})
            except RecuerdoError as error:
                outcomes.append({"tenant": tenant, **error.to_dict()})
        return outcomes

    @guarded
    def code_status(
        self, repo: str, branch: str | None = None, stale_after: int | None = None
    ) -> CodeStatus:
        """Counts, the tip ingested, how far git is ahead and whether the ingest is fresh."""
        name = check_repo(repo)
        with self._store.read() as tx:
            tip = ingested_repo(tx, self.tenant, name, branch)["tip"]
        lag, detail = self._lag(name, tip)
        with self._store.read() as tx:
            return read_ops.status(tx, self.tenant, name, branch, stale_after, lag, detail)

    def _lag(self, repo: str, tip: str) -> tuple[int | None, str | None]:
        path = self._code.paths.get(repo)
        if path is None:
            return None, "this process does not serve the repository: git was not asked"
        with self._store.read() as tx:
            row = ingested_repo(tx, self.tenant, repo)
        try:
            git = GitRepo(path)
            return git.count(git.resolve(row["branch"]), tip), None
        except RecuerdoError as error:
            return None, error.detail

    @guarded
    def code_at(
        self,
        repo: str,
        path: str,
        rev: str | None = None,
        offset: int = 0,
        max_bytes: int = 65536,
        branch: str | None = None,
    ) -> CodeAt:
        """A file at a revision: a window of its content, its hashes and the commit it rests
        on."""
        with self._store.read() as tx:
            return read_ops.at(tx, self.tenant, repo, path, rev, offset, max_bytes, branch)

    @guarded
    def code_blame(
        self,
        repo: str,
        path: str,
        rev: str | None = None,
        line: int | None = None,
        branch: str | None = None,
    ) -> CodeBlame:
        """File-level blame: the commit that produced the file and up to 5 before it."""
        with self._store.read() as tx:
            return read_ops.blame(tx, self.tenant, repo, path, rev, line, branch)

    @guarded
    def code_changes_since(
        self,
        repo: str,
        rev: str,
        limit: int = 50,
        path_prefix: str | None = None,
        after: int | None = None,
        branch: str | None = None,
    ) -> CodeChanges:
        """Commits after a revision, oldest first, each with its changed files."""
        with self._store.read() as tx:
            return change_ops.changes_since(
                tx, self.tenant, repo, rev, limit, path_prefix, after, branch
            )

    @guarded
    def code_diff(
        self,
        repo: str,
        from_: str,
        to: str | None = None,
        limit: int = 200,
        path_prefix: str | None = None,
        patch: str | None = None,
        branch: str | None = None,
    ) -> CodeDiff:
        """The paths changed between two revisions, folded per path; one path's two versions
        with ``patch``."""
        with self._store.read() as tx:
            return change_ops.diff(
                tx, self.tenant, repo, from_, to, limit, path_prefix, patch, branch
            )

    @guarded
    def code_history(
        self,
        repo: str,
        path: str,
        limit: int = 20,
        before: int | None = None,
        branch: str | None = None,
    ) -> CodeHistory:
        """The commits that changed a path, newest first."""
        with self._store.read() as tx:
            return read_ops.history(tx, self.tenant, repo, path, limit, before, branch)

    @guarded
    def code_verify(self, repo: str | None = None) -> CodeVerify:
        """Re-hash every kept blob; a blob that does not hash to its address is listed."""
        with self._store.read() as tx:
            return read_ops.verify(tx, self.tenant, repo)
