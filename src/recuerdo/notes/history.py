"""Revisions and the journal: who changed what, how much, and when.

Every version of a note is kept in ``revisions`` (the earlier ones as reverse deltas from the
version after them, the current one only on the item row: ``store/revision_deltas.py``); every
change to any item (entries too) is a ``journal`` row without text, so the owner can see exactly
what an agent wrote and the journal never holds words that a forget must also erase.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, get_args

from ..core.clock import now_iso
from ..core.exact import shown
from ..core.items import MAIL, visible
from ..errors import InvalidInput, ItemNotFound
from ..store import journal_moves, revision_deltas
from ..store.base import Row, Tx, groups, marks
from ..store.hashes import text_key
from ..store.text_delta import common_prefix, common_suffix
from .results import JournalLine, JournalOperation, Revision, RevisionSummary

JOURNAL_OPERATIONS: tuple[str, ...] = get_args(JournalOperation)
MAX_JOURNAL_LIMIT = 1000
JOURNAL_WINDOWS = 100_000
"""The widest range of newest journal ids an unscoped listing reads before it reads the tenant's
whole journal (:func:`read_journal`)."""


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def normalized_hash(text: str) -> bytes:
    """The key of the text lower-cased with whitespace collapsed: what counts as a repeat
    (``items.content_hash``; a prefix, as every stored key: ``store/hashes.py``)."""
    return text_key(" ".join(text.lower().split()))


def change_size(old: str, new: str) -> tuple[int, int]:
    """(characters added, characters removed): the changed middle once the common start and
    end are set aside. Exact for one contiguous change; an upper bound for scattered ones."""
    prefix = common_prefix(old, new)
    suffix = common_suffix(old, new, min(len(old), len(new)) - prefix)
    return len(new) - prefix - suffix, len(old) - prefix - suffix


def _insert_revision(
    tx: Tx, tenant: str, item_id: int, values: dict[str, Any], at: str | None = None
) -> int:
    columns = ", ".join(values)
    marks = ", ".join("?" * (len(values) + 3))
    return int(
        tx.scalar(
            f"INSERT INTO revisions (tenant, item_id, {columns}, created_at) VALUES ({marks})"
            " RETURNING id",
            (tenant, item_id, *values.values(), at or now_iso()),
        )
    )


def record_version(
    tx: Tx,
    *,
    tenant: str,
    item_id: int,
    version: int,
    operation: str,
    principal: str,
    title: str | None,
    kind: str | None,
    text: str,
    before: str | None,
    added: int,
    removed: int,
    at: str | None = None,
) -> int:
    """Version ``version`` of a note, whose text ``text`` the item row now holds: the row keeps
    no copy of it, only ``before`` (the text it replaces; None for the first version) as a
    reverse delta (``store/revision_deltas.py``). ``at``: when (default now)."""
    previous = None if before is None else revision_deltas.previous_of(version, text, before)
    return _insert_revision(
        tx,
        tenant,
        item_id,
        {
            "version": version,
            "operation": operation,
            "principal": principal,
            "title": title,
            "kind": kind,
            "previous": previous,
            "chars_added": added,
            "chars_removed": removed,
            "content_hash": content_hash(text),
        },
        at,
    )


def record_revision(
    tx: Tx,
    *,
    tenant: str,
    item_id: int,
    operation: str,
    principal: str,
    title: str | None,
    kind: str | None,
    content: str,
    added: int,
    removed: int,
    based_on: int | None = None,
    at: str | None = None,
) -> int:
    """A revision without a version (a conflict kept aside, a deletion, a restore): its text
    is kept whole, as it never was (or no longer is) the item's. ``at``: when (default now)."""
    return _insert_revision(
        tx,
        tenant,
        item_id,
        {
            "based_on": based_on,
            "operation": operation,
            "principal": principal,
            "title": title,
            "kind": kind,
            "content": content,
            "chars_added": added,
            "chars_removed": removed,
            "content_hash": content_hash(content),
        },
        at,
    )


def held_conflict(tx: Tx, current: Row, fields: dict[str, Any]) -> int | None:
    """The conflict revision of the note that holds this write already (the same text, title
    and kind, from the same principal, on the same version): a stale write retried (a
    mirror's sync of a diverged push, each time) kept one more copy each time."""
    found = tx.scalar(
        "SELECT id FROM revisions WHERE tenant = ? AND item_id = ? AND operation = 'conflict'"
        " AND based_on = ? AND principal = ? AND title = ? AND kind = ? AND content_hash = ?"
        " AND content = ? ORDER BY id LIMIT 1",
        (
            current["tenant"],
            current["id"],
            fields["based_on"],
            fields["principal"],
            fields["title"],
            fields["kind"],
            content_hash(fields["content"]),
            fields["content"],
        ),
    )
    return None if found is None else int(found)


