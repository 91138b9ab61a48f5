"""The step ``m046_note_projects``: the project a note of ``user`` records, as an indexed column.

Decision 0148 records it as the tag ``project:<name>``, and a read with a project keeps the
notes of ``user`` tagged for it or with no project tag. "No project tag" is the absence of a
row, which no index finds: ``recent(scope=user, project=X)`` walked every note of ``user`` when
X held few of them (103 ms at 50,000 notes on SQLite, 65.7 ms at 20,000 on PostgreSQL, where
both tag subqueries became full scans of ``item_tags``). ``items.project`` holds the note's
project tag as stored (``NONE``: none; ``SEVERAL``: more than one), written with
the tags (``core/projects.column``), and the index below gives a read each kind of note it
keeps as one range, newest first. The step fills it from the tags already stored.
"""

from __future__ import annotations

from .base import Tx

STEP = "m046_note_projects"
PREFIX = "project:"  # a project tag's start (``core/projects.py``)
# ``items.project`` of a note with several project tags (only free tags write them): a text
# no tag can be (a tag is one line), so such a note is read by checking its tags.
SEVERAL = PREFIX + "\n"
# ``items.project`` of every item recording no project: not NULL, which PostgreSQL's planner
# does not read as one value of the index (``project IS NULL`` gave no order: every note of no
# project was sorted for the newest few). No tag is empty.
NONE = ""
INDEX = (
    "CREATE INDEX items_note_projects ON items (tenant, scope, project, updated_at, id)"
    " WHERE item_type = 'note'"
)
# Also run by ``recover`` on rows copied from a store older than the step. One pass over the
# tags, grouped, joined to the items (a subquery per item of ``(tenant, id) IN (...)`` took
# 12-13 s on PostgreSQL at 300,000 notes, 200,000 of them tagged; this 5.8-7.2 s, SQLite 1.3 s
# where that took 1.7-2.0 s).
FILL = (
    "UPDATE items /* every tenant */ SET project = p.project FROM (SELECT t.tenant, t.item_id,"
    " CASE WHEN count(*) > 1 THEN ? ELSE min(t.tag) END AS project FROM item_tags t"
    " WHERE substr(t.tag, 1, ?) = ? GROUP BY t.tenant, t.item_id) p"
    " WHERE items.tenant = p.tenant AND items.id = p.item_id"
)


def has_column(tx: Tx) -> bool:
    """Whether the store has taken the step, so ``items.project`` exists: a store opened at an
    older schema (a restore's before its later steps, a test's) is written without it, and
    the step fills it from the tags when it comes."""
    from .migrations import has_step

    return has_step(tx, STEP)


def fill(tx: Tx) -> None:
    prefix = (len(PREFIX), PREFIX)
    tx.execute(FILL, (SEVERAL, *prefix))


def m046_note_projects(tx: Tx) -> None:
    """The step, on both stores (registered in each later_steps.py: the SQL is portable)."""
    # A constant default: no row is rewritten (PostgreSQL keeps it in the catalogue, SQLite in
    # the schema), only the tagged ones below.
    tx.execute(f"ALTER TABLE items ADD COLUMN project TEXT NOT NULL DEFAULT '{NONE}'")
    # The index before the fill: built after it, over the rows the fill had just updated (HOT
    # chains of this transaction), PostgreSQL marks it unusable (``indcheckxmin``) until every
    # transaction older than this one has ended: a long one elsewhere on the server kept
    # ``recent`` of a project walking every note of ``user`` (0148's review).
    tx.execute(INDEX)
    fill(tx)
