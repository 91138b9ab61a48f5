"""The results of the code verbs: plain dicts, named here for type checkers and the doors.

Every answer carries ``ingested_through``: the tip of the branch it answers as of. ``state`` is
``answered`` or ``nothing_stored`` (a path the history never touched: an explicit empty answer).
"""

from __future__ import annotations

from typing import Literal

from typing_extensions import TypedDict

Kind = Literal["file", "deleted", "gitlink", "refused"]
State = Literal["answered", "nothing_stored"]


class IngestedThrough(TypedDict):
    commit: str
    ordinal: int
    time: str
    ingested_at: str


class CommitRef(TypedDict):
    """A commit of the branch's first-parent line."""

    commit: str
    ordinal: int
    time: str
    author: str
    subject: str


class CodeStatus(TypedDict, total=False):
    repo: str
    branch: str
    state: State
    ingested_through: IngestedThrough
    commits: int
    side_commits: int
    dropped_commits: int
    file_entries: int
    blobs: int
    bytes: int
    refused_files: int
    lag: int | None
    lag_detail: str
    age_seconds: int
    fresh: bool
    stale_after: int


class CodeAt(TypedDict, total=False):
    repo: str
    path: str
    state: State
    ingested_through: IngestedThrough
    rev: CommitRef
    kind: Kind
    reason: str
    mode: str
    size: int
    sha256: str
    git_blob: str
    binary: bool
    encoding: str
    rests_on: CommitRef
    offset: int
    returned_bytes: int
    next_offset: int | None
    truncated: bool
    read_amplification: float | None
    content: str
    content_base64: str


class BlameCommit(CommitRef, total=False):
    did: str
    other_path: str
    size: int | None


class CodeBlame(TypedDict, total=False):
    repo: str
    path: str
    state: State
    level: Literal["file"]
    ingested_through: IngestedThrough
    rev: CommitRef
    kind: Kind
    produced_by: BlameCommit
    earlier: list[BlameCommit]
    earlier_more: bool


class FileChange(TypedDict, total=False):
    path: str
    status: str
    kind: Kind
    other_path: str
    size: int | None


class SideCommit(TypedDict):
    commit: str
    author: str
    time: str
    subject: str


class ChangedCommit(TypedDict, total=False):
    ordinal: int
    commit: str
    time: str
    author: str
    subject: str
    message: str
    files: list[FileChange]
    files_more: int
    merged: list[SideCommit]


class Moved(TypedDict):
    rev: str
    fork_point: CommitRef | None
    detail: str


class CodeChanges(TypedDict, total=False):
    repo: str
    state: State
    ingested_through: IngestedThrough
    since: CommitRef
    moved: Moved
    commits: list[ChangedCommit]
    scanned: int
    next_after: int | None


class DiffPath(TypedDict, total=False):
    path: str
    status: str
    kind: Kind
    renamed_from: str
    commits: int
    touched_by: list[str]
    size_after: int | None


class PatchBlock(TypedDict, total=False):
    kind: Kind
    sha256: str
    size: int
    lines: int
    content: str
    content_base64: str


class Patch(TypedDict):
    path: str
    before: PatchBlock | None
    after: PatchBlock | None


# "from" is a Python keyword: the functional form names the key as the doors show it.
CodeDiff = TypedDict(
    "CodeDiff",
    {
        "repo": str,
        "state": State,
        "ingested_through": IngestedThrough,
        "from": CommitRef,
        "to": CommitRef,
        "commits": int,
        "paths": list[DiffPath],
        "paths_more": int,
        "patch": Patch,
    },
    total=False,
)


class HistoryEntry(TypedDict, total=False):
    ordinal: int
    commit: str
    time: str
    author: str
    subject: str
    message_head: str
    did: str
    other_path: str
    kind: Kind
    size: int | None
    refused: bool


class CodeHistory(TypedDict, total=False):
    repo: str
    path: str
    state: State
    ingested_through: IngestedThrough
    history: list[HistoryEntry]
    next_before: int | None


class CodeIngest(TypedDict, total=False):
    repo: str
    branch: str
    state: Literal["ingested", "unchanged"]
    ingested_through: IngestedThrough
    new_commits: int
    side_commits: int
    dropped_commits: int
    moved: bool
    blobs_added: int
    bytes_added: int
    refused_added: int
    seconds: float
    commits_per_s: float


class CorruptBlob(TypedDict):
    sha256: str
    git_blob: str
    paths: list[str]


class CodeVerify(TypedDict, total=False):
    repo: str | None
    ok: bool
    checked: int
    bytes: int
    not_kept: int
    corrupt: list[CorruptBlob]
