"""forget_knowledge: removing knowledge for real.

Exactly one form per call: ``subject`` (an entity, its types and attributes, every fact at
either end, and every passage that mentions it), ``fact`` {from, to, type}, ``passage`` (a
stored document or conversation message, whole), ``source`` (every document under a label;
facts stay), ``all`` (the whole scope, its conversations included) or ``attribute`` {subject,
key}.

What is forgotten is remembered without being kept: a keyed hash (HMAC, with a secret of this
memory) of the form and its key. So a second forget of the same thing answers
``already_forgotten: true``, and a forget of something that never existed is refused (404, with
up to three close names, never a guess): never a false success.

Erasure: rows are deleted (with ``secure_delete`` zeroing their bytes), full-text entries leave
the index, vectors of text no chunk carries any more are deleted, a passage inside a document
that is kept is blanked in the document text (same length, so every other citation still holds),
the retrieval audit records that returned the forgotten items or quote the forgotten names go
too, and after the commit the store reclaims the old pages. See ``docs/decisions/0005-erasure.md``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass, field
from typing import Any

from ..code import erase as code_store
from ..comms.erase import forget_scope as forget_conversations
from ..core import audit
from ..core.clock import now_iso
from ..core.exact import shown
from ..core.items import visible
from ..errors import InvalidInput, ItemNotFound, UnknownName
from ..index import chunks as chunk_index
from ..index.words import STOP_WORDS
from ..notes import history, traces
from ..store import audit_found, chunk_text
from ..store.base import Row, Tx, groups, marks
from . import cite, derive, import_residue, store
from .match import suggestions

FORMS = ("subject", "fact", "passage", "source", "all", "attribute")
FORGETTABLE_ITEMS = ("document", "message")
_RETAINED_WINDOW = 10_000  # passages of a scope looked at for the forgotten name's words


def forget(
    tx: Tx,
    *,
    tenant: str,
    scope: str,
    form: str,
    value: Any,
    reader: str | None = None,
    viewer: str | None = None,
) -> dict[str, Any]:
    """``reader``: the principal of a caller that is not the memory's owner; a subject's or a
    scope's forget then reaches (and names) only what it may read. A message's passages are its
    conversation's members': a token holder's forget of a name blanked them in conversations it
    was not in, and named them (a hunt over the messages). ``viewer``: the caller, whoever it
    is; a passage it names is looked for among the items it may read."""
    if form not in _FORMS:
        raise InvalidInput(f"forget takes exactly one of {', '.join(FORMS)}")
    key = _key(tx, form, value)
    reply: dict[str, Any] = {"scope": scope, "form": form, "already_forgotten": False}
    # A passage is looked for among what the caller reads: a non-member was told "passage 7
    # is a mail" where a missing id was not found (no message is forgotten as a passage).
    reach = _Reach.of(viewer if form == "passage" and reader is None else reader)
    done = _FORMS[form](tx, tenant, scope, value, reach)
    if done is None:  # nothing of it is stored: forgotten before, or never there
        if _was_forgotten(tx, tenant, scope, form, key):
            return {**reply, **_NOTHING_REMOVED[form], "already_forgotten": True}
        _never_stored(tx, tenant, scope, form, value)
    assert done is not None
    reply.update(done.counts)
    _remember_forgotten(tx, tenant, scope, [(form, key), *done.also])
    audit.scrub(tx, tenant, items=done.items, texts=done.names, forgotten=done.text)
    tx.execute("DELETE FROM knowledge_calls WHERE tenant = ? AND scope = ?", (tenant, scope))
    # The vectors of vanished text and the words left in the full-text index's pages go at
    # the end of the erasing write this runs in (``MemoryBase._erasing_write``).
    return reply


@dataclass(frozen=True)
class _Reach:
    """What a forget may touch and name: every item for the owner; for a token holder
    (``reader``) the items it may read, as a condition on ``items`` aliased ``i``."""

    reader: str | None = None
    condition: str = "1 = 1"
    params: tuple[str, ...] = ()

    @classmethod
    def of(cls, reader: str | None) -> _Reach:
        if reader is None:
            return cls()
        condition, params = visible("i", reader)
        return cls(reader, condition, tuple(params))


@dataclass
class Done:
    """What a form removed."""

    counts: dict[str, Any]
    """For the reply."""
    items: list[int] = field(default_factory=list)
    """Items gone or changed."""
    names: list[str] = field(default_factory=list)
    """Names and values gone: an audit record quoting one goes too."""
    text: list[str] = field(default_factory=list)
    """Text gone: an audit record asking for a word no passage holds any more goes too."""
    also: list[tuple[str, str]] = field(default_factory=list)
    """Other things forgotten on the way (form, key): a document emptied by a subject's
    forget is forgotten as a passage too."""


def _subject(tx: Tx, tenant: str, scope: str, value: Any, reach: _Reach) -> Done | None:
    name = store.check_name(value, "subject")
    found = store.entity(tx, tenant, scope, name, create=False)
    if found is None:
        return None
    entity_id = found[0]
    mentions = tx.all(
        f"SELECT m.chunk_id, CASE WHEN {reach.condition} THEN 1 ELSE 0 END AS readable"
        " FROM mentions m JOIN chunks c ON c.tenant = m.tenant AND c.id = m.chunk_id"
        " JOIN items i ON i.tenant = c.tenant AND i.id = c.item_id"
        " WHERE m.tenant = ? AND m.entity_id = ?",
        (*reach.params, tenant, entity_id),
    )
    chunks = [r["chunk_id"] for r in mentions if r["readable"]]
    fact_rows = tx.all(
        "SELECT id, attributes FROM facts WHERE tenant = ? AND (subject_id = ? OR object_id = ?)",
        (tenant, entity_id, entity_id),
    )
    imported = import_residue.held(tx, tenant, scope)
    keys = import_residue.entity_keys([name, _name_of(tx, tenant, entity_id)]) if imported else []
    keys += import_residue.fact_keys(tx, tenant, [r["id"] for r in fact_rows]) if imported else []
    documents = _documents_of(tx, tenant, chunks) if imported else {}
    # Its attributes' values and its facts' go with it (the cascade): a search asking for a
    # word of theirs that no passage holds any more goes too (found by a hunt for erasure
    # residues). Not as names: a value is often a common word ("engineer", "2024"), and a
    # name's records go in every scope, whatever the passages left hold (the review's).
    values = _values(fact_rows, "attributes") + _values(
        tx.all(
            "SELECT value FROM attributes WHERE tenant = ? AND entity_id = ?", (tenant, entity_id)
        ),
        "value",
    )
    facts = len(fact_rows)
    if len(chunks) < len(mentions):
        # Passages the caller may not read name it: the entity stays, linked to them, for
        # whoever may forget them (deleted, the owner's later forget found it forgotten and
        # reached none of them: the review's). Its facts and attributes go.
        tx.execute(
            "DELETE FROM facts WHERE tenant = ? AND (subject_id = ? OR object_id = ?)",
            (tenant, entity_id, entity_id),
        )
        tx.execute("DELETE FROM attributes WHERE tenant = ? AND entity_id = ?", (tenant, entity_id))
    else:
        tx.execute("DELETE FROM entities WHERE tenant = ? AND id = ?", (tenant, entity_id))
    hidden, touched, passages = _blank_passages(tx, tenant, chunks)
    # A document kept blanked keeps its key: a hash of its whole text, nothing to guess from.
    emptied = [documents[doc] for doc in hidden["documents_emptied"] if doc in documents]
    import_residue.drop(tx, tenant, scope, keys + import_residue.document_keys(emptied))
    retained = _passages_naming(tx, tenant, scope, name, reach)
    counts = {
        **hidden,
        "facts_removed": facts,
        "passages_retained": len(retained),
        "documents_retained": sorted({item for item, _ in retained}),
    }
    gone = [("passage", str(doc)) for doc in hidden["documents_emptied"]]
    return Done(counts, touched, [name], [*passages, *values], gone)


def _fact(tx: Tx, tenant: str, scope: str, value: Any, _reach: _Reach) -> Done | None:
    if not isinstance(value, dict) or not {"from", "to", "type"} <= set(value):
        raise InvalidInput("fact is {from, to, type}")
    subject = store.entity(tx, tenant, scope, store.check_name(value["from"], "from"), create=False)
    obj = store.entity(tx, tenant, scope, store.check_name(value["to"], "to"), create=False)
    if subject is None or obj is None:
        return None
    relation = derive.normalise_relation(str(value["type"]))
    # The fact as stated from either end: with B married_to A (or A child_of B) still stored,
    # A married_to B (A parent_of B) was served again as derived, and a derived fact was
    # refused as never stored (a hunt over the knowledge graph).
    mirrored = derive.mirror_relation(relation)
    stated = "(subject_id = ? AND object_id = ? AND relation = ?)"
    either_end = stated if mirrored is None else f"{stated} OR {stated}"
    rows = tx.all(
        f"SELECT id, attributes FROM facts WHERE tenant = ? AND ({either_end})",
        (
            tenant,
            subject[0],
            obj[0],
            relation,
            *(() if mirrored is None else (obj[0], subject[0], mirrored)),
        ),
    )
    if not rows:
        return None
    ids = [row["id"] for row in rows]
    keys = import_residue.fact_keys(tx, tenant, ids)
    tx.execute(f"DELETE FROM facts WHERE tenant = ? AND id IN ({marks(ids)})", [tenant, *ids])
    import_residue.drop(tx, tenant, scope, keys)
    # Its values are forgotten words, not names: a search for one goes only when nothing left
    # holds it (as a subject's values since the review of 0079: "engineer" named as a name
    # dropped every search of the tenant quoting it).
    return Done({"facts_removed": len(rows)}, text=_values(rows, "attributes"))


def _passage(tx: Tx, tenant: str, scope: str, value: Any, reach: _Reach) -> Done | None:
    item_id = _item_id(value)
    # An item the caller may not read (a message of another conversation, another scope of a
    # confined token) is one it never had: the refusal names nothing of it.
    row = tx.one(
        "SELECT i.id, i.scope, i.item_type, i.title, i.content, i.occurred_at, i.created_at,"
        f" i.meta FROM items i WHERE i.id = ? AND i.tenant = ? AND {reach.condition}",
        (item_id, tenant, *reach.params),
    )
    if row is None:
        return None
    if row["item_type"] not in FORGETTABLE_ITEMS:
        raise InvalidInput(
            f"passage {item_id} is a {row['item_type']}: passage forgets a stored document or "
            "conversation message (forget an entry with forget, a note with delete)"
        )
    if row["scope"] != scope:
        raise ItemNotFound(
            f"passage {item_id} is not in scope {scope!r} (it is in {row['scope']!r}): name "
            "that scope to forget it",
            scope=row["scope"],
        )
    kept = _detach_facts(tx, tenant, [item_id])
    beside = chunk_index.turns_beside(tx, tenant, [item_id])
    tx.execute("DELETE FROM items WHERE tenant = ? AND id = ?", (tenant, item_id))
    import_residue.drop(tx, tenant, scope, import_residue.document_keys([row]))
    # The turns around a message hold its words as their context: cut again without them.
    chunk_index.recut_now(tx, tenant, beside)
    kind = "documents_removed" if row["item_type"] == "document" else "messages_removed"
    return Done(
        {kind: 1, "facts_kept": kept},
        [item_id],
        [row["title"] or ""],
        [row["title"] or "", row["content"]],
    )


def _source(tx: Tx, tenant: str, scope: str, value: Any, _reach: _Reach) -> Done | None:
    label = str(value)
    docs = tx.all(
        "SELECT id, title, content, occurred_at, created_at, meta FROM items WHERE tenant = ?"
        f" AND scope = ? AND item_type = 'document' AND {tx.json_text('meta', 'source')} = ?",
        (tenant, scope, label),
    )
    if not docs:
        return None
    ids = [doc["id"] for doc in docs]
    kept = _detach_facts(tx, tenant, ids)
    tx.executemany("DELETE FROM items WHERE tenant = ? AND id = ?", [(tenant, i) for i in ids])
    import_residue.drop(tx, tenant, scope, import_residue.document_keys(docs))
    gone = [("passage", str(doc)) for doc in ids]
    text = [f"{doc['title'] or ''} {doc['content']}" for doc in docs]
    return Done({"documents_removed": len(ids), "facts_kept": kept}, ids, [label], text, gone)


def _all(tx: Tx, tenant: str, scope: str, value: Any, reach: _Reach) -> Done | None:
    """The whole scope; for a token holder, less the conversations it is no member of: it
    erased them, and counted them (the review of decision 0086)."""
    if value is not True:
        raise InvalidInput("all must be true")
    rows = tx.all(
        "SELECT i.id, i.title, i.content, i.tags, i.summary, i.item_type, i.category, i.session"
        f" FROM items i WHERE i.tenant = ? AND i.scope = ? AND {reach.condition}",
        (tenant, scope, *reach.params),
    )
    ids = [row["id"] for row in rows]
    names = [
        r["folded"]
        for r in tx.all(
            "SELECT folded FROM entities WHERE tenant = ? AND scope = ?", (tenant, scope)
        )
    ]
    # What else the scope's words were in (found by a hunt for erasure residues): the notes'
    # earlier revisions, tags and summaries, and the values of its entities' attributes and
    # facts. Searches asking for a word only they held go too.
    notes = [row for row in rows if row["item_type"] == "note"]
    earlier = [
        f"{title or ''} {text}"
        for revisions in history.revision_texts_of(tx, tenant, [r["id"] for r in notes]).values()
        for title, text in revisions
    ]
    values = _values(
        tx.all(
            "SELECT a.value FROM attributes a JOIN entities e ON e.id = a.entity_id"
            " WHERE a.tenant = ? AND e.tenant = ? AND e.scope = ?",
            (tenant, tenant, scope),
        ),
        "value",
    ) + _values(
        tx.all("SELECT attributes FROM facts WHERE tenant = ? AND scope = ?", (tenant, scope)),
        "attributes",
    )
    # A session's summary note: its session may have moved to another scope since.
    traces.erase(tx, tenant, notes)
    traces.erase_scope(tx, tenant, scope)
    conversations = forget_conversations(tx, tenant, scope, reach.reader)
    if reach.reader is None:
        items = tx.execute("DELETE FROM items WHERE tenant = ? AND scope = ?", (tenant, scope))
    else:  # the messages it may not read stay
        items = tx.execute(
            "DELETE FROM items WHERE tenant = ? AND scope = ? AND id NOT IN (SELECT i.id FROM"
            f" items i WHERE i.tenant = ? AND i.scope = ? AND NOT ({reach.condition}))",
            (tenant, scope, tenant, scope, *reach.params),
        )
    entities = tx.execute("DELETE FROM entities WHERE tenant = ? AND scope = ?", (tenant, scope))
    # A code scope's items are a repository's files: its code store rows go too (0095).
    code = code_store.forget_scope(tx, tenant, scope)
    if items == 0 and entities == 0 and conversations == 0 and code.repos == 0:
        return None
    audit_found.delete_scope(tx, tenant, scope)
    for table in ("import_keys", "import_facts"):
        tx.execute(f"DELETE FROM {table} WHERE tenant = ? AND scope = ?", (tenant, scope))
    gone = [("passage", str(i)) for i in ids] + [("subject", name) for name in names]
    text = [f"{row['title'] or ''} {row['content']}" for row in rows] + names + earlier + values
    text += [word for row in rows for word in traces.words_of(row)] + code.text
    counts = {
        "items_removed": items,
        "entities_removed": entities,
        "conversations_removed": conversations,
    }
    if code_store.repo_of(scope) is not None:
        counts["code_repos_removed"] = code.repos
    return Done(counts, ids, [], text, gone)


def _attribute(tx: Tx, tenant: str, scope: str, value: Any, _reach: _Reach) -> Done | None:
    if not isinstance(value, dict) or not {"subject", "key"} <= set(value):
        raise InvalidInput("attribute is {subject, key}")
    subject = store.entity(
        tx, tenant, scope, store.check_name(value["subject"], "subject"), create=False
    )
    if subject is None:
        return None
    rows = tx.all(
        "DELETE FROM attributes WHERE tenant = ? AND entity_id = ? AND key = ? RETURNING value",
        (tenant, subject[0], str(value["key"])),
    )
    if not rows:
        return None
    return Done({"attribute_values_removed": len(rows)}, text=_values(rows, "value"))


_NOTHING_REMOVED: dict[str, dict[str, Any]] = {
    "subject": {"facts_removed": 0, "passages_hidden": 0},
    "fact": {"facts_removed": 0},
    "passage": {"documents_removed": 0},
    "source": {"documents_removed": 0},
    "all": {"items_removed": 0, "entities_removed": 0, "conversations_removed": 0},
    "attribute": {"attribute_values_removed": 0},
}

_FORMS = {
    "subject": _subject,
    "fact": _fact,
    "passage": _passage,
    "source": _source,
    "all": _all,
    "attribute": _attribute,
}


def _never_stored(tx: Tx, tenant: str, scope: str, form: str, value: Any) -> None:
    """Refuse a forget of something this scope never held (404), naming close names."""
    if form == "passage":
        raise ItemNotFound(f"no stored document or message with id {value} in scope {scope!r}")
    if form == "all":
        raise UnknownName(f"scope {scope!r} holds nothing, and never held anything forgotten")
    if form == "source":
        raise UnknownName(f"no document in scope {scope!r} has the source label {value!r}")
    if form == "subject":
        names = [value]
    elif form == "fact":
        names = [value["from"], value["to"]]
    else:
        names = [value["subject"]]
    for name in names:
        checked = store.check_name(name, "subject")
        if store.entity(tx, tenant, scope, checked, create=False) is None:
            close = suggestions(tx, tenant, scope, checked)
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            raise UnknownName(
                f"no entity named {checked!r} in scope {scope!r}.{hint}", suggestions=close
            )
    what = "fact" if form == "fact" else "attribute"
    raise UnknownName(f"no such {what} is stored in scope {scope!r}: {value!r}")


def _key(tx: Tx, form: str, value: Any) -> str:
    """What identifies the forgotten thing, in a normal form (names folded)."""
    if form == "subject":
        return store.fold(store.check_name(value, "subject"))
    if form == "fact" and isinstance(value, dict):
        return "\x1f".join(
            (
                store.fold(str(value.get("from", ""))),
                derive.normalise_relation(str(value.get("type", ""))),
                store.fold(str(value.get("to", ""))),
            )
        )
    if form == "attribute" and isinstance(value, dict):
        return f"{store.fold(str(value.get('subject', '')))}\x1f{value.get('key', '')}"
    if form == "passage":
        return str(_item_id(value))
    return "" if form == "all" else str(value)


def _digest(tx: Tx, form: str, key: str) -> str:
    return _mac(_secret(tx), form, key)


def _secret(tx: Tx) -> bytes:
    # The secret is the memory's (tenant ''), not the caller's: its statements are marked
    # memory-wide, which PostgreSQL's tenant policies let through.
    read = (
        "SELECT value FROM settings /* every tenant */ WHERE tenant = '' AND name = 'forget_secret'"
    )
    secret = tx.scalar(read)
    if secret is None:
        secret = json.dumps(secrets.token_hex(32))
        tx.execute(
            "INSERT INTO settings /* every tenant */ (tenant, name, value)"
            " VALUES ('', 'forget_secret', ?) ON CONFLICT (tenant, name) DO NOTHING",
            (secret,),
        )
        secret = tx.scalar(read)
    return str(json.loads(secret)).encode()


def _mac(secret: bytes, form: str, key: str) -> str:
    return hmac.new(secret, f"{form}\x00{key}".encode(), hashlib.sha256).hexdigest()


def _remember_forgotten(tx: Tx, tenant: str, scope: str, forgotten: list[tuple[str, str]]) -> None:
    """Each (form, key) recorded as forgotten: the secret read once, the rows written together
    (a scope's 1,000 entities were two statements each)."""
    secret, moment = _secret(tx), now_iso()
    tx.executemany(
        "INSERT INTO forgotten (tenant, scope, digest, forgotten_at) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (tenant, scope, digest) DO NOTHING",
        [(tenant, scope, _mac(secret, form, key), moment) for form, key in forgotten],
    )


def _was_forgotten(tx: Tx, tenant: str, scope: str, form: str, key: str) -> bool:
    return (
        tx.scalar(
            "SELECT 1 FROM forgotten WHERE tenant = ? AND scope = ? AND digest = ?",
            (tenant, scope, _digest(tx, form, key)),
        )
        is not None
    )


def _item_id(value: object) -> int:
    if isinstance(value, bool):
        raise InvalidInput(f"passage is an item id, got {shown(value)}")
    try:
        return int(str(value))
    except ValueError as exc:
        raise InvalidInput(f"passage is an item id, got {shown(value)}") from exc


def _values(rows: list[Any], column: str) -> list[str]:
    """The text values in removed rows (JSON values and objects), for the audit scrub."""
    texts: list[str] = []
    for row in rows:
        raw = row[column]
        try:
            parsed = json.loads(raw)
        except (TypeError, ValueError):
            parsed = raw
        stack = [parsed]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
            elif item is not None and not isinstance(item, bool):
                texts.append(str(item))
    return texts


def _name_of(tx: Tx, tenant: str, entity_id: int) -> str:
    name = tx.scalar("SELECT name FROM entities WHERE tenant = ? AND id = ?", (tenant, entity_id))
    return str(name)


def _documents_of(tx: Tx, tenant: str, chunk_ids: list[int]) -> dict[int, Row]:
    """The documents holding these passages, with their text as it is before any is blanked."""
    if not chunk_ids:
        return {}
    return {
        row["id"]: row
        for row in tx.all(
            "SELECT id, content, title, occurred_at, created_at, meta FROM items WHERE tenant = ?"
            " AND id IN (SELECT item_id"
            f" FROM chunks WHERE tenant = ? AND id IN ({marks(chunk_ids)}))",
            [tenant, tenant, *chunk_ids],
        )
    }


def _blank_passages(
    tx: Tx, tenant: str, chunk_ids: list[int]
) -> tuple[dict[str, Any], list[int], list[str]]:
    """Remove passages: their chunks go, and their text is blanked inside documents that keep
    other passages (a document left with none is deleted whole). The counts, the items, and
    the passages' text."""
    if not chunk_ids:
        return {"passages_hidden": 0, "documents_emptied": []}, [], []
    rows = list(chunk_text.by_id(tx, chunk_ids, tenant).values())
    by_doc: dict[int, list[tuple[int, int]]] = {}
    for row in rows:
        by_doc.setdefault(row["item_id"], []).append((row["start"], row["stop"]))
    beside = chunk_index.turns_beside(tx, tenant, list(by_doc))
    tx.execute(
        f"DELETE FROM chunks WHERE tenant = ? AND id IN ({marks(chunk_ids)})", [tenant, *chunk_ids]
    )
    emptied = []
    for doc_id, spans in by_doc.items():
        left = int(
            tx.scalar(
                "SELECT count(*) FROM chunks WHERE tenant = ? AND item_id = ?", (tenant, doc_id)
            )
        )
        if left == 0:
            tx.execute("DELETE FROM items WHERE tenant = ? AND id = ?", (tenant, doc_id))
            emptied.append(doc_id)
            continue
        text = str(
            tx.scalar("SELECT content FROM items WHERE tenant = ? AND id = ?", (tenant, doc_id))
        )
        for start, stop in spans:
            text = text[:start] + " " * (stop - start) + text[stop:]
        cite.uncite(tx, tenant, doc_id, spans)
        tx.execute(
            "UPDATE items SET content = ? WHERE tenant = ? AND id = ?", (text, tenant, doc_id)
        )
    chunk_index.recut_now(tx, tenant, beside)  # a message's words are its neighbours' context
    counts = {"passages_hidden": len(rows), "documents_emptied": sorted(emptied)}
    return counts, sorted(by_doc), [row["body"] for row in rows]


def _passages_naming(
    tx: Tx, tenant: str, scope: str, name: str, reach: _Reach
) -> list[tuple[int, int]]:
    """Live passages of the scope that still hold a word of a forgotten name (no entity linked
    them, so forgetting the subject did not reach them), of the items the forget may name:
    (item, chunk) pairs."""
    words = [w for w in store.words(name) if len(w) >= 3 and w not in STOP_WORDS]
    if not words:
        return []
    ranked = tx.text.rank(tenant, words, "any", _RETAINED_WINDOW, 0)
    if not ranked:
        return []
    ids = [chunk_id for chunk_id, _ in ranked]
    found: list[tuple[int, int]] = []
    for part in groups(ids, 500):
        found += [
            (row["item_id"], row["id"])
            for row in tx.all(
                "SELECT c.id, c.item_id FROM chunks c JOIN items i ON i.tenant = c.tenant"
                f" AND i.id = c.item_id WHERE c.id IN ({marks(part)}) AND i.tenant = ?"
                " AND i.scope = ?"
                f" AND {reach.condition}",
                [*part, tenant, scope, *reach.params],
            )
        ]
    return found


def _detach_facts(tx: Tx, tenant: str, doc_ids: list[int]) -> int:
    """Facts cited only by these documents stay, as asserted facts; how many."""
    if not doc_ids:
        return 0
    return int(
        tx.scalar(
            "SELECT count(DISTINCT fact_id) FROM fact_sources WHERE tenant = ?"
            f" AND item_id IN ({marks(doc_ids)})",
            [tenant, *doc_ids],
        )
    )
