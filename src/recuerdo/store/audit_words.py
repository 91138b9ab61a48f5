"""The step ``m034_audit_words``: the words each retrieval audit record asked for, a row each.

A forget drops the audit records that asked for a word only the forgotten text held (decisions
0005 and 0064). To learn what each record asked, it read every record of the tenant, and a
tenant keeps 90 days of searches by default: a forget cost more the more the memory had been
searched (``docs/decisions/0068-audit-words.md``). Now a record's words are written beside it
(``core/audit.AuditLog.flush``), and a forget finds the records naming a forgotten word through
this table's key. A record's words go with it (``ON DELETE CASCADE``).

The words are those of the query and of the filters' values, four letters or more, in lower
case: the filters' names ("scope", "status") are no words of what was asked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from .base import Tx
from .scope import EVERY_TENANT_STATEMENT

STEP = "m034_audit_words"
TABLE = "retrieval_audit_words"
INSERT = f"INSERT INTO {TABLE} (tenant, word, audit_id) VALUES (?, ?, ?)"
_WORD = re.compile(r"[^\W_]{4,}")
_SQLITE = (
    f"CREATE TABLE {TABLE} (tenant TEXT NOT NULL, word TEXT NOT NULL,"
    " audit_id INTEGER NOT NULL REFERENCES retrieval_audit (id) ON DELETE CASCADE,"
    " PRIMARY KEY (tenant, word, audit_id)) WITHOUT ROWID"
)
_POSTGRES = (
    f"CREATE TABLE {TABLE} (tenant TEXT NOT NULL, word TEXT NOT NULL, audit_id BIGINT NOT NULL,"
    " PRIMARY KEY (tenant, word, audit_id), FOREIGN KEY (tenant, audit_id)"
    " REFERENCES retrieval_audit (tenant, id) ON DELETE CASCADE)"
)
# The cascade finds a deleted record's words by this index (decision 0063's rule).
_BY_AUDIT = f"CREATE INDEX {TABLE}_by_audit ON {TABLE} (tenant, audit_id)"


def kept(tx: Tx) -> bool:
    """Whether the store keeps the records' words: not at a schema from before the step (a
    store opened at an older schema, which a restore does before it takes the later steps)."""
    return tx.scalar("SELECT 1 FROM _migrations WHERE name = ?", (STEP,)) is not None


def words_of(text: str) -> set[str]:
    """The words of ``text`` a forget looks for: four letters or more, in lower case."""
    return {word.lower() for word in _WORD.findall(text)}


def asked_words(query: str | None, filters: str) -> set[str]:
    """The words a record asked for: those of its query and of its filters' values (``filters``
    as the record keeps it, JSON)."""
    words = words_of(query or "")
    try:
        values: list[Any] = [json.loads(filters)]
    except ValueError:  # not JSON (a record from before filters were): its text
        return words | words_of(filters)
    while values:
        value = values.pop()
        if isinstance(value, str):
            words |= words_of(value)
        elif isinstance(value, dict):
            values.extend(value.values())
        elif isinstance(value, list):
            values.extend(value)
    return words


def word_rows(tenant: str, audit_id: int, query: str | None, filters: str) -> list[tuple[Any, ...]]:
    """The rows of :data:`TABLE` for one record, in :data:`INSERT`'s order."""
    return [(tenant, word, audit_id) for word in sorted(asked_words(query, filters))]


def m034_audit_words(tx: Tx) -> None:
    """The step, on both stores (registered in each later_steps.py): the table, and the words
    of the records already kept."""
    tx.execute(_SQLITE if tx.dialect == "sqlite" else _POSTGRES)
    tx.execute(_BY_AUDIT)
    if tx.dialect == "postgres":
        from .postgres.ddl import tenant_policies

        tenant_policies(tx)
    rows = _rows_of(
        tx.iterate(
            f"SELECT tenant, id, query, filters FROM retrieval_audit {EVERY_TENANT_STATEMENT}"
        )
    )
    if rows:
        tx.executemany(INSERT, rows)


def _rows_of(records: Iterable[Any]) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    for record in records:
        rows += word_rows(record["tenant"], record["id"], record["query"], record["filters"])
    return rows
