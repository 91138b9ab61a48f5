"""Scrubbing a note's history of a credential its stored text held (decision 0150).

An edit stores the note's whole text as the guard redacts it (0141). A credential an older
release stored in clear (or that an older guard missed) is redacted from the new version, but
every earlier version still held it: the reverse deltas of ``revisions`` rebuild them whole
(``store/revision_deltas.py``). When the edit's redaction finds such a credential in the
stored text, each revision's text is redacted the same way (``redact_whole``) and the chain is
written again: each version's ``previous`` from its scrubbed text to the scrubbed one before
it, each ``content_hash`` of the scrubbed text, the rows kept whole redacted in place. This is
the one place where revision rows are updated rather than only inserted; it runs in the edit's
own transaction, so a crash leaves the history as it was or scrubbed, never half of each.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TypeVar

from ..core import audit
from ..core.secrets import redact_whole
from ..index import chunks as chunk_index
from ..store import revision_deltas
from ..store.base import Row, Tx
from . import history

T = TypeVar("T")


class ScrubOwed(Exception):
    """Raised inside a plain write: the edit scrubs the note's history, which takes an erasing
    write (the audit flushed first, the superseded words purged, the vacuum owed). The caller
    runs the edit again in one. Never leaves the package (no ``RecuerdoError``). Raised before
    the write changed anything the second run would not change alike (an expired idempotency
    row of ``remember_about`` is deleted either way): a write nested in a caller's transaction
    is not rolled back by it."""


@dataclass
class Scrubbed:
    text: str  # the note's stored text (its newest version) as scrubbed
    removed: int  # characters of the pieces the redaction took, summed over the revisions
    matched: set[str]  # those pieces (split at spaces): the words an audit scrub looks for
    # Each text as redacted, by text: the stored one (redacted to learn the scrub is owed) is
    # also the newest version's, a row kept whole often repeats a version's text, and the
    # revision rows most often hold one title.
    redacted: dict[str, str] = field(default_factory=dict)


def _redacted(text: str, scrubbed: Scrubbed) -> str:
    clean = scrubbed.redacted.get(text)
    if clean is None:
        clean = scrubbed.redacted[text] = redact_whole(text).text
    return clean


def _clean(text: str, scrubbed: Scrubbed) -> str:
    clean = _redacted(text, scrubbed)
    if clean != text:
        # What the rules took, as the pieces between spaces the text lost: running them again
        # to record each match (``found_whole``) doubled the cost of a long history.
        gone = set(text.split()) - set(clean.split())
        scrubbed.matched |= gone
        scrubbed.removed += sum(map(len, gone))
    return clean


def scrub_history(tx: Tx, row: Row, stored_clean: str) -> Scrubbed:
    """Redact every revision of the note in ``row`` (its item row, before the edit; its text
    redacted is ``stored_clean``) and write its delta chain again; the newest version's
    scrubbed text is returned for the edit to take as the text it replaces."""
    tenant, item_id = row["tenant"], int(row["id"])
    scrubbed = Scrubbed(stored_clean, 0, set(), {row["content"]: stored_clean})
    texts, _ = revision_deltas.versions_of(tx, tenant, [item_id]).get(item_id, ({}, []))
    clean = {version: _clean(text, scrubbed) for version, text in texts.items()}
    updates: dict[tuple[str, ...], list[tuple[object, ...]]] = {}
    for kept in tx.all(
        "SELECT id, version, title, content, previous FROM revisions"
        " WHERE tenant = ? AND item_id = ? ORDER BY id",
        (tenant, item_id),
    ):
        changes: dict[str, object] = {}
        title = kept["title"]
        if title is not None and (new_title := _redacted(title, scrubbed)) != title:
            changes["title"] = new_title
        version = kept["version"]
        if version is None or kept["content"] is not None:
            # Held whole: a conflict, a deletion, a restore, or a version an older store could
            # not chain. A version's text was already scrubbed above (counted once).
            text = str(kept["content"])
            new = clean[int(version)] if version is not None else _clean(text, scrubbed)
            if new != text:
                changes["content"] = new
                changes["content_hash"] = revision_deltas.text_hash(new)
        if version is not None:
            at = int(version)
            if clean[at] != texts[at]:
                changes["content_hash"] = revision_deltas.text_hash(clean[at])
            before = at - 1
            moved = before in texts and (clean[before], clean[at]) != (texts[before], texts[at])
            if kept["previous"] is not None and moved:
                changes["previous"] = revision_deltas.previous_of(at, clean[at], clean[before])
        if changes:
            updates.setdefault(tuple(changes), []).append((*changes.values(), tenant, kept["id"]))
    # One statement a shape of change (most rows change their hash and delta alike): a round
    # trip a revision made a scrub of 100 versions cost PostgreSQL about 100 ms.
    for columns, rows in updates.items():
        assignments = ", ".join(f"{column} = ?" for column in columns)
        tx.executemany(f"UPDATE revisions SET {assignments} WHERE tenant = ? AND id = ?", rows)
    return scrubbed


def before_write(
    tx: Tx, row: Row, principal: str, completed: Sequence[str], scrubbing: bool
) -> tuple[Row, Scrubbed | None]:
    """Before a write of the note in ``row`` whose redaction found ``completed``: when the
    stored text held a credential, its history scrubbed (:class:`ScrubOwed` unless
    ``scrubbing``), journaled, and the row as the write must take it (its text scrubbed)."""
    if not completed:
        return row, None
    stored_clean = redact_whole(row["content"]).text
    if stored_clean == row["content"]:  # the stored text holds nothing the guard redacts
        return row, None
    if not scrubbing:
        raise ScrubOwed
    scrubbed = scrub_history(tx, row, stored_clean)
    history.journal_row(tx, row, "scrub", principal, removed=scrubbed.removed)
    # The chunks were cut from the text in clear: their re-cut reads them from it (the queue
    # keeps the first text it is given), not from the scrubbed one the write replaces.
    chunk_index.rechunk(tx, row["tenant"], row["id"], row["content"])
    return {**row, "content": scrubbed.text}, scrubbed


def after_write(tx: Tx, row: Row, scrubbed: Scrubbed | None) -> None:
    """After the write: the note re-cut now, not by the worker (the queue kept the text before
    in clear, and the words index must no longer hold what the audit is scrubbed of), then the
    audit records that asked for a word only the credential held dropped, as a forget does."""
    if scrubbed is None:
        return
    chunk_index.recut_now(tx, row["tenant"], [row["id"]])
    audit.scrub(tx, row["tenant"], forgotten=sorted(scrubbed.matched))


def retried(
    write: Callable[[], AbstractContextManager[Tx]],
    erasing: Callable[..., AbstractContextManager[Tx]],
    reclaim: Callable[[], None],
    run: Callable[[Tx, bool], T],
) -> T:
    """``run(tx, scrubbing)`` in a plain write, or, when it owes a scrub (known only once the
    note is read), rolled back and run again in an erasing write, the old pages given back
    after it as after a hard delete (the updated revision rows left the text in them). The
    erasing write takes the superseded chunks' words with it (``superseded``): the note's old
    chunks, this re-cut's and any earlier one's the upkeep had not erased yet, kept their words
    in clear, listed as stale until then (SQLite, ``store/sqlite/stale_words.py``)."""
    try:
        with write() as tx:
            return run(tx, False)
    except ScrubOwed:
        pass
    with erasing(1, superseded=True) as tx:
        done = run(tx, True)
    reclaim()
    return done
