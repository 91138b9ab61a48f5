"""How ``revisions`` keeps the text of a note's versions (since ``m019_revision_deltas``).

The current text is whole on the item row and nowhere else. A version's row holds no text of
its own (``content`` is NULL); it holds ``previous``: the text of the version before it, as a
reverse delta from its own text (``text_delta``), written once, when the version is made (an
insert only: no earlier row is rewritten by an update, save by a scrub of a credential,
``notes/scrub.py``, decision 0150). Every ``SNAPSHOT_EVERY``-th version is
kept whole instead (in the row after it), so reading any version applies at most
``SNAPSHOT_EVERY - 1`` deltas; a delta no smaller than the text is kept whole too.

A row whose ``content`` is set holds its text whole: conflicts, deletions and restores (rows
without a version), and the versions of an older store that could not be chained (a gap in
the version numbers, or a newest revision that differs from the item's text). Reading walks
up from the version asked for to the first text held whole (a snapshot, a ``content``, or the
item's text), then back down through the deltas; every text rebuilt is checked against the
hash recorded when it was written, so a broken chain is reported, never served.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence

from ..errors import StoreDamaged
from . import text_delta
from .base import Row, Tx, marks

SNAPSHOT_EVERY = 16
_BATCH = SNAPSHOT_EVERY + 1  # rows read at a time while walking up: usually one query
_CONVERT_ITEMS = 500


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def previous_of(version: int, text: str, before: str) -> bytes:
    """The ``previous`` of version ``version`` (whose text is ``text``): the text of the
    version before it, ``before``, as a delta from ``text``, or whole at a snapshot."""
    if (version - 1) % SNAPSHOT_EVERY == 0:
        return text_delta.whole(before)
    return text_delta.make(text, before)


def _damaged(item_id: int, version: int, why: str) -> StoreDamaged:
    return StoreDamaged(
        f"version {version} of note {item_id} cannot be rebuilt from its history ({why}); "
        "the current text is unaffected"
    )


def _apply(item_id: int, version: int, previous: bytes, newer: str | None) -> str:
    try:
        return text_delta.apply(bytes(previous), newer)
    except (ValueError, UnicodeDecodeError) as exc:
        raise _damaged(item_id, version, str(exc)) from exc


def _checked(item_id: int, row: Row, text: str) -> str:
    if text_hash(text) != row["content_hash"]:
        raise _damaged(item_id, row["version"], "its text does not match its recorded hash")
    return text


def _current(tx: Tx, tenant: str, item_id: int, top: int) -> str:
    current = tx.one(
        "SELECT version, content FROM items WHERE tenant = ? AND id = ?", (tenant, item_id)
    )
    return _current_text(item_id, top, current)


def _current_text(item_id: int, top: int, current: Row | None) -> str:
    """The note's text, which is its newest revision ``top``'s (else the chain is broken)."""
    if current is None or current["version"] != top:
        raise _damaged(item_id, top, "the note's current version is not its newest revision")
    return str(current["content"])


def _walk_up(tx: Tx, tenant: str, item_id: int, version: int) -> tuple[str, list[bytes]]:
    """From ``version`` up to the first text held whole: that text, and the deltas (lowest
    version first) that lead back down from it to ``version``."""
    pending: list[bytes] = []
    expected = version
    while True:
        rows = tx.all(
            "SELECT version, content, previous FROM revisions WHERE tenant = ? AND item_id = ?"
            " AND version >= ? ORDER BY version LIMIT ?",
            (tenant, item_id, expected, _BATCH),
        )
        for row in rows:
            at = int(row["version"])
            if at != expected:
                raise _damaged(item_id, version, f"version {expected} is missing")
            expected += 1
            previous = row["previous"]
            if at > version:
                if previous is None:
                    raise _damaged(item_id, version, f"version {at} keeps no earlier text")
                if text_delta.is_whole(bytes(previous)):
                    return _apply(item_id, at - 1, previous, None), pending
            if row["content"] is not None:
                return str(row["content"]), pending + ([previous] if at > version else [])
            if at > version:
                pending.append(previous)
        if len(rows) < _BATCH:
            if expected == version:
                raise _damaged(item_id, version, "no such revision")
            return _current(tx, tenant, item_id, expected - 1), pending


def version_text(tx: Tx, tenant: str, item_id: int, row: Row) -> str:
    """The text of the version in ``row`` (a row of ``revisions`` with its ``version``,
    ``content`` and ``content_hash``)."""
    if row["content"] is not None:
        return str(row["content"])
    version = int(row["version"])
    text, pending = _walk_up(tx, tenant, item_id, version)
    for at, previous in zip(
        range(version + len(pending), version, -1), reversed(pending), strict=True
    ):
        text = _apply(item_id, at - 1, previous, text)
    return _checked(item_id, row, text)


_VERSION_ROWS = (
    "SELECT item_id, version, title, kind, operation, principal, created_at, content,"
    " previous, content_hash FROM revisions WHERE tenant = ? AND item_id IN"
)


def versions_of(
    tx: Tx, tenant: str, item_ids: Sequence[int]
) -> dict[int, tuple[dict[int, str], list[Row]]]:
    """For each of these notes: the text of every version by number, and its version rows
    oldest first (``version``, ``title``, ``kind``, ``operation``, ``principal``,
    ``created_at``). Two statements for all of them: an export's page of notes made three
    round trips a note."""
    if not item_ids:
        return {}
    rows = tx.all(  # a page of an export: at most 1,024 notes
        f"{_VERSION_ROWS} ({marks(item_ids)}) AND version IS NOT NULL"
        " ORDER BY item_id, version DESC",
        (tenant, *item_ids),
    )
    return _decoded(tx, tenant, item_ids, rows)


def versions_from(
    tx: Tx, tenant: str, lowest: Mapping[int, int]
) -> dict[int, tuple[dict[int, str], list[Row]]]:
    """:func:`versions_of` of these notes (at most a thousand), from version ``lowest[note]``
    up only: an answer at an instant reads one earlier version of many notes, the rows above
    it, not the whole history. A statement for the notes of each lowest version (an ``OR`` of
    one condition a note took PostgreSQL 100 ms to plan for 300 notes)."""
    by_lowest: dict[int, list[int]] = {}
    for item_id, version in lowest.items():
        by_lowest.setdefault(version, []).append(item_id)
    rows: list[Row] = []
    for version, ids in sorted(by_lowest.items()):
        rows += tx.all(f"{_VERSION_ROWS} ({marks(ids)}) AND version >= ?", (tenant, *ids, version))
    rows.sort(key=lambda row: (int(row["item_id"]), -int(row["version"])))
    return _decoded(tx, tenant, list(lowest), rows)


def _decoded(
    tx: Tx, tenant: str, item_ids: Sequence[int], rows: list[Row]
) -> dict[int, tuple[dict[int, str], list[Row]]]:
    """The texts of version ``rows`` (each note's newest first, down without a gap), rebuilt
    down from the notes' current text."""
    if not rows:
        return {}
    current = {
        int(row["id"]): row
        for row in tx.all(
            "SELECT id, version, content FROM items WHERE tenant = ?"
            f" AND id IN ({marks(item_ids)})",
            (tenant, *item_ids),
        )
    }
    found: dict[int, tuple[dict[int, str], list[Row]]] = {}
    for row in rows:
        item_id = int(row["item_id"])
        texts, listed = found.setdefault(item_id, ({}, []))
        at = int(row["version"])
        if row["content"] is not None:
            text = str(row["content"])
        elif not listed:
            text = _current_text(item_id, at, current.get(item_id))
        elif int(listed[-1]["version"]) == at + 1 and listed[-1]["previous"] is not None:
            text = _apply(item_id, at, listed[-1]["previous"], texts[at + 1])
        else:
            raise _damaged(item_id, at, f"version {at + 1} keeps no earlier text")
        texts[at] = _checked(item_id, row, text)
        listed.append(row)
    for _, listed in found.values():
        listed.reverse()
    return found


def converted(tx: Tx) -> Iterator[tuple[str, int, bool, bytes | None]]:
    """For ``m019_revision_deltas``: each version row of the old layout (every version whole)
    as ``(tenant, id, keeps its content, previous)``, items a few hundred at a time."""
    tenants = [
        str(r["tenant"])
        for r in tx.all("SELECT DISTINCT tenant FROM revisions /* every tenant */ ORDER BY tenant")
    ]
    for tenant in tenants:
        after = -1
        while True:
            ids = [
                int(r["item_id"])
                for r in tx.all(
                    "SELECT DISTINCT item_id FROM revisions WHERE tenant = ? AND item_id > ?"
                    " AND version IS NOT NULL ORDER BY item_id LIMIT ?",
                    (tenant, after, _CONVERT_ITEMS),
                )
            ]
            if not ids:
                break
            after = ids[-1]
            yield from _convert_items(tx, tenant, ids[0], ids[-1])


def _convert_items(
    tx: Tx, tenant: str, first: int, last: int
) -> Iterator[tuple[str, int, bool, bytes | None]]:
    current = {
        int(r["id"]): (int(r["version"]), str(r["content"]))
        for r in tx.all(
            "SELECT id, version, content FROM items WHERE tenant = ? AND id >= ? AND id <= ?"
            " AND item_type = 'note'",
            (tenant, first, last),
        )
    }
    rows: list[Row] = []
    for row in tx.all(
        "SELECT id, item_id, version, content FROM revisions WHERE tenant = ? AND item_id >= ?"
        " AND item_id <= ? AND version IS NOT NULL ORDER BY item_id, version",
        (tenant, first, last),
    ):
        if rows and rows[-1]["item_id"] != row["item_id"]:
            yield from _convert_note(tenant, rows, current.get(int(rows[-1]["item_id"])))
            rows = []
        rows.append(row)
    if rows:
        yield from _convert_note(tenant, rows, current.get(int(rows[-1]["item_id"])))


def _convert_note(
    tenant: str, rows: list[Row], current: tuple[int, str] | None
) -> Iterator[tuple[str, int, bool, bytes | None]]:
    """One note's versions, oldest first: each gets the delta back to the one before it when
    the two are consecutive; a version keeps its text whole unless the one after it (or, for
    the newest, the item's own text) can give it back."""
    for index, row in enumerate(rows):
        version, text = int(row["version"]), str(row["content"])
        previous = None
        if index and int(rows[index - 1]["version"]) == version - 1:
            previous = previous_of(version, text, str(rows[index - 1]["content"]))
        if index + 1 < len(rows):
            derivable = int(rows[index + 1]["version"]) == version + 1
        else:
            derivable = current is not None and current == (version, text)
        if previous is not None or derivable:
            yield tenant, int(row["id"]), not derivable, previous
