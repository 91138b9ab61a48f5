"""What every code verb looks up: the repository, its tip, a revision, a file at a revision."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..core.exact import shown
from ..errors import InvalidInput, RepoNotIngested, RevisionNotFound
from ..store.base import Row, Tx
from .model import CommitRef, IngestedThrough
from .paths import raw, stored

_REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")
_HEX = re.compile(r"[0-9a-fA-F]{4,64}")
_SUFFIX = re.compile(r"^(.*?)((?:~\d*|\^)*)$")
MAX_PATH = 4096
LINE = "ordinal IS NOT NULL AND dropped = 0"
_COMMIT = "commit_id, ordinal, dropped, merged_at, authored_at, author, subject"


def check_repo(repo: object) -> str:
    if not isinstance(repo, str) or not _REPO.fullmatch(repo):
        raise InvalidInput(
            "repo is 1-63 letters, digits, '.', '_' or '-' (starting with a letter or digit), "
            f"got {shown(repo)}"
        )
    return repo


def check_path(path: object, field: str = "path") -> str:
    if not isinstance(path, str) or not path or len(path) > MAX_PATH or "\0" in path:
        raise InvalidInput(f"{field} is a file path of 1 to {MAX_PATH} characters")
    clean = _relative(path.strip())
    if not clean:
        raise InvalidInput(f"{field} names no file: {path!r}")
    # As the ingest spelled the path it stored: ``\xFF`` reads as ``\xff``, and a credential
    # in the name as its marker (decision 0095).
    return stored(raw(clean))


def check_prefix(prefix: object) -> str | None:
    if prefix is None:
        return None
    if not isinstance(prefix, str) or len(prefix) > MAX_PATH or "\0" in prefix:
        raise InvalidInput(f"path_prefix is a path of at most {MAX_PATH} characters")
    clean = _relative(prefix)
    return stored(raw(clean)) if clean else None


def _relative(path: str) -> str:
    """``path`` without the leading ``./`` and ``/`` a caller may write, each taken off whole:
    stripping the characters ``.`` and ``/`` took the dot of a dot-directory with them
    (``/.github/`` narrowed to ``github/``, a hunt over the code store)."""
    while path.startswith(("./", "/")):
        path = path[2:] if path.startswith("./") else path[1:]
    return path


def bounded(value: object, field: str, low: int, high: int | None = None) -> int:
    top = "" if high is None else f" to {high}"
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < low
        or (high is not None and value > high)
    ):
        raise InvalidInput(f"{field} must be an integer from {low}{top}, got {shown(value)}")
    return value


def repo_row(tx: Tx, tenant: str, repo: str) -> Row | None:
    return tx.one("SELECT * FROM code_repos WHERE tenant = ? AND repo = ?", (tenant, repo))


def ingested_repo(tx: Tx, tenant: str, repo: object, branch: object = None) -> Row:
    """The repository's row, or ``repo_not_ingested`` (nothing is created)."""
    name = check_repo(repo)
    row = repo_row(tx, tenant, name)
    if row is None or row["tip"] is None:
        raise RepoNotIngested(
            f"no repository {name!r} has been ingested into this memory "
            "(recuerdo code ingest PATH --repo NAME, or code_ingest on a server started with "
            "--code-repo NAME=PATH)"
        )
    if branch is not None and branch != row["branch"]:
        raise RepoNotIngested(
            f"repository {name!r} is ingested from branch {row['branch']!r}, not {branch!r}"
        )
    return row


def tenants_holding(tx: Tx, repo: str) -> list[str]:
    """Every tenant of this memory that has ingested ``repo`` (for the server's schedule)."""
    return [r["tenant"] for r in tx.all("SELECT tenant FROM code_repos WHERE repo = ?", (repo,))]


def ingested_through(tx: Tx, tenant: str, repo: str) -> IngestedThrough:
    row = tx.one(
        "SELECT r.tip, r.tip_ordinal, r.ingested_at, c.committed_at FROM code_repos r"
        " JOIN code_commits c ON c.tenant = r.tenant AND c.repo = r.repo AND c.commit_id = r.tip"
        " WHERE r.tenant = ? AND r.repo = ?",
        (tenant, repo),
    )
    if row is None:
        raise RepoNotIngested(f"no repository {repo!r} has been ingested into this memory")
    return {
        "commit": row["tip"],
        "ordinal": int(row["tip_ordinal"]),
        "time": row["committed_at"],
        "ingested_at": row["ingested_at"],
    }


def live_line(tx: Tx, tenant: str, repo: str) -> list[tuple[str, int]]:
    """(commit, ordinal) of the branch's line, oldest first."""
    return [
        (r["commit_id"], int(r["ordinal"]))
        for r in tx.all(
            f"SELECT commit_id, ordinal FROM code_commits WHERE tenant = ? AND repo = ? AND {LINE}"
            " ORDER BY ordinal",
            (tenant, repo),
        )
    ]


