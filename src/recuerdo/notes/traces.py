"""What a note leaves outside its own row, which an erasing delete takes with it.

A hard delete (and a forget of a whole scope) deleted the note's row, its revisions and its
indexes, but two tables kept it (found by a hunt for erasure residues):
- ``idempotency``: the reply a ``remember_about`` keeps for 24 hours, to answer a retry of its
  key, names the note (its id, its category, which is its title). A retry after the delete
  answered ``skipped`` with a note that is gone, and the observation was never stored;
- ``sessions``: a session's end writes its summary there as well as in a note, and the API
  gave it back after the note was erased.

The journal keeps its lines (that a change happened), but the keys a note was moved between
(step m047, decision 0159) are words the note held: they are blanked with it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..store import journal_moves
from ..store.base import Row, Tx
from . import history
from .sessions import SUMMARY_KIND


def erase(tx: Tx, tenant: str, rows: Sequence[Row]) -> None:
    """Take out what ``rows`` (notes being erased, before their rows and revisions go) left in
    those tables."""
    ids = {row["id"] for row in rows}
    if not ids:
        return
    journal_moves.forget_keys(tx, tenant, sorted(ids))
    # Kept 24 hours, a few rows a tenant: read in Python, as the reply is JSON on both stores.
    for kept in tx.all(
        "SELECT principal, scope, key, reply FROM idempotency"
        " WHERE tenant = ? AND verb = 'remember_about'",
        (tenant,),
    ):
        if json.loads(kept["reply"]).get("note_id") in ids:
            tx.execute(
                "DELETE FROM idempotency WHERE tenant = ? AND principal = ?"
                " AND verb = 'remember_about' AND scope = ? AND key = ?",
                (tenant, kept["principal"], kept["scope"], kept["key"]),
            )
    summaries = [r for r in rows if r["category"] == SUMMARY_KIND and r["session"] is not None]
    histories = history.revision_texts_of(tx, tenant, [row["id"] for row in summaries])
    for row in summaries:
        # Only a summary this note holds, or held: a later end of the session (in another
        # scope) wrote its own, which another note holds (the review's).
        summary = tx.scalar(
            "SELECT summary FROM sessions WHERE tenant = ? AND id = ?", (tenant, row["session"])
        )
        held = {
            row["content"],
            *(text for _, text in histories.get(row["id"], [])),
        }
        if summary is not None and summary.strip() in {text.strip() for text in held}:
            tx.execute(
                "UPDATE sessions SET summary = NULL WHERE tenant = ? AND id = ?",
                (tenant, row["session"]),
            )


def erase_scope(tx: Tx, tenant: str, scope: str) -> None:
    """A forget of a whole scope: its sessions and its kept replies go, and the keys of its
    move lines (those of notes erased before, by a process older than m047, too)."""
    journal_moves.forget_scope_keys(tx, tenant, scope)
    tx.execute("DELETE FROM idempotency WHERE tenant = ? AND scope = ?", (tenant, scope))
    tx.execute("DELETE FROM sessions WHERE tenant = ? AND scope = ?", (tenant, scope))


def words_of(row: Row) -> list[str]:
    """A note's (or an entry's) text beyond its body that its indexes hold: its tags and its
    summary line, for the audit's scrub of what no passage holds any more."""
    return [*json.loads(row["tags"] or "[]"), row["summary"] or ""]
