"""The step ``m034_audit_words``: the words each retrieval audit record asked for, a row each.

A forget drops the audit records that asked for a word only the forgotten text held (decisions
0005 and 0064). To learn what each record asked, it read every record of the tenant, and a
tenant keeps 90 days of searches by default: a forget cost more the more the memory had been
searched (``docs/decisions/0068-audit-words.md``). Now a record's words are written beside it
(``core/audit.AuditLog.flush``), and a forget finds the records naming a forgotten word through
this table's key. A record's words go with it (``ON DELETE CASCADE``).

The words are those of the query and of the filters' values, four letters or more, in lower
case: the filters' names ("scope", "status") are no words of what was asked. Each is kept as a
16-byte digest: a key of fixed size holds a word of any length (PostgreSQL refuses an index
entry past 2,704 bytes, and a query may be one long word), and the table repeats no text of
the queries.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from .base import Row, Tx, groups, marks
from .migrations import has_step
from .scope import EVERY_TENANT_STATEMENT
from .unspaced import runs_apart
from .width_forms import fold_width

STEP = "m034_audit_words"
TABLE = "retrieval_audit_words"
INSERT = f"INSERT INTO {TABLE} (tenant, digest, audit_id) VALUES (?, ?, ?)"
BACKFILL_BATCH = 5000
_GROUP = 100
_PER_STATEMENT = 500  # digests a statement
_DIGEST = 16  # bytes of a word's digest
_GROUPED = f"{INSERT}{', (?, ?, ?)' * (_GROUP - 1)}"
"""Rows a hundred to a statement (a statement a row: a third slower, 0068)."""
_WORD = re.compile(r"[^\W_]{4,}")
_SQLITE = (
    f"CREATE TABLE {TABLE} (tenant TEXT NOT NULL, digest BLOB NOT NULL,"
    " audit_id INTEGER NOT NULL REFERENCES retrieval_audit (id) ON DELETE CASCADE,"
    " PRIMARY KEY (tenant, digest, audit_id)) WITHOUT ROWID"
)
_POSTGRES = (
    f"CREATE TABLE {TABLE} (tenant TEXT NOT NULL, digest BYTEA NOT NULL,"
    " audit_id BIGINT NOT NULL, PRIMARY KEY (tenant, digest, audit_id))"
)
# Added once the step has filled the table: one check of every row, not one a row.
_POSTGRES_KEY = (
    f"ALTER TABLE {TABLE} ADD FOREIGN KEY (tenant, audit_id)"
    " REFERENCES retrieval_audit (tenant, id) ON DELETE CASCADE"
)
# The cascade finds a deleted record's words by this index (decision 0063's rule).
_BY_AUDIT = f"CREATE INDEX {TABLE}_by_audit ON {TABLE} (tenant, audit_id)"


def kept(tx: Tx) -> bool:
    """Whether the store keeps the records' words: not at a schema from before the step (a
    store opened at an older schema, which a restore does before it takes the later steps)."""
    return has_step(tx, STEP)


def digest_of(word: str) -> bytes:
    """The key a word is kept under."""
    return hashlib.blake2b(word.encode(), digest_size=_DIGEST).digest()


def words_of(text: str) -> set[str]:
    """The words of ``text`` a forget looks for: four letters or more, in lower case; where
    it holds width forms, as written and as the letters they stand for (a search reads them
    as one word since decision 0161, and records kept before that hold them as written).

    A run of a script written without spaces is one such word whole, and its pairs of letters
    as the index holds them besides (step m050, decision 0176): a search for part of a run
    asks for its pairs, and a record kept before the step still matches by the whole run; the
    letters against a run are a word of their own too (:func:`run_words`)."""
    words = {word.lower() for word in _WORD.findall(text)}
    if text.isascii():
        return words
    words |= run_words(text)
    folded = fold_width(text)
    return words if folded == text else words | {word.lower() for word in _WORD.findall(folded)}


def run_words(text: str) -> set[str]:
    """The words of ``text`` a search reads in and beside its runs of unspaced script (step
    m050): the runs' pairs, and the words of the letters against a run, which were one word
    with it ("我的iPhone手机": "iphone"; ``unspaced.runs_apart``)."""
    pairs, beside = runs_apart(text)
    return pairs | {word.lower() for word in _WORD.findall(beside)}


def asked_words(
    query: str | None, filters: str, of: Callable[[str], set[str]] = words_of
) -> set[str]:
    """The words a record asked for: those of its query and of its filters' values (``filters``
    as the record keeps it, JSON); ``of``: the words of one text (:func:`words_of`)."""
    words = of(query or "")
    try:
        values: list[Any] = [json.loads(filters)]
    except ValueError:  # not JSON (a record from before filters were): its text
        return words | of(filters)
    while values:
        value = values.pop()
        if isinstance(value, str):
            words |= of(value)
        elif isinstance(value, dict):
            values.extend(value.values())
        elif isinstance(value, list):
            values.extend(value)
    return words


def word_rows(tenant: str, audit_id: int, query: str | None, filters: str) -> list[tuple[Any, ...]]:
    """The rows of :data:`TABLE` for one record, in :data:`INSERT`'s order."""
    return [(tenant, digest_of(word), audit_id) for word in sorted(asked_words(query, filters))]


