"""The entities one call names, found and made together: a call of 1,000 new entities made each
in three statements (look up, insert, its type), 3,019 round trips holding the memory's write
lock 3.4 s on PostgreSQL (decision 0169). Made here in a few multi-row statements, in the order
the call names them, as one by one would."""

from __future__ import annotations

from collections.abc import Sequence

from ..store.base import Tx, groups
from . import store

_ROWS_PER_INSERT = 400  # six values a row: far below SQLite's bound parameters


def ensure(
    tx: Tx,
    tenant: str,
    scope: str,
    names: Sequence[str],
    *,
    source: str | None,
    recorded_at: str,
) -> dict[str, tuple[int, bool]]:
    """Folded name -> (entity id, made by this call) for every one of ``names`` in ``scope``;
    a name met twice (in any spelling that folds alike) is made once, with its first
    spelling."""
    found = {
        folded: (entity_id, False)
        for folded, entity_id in store.known_entities(tx, tenant, scope, list(names)).items()
    }
    new: dict[str, str] = {}
    for name in names:
        folded = store.fold(name)
        if folded not in found and folded not in new:
            new[folded] = name
    for part in groups(list(new.items()), _ROWS_PER_INSERT):
        rows = ", ".join("(?, ?, ?, ?, ?, ?)" for _ in part)
        params = [
            value
            for folded, name in part
            for value in (tenant, scope, name, folded, source, recorded_at)
        ]
        for row in tx.all(
            "INSERT INTO entities (tenant, scope, name, folded, source, recorded_at)"
            f" VALUES {rows} RETURNING id, folded",
            params,
        ):
            found[row["folded"]] = (int(row["id"]), True)
    tx.executemany(
        "INSERT INTO entity_words (tenant, word, entity_id) VALUES (?, ?, ?)"
        " ON CONFLICT DO NOTHING",
        [(tenant, word, found[folded][0]) for folded in new for word in set(store.words(folded))],
    )
    return found
