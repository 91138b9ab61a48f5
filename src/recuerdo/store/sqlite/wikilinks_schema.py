"""The table of pending wikilinks (migration ``m013_pending_wikilinks``), kept apart so that
schema.py stays small."""

from __future__ import annotations

import re

from ..base import Tx


def pending_wikilinks(tx: Tx) -> None:
    # A [[Title]] no note has yet waits here, linked when a note of that title appears (no scan
    # of every note at each write). Links already written are read once ([[Title|label]]).
    _script(
        tx,
        """
        CREATE TABLE wikilinks_pending (
            tenant TEXT NOT NULL,
            title TEXT NOT NULL,
            from_id INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE,
            PRIMARY KEY (tenant, title, from_id)
        ) WITHOUT ROWID;

        CREATE INDEX wikilinks_pending_from ON wikilinks_pending (from_id);
        """,
    )
    notes = "SELECT id, tenant, content FROM items WHERE item_type = 'note' AND status <> 'deleted'"
    for row in tx.all(f"{notes} AND instr(content, '[[') > 0"):
        found = re.findall(r"\[\[([^\[\]|\n]{1,200})(?:\|[^\[\]\n]*)?\]\]", row["content"])
        for title in {" ".join(text.split()) for text in found} - {""}:
            tx.execute(
                "INSERT INTO wikilinks_pending (tenant, title, from_id) SELECT ?, ?, ? WHERE NOT"
                " EXISTS (SELECT 1 FROM links l JOIN items i ON i.id = l.to_id WHERE"
                " l.from_id = ? AND l.origin = 'wikilink' AND i.title = ?) ON CONFLICT DO NOTHING",
                (row["tenant"], title, row["id"], row["id"], title),
            )


def _script(tx: Tx, script: str) -> None:
    for statement in script.split(";"):
        if statement.strip():
            tx.execute(statement)
