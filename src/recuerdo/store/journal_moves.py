"""The step ``m047_journal_move_keys``: the keys a note moved between, on its ``move`` line.

A save naming ``former_key`` moves the note found there to its new key (decision 0138); the
journal said ``move`` and nothing of where from, so an owner auditing the history could not
tell which key the note had answered to, and an import of an export written before the move
(whose record names the old key) found no note there and made a second one (decision 0159).
``from_key`` and ``to_key`` hold the two keys on each ``move`` line written since the step;
lines written before hold NULL in both (unknown: nothing recorded them). Two partial indexes
over the move lines: ``journal_moves`` finds the notes moved away from a key in a scope (an
import), ``journal_moved_items`` the move lines of given notes (an export's first keys, an
erasure's blanking); without the second each of those read every line of the scope's journal,
or the tenant's (a hard delete 141 ms instead of 23 ms over 300,000 lines on SQLite).

A key is text a note held: when the note is erased (a hard delete, a forgotten scope) its move
lines' keys are blanked with it (:func:`forget_keys`), as the journal keeps no words a forget
must also erase.
"""

from __future__ import annotations

from collections.abc import Sequence

from .base import Tx, groups, marks

STEP = "m047_journal_move_keys"
_PER_STATEMENT = 1000


def has_keys(tx: Tx) -> bool:
    """Whether the store has taken the step: one opened at an older schema (a restore's
    before its later steps, a test's) has no such columns, and its move lines keep none."""
    from .migrations import has_step

    return has_step(tx, STEP)


def forget_keys(tx: Tx, tenant: str, item_ids: Sequence[int]) -> None:
    """Blank the keys on the move lines of notes being erased (the lines themselves stay: the
    journal keeps that a change happened, never the words it touched)."""
    if not item_ids or not has_keys(tx):
        return
    for part in groups(sorted(set(item_ids)), _PER_STATEMENT):
        tx.execute(
            "UPDATE journal SET from_key = NULL, to_key = NULL WHERE tenant = ?"
            f" AND operation = 'move' AND item_id IN ({marks(part)})"
            " AND (from_key IS NOT NULL OR to_key IS NOT NULL)",
            (tenant, *part),
        )


def forget_scope_keys(tx: Tx, tenant: str, scope: str) -> None:
    """Blank the keys on every move line of a scope being forgotten whole: every note of it
    goes, and so do the keys of one erased already by a process of the code before the step
    (running on a store another process opened, it blanks nothing)."""
    if has_keys(tx):
        tx.execute(
            "UPDATE journal SET from_key = NULL, to_key = NULL WHERE tenant = ? AND scope = ?"
            " AND operation = 'move' AND from_key IS NOT NULL",
            (tenant, scope),
        )


def m047_journal_move_keys(tx: Tx) -> None:
    """The step, on both stores (registered in each later_steps.py: the SQL is portable).
    Nullable columns with no default: no row is rewritten on either store."""
    tx.execute("ALTER TABLE journal ADD COLUMN from_key TEXT")
    tx.execute("ALTER TABLE journal ADD COLUMN to_key TEXT")
    tx.execute(
        "CREATE INDEX journal_moves ON journal (tenant, scope, from_key) WHERE operation = 'move'"
    )
    tx.execute(
        "CREATE INDEX journal_moved_items ON journal (tenant, item_id) WHERE operation = 'move'"
    )