def journal(
    tx: Tx,
    *,
    tenant: str,
    scope: str,
    item_id: int,
    item_type: str,
    operation: str,
    principal: str,
    version: int | None = None,
    added: int = 0,
    removed: int = 0,
    at: str | None = None,
    moved: tuple[str, str] | None = None,
) -> None:
    """One journal line. ``moved``: (from, to), the keys of a ``move`` (kept since step m047;
    a store opened at an older schema has no columns for them, and its line keeps none)."""
    values: list[Any] = [
        tenant,
        scope,
        item_id,
        item_type,
        operation,
        principal,
        version,
        added,
        removed,
        at or now_iso(),
    ]
    columns = "chars_added, chars_removed, created_at"
    if moved is not None and journal_moves.has_keys(tx):
        columns += ", from_key, to_key"
        values += moved
    tx.execute(
        "INSERT INTO journal (tenant, scope, item_id, item_type, operation, principal, version,"
        f" {columns}) VALUES ({marks(values)})",
        values,
    )


def journal_row(
    tx: Tx,
    row: Row,
    operation: str,
    principal: str,
    *,
    version: int | None = None,
    added: int = 0,
    removed: int = 0,
    moved: tuple[str, str] | None = None,
) -> None:
    """A journal line for a change to the item in ``row`` (its tenant, scope, id and type)."""
    journal(
        tx,
        tenant=row["tenant"],
        scope=row["scope"],
        item_id=row["id"],
        item_type=row["item_type"],
        operation=operation,
        principal=principal,
        version=row["version"] if version is None else version,
        added=added,
        removed=removed,
        moved=moved,
    )


def _revision_summary(row: Row) -> RevisionSummary:
    return {
        "revision_id": row["id"],
        "version": row["version"],
        "operation": row["operation"],
        "principal": row["principal"],
        "created_at": row["created_at"],
        "chars_added": row["chars_added"],
        "chars_removed": row["chars_removed"],
        "content_hash": row["content_hash"],
        "based_on": row["based_on"],
    }


def history(tx: Tx, tenant: str, item_id: int) -> list[RevisionSummary]:
    """Every revision, oldest first: the versions, and beside them (``version`` null, named by
    ``revision_id``) conflicts kept aside, deletions and restores."""
    rows = tx.all(
        "SELECT id, version, based_on, operation, principal, created_at, chars_added,"
        " chars_removed, content_hash FROM revisions WHERE tenant = ? AND item_id = ?"
        " ORDER BY id",
        (tenant, item_id),
    )
    return [_revision_summary(row) for row in rows]


