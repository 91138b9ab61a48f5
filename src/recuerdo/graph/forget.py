"""forget_knowledge: removing knowledge for real.

Exactly one form per call: ``subject`` (an entity, its types and attributes, every fact at
either end, and every passage that mentions it), ``fact`` {from, to, type}, ``passage`` (a
stored document, whole), ``source`` (every document under a label; facts stay), ``all`` (the
whole scope, its conversations included) or ``attribute`` {subject, key}. An unknown name
is refused with up to three close names, never guessed. Forgetting twice answers
``already_forgotten`` and writes nothing.

Erasure: rows are deleted (with ``secure_delete`` zeroing their bytes), full-text entries are
removed from the index pages at once (FTS5 ``secure-delete``; older SQLite rebuilds the index),
vectors of text no chunk carries any more are deleted, a passage inside a document that is
kept is blanked in the document text (same length, so every other citation still holds), and
after the commit the WAL is checkpointed and truncated. See ``docs/decisions/0005-erasure.md``.
"""

from __future__ import annotations

from typing import Any

from ..comms.erase import forget_scope as forget_conversations
from ..errors import InvalidInput, UnknownName
from ..index.vectors import collect_orphans
from ..store.base import Tx, like_pattern
from . import derive, store
from .match import suggestions

FORMS = ("subject", "fact", "passage", "source", "all", "attribute")


def _entity(tx: Tx, tenant: str, scope: str, name: object) -> int:
    checked = store.check_name(name, "subject")
    found = store.entity(tx, tenant, scope, checked, create=False)
    if found is None:
        close = suggestions(tx, tenant, scope, checked)
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        raise UnknownName(
            f"no entity named {checked!r} in scope {scope!r}.{hint}", suggestions=close
        )
    return found[0]


def _blank_passages(tx: Tx, chunk_ids: list[int]) -> dict[str, Any]:
    """Remove passages: their chunks go, and their text is blanked inside documents that keep
    other passages (a document left with none is deleted whole)."""
    if not chunk_ids:
        return {"passages_hidden": 0, "documents_retained": [], "passages_retained": 0}
    marks = ",".join("?" * len(chunk_ids))
    rows = tx.all(f"SELECT id, item_id, start, stop FROM chunks WHERE id IN ({marks})", chunk_ids)
    by_doc: dict[int, list[tuple[int, int]]] = {}
    for row in rows:
        by_doc.setdefault(row["item_id"], []).append((row["start"], row["stop"]))
    tx.execute(f"DELETE FROM chunks WHERE id IN ({marks})", chunk_ids)
    retained_docs, retained_passages = [], 0
    for doc_id, spans in by_doc.items():
        left = int(tx.scalar("SELECT count(*) FROM chunks WHERE item_id = ?", (doc_id,)))
        if left == 0:
            tx.execute("DELETE FROM items WHERE id = ?", (doc_id,))
            continue
        text = str(tx.scalar("SELECT content FROM items WHERE id = ?", (doc_id,)))
        for start, stop in spans:
            text = text[:start] + " " * (stop - start) + text[stop:]
        tx.execute("UPDATE items SET content = ? WHERE id = ?", (text, doc_id))
        retained_docs.append(doc_id)
        retained_passages += left
    return {
        "passages_hidden": len(rows),
        "documents_retained": sorted(retained_docs),
        "passages_retained": retained_passages,
    }


