"""Forgetting an ingested repository: its code store rows go with its searchable items.

``forget_knowledge(all=True, scope="code:<repo>")`` is how a repository is forgotten (its tip's
files are the items of that scope). Deleting those items alone left the repository in the code
store: ``code_at`` still served its files and a later ingest, finding its tip unchanged or its
tree already synced, never wrote the items again (a hunt over the code store). So the forget of
the scope calls :func:`forget_scope` in the same erasing write: the repository's commits,
changes and tree go, its row too (a later ingest starts the repository over, fresh ordinals
and all), and every blob no other repository of the tenant still reaches. The store's
``secure_delete`` zeroes the freed pages and the caller reclaims the write-ahead log, as for
every other forget (docs/decisions/0005-erasure.md, 0095).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..store.base import Tx
from .searchable import scope_of

_PREFIX = scope_of("")


@dataclass
class Erased:
    """What a repository's forget removed."""

    repos: int = 0
    text: list[str] = field(default_factory=list)
    """Commit messages, authors and paths gone: the audit drops queries asking for words only
    they held."""


def repo_of(scope: str) -> str | None:
    """The repository a scope holds the code of, or ``None`` for any other scope."""
    name = scope.removeprefix(_PREFIX)
    return name if name and name != scope else None


def forget_scope(tx: Tx, tenant: str, scope: str) -> Erased:
    """Erase the code store rows of the repository of ``scope`` (nothing for another scope)."""
    erased = Erased()
    repo = repo_of(scope)
    if repo is None:
        return erased
    params = (tenant, repo)
    if tx.scalar("SELECT 1 FROM code_repos WHERE tenant = ? AND repo = ?", params) is None:
        return erased
    erased.text += [
        f"{r['author']} {r['email']} {r['message']}"
        for r in tx.all(
            "SELECT author, email, message FROM code_commits WHERE tenant = ? AND repo = ?",
            params,
        )
    ]
    erased.text += [
        f"{r['path']} {r['other_path'] or ''}"
        for r in tx.all(
            "SELECT DISTINCT path, other_path FROM code_changes WHERE tenant = ? AND repo = ?",
            params,
        )
    ]
    for table in ("code_changes", "code_tree", "code_commits", "code_repos"):
        tx.execute(f"DELETE FROM {table} WHERE tenant = ? AND repo = ?", params)
    # Blobs are shared by a tenant's repositories: the ones no change of any repository points
    # at any more go, which takes this repository's and those only its dropped commits held
    # (a moved ref deletes their changes, never their blobs). An ingest checks, in its write,
    # that the blobs it found stored are still there (``blobs.still_stored``).
    # NOT IN over one subquery: both databases build it once (a correlated NOT EXISTS probed
    # the changes, which have no index by sha256, once per blob).
    tx.execute(
        "DELETE FROM code_blobs WHERE tenant = ? AND sha256 NOT IN (SELECT sha256 FROM"
        " code_changes WHERE tenant = ? AND sha256 IS NOT NULL)",
        (tenant, tenant),
    )
    erased.repos = 1
    return erased