def _id_or_none(value: object, field: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{field} is an integer, got {shown(value)}")
    return value


def revision(tx: Tx, tenant: str, item_id: int, version: object, revision_id: object) -> Revision:
    """One revision whole, by its version or by its ``revision_id`` (exactly one of them)."""
    number = _id_or_none(version, "version")
    named = _id_or_none(revision_id, "revision_id")
    if (number is None) == (named is None):
        raise InvalidInput(
            "give exactly one of version (a version number) and revision_id (from history: "
            "conflicts, deletions and restores have no version)"
        )
    if named is not None:
        row = tx.one(
            "SELECT * FROM revisions WHERE tenant = ? AND item_id = ? AND id = ?",
            (tenant, item_id, named),
        )
        missing = f"note {item_id} has no revision {named}"
    else:
        row = tx.one(
            "SELECT * FROM revisions WHERE tenant = ? AND item_id = ? AND version = ?",
            (tenant, item_id, number),
        )
        missing = f"note {item_id} has no version {number}"
    if row is None:
        raise ItemNotFound(missing)
    return {
        **_revision_summary(row),
        "title": row["title"],
        "kind": row["kind"],
        "content": revision_deltas.version_text(tx, tenant, item_id, row),
    }


def version_text(tx: Tx, tenant: str, item_id: int, version: int) -> str | None:
    """The text of one version of a note (None when it has no such version)."""
    row = tx.one(
        "SELECT version, content, content_hash FROM revisions WHERE tenant = ? AND item_id = ?"
        " AND version = ?",
        (tenant, item_id, version),
    )
    return None if row is None else revision_deltas.version_text(tx, tenant, item_id, row)


def versions_of(
    tx: Tx, tenant: str, item_ids: Sequence[int]
) -> dict[int, tuple[dict[int, str], list[Row]]]:
    """Each note's version texts and version rows, for many notes at once."""
    return revision_deltas.versions_of(tx, tenant, item_ids)


def revision_texts(tx: Tx, tenant: str, item_id: int) -> list[tuple[str | None, str]]:
    """(title, text) of every revision of a note, versions and those kept aside alike: all the
    words its history holds (what a hard delete scrubs from the audit)."""
    return revision_texts_of(tx, tenant, [item_id]).get(item_id, [])


_NOTES_A_STATEMENT = 1_000


def revision_texts_of(
    tx: Tx, tenant: str, item_ids: Sequence[int]
) -> dict[int, list[tuple[str | None, str]]]:
    """:func:`revision_texts` of many notes, in three statements for each thousand of them (a
    forget of a whole scope read two a note: a round trip each on PostgreSQL)."""
    found: dict[int, list[tuple[str | None, str]]] = {}
    for part in groups(sorted(set(item_ids)), _NOTES_A_STATEMENT):
        for item_id, (texts, rows) in versions_of(tx, tenant, part).items():
            found.setdefault(item_id, []).extend(
                (row["title"], texts[row["version"]]) for row in rows
            )
        for row in tx.all(
            "SELECT item_id, title, content FROM revisions WHERE tenant = ? AND item_id IN"
            f" ({marks(part)}) AND version IS NULL ORDER BY id",
            (tenant, *part),
        ):
            found.setdefault(int(row["item_id"]), []).append((row["title"], row["content"]))
    return found


def read_journal(
    tx: Tx,
    tenant: str,
    *,
    viewer: str | None = None,
    scope: str | None,
    since: str | None,
    principal: str | None,
    limit: int,
) -> list[JournalLine]:
    """The journal, newest first; a message's changes only for its conversation's members."""
    members_only, shown = visible("i", viewer)
    where = [
        "tenant = ?",
        f"(item_type <> '{MAIL}' OR EXISTS (SELECT 1 FROM items i"
        f" WHERE i.tenant = journal.tenant AND i.id = journal.item_id AND {members_only}))",
    ]
    params: list[Any] = [tenant, *shown]
    for column, value in (("scope", scope), ("principal", principal)):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    if since is not None:
        where.append("created_at >= ?")
        params.append(since)
    wanted = max(1, min(limit, MAX_JOURNAL_LIMIT))
    # A move's keys, kept since step m047 (NULL on the lines before it: unknown).
    keys = "from_key, to_key" if journal_moves.has_keys(tx) else "NULL AS from_key, NULL AS to_key"

    def newest(above: int | None = None) -> list[Row]:
        bound, bound_params = ("", []) if above is None else (" AND id > ?", [above])
        return tx.all(
            "SELECT id, scope, item_id, item_type, operation, principal, version, chars_added,"
            f" chars_removed, created_at, {keys} FROM journal WHERE {' AND '.join(where)}{bound}"
            " ORDER BY id DESC LIMIT ?",
            [*params, *bound_params, wanted],
        )

    rows: list[Row] | None = None
    if tx.dialect == "sqlite" and scope is None and principal is None and since is None:
        # On SQLite no index keeps the tenant's lines in id order (journal_by_scope is
        # (tenant, scope); PostgreSQL's key is (tenant, id)): the listing read and sorted every
        # line of the tenant to keep the newest few. The newest ids are read first instead, a
        # range of the primary key widened fourfold until it holds the limit; a tenant whose
        # lines are sparse among others' reaches the whole listing (``JOURNAL_WINDOWS``). A
        # filter that keeps few lines lists as before: its windows would mostly come back short.
        top = tx.scalar("/* every tenant */ SELECT max(id) FROM journal")
        window = 4 * wanted
        while top is not None and window <= JOURNAL_WINDOWS:
            found = newest(int(top) - window)
            if len(found) == wanted or int(top) - window <= 0:  # full, or every id was read
                rows = found
                break
            window *= 4
    if rows is None:
        rows = newest()
    return [_journal_line(row) for row in rows]


def _journal_line(row: Row) -> JournalLine:
    line: JournalLine = {
        "id": row["id"],
        "scope": row["scope"],
        "item_id": row["item_id"],
        "item_type": row["item_type"],
        "operation": row["operation"],
        "principal": row["principal"],
        "version": row["version"],
        "chars_added": row["chars_added"],
        "chars_removed": row["chars_removed"],
        "created_at": row["created_at"],
    }
    if row["operation"] == "move":  # null: written before the keys were kept, or erased since
        line["from_key"], line["to_key"] = row["from_key"], row["to_key"]
    return line
