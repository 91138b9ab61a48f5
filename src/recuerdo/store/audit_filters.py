"""The step ``m037_unescaped_audit_filters``: the audit records' filters, as JSON writes them
now, with every character as itself.

A forget of a name or a key drops the audit records whose query or filters quote it, in any
case (``core/audit.scrub``, decision 0074). Until 66a4649 a record's filters were written with
every character beyond ASCII escaped: "Émile" was ``\\u00c9mile``, which no pattern of the name
finds, in any case. The step writes those records' filters again with the characters as
themselves (decision 0075). Control characters stay escaped, as JSON writes them (a NUL is no
text PostgreSQL keeps), and so does a lone surrogate: UTF-8 has no spelling for one.

A record's filters were redacted as written, and are not redacted again here (the store
layer does not reach the redaction): the step never brings back what was redacted, and a
secret the old spelling hid from a pattern (a key right after an escaped letter, whose escape
ends in a letter or a digit) was kept in clear then and stays so.
"""

from __future__ import annotations

import json
from typing import Any

from .base import Tx
from .scope import EVERY_TENANT_STATEMENT

STEP = "m037_unescaped_audit_filters"
_BATCH = 2000
_ESCAPED = "%\\u%"
"""The records worth reading: their filters hold an escape (``ESCAPE '!'``: a backslash is
then no escape character in either database's LIKE)."""


def m037_unescaped_audit_filters(tx: Tx) -> None:
    """The step, on both stores (registered in each later_steps.py)."""
    unescape(tx)


def unescape(tx: Tx) -> int:
    """Write again, unescaped, the filters of every record that holds escapes (the step's, and a
    recovered store's: recover copies the records of a file of any age); how many changed. The
    records are read a batch at a time in their key's order, as ``audit_words.fill`` does."""
    sqlite = tx.dialect == "sqlite"
    after, order = ("id > ?", "id") if sqlite else ("(tenant, id) > (?, ?)", "tenant, id")
    last: tuple[Any, ...] = (0,) if sqlite else ("", 0)
    changed = 0
    while True:
        records = tx.all(
            f"SELECT tenant, id, filters FROM retrieval_audit {EVERY_TENANT_STATEMENT}"
            f" WHERE {after} AND filters LIKE ? ESCAPE '!' ORDER BY {order} LIMIT ?",
            (*last, _ESCAPED, _BATCH),
        )
        if not records:
            return changed
        end = records[-1]
        last = (end["id"],) if sqlite else (end["tenant"], end["id"])
        rewritten = [
            (written, record["tenant"], record["id"])
            for record in records
            if (written := unescaped(record["filters"])) != record["filters"]
        ]
        if rewritten:
            tx.executemany(
                "UPDATE retrieval_audit SET filters = ? WHERE tenant = ? AND id = ?", rewritten
            )
        changed += len(rewritten)


def unescaped(filters: str) -> str:
    """``filters`` as the audit writes them now (``json.dumps`` with ``ensure_ascii=False``);
    as they are when they are no JSON (a damaged file's, in a recover: nested past Python's
    depth too) or hold a lone surrogate."""
    try:
        written = json.dumps(json.loads(filters), ensure_ascii=False)
        written.encode("utf-8")
    except (ValueError, UnicodeEncodeError, RecursionError):
        return filters
    return written
