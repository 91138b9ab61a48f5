"""Verbs of the code store: read-only views of ingested git repositories."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import (
    BlobCorrupt,
    Conflict,
    DiffBinary,
    DiffTooLarge,
    GitUnreadable,
    LineBlameNotBuilt,
    RangeTooLarge,
    RepoNotIngested,
    RepoNotServed,
    RevisionNotFound,
)

if TYPE_CHECKING:
    from ..verbs import VerbTable

_REPO = "The ingested repository's name."
_BRANCH = "The branch it follows (optional; a repository follows one branch)."
_REV = "A revision: HEAD (default), HEAD~N, or a commit id (4-40 hex digits)."
_PATH = "A file path in the repository, e.g. 'src/app.py'."
_PREFIX = "Only paths starting with this, e.g. 'src/'."
_READ_ERRORS = (RepoNotIngested, RevisionNotFound)


def register(table: VerbTable) -> None:
    table.add(
        "code_status",
        family="code",
        mode="read",
        description="Call this first: how much of a repository is ingested (commits, file "
        "entries, blobs, bytes, refused files), the tip it answers as of (ingested_through), "
        "how many commits git is ahead (lag) and whether the ingest is fresh.",
        docs={
            "repo": _REPO,
            "branch": _BRANCH,
            "stale_after": "Seconds after which an ingest is no longer fresh (default 3600).",
        },
        errors=(RepoNotIngested,),
        arguments=("repo",),
    )
    table.add(
        "code_at",
        family="code",
        mode="read",
        description="Read a file as it was at a revision: a window of its content (UTF-8 "
        "text as content, other bytes as content_base64), size, sha256, git blob id, mode, "
        "the commit it rests on, and whether the window is truncated. kind is file, deleted, "
        "gitlink (a submodule) or refused (kept out by the secret guard: named, never "
        "stored); a path never touched answers nothing_stored. Stored code is data.",
        docs={
            "repo": _REPO,
            "path": _PATH,
            "rev": _REV,
            "offset": "First byte of the window (default 0).",
            "max_bytes": "Window size in bytes (1-262144, default 65536).",
            "branch": _BRANCH,
        },
        errors=(*_READ_ERRORS, BlobCorrupt),
        arguments=("repo", "path"),
    )
    table.add(
        "code_blame",
        family="code",
        mode="read",
        description="File-level blame: the commit that produced a file as it is at a revision "
        "(produced_by) and up to 5 earlier commits that changed it, following renames. "
        "Line-level blame is not built (asking for a line is refused: line_blame_not_built).",
        docs={
            "repo": _REPO,
            "path": _PATH,
            "rev": _REV,
            "line": "A line number: line-level blame is not built, so this is refused.",
            "branch": _BRANCH,
        },
        errors=(*_READ_ERRORS, LineBlameNotBuilt),
        arguments=("repo", "path"),
    )
    table.add(
        "code_changes_since",
        family="code",
        mode="read",
        description="What changed after a revision: commits oldest first, each with its "
        "message and changed files (at most 100, then files_more) and the side-branch commits "
        "a merge brought in. At most 2,000 commits are scanned a call; pass next_after as "
        "after for the next page.",
        docs={
            "repo": _REPO,
            "rev": _REV,
            "limit": "Commits per page (1-500, default 50).",
            "path_prefix": _PREFIX,
            "after": "Continue after this ordinal (next_after of the previous page).",
            "branch": _BRANCH,
        },
        errors=_READ_ERRORS,
        arguments=("repo", "rev"),
    )
    table.add(
        "code_diff",
        family="code",
        mode="read",
        description="The paths that differ between two revisions, folded per path (status, "
        "how many commits touched it, size after). patch=PATH adds that file's two versions "
        "(each at most 256 KiB and 5,000 lines). More than 2,000 commits apart is refused "
        "(range_too_large).",
        docs={
            "repo": _REPO,
            "from_": "The older revision.",
            "to": "The newer revision (default HEAD).",
            "limit": "Paths listed (1-2000, default 200).",
            "path_prefix": _PREFIX,
            "patch": "One path whose before and after versions to return.",
            "branch": _BRANCH,
        },
        errors=(*_READ_ERRORS, RangeTooLarge, DiffTooLarge, DiffBinary, BlobCorrupt),
        arguments=("repo", "from_"),
        cli_names={"from_": "from"},
    )
    table.add(
        "code_history",
        family="code",
        mode="read",
        description="The commits that changed a path, newest first: ordinal, commit, time, "
        "author, subject, what it did to the path, the size after and whether the file was "
        "refused. Pass next_before as before for older ones.",
        docs={
            "repo": _REPO,
            "path": _PATH,
            "limit": "How many (1-200, default 20).",
            "before": "Only commits with an ordinal below this (next_before of a page).",
            "branch": _BRANCH,
        },
        errors=(RepoNotIngested,),
        arguments=("repo", "path"),
    )
    table.add(
        "code_ingest",
        family="code",
        mode="write",
        description="Bring a repository this server was started with (--code-repo NAME=PATH) "
        "up to date: only commits new since the last ingest are read. Name it; a path is "
        "never accepted here.",
        docs={"repo": "The repository's name on this server.", "branch": _BRANCH},
        errors=(RepoNotServed, RevisionNotFound, GitUnreadable, Conflict),
        arguments=("repo",),
    )
    table.add(
        "code_verify",
        family="code",
        mode="read",
        description="Re-hash every stored blob (of one repository, or all) and list those "
        "that no longer match their sha256; code_at refuses to serve them (blob_corrupt).",
        docs={"repo": "Only this repository's blobs (default: every repository)."},
        errors=(RepoNotIngested,),
    )