def asked_among(tx: Tx, tenant: str, digests: Sequence[bytes]) -> set[bytes]:
    """The ``digests`` some record of ``tenant`` asked for, looked up in the key a statement
    of 500 at a time. A forgotten document of Chinese holds thousands of pairs (decision
    0176). PostgreSQL is given each 500 as one value its server cuts into digests, each probed
    in the key (1.3 ms with 300,000 rows of the tenant): as an array or marks, 500 digests or
    more were planned as a read of every row of the tenant (30 ms a statement), and an array
    spelled each digest as text (16,500: 45 ms on a small audit)."""
    if tx.dialect != "sqlite":
        return {
            bytes(row["digest"])
            for part in groups(digests, _PER_STATEMENT)
            for row in tx.all(
                "SELECT d.digest FROM (SELECT substring(CAST(? AS BYTEA)"
                f" FROM i * {_DIGEST} + 1 FOR {_DIGEST}) FROM generate_series(0, ?) AS g (i))"
                f" AS d (digest) WHERE EXISTS (SELECT 1 FROM {TABLE} w"
                " WHERE w.tenant = ? AND w.digest = d.digest)",
                (b"".join(part), len(part) - 1, tenant),
            )
        }
    return {
        bytes(row["digest"])
        for part in groups(digests, _PER_STATEMENT)
        for row in tx.all(
            f"SELECT DISTINCT digest FROM {TABLE} WHERE tenant = ? AND digest IN ({marks(part)})",
            (tenant, *part),
        )
    }


def m034_audit_words(tx: Tx) -> None:
    """The step, on both stores (registered in each later_steps.py): the table, and the words
    of the records already kept."""
    if tx.dialect == "sqlite":
        tx.execute(_SQLITE)
        tx.execute(_BY_AUDIT)
        fill(tx)
        return
    from .postgres.ddl import tenant_policies

    tx.execute(_POSTGRES)
    fill(tx)
    tx.execute(_POSTGRES_KEY)
    tx.execute(_BY_AUDIT)
    tenant_policies(tx)


def fill(tx: Tx) -> None:
    """Write the words of every record (the step's, and a recovered store's: recover copies
    the records, and finds their words again)."""
    for records in batches(tx, "query, filters"):
        insert(
            tx,
            [
                row
                for record in records
                for row in word_rows(
                    record["tenant"], record["id"], record["query"], record["filters"]
                )
            ],
        )


def batches(
    tx: Tx,
    columns: str,
    condition: str = "",
    params: Sequence[Any] = (),
    *,
    column_params: Sequence[Any] = (),
) -> Iterator[list[Row]]:
    """Every audit record of every tenant (``tenant``, ``id`` and ``columns``, SQL with
    ``column_params``), or those that meet ``condition`` (SQL with ``params``),
    :data:`BACKFILL_BATCH` at a time in their key's order, so that a long audit is never held
    in memory whole nor read again for each batch: SQLite's key is the id, PostgreSQL's leads
    with the tenant. A batch may be written to before the next is read, but not its keys."""
    sqlite = tx.dialect == "sqlite"
    after, order = ("id > ?", "id") if sqlite else ("(tenant, id) > (?, ?)", "tenant, id")
    last: tuple[Any, ...] = (0,) if sqlite else ("", 0)
    also = f" AND ({condition})" if condition else ""
    while True:
        records = tx.all(
            f"SELECT tenant, id, {columns} FROM retrieval_audit {EVERY_TENANT_STATEMENT}"
            f" WHERE {after}{also} ORDER BY {order} LIMIT ?",
            (*column_params, *last, *params, BACKFILL_BATCH),
        )
        if not records:
            return
        yield records
        if len(records) < BACKFILL_BATCH:
            return  # the last: another read would only walk the rest of the key again
        end = records[-1]
        last = (end["id"],) if sqlite else (end["tenant"], end["id"])


def insert(tx: Tx, rows: Sequence[tuple[Any, ...]], *, known: bool = False) -> None:
    """Write ``rows`` (:func:`word_rows`), a hundred to a statement: the step's, and a flush's
    for all its records. ``known``: some may be there already, and are left as they are."""
    again = " ON CONFLICT DO NOTHING" if known else ""
    for group in groups(rows, _GROUP):
        if len(group) == _GROUP:
            tx.execute(_GROUPED + again, [value for row in group for value in row])
        else:
            tx.executemany(INSERT + again, group)
