"""The audit records' filters: how a forget finds a name among their texts (decision 0077),
and the step ``m037_unescaped_audit_filters``, which wrote them again as JSON writes them now,
with every character as itself.

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
from collections.abc import Sequence
from typing import Any

from . import audit_sweep, audit_words
from .base import Tx, like_pattern, marks

STEP = "m037_unescaped_audit_filters"
_ESCAPED = "%\\u%"
"""The records worth reading: their filters hold an escape (``ESCAPE '!'``: a backslash is
then no escape character in either database's LIKE)."""


def m037_unescaped_audit_filters(tx: Tx) -> None:
    """The step, on both stores (registered in each later_steps.py)."""
    unescape(tx)


def unescape(tx: Tx) -> None:
    """Write again, unescaped, the filters of every record that holds escapes (the step's, and
    a recovered store's: recover copies the records of a file of any age)."""
    for records in audit_words.batches(tx, "filters", "filters LIKE ? ESCAPE '!'", (_ESCAPED,)):
        rewritten = [
            (written, record["tenant"], record["id"])
            for record in records
            if (written := unescaped(record["filters"])) != record["filters"]
        ]
        if not rewritten:
            continue
        if tx.dialect == "sqlite":
            tx.executemany(
                "UPDATE retrieval_audit SET filters = ? WHERE tenant = ? AND id = ?", rewritten
            )
        else:  # one statement a batch: a round trip a record took 5.6 s at 100,000 records,
            # and the batch as arrays 1.8 s more, in the driver's quoting of each element
            batch = [{"f": written, "t": tenant, "i": id_} for written, tenant, id_ in rewritten]
            tx.execute(
                "UPDATE retrieval_audit a SET filters = u.f"
                " FROM json_to_recordset(?::json) AS u (f text, t text, i bigint)"
                " WHERE a.tenant = u.t AND a.id = u.i",
                (json.dumps(batch, ensure_ascii=False),),
            )


def spelled(value: Any) -> str:
    """``value`` as the audit writes a record's filters: JSON, every character as itself but
    what JSON escapes (quotes, backslashes, control characters). A forget looks for a name in
    them spelled so (:func:`drop_quoting`)."""
    return json.dumps(value, default=str, ensure_ascii=False)


def drop_quoting(
    tx: Tx,
    tenant: str,
    fold: str,
    compared: str,
    *,
    emptying: bool,
    within: Sequence[str] | None = None,
) -> int:
    """Drop ``tenant``'s records whose query or a text among whose filters holds ``compared``
    (folded by ``fold``: an SQL function, none for LIKE alone; ``compared`` folded alike);
    how many (``emptying`` and ``within``: as :func:`audit_sweep.drop`).

    A text of the filters, not their JSON: a key ("scope"), a number or an escape's letter
    ("\\there" for a tab and "here") names nothing (decision 0077). Their JSON, where the name
    is spelled as JSON spells it (0075), says which records to look into."""
    # Spelled as JSON after folding: the same as folding the JSON, since neither Python's
    # folding nor the server's lower() changes an escape's characters or LIKE's, and no
    # folded character is one JSON escapes.
    pattern, spelled_ = like_pattern(compared), like_pattern(spelled(compared)[1:-1])
    if tx.dialect == "sqlite":
        from .sqlite.audit_quoting import quoting

        return audit_sweep.drop(
            tx,
            tenant,
            quoting(fold),
            (pattern, spelled_, pattern),
            emptying=emptying,
            within=within,
        )
    from .postgres.audit_quoting import quoting_ids

    removed = 0
    for ids in quoting_ids(tx, tenant, pattern, spelled_, live=emptying):
        removed += audit_sweep.drop(
            tx, tenant, f"id IN ({marks(ids)})", ids, emptying=emptying, within=within
        )
    return removed


def texts(filters: str) -> list[str] | None:
    """The texts among ``filters``' values (in lists and objects too, not their keys), a NUL
    written as U+FFFD (no text PostgreSQL keeps holds one); None for filters that are no JSON
    or hold a text UTF-8 cannot spell (a lone surrogate)."""
    try:
        # Each object as the list of its values: a key given twice keeps both (json.loads
        # keeps the last, and the first could hide a name).
        waiting = [json.loads(filters, object_pairs_hook=lambda pairs: [v for _, v in pairs])]
    except (ValueError, RecursionError):
        return None
    found = []
    while waiting:
        value = waiting.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return None
            found.append(value.replace("\x00", "\ufffd"))
        elif isinstance(value, list):
            waiting += value
    return found


def unescaped(filters: str) -> str:
    """``filters`` as the audit writes them now (:func:`spelled`); as they are when they are
    no JSON (a damaged file's, in a recover: nested past Python's depth too) or hold a lone
    surrogate."""
    try:
        written = spelled(json.loads(filters))
        written.encode("utf-8")
    except (ValueError, UnicodeEncodeError, RecursionError):
        return filters
    return written
