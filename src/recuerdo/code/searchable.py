"""The text of the tip's files as searchable items (``item_type = 'code'``).

Each UTF-8 file at the tip of an ingested branch is one item (scope ``code:<repo>``, key and
title = its path), so search, its filters and its indexes serve code like any other text. The
items follow the tip: after an ingest, a file it changed is rewritten, and a deleted, refused
or binary one loses its item. Cutting items into chunks of whole lines is left to the background
indexer, like every other edit (docs/decisions/0007-edits-re-cut-later.md): cutting them inside
the ingest made a first ingest five times slower (full-text deletes rewrite index pages).
"""

from __future__ import annotations

import json
from typing import Any

from ..index.chunks import rechunk
from ..store.base import Tx
from . import blobs as blob_ops

MAX_SEARCHABLE_BYTES = 2**20


def scope_of(repo: str) -> str:
    return f"code:{repo}"


def searchable(size: int | None, encoding: str | None) -> bool:
    return encoding == "utf-8" and size is not None and size <= MAX_SEARCHABLE_BYTES


def sync(tx: Tx, tenant: str, repo: str, paths: list[str], source: str, at: str) -> None:
    """Make the items of ``paths`` match the tip's tree."""
    for path in paths:
        entry = tx.one(
            "SELECT t.ordinal, t.kind, t.sha256, t.item_id, b.size, b.encoding, c.commit_id,"
            " c.authored_at FROM code_tree t"
            " LEFT JOIN code_blobs b ON b.tenant = t.tenant AND b.sha256 = t.sha256"
            " LEFT JOIN code_commits c ON c.tenant = t.tenant AND c.repo = t.repo"
            " AND c.ordinal = t.ordinal WHERE t.tenant = ? AND t.repo = ? AND t.path = ?",
            (tenant, repo, path),
        )
        old = _item_of(tx, tenant, repo, path)
        if (
            entry is None
            or entry["kind"] != "file"
            or not searchable(entry["size"], entry["encoding"])
        ):
            if old is not None:
                tx.execute("DELETE FROM items WHERE tenant = ? AND id = ?", (tenant, old))
            if entry is not None:
                _link(tx, tenant, repo, path, None)
            continue
        _, data = blob_ops.read(tx, tenant, entry["sha256"])
        assert data is not None
        meta = {
            "repo": repo,
            "path": path,
            "ordinal": entry["ordinal"],
            "commit": entry["commit_id"],
            "sha256": entry["sha256"],
        }
        item = _put(tx, tenant, repo, path, data.decode("utf-8"), meta, old, source, at,
                    entry["authored_at"])  # fmt: skip
        _link(tx, tenant, repo, path, item)


def _item_of(tx: Tx, tenant: str, repo: str, path: str) -> int | None:
    value = tx.scalar(
        "SELECT id FROM items WHERE tenant = ? AND scope = ? AND key = ? AND item_type = 'code'",
        (tenant, scope_of(repo), path),
    )
    return None if value is None else int(value)


def _link(tx: Tx, tenant: str, repo: str, path: str, item_id: int | None) -> None:
    tx.execute(
        "UPDATE code_tree SET item_id = ? WHERE tenant = ? AND repo = ? AND path = ?",
        (item_id, tenant, repo, path),
    )


def _put(
    tx: Tx,
    tenant: str,
    repo: str,
    path: str,
    text: str,
    meta: dict[str, Any],
    item_id: int | None,
    source: str,
    at: str,
    occurred: str | None,
) -> int:
    encoded = json.dumps(meta, sort_keys=True)
    if item_id is None:
        return int(
            tx.scalar(
                "INSERT INTO items (tenant, scope, item_type, title, key, content, source,"
                " meta, created_at, updated_at, occurred_at)"
                " VALUES (?, ?, 'code', ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (tenant, scope_of(repo), path, path, text, source, encoded, at, at, occurred),
            )
        )
    former = tx.scalar("SELECT content FROM items WHERE tenant = ? AND id = ?", (tenant, item_id))
    tx.execute(
        "UPDATE items SET content = ?, meta = ?, updated_at = ?, occurred_at = ?,"
        " version = version + 1 WHERE tenant = ? AND id = ?",
        (text, encoded, at, occurred, tenant, item_id),
    )
    # Chunked already: its chunks are stale until the indexer re-cuts it (readers read the
    # item itself meanwhile). Not chunked yet: the indexer reads the new text anyway.
    rechunk(tx, tenant, item_id, former if former != text else None)
    return item_id
