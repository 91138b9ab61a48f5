"""How a forget finds, on PostgreSQL, the audit records that quote a name: in their query or
in a text among their filters (``store/audit_filters.drop_quoting``, decision 0077)."""

from __future__ import annotations

import json
from collections.abc import Iterator

from .. import audit_words
from ..audit_filters import texts
from ..base import Tx


def quoting_ids(
    tx: Tx, tenant: str, pattern: str, spelled: str, *, live: bool
) -> Iterator[list[int]]:
    """The ids of ``tenant``'s records (not emptied, when ``live``) whose query or a text among
    whose filters holds a name, a batch at a time, on PostgreSQL; ``pattern`` is the name's,
    ``spelled`` the same as JSON spells it.

    One read of the records whose query holds the name or whose JSON holds its spelling; the
    server lowers the texts of the latter, as it lowers the name (decision 0075). PostgreSQL
    15 has no test that a text is JSON, and a cast of one that is not would fail the forget:
    Python reads the JSON. Filters that are no JSON, or hold a text UTF-8 cannot spell, are
    taken at their text's word."""
    asked = "coalesce(lower(query) LIKE lower(?) ESCAPE '\\', false)"
    condition = f"tenant = ? AND ({asked} OR lower(filters) LIKE lower(?) ESCAPE '\\')"
    if live:
        condition += " AND scrubbed = 0"
    for records in audit_words.batches(
        tx,
        f"filters, {asked} AS asked",
        condition,
        (tenant, pattern, spelled),
        column_params=(pattern,),
    ):
        found: list[int] = []
        holding: dict[str, list[int]] = {}  # each text once: scopes, tags and kinds repeat
        for record in records:
            held = None if record["asked"] else texts(record["filters"])
            if held is None:
                found.append(record["id"])
            for text in held or ():
                holding.setdefault(text, []).append(record["id"])
        distinct = list(holding)
        if distinct:
            for row in tx.all(
                "SELECT part.at FROM json_array_elements_text(?::json)"
                " WITH ORDINALITY AS part (text, at)"
                " WHERE lower(part.text) LIKE lower(?) ESCAPE '\\'",
                (json.dumps(distinct, ensure_ascii=False), pattern),
            ):
                found += holding[distinct[row["at"] - 1]]
        if found:
            yield sorted(set(found))
