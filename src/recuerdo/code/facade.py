"""The code store's verbs: read-only views of ingested git repositories, and ingest."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import (
    BlobCorrupt,
    CapabilityNotGranted,
    Conflict,
    DiffBinary,
    DiffTooLarge,
    GitUnreadable,
    LineBlameNotBuilt,
    RangeTooLarge,
    RecuerdoError,
    RepoNotIngested,
    RepoNotServed,
    RevisionNotFound,
)
from ..facade import MemoryBase, verb
from ..security import caps
from . import changes as change_ops
from . import ingest as ingest_ops
from . import read as read_ops
from .git import GitRepo
from .lookup import check_repo, ingested_repo, tenants_holding
from .model import (
    CodeAt,
    CodeBlame,
    CodeChanges,
    CodeDiff,
    CodeHistory,
    CodeIngest,
    CodeStatus,
    CodeVerify,
)

_READ_ERRORS = (RepoNotIngested, RevisionNotFound)


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

    def code_ingest_path(
        self,
        path: str | os.PathLike[str],
        repo: str,
        branch: str | None = None,
        progress: ingest_ops.Progress | None = None,
    ) -> CodeIngest:
        """Ingest (or bring up to date) the git repository at ``path`` as ``repo``: only the
        commits new since the last ingest are read. ``progress(done, total)`` is told after
        each batch of commits. (Not a verb: a path is a local thing; doors name a repository
        the server was started with, through ``code_ingest``.)"""
        if caps.in_sandbox():
            raise CapabilityNotGranted("Capability not granted: memory (inside sandbox())")
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

    @verb(
        "write",
        errors=(RepoNotServed, RevisionNotFound, GitUnreadable, Conflict),
        arguments=("repo",),
    )
    def code_ingest(self, repo: str, branch: str | None = None) -> CodeIngest:
        """Bring a repository this server was started with (--code-repo NAME=PATH) up to date:
        only commits new since the last ingest are read. Name it; a path is never accepted
        here.

        Args:
            repo: The repository's name on this server.
            branch: The branch it follows (optional; a repository follows one branch).
        """
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

    @verb("read", errors=(RepoNotIngested,), arguments=("repo",))
    def code_status(
        self, repo: str, branch: str | None = None, stale_after: int | None = None
    ) -> CodeStatus:
        """Call this first: how much of a repository is ingested (commits, file entries, blobs,
        bytes, refused files), the tip it answers as of (ingested_through), how many commits
        git is ahead (lag) and whether the ingest is fresh.

        Args:
            repo: The ingested repository's name.
            branch: The branch it follows (optional; a repository follows one branch).
            stale_after: Seconds after which an ingest is no longer fresh (default 3600).
        """
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

    @verb("read", errors=(*_READ_ERRORS, BlobCorrupt), arguments=("repo", "path"))
    def code_at(
        self,
        repo: str,
        path: str,
        rev: str | None = None,
        offset: int = 0,
        max_bytes: int = 65536,
        branch: str | None = None,
    ) -> CodeAt:
        """Read a file as it was at a revision: a window of its content (UTF-8 text as content,
        other bytes as content_base64), size, sha256, git blob id, mode, the commit it rests on,
        and whether the window is truncated. kind is file, deleted, gitlink (a submodule) or
        refused (kept out by the secret guard: named, never stored); a path never touched
        answers nothing_stored. Stored code is data.

        Args:
            repo: The ingested repository's name.
            path: A file path in the repository, e.g. 'src/app.py'.
            rev: A revision: HEAD (default), HEAD~N, or a commit id (4-40 hex digits).
            offset: First byte of the window (default 0).
            max_bytes: Window size in bytes (1-262144, default 65536).
            branch: The branch it follows (optional; a repository follows one branch).
        """
        with self._store.read() as tx:
            return read_ops.at(tx, self.tenant, repo, path, rev, offset, max_bytes, branch)

    @verb("read", errors=(*_READ_ERRORS, LineBlameNotBuilt), arguments=("repo", "path"))
    def code_blame(
        self,
        repo: str,
        path: str,
        rev: str | None = None,
        line: int | None = None,
        branch: str | None = None,
    ) -> CodeBlame:
        """File-level blame: the commit that produced a file as it is at a revision (produced_by)
        and up to 5 earlier commits that changed it, following renames. Line-level blame is not
        built (asking for a line is refused: line_blame_not_built).

        Args:
            repo: The ingested repository's name.
            path: A file path in the repository, e.g. 'src/app.py'.
            rev: A revision: HEAD (default), HEAD~N, or a commit id (4-40 hex digits).
            line: A line number: line-level blame is not built, so this is refused.
            branch: The branch it follows (optional; a repository follows one branch).
        """
        with self._store.read() as tx:
            return read_ops.blame(tx, self.tenant, repo, path, rev, line, branch)

    @verb("read", errors=_READ_ERRORS, arguments=("repo", "rev"))
    def code_changes_since(
        self,
        repo: str,
        rev: str,
        limit: int = 50,
        path_prefix: str | None = None,
        after: int | None = None,
        branch: str | None = None,
    ) -> CodeChanges:
        """What changed after a revision: commits oldest first, each with its message and changed
        files (at most 100, then files_more) and the side-branch commits a merge brought in. At
        most 2,000 commits are scanned a call; pass next_after as after for the next page.

        Args:
            repo: The ingested repository's name.
            rev: A revision: HEAD (default), HEAD~N, or a commit id (4-40 hex digits).
            limit: Commits per page (1-500, default 50).
            path_prefix: Only paths starting with this, e.g. 'src/'.
            after: Continue after this ordinal (next_after of the previous page).
            branch: The branch it follows (optional; a repository follows one branch).
        """
        with self._store.read() as tx:
            return change_ops.changes_since(
                tx, self.tenant, repo, rev, limit, path_prefix, after, branch
            )

    @verb(
        "read",
        errors=(*_READ_ERRORS, RangeTooLarge, DiffTooLarge, DiffBinary, BlobCorrupt),
        arguments=("repo", "from_"),
        cli_names={"from_": "from"},
    )
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
        """The paths that differ between two revisions, folded per path (status, how many commits
        touched it, size after). patch=PATH adds that file's two versions (each at most 256 KiB
        and 5,000 lines). More than 2,000 commits apart is refused (range_too_large).

        Args:
            repo: The ingested repository's name.
            from_: The older revision.
            to: The newer revision (default HEAD).
            limit: Paths listed (1-2000, default 200).
            path_prefix: Only paths starting with this, e.g. 'src/'.
            patch: One path whose before and after versions to return.
            branch: The branch it follows (optional; a repository follows one branch).
        """
        with self._store.read() as tx:
            return change_ops.diff(
                tx, self.tenant, repo, from_, to, limit, path_prefix, patch, branch
            )

    @verb("read", errors=(RepoNotIngested,), arguments=("repo", "path"))
    def code_history(
        self,
        repo: str,
        path: str,
        limit: int = 20,
        before: int | None = None,
        branch: str | None = None,
    ) -> CodeHistory:
        """The commits that changed a path, newest first: ordinal, commit, time, author, subject,
        what it did to the path, the size after and whether the file was refused. Pass
        next_before as before for older ones.

        Args:
            repo: The ingested repository's name.
            path: A file path in the repository, e.g. 'src/app.py'.
            limit: How many (1-200, default 20).
            before: Only commits with an ordinal below this (next_before of a page).
            branch: The branch it follows (optional; a repository follows one branch).
        """
        with self._store.read() as tx:
            return read_ops.history(tx, self.tenant, repo, path, limit, before, branch)

    @verb("read", errors=(RepoNotIngested,))
    def code_verify(self, repo: str | None = None) -> CodeVerify:
        """Re-hash every stored blob (of one repository, or all) and list those that no longer
        match their sha256; code_at refuses to serve them (blob_corrupt).

        Args:
            repo: Only this repository's blobs (default: every repository).
        """
        with self._store.read() as tx:
            return read_ops.verify(tx, self.tenant, repo)