def ref(row: Row) -> CommitRef:
    return {
        "commit": row["commit_id"],
        "ordinal": int(row["ordinal"]),
        "time": row["authored_at"],
        "author": row["author"],
        "subject": row["subject"],
    }


def commit_at(tx: Tx, tenant: str, repo: str, ordinal: int) -> Row | None:
    return tx.one(
        f"SELECT {_COMMIT} FROM code_commits WHERE tenant = ? AND repo = ? AND ordinal = ?",
        (tenant, repo, ordinal),
    )


@dataclass(frozen=True)
class Revision:
    row: Row  # the commit
    on_line: bool  # False: the ref moved and this commit left the branch

    @property
    def ordinal(self) -> int:
        return int(self.row["ordinal"])


def revision(tx: Tx, repo: Row, rev: object, *, allow_dropped: bool = False) -> Revision:
    """A revision of the branch: HEAD (or none, or the branch's name), HEAD~N / HEAD^, or a
    commit id (4 to 40 hex digits, unique). Side-branch commits and, unless
    ``allow_dropped``, commits the branch dropped are refused by name."""
    tenant, name = repo["tenant"], repo["repo"]
    if rev is not None and (not isinstance(rev, str) or len(rev) > 255):
        raise InvalidInput("rev is a revision of at most 255 characters")
    text, suffix = _SUFFIX.match((rev or "HEAD").strip()).groups()  # type: ignore[union-attr]
    back = sum(int(n or 1) for n in re.findall(r"~(\d*)", suffix)) + suffix.count("^")
    text = text or "HEAD"
    if text in ("HEAD", "@", repo["branch"]):
        row = commit_at(tx, tenant, name, int(repo["tip_ordinal"]))
    elif _HEX.fullmatch(text):
        row = _by_prefix(tx, tenant, name, text.lower())
    else:
        raise RevisionNotFound(f"{rev!r} names no commit of {name} (use HEAD, HEAD~N or an id)")
    if row is None:
        raise RevisionNotFound(f"{rev!r} names no commit of {name}")
    if row["ordinal"] is None or (row["dropped"] and not allow_dropped):
        raise RevisionNotFound(_off_line(row, repo))
    found = Revision(row, on_line=not row["dropped"])
    if back:
        if not found.on_line:
            raise RevisionNotFound(_off_line(row, repo))
        earlier = tx.one(
            f"SELECT {_COMMIT} FROM code_commits WHERE tenant = ? AND repo = ? AND {LINE}"
            " AND ordinal < ? ORDER BY ordinal DESC LIMIT 1 OFFSET ?",
            (tenant, name, found.ordinal, back - 1),
        )
        if earlier is None:
            raise RevisionNotFound(f"{rev!r} goes back past the first commit of {name}")
        found = Revision(earlier, on_line=True)
    return found


def _off_line(row: Row, repo: Row) -> str:
    sha = row["commit_id"]
    if row["merged_at"] is not None:
        return (
            f"commit {sha} is on a side branch merged into {repo['branch']} at ordinal "
            f"{row['merged_at']}; answers follow the branch's first-parent line: name that merge"
        )
    return (
        f"commit {sha} is no longer on branch {repo['branch']}: the ref moved (force-push or "
        "reset) and the commits after the shared history were dropped"
    )


def _by_prefix(tx: Tx, tenant: str, repo: str, prefix: str) -> Row | None:
    rows = tx.all(
        f"SELECT {_COMMIT} FROM code_commits WHERE tenant = ? AND repo = ?"
        " AND commit_id >= ? AND commit_id < ? LIMIT 2",
        (tenant, repo, prefix, prefix + "g"),
    )
    if len(rows) > 1:
        raise RevisionNotFound(f"{prefix!r} is ambiguous in {repo}: give more digits")
    return rows[0] if rows else None


def fork_point(tx: Tx, tenant: str, repo: str, ordinal: int) -> Row | None:
    """The last commit still on the line before a dropped commit's ordinal."""
    return tx.one(
        f"SELECT {_COMMIT} FROM code_commits WHERE tenant = ? AND repo = ? AND {LINE}"
        " AND ordinal < ? ORDER BY ordinal DESC LIMIT 1",
        (tenant, repo, ordinal),
    )


def state_at(tx: Tx, tenant: str, repo: str, path: str, ordinal: int) -> Row | None:
    """The last change to ``path`` at or before ``ordinal`` (its state there), or ``None``."""
    return tx.one(
        "SELECT ordinal, path, status, kind, other_path, mode, sha256, git_blob, size, reason"
        " FROM code_changes WHERE tenant = ? AND repo = ? AND path = ? AND ordinal <= ?"
        " ORDER BY ordinal DESC LIMIT 1",
        (tenant, repo, path, ordinal),
    )