def forget(tx: Tx, *, tenant: str, scope: str, form: str, value: Any) -> dict[str, Any]:
    reply: dict[str, Any] = {"scope": scope, "form": form, "already_forgotten": False}
    if form == "subject":
        entity_id = _entity(tx, tenant, scope, value)
        chunks = [
            r["chunk_id"]
            for r in tx.all("SELECT chunk_id FROM mentions WHERE entity_id = ?", (entity_id,))
        ]
        facts = int(
            tx.scalar(
                "SELECT count(*) FROM facts WHERE subject_id = ? OR object_id = ?",
                (entity_id, entity_id),
            )
        )
        tx.execute("DELETE FROM entities WHERE id = ?", (entity_id,))
        reply.update(_blank_passages(tx, chunks), facts_removed=facts)
        _scrub_audit(tx, tenant, str(value))
    elif form == "fact":
        if not isinstance(value, dict) or not {"from", "to", "type"} <= set(value):
            raise InvalidInput("fact is {from, to, type}")
        subject = _entity(tx, tenant, scope, value["from"])
        obj = _entity(tx, tenant, scope, value["to"])
        removed = tx.execute(
            "DELETE FROM facts WHERE subject_id = ? AND object_id = ? AND relation = ?",
            (subject, obj, derive.normalise_relation(str(value["type"]))),
        )
        reply.update(facts_removed=removed, already_forgotten=removed == 0)
    elif form == "passage":
        doc = tx.one(
            "SELECT id FROM items WHERE id = ? AND tenant = ? AND scope = ?"
            " AND item_type = 'document'",
            (_doc_id(value), tenant, scope),
        )
        if doc is None:
            return {**reply, "already_forgotten": True, "documents_removed": 0}
        kept = _detach_facts(tx, [doc["id"]])
        tx.execute("DELETE FROM items WHERE id = ?", (doc["id"],))
        reply.update(documents_removed=1, facts_kept=kept)
    elif form == "source":
        ids = [
            r["id"]
            for r in tx.all(
                "SELECT id FROM items WHERE tenant = ? AND scope = ? AND item_type = 'document'"
                f" AND {tx.json_text('meta', 'source')} = ?",
                (tenant, scope, str(value)),
            )
        ]
        kept = _detach_facts(tx, ids)
        tx.executemany("DELETE FROM items WHERE id = ?", [(i,) for i in ids])
        reply.update(documents_removed=len(ids), facts_kept=kept, already_forgotten=not ids)
    elif form == "all":
        if value is not True:
            raise InvalidInput("all must be true")
        conversations = forget_conversations(tx, tenant, scope)
        items = tx.execute("DELETE FROM items WHERE tenant = ? AND scope = ?", (tenant, scope))
        entities = tx.execute(
            "DELETE FROM entities WHERE tenant = ? AND scope = ?", (tenant, scope)
        )
        for table in ("knowledge_calls", "retrieval_audit", "import_keys", "import_facts"):
            tx.execute(f"DELETE FROM {table} WHERE tenant = ? AND scope = ?", (tenant, scope))
        reply.update(
            items_removed=items,
            entities_removed=entities,
            conversations_removed=conversations,
            already_forgotten=items == 0 and entities == 0 and conversations == 0,
        )
    elif form == "attribute":
        if not isinstance(value, dict) or not {"subject", "key"} <= set(value):
            raise InvalidInput("attribute is {subject, key}")
        entity_id = _entity(tx, tenant, scope, value["subject"])
        removed = tx.execute(
            "DELETE FROM attributes WHERE entity_id = ? AND key = ?", (entity_id, str(value["key"]))
        )
        reply.update(attribute_values_removed=removed, already_forgotten=removed == 0)
    else:
        raise InvalidInput(f"forget takes exactly one of {', '.join(FORMS)}")
    if not reply["already_forgotten"]:
        tx.execute("DELETE FROM knowledge_calls WHERE tenant = ? AND scope = ?", (tenant, scope))
        erase_index_remains(tx)
    return reply


def _doc_id(value: object) -> int:
    try:
        return int(str(value))
    except ValueError as exc:
        raise InvalidInput(f"passage is a document id, got {value!r}") from exc


def _detach_facts(tx: Tx, doc_ids: list[int]) -> int:
    """Facts cited only by these documents stay, as asserted facts; how many."""
    if not doc_ids:
        return 0
    marks = ",".join("?" * len(doc_ids))
    return int(
        tx.scalar(
            f"SELECT count(DISTINCT fact_id) FROM fact_sources WHERE item_id IN ({marks})", doc_ids
        )
    )


def _scrub_audit(tx: Tx, tenant: str, name: str) -> None:
    """Queries that named the forgotten subject leave the retrieval audit too."""
    tx.execute(
        "DELETE FROM retrieval_audit WHERE tenant = ? AND lower(query) LIKE ? ESCAPE '\\'",
        (tenant, like_pattern(name.lower())),
    )


def erase_index_remains(tx: Tx) -> None:
    """What deleting rows leaves behind: vectors of vanished text, and (where the full-text
    index does not remove deleted words at once) the words in the index's pages."""
    collect_orphans(tx)
    tx.purge_deleted_text()
