"""The import keys of forgotten knowledge.

An import remembers each record's ``key`` (``import_keys``) so that a page sent twice stores
nothing twice. An entity's key is a plain hash of its folded name, a document's of its text: kept
after a forget, the name could be found again by hashing guesses, and a later import of the same
page was skipped as "already imported" (a hunt over the knowledge graph). A forget drops the keys
of what it removed, in the scope it forgets in. Only a scope that received an import holds any:
one indexed probe answers for the others.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from ..notes.transfer import record_key
from ..store.base import Row, Tx, groups, marks
from ..store.entity_names import fold

_GROUP = 1000  # keys a statement, under either database's limit of bound parameters
_HOLDERS = "holder:"


def holders_key(key: str) -> str:
    """How a token holder's import keeps a record's key: apart from the owner's, so that a
    knowledge record given the key of a messaging record (the holder's export names them) no
    longer made the owner's import skip that conversation, message or cursor as read in
    before. A holder's key still skips the knowledge record, for either importer."""
    return _HOLDERS + key


def held(tx: Tx, tenant: str, scope: str) -> bool:
    """Whether the scope received an import (and so may hold keys of what is forgotten)."""
    return (
        tx.scalar(
            "SELECT 1 FROM import_keys WHERE tenant = ? AND scope = ? LIMIT 1", (tenant, scope)
        )
        is not None
    )


def entity_key(folded: str) -> str:
    return record_key("entity", folded)


def entity_keys(names: Iterable[str]) -> list[str]:
    """Every key an entity of these names may have been imported under: its folding now, and
    the one before decision 0091 (case alone), which an earlier export's record carries."""
    return sorted(
        {entity_key(folded) for name in names for folded in (fold(name), _case_folded(name))}
    )


def _case_folded(name: str) -> str:
    return " ".join(name.casefold().split())


def document_key(row: Row) -> str:
    """A document's key, from its row (``content``, ``title``, ``occurred_at``,
    ``created_at``). Its date and when it was stored tell apart documents of the same text:
    the same words said on two dates exported under one key, and an import kept only the
    first (decision 0088)."""
    return record_key(
        "document", row["content"], row["title"], row["occurred_at"], row["created_at"]
    )


def document_keys(rows: Iterable[Row]) -> list[str]:
    """The keys of documents, from rows that also carry their ``meta``: the key an import
    read a document under is kept there (an export made before decision 0088 keyed a
    document by its text and title alone, and a key rebuilt today never matched it)."""
    keys: set[str] = set()
    for row in rows:
        given = json.loads(row["meta"]).get("import_key") if row["meta"] else None
        keys.update({document_key(row), record_key("document", row["content"], row["title"])})
        if isinstance(given, str):
            keys.add(given)
    return sorted(keys)


def fact_keys(tx: Tx, tenant: str, fact_ids: list[int]) -> list[str]:
    """The keys the facts were imported under (read before the facts go: the rows holding
    them go with the facts)."""
    return [
        row["key"]
        for group in groups(fact_ids, _GROUP)
        for row in tx.all(
            f"SELECT key FROM import_facts WHERE tenant = ? AND fact_id IN ({marks(group)})",
            [tenant, *group],
        )
    ]


def drop(tx: Tx, tenant: str, scope: str, keys: list[str]) -> None:
    """Forget the keys (the owner's and a token holder's), and the links to them of facts
    imported as replaced by one."""
    for group in groups([*keys, *map(holders_key, keys)], _GROUP):
        at = marks(group)
        tx.execute(
            f"DELETE FROM import_keys WHERE tenant = ? AND scope = ? AND key IN ({at})",
            [tenant, scope, *group],
        )
        tx.execute(
            "UPDATE import_facts SET replaced_by_key = NULL WHERE tenant = ? AND scope = ?"
            f" AND replaced_by_key IN ({at})",
            [tenant, scope, *group],
        )
