"""remember_knowledge: text (content, messages or passages) and facts an agent already has.

No model runs on this path: the caller's entities and relations are stored at once, with
typed attributes and temporal facts; the text becomes a document cut into passages (chunks);
passages are linked to the entity names they mention (the caller's explicit mentions, and
every name already known in the scope). The same call with the same date answers ``already``
and stores nothing, unless an undated call's facts or values were replaced since: then it is
said again (decision 0089). Every refusal stores nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from ..core import exact
from ..core.clock import now_iso, parse_time
from ..core.text import checked_label, checked_text
from ..errors import FactsShape, InvalidInput, LimitExceeded, MentionNotInPassage
from ..index.chunk import Span, chunk_spans
from ..index.chunks import insert_chunks
from ..index.words import STOP_WORDS
from ..store.base import Tx, groups, marks, rows_by_id
from ..store.entity_names import nfc
from . import derive, entity_batch, store, values
from .cite import Citer, named_in

LIMITS = {
    "entities": 1000,
    "relations": 5000,
    "content_bytes": 1_048_576,
    "passages": 1000,
    "passage_bytes": 65_536,
}


NOTHING_CREATED = {
    "entities_created": 0,
    "facts_created": 0,
    "facts_replaced": 0,
    "attributes_changed": 0,
}


def _limit(name: str, size: int) -> None:
    if size > LIMITS[name]:
        raise LimitExceeded(
            f"{name}: {size} is over the limit of {LIMITS[name]} per call (nothing was stored)",
            limit=name,
            size=size,
            maximum=LIMITS[name],
        )


def _facts(facts: object) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    if facts is None:
        return [], []
    if not isinstance(facts, dict) or not set(facts) <= {"entities", "relations"}:
        raise FactsShape("facts is an object with 'entities' and/or 'relations' lists")
    entities, relations = facts.get("entities") or [], facts.get("relations") or []
    if not isinstance(entities, list) or not isinstance(relations, list):
        raise FactsShape("facts.entities and facts.relations must be lists")
    _limit("entities", len(entities))
    _limit("relations", len(relations))
    clean_entities = []
    for index, item in enumerate(entities):
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("name"), str)
            or not item["name"].strip()
            or not set(item) <= {"name", "type", "attributes"}
        ):
            raise FactsShape(f"entities[{index}] needs a name (and may have type, attributes)")
        attributes = item.get("attributes") or {}
        if not isinstance(attributes, dict):
            raise FactsShape(f"entities[{index}].attributes must be an object")
        attributes = {
            store.check_key(key, f"entities[{index}].attributes key"): value
            for key, value in attributes.items()
        }
        kind = item.get("type")
        if kind is not None:
            kind = check_type(kind, f"entities[{index}].type")
        clean_entities.append(
            {"name": store.check_name(item["name"]), "type": kind, "attributes": attributes}
        )
    clean_relations = []
    for index, item in enumerate(relations):
        if not isinstance(item, dict) or not set(item) <= {
            "source",
            "target",
            "type",
            "replaces",
            "attributes",
        }:
            raise FactsShape(f"relations[{index}] is {{source, target, type, replaces}}")
        ends = [item.get("source"), item.get("target"), item.get("type")]
        if not all(isinstance(end, str) and end.strip() for end in ends):
            raise FactsShape(f"relations[{index}] needs both ends (source, target) and a type")
        kind = check_relation(item["type"], f"relations[{index}].type")
        attributes = item.get("attributes") or {}
        if not isinstance(attributes, dict):
            raise FactsShape(f"relations[{index}].attributes must be an object")
        values.fact_attributes(attributes, f"relations[{index}].attributes")
        clean_relations.append(
            {
                "source": store.check_name(item["source"], "source"),
                "target": store.check_name(item["target"], "target"),
                "type": kind,
                "replaces": bool(item.get("replaces", False)),
                "attributes": attributes,
            }
        )
    return clean_entities, clean_relations


def check_type(kind: object, field: str) -> str:
    """An entity type as it is stored (trimmed, in lower case)."""
    if not isinstance(kind, str) or not kind.strip() or "\0" in kind:
        raise FactsShape(f"{field} must be a non-empty word (with no NUL)")
    return nfc(kind).strip().lower()


def check_relation(relation: object, field: str) -> str:
    """A relation as it is stored (words joined by '_', in lower case): a name of no word
    ("-") was stored as the empty relation."""
    name = derive.normalise_relation(relation) if isinstance(relation, str) else ""
    if not store.words(name) or "\0" in name:  # "---" or "@@": no letter or digit
        raise FactsShape(f"{field} must be a relation name, e.g. works_at")
    return name


def _document(
    content: object,
    messages: object,
    passages: object,
) -> tuple[str | None, list[Span], list[list[str]]]:
    """(text, passage spans, explicit mentions per passage) of the call's text, if any."""
    given = [
        name
        for name, value in (("content", content), ("messages", messages), ("passages", passages))
        if value is not None
    ]
    if len(given) > 1:
        raise InvalidInput(f"give one of content, messages or passages, not {' and '.join(given)}")
    if content is not None:
        text = checked_text(content, "content", max_bytes=LIMITS["content_bytes"])
        return text, chunk_spans(text), []
    if messages is not None:
        if not isinstance(messages, list) or not messages:
            raise InvalidInput("messages is a non-empty list of {role, content}")
        lines = []
        for index, message in enumerate(messages):
            if not isinstance(message, dict) or not isinstance(message.get("content"), str):
                raise InvalidInput(f"messages[{index}] is {{role, content}}")
            role = checked_label(message.get("role", "user"), "role")
            lines.append(f"{role}: {' '.join(message['content'].split())}")
        text = checked_text("\n".join(lines), "messages", max_bytes=LIMITS["content_bytes"])
        return text, _line_spans(text), []
    if passages is not None:
        if not isinstance(passages, list) or not passages:
            raise InvalidInput("passages is a non-empty list of {text, mentions}")
        _limit("passages", len(passages))
        texts, mentions = [], []
        for index, passage in enumerate(passages):
            if not isinstance(passage, dict) or not isinstance(passage.get("text"), str):
                raise InvalidInput(f"passages[{index}] is {{text, mentions, key}}")
            body = checked_text(
                passage["text"], f"passages[{index}].text", max_bytes=LIMITS["passage_bytes"]
            ).strip()
            named = passage.get("mentions") or []
            if not isinstance(named, list):
                raise InvalidInput(f"passages[{index}].mentions is a list of names")
            for name in named:
                if not isinstance(name, str) or store.fold(name) not in store.fold(body):
                    raise MentionNotInPassage(
                        f"passages[{index}] mentions {name!r}, which does not appear in its "
                        "text (nothing was stored)",
                        passage=index,
                        mention=name,
                    )
            texts.append(body)
            mentions.append([store.check_name(name) for name in named])
        text = "\n\n".join(texts)
        spans, position = [], 0
        for body in texts:
            spans.append(Span(position, position + len(body)))
            position += len(body) + 2
        return text, spans, mentions
    return None, [], []


def _line_spans(text: str) -> list[Span]:
    spans, position = [], 0
    for line in text.split("\n"):
        if line.strip():
            spans.append(Span(position, position + len(line)))
        position += len(line) + 1
    return spans


def _fingerprint(parts: dict[str, Any]) -> str:
    # A decimal as the number it is: written as text it read as the string "1.80", and a call
    # giving the string answered `already` for the one that gave the number.
    return hashlib.sha256(exact.dumps(parts, sort_keys=True).encode()).hexdigest()


def remember(
    tx: Tx,
    *,
    tenant: str,
    principal: str,
    scope: object,
    content: object,
    messages: object,
    passages: object,
    facts: object,
    date: object,
    source: object,
) -> dict[str, Any]:
    label = checked_label(scope, "scope") if scope is not None else "user"
    entities, relations = _facts(facts)
    text, spans, explicit = _document(content, messages, passages)
    if text is None and not entities and not relations:
        raise InvalidInput("nothing to remember: give content, messages, passages or facts")
    when = None if date is None else parse_time(date, "date")
    origin = None if source is None else checked_label(source, "source")
    fingerprint = _fingerprint(
        {
            "text": text,
            "spans": spans,
            "mentions": explicit,
            "entities": entities,
            "relations": relations,
            "date": when,
            "source": origin,
        }
    )
    earlier = tx.one(
        "SELECT reply FROM knowledge_calls WHERE tenant = ? AND scope = ? AND fingerprint = ?",
        (tenant, label, fingerprint),
    )
    if earlier is not None:
        told = json.loads(earlier["reply"])
        kept = told.pop(_HOLDS, None)  # None: stored before decision 0089, trusted as it was
        if kept is None or _still_holds(tx, tenant, kept, dated=when is not None):
            # The earlier call's document and what it holds, but nothing created by this one.
            return {**told, **NOTHING_CREATED, "outcome": "already"}
    stamp = now_iso()
    doc_id, chunk_ids = None, []
    if text is not None:
        doc_id = store.insert_document(
            tx,
            tenant,
            label,
            title=origin or "remembered text",
            text=text,
            principal=principal,
            said_at=when,
            meta={"kind": "text", "source": origin},
            stored_at=stamp,
            updated_at=stamp,
        )
        chunk_ids = insert_chunks(tx, tenant, doc_id, text, spans, title=origin or "")
    counts = {
        "entities_created": 0,
        "facts_created": 0,
        "facts_existing": 0,
        "facts_replaced": 0,
        "attributes_changed": 0,
    }
    held: dict[str, list[int]] = {"entities": [], "facts": [], "attributes": []}
    named = entity_batch.ensure(
        tx, tenant, label, [item["name"] for item in entities], source=origin, recorded_at=stamp
    )
    counted: set[str] = set()
    typed: list[tuple[int, str]] = []
    for item in entities:
        folded = store.fold(item["name"])
        entity_id, fresh = named[folded]
        held["entities"].append(entity_id)
        counts["entities_created"] += fresh and folded not in counted
        counted.add(folded)
        if item["type"]:
            typed.append((entity_id, item["type"]))
    store.add_types(tx, tenant, typed)
    for item in entities:
        entity_id = named[store.fold(item["name"])][0]
        for key, value in item["attributes"].items():
            changed, row_id = store.set_attribute(
                tx, tenant, entity_id, str(key), value, when, stamp
            )
            counts["attributes_changed"] += changed
            held["attributes"].append(row_id)
    # the ends found, and the new ones made together in the order the relations name them
    # (decision 0169)
    batch = entity_batch.ensure(
        tx,
        tenant,
        label,
        [end for r in relations for end in (r["source"], r["target"])],
        source=origin,
        recorded_at=stamp,
    )
    known = {folded: entity_id for folded, (entity_id, _) in batch.items()}
    counts["entities_created"] += sum(fresh for _, fresh in batch.values())
    held["entities"] += known.values()
    stated = bool(entities or relations)

    def end(name: str) -> int:
        return known[store.fold(name)]

    if doc_id is None and not any(r["replaces"] for r in relations):
        # Nothing to cite or end: the whole batch in a few statements (the usual bulk load).
        created, replaced, held["facts"] = store.add_plain_facts(
            tx,
            tenant=tenant,
            scope=label,
            facts=[
                (end(r["source"]), r["type"], end(r["target"]), r["attributes"]) for r in relations
            ],
            valid_from=when,
            source=origin,
            recorded_at=stamp,
        )
        counts["facts_created"] += created
        counts["facts_existing"] += len(relations) - created
        counts["facts_replaced"] += replaced
        relations = []
    citer = (
        Citer(text or "", spans, across=content is not None)
        if doc_id is not None and relations
        else None
    )
    for relation in relations:
        subject, obj = end(relation["source"]), end(relation["target"])
        fact_id, created, replaced = store.add_fact(
            tx,
            tenant=tenant,
            scope=label,
            subject=subject,
            relation=relation["type"],
            obj=obj,
            attributes=relation["attributes"],
            valid_from=when,
            source=origin,
            replaces=relation["replaces"],
            recorded_at=stamp,
        )
        counts["facts_created" if created else "facts_existing"] += 1
        counts["facts_replaced"] += replaced
        held["facts"].append(fact_id)
        if citer is not None and doc_id is not None:
            cited = citer.span(relation["source"], relation["target"])
            store.cite(tx, tenant, fact_id, doc_id, *cited, (text or "")[slice(*cited)])
    unlinked = 0
    if doc_id is not None:
        unlinked, made = _link_mentions(
            tx, tenant, label, text or "", spans, chunk_ids, explicit, origin, stamp
        )
        counts["entities_created"] += made
    reply = {
        "outcome": "stored",
        "scope": label,
        "doc_id": doc_id,
        "passages": len(chunk_ids),
        **counts,
        "extraction": "agent_facts" if stated else "known_names_only",
        "model_extraction": "not_installed",
        "unlinked_passages": unlinked,
        "date": when,
    }
    for table in ("facts", "attributes"):  # what a later step of this call ended is not held
        held[table] = _current(tx, tenant, table, held[table])
    tx.execute(
        "INSERT INTO knowledge_calls (tenant, scope, fingerprint, reply, created_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT (tenant, scope, fingerprint)"
        " DO UPDATE SET reply = excluded.reply, created_at = excluded.created_at",
        (tenant, label, fingerprint, json.dumps({**reply, _HOLDS: held}), stamp),
    )
    return reply


_HOLDS = "_holds"
"""The key, in a call's stored reply, of the entities, facts and attribute values it left
current (by id), which decide whether the same call again is ``already``."""
_IDS_PER_QUERY = 500


def _current(tx: Tx, tenant: str, table: str, ids: list[int]) -> list[int]:
    """Those of ``ids`` (rows of facts or attributes) that are not ended."""
    live = "tenant = ? AND ended_at IS NULL"
    return sorted(rows_by_id(tx, f"SELECT id FROM {table}", ids, where=live, params=(tenant,)))


def _still_holds(tx: Tx, tenant: str, held: dict[str, list[int]], *, dated: bool) -> bool:
    """Whether the same call again is ``already``: every entity, fact and attribute value the
    earlier one left current is still there and, unless the call is dated, still current. An
    undated call is said when it is made: restated after something replaced what it said
    ("she moved back"), it is said again. A dated one is the same statement of the same time,
    whatever came later."""
    for table in ("entities", "facts", "attributes"):
        unique = sorted(set(held.get(table, [])))
        ended = "0" if table == "entities" else "count(ended_at)"
        for part in groups(unique, _IDS_PER_QUERY):
            row = tx.one(
                f"SELECT count(*) AS n, {ended} AS ended FROM {table} WHERE tenant = ?"
                f" AND id IN ({marks(part)})",
                [tenant, *part],
            )
            assert row is not None
            if int(row["n"]) < len(part) or (not dated and int(row["ended"])):
                return False
    return True


def _link_mentions(
    tx: Tx,
    tenant: str,
    scope: str,
    text: str,
    spans: list[Span],
    chunk_ids: list[int],
    explicit: list[list[str]],
    origin: str | None,
    stamp: str,
) -> tuple[int, int]:
    """Link each passage to the entities it names (those the caller named, made if new, and the
    known ones found in its text); return how many passages no entity reaches, and how many
    entities were made."""
    given = [explicit[index] if index < len(explicit) else [] for index in range(len(spans))]
    every = [name for names in given for name in names]
    entities = entity_batch.ensure(tx, tenant, scope, every, source=origin, recorded_at=stamp)
    made = sum(created for _, created in entities.values())
    named = [{entities[store.fold(name)][0] for name in names} for names in given]
    tx.executemany(
        "INSERT INTO mentions (tenant, chunk_id, entity_id) VALUES (?, ?, ?)"
        " ON CONFLICT DO NOTHING",
        [
            (tenant, chunk_id, e)
            for chunk_id, ids in zip(chunk_ids, named, strict=True)
            for e in ids
        ],
    )
    passages = [
        (chunk_id, text[s.start : s.end]) for chunk_id, s in zip(chunk_ids, spans, strict=True)
    ]
    known = link_passages(tx, tenant, scope, passages)
    unlinked = sum(1 for mine, found in zip(named, known, strict=True) if not mine and not found)
    return unlinked, made


def link_passages(
    tx: Tx, tenant: str, scope: str, passages: Sequence[tuple[int, str]]
) -> list[set[int]]:
    """Link each passage ``(chunk id, text)`` to the known entities of the scope whose whole
    name it holds, word-bounded; return the entities of each passage. The candidates are read
    once for all the passages (a document or a large message is thousands of them): every
    entity that shares a word with one of them, so the cost grows with how many names share
    the passages' words, not with the passages times those names."""
    linked: list[set[int]] = [set() for _ in passages]
    if not passages or not tx.scalar(
        "SELECT 1 FROM entities WHERE tenant = ? AND scope = ? LIMIT 1", (tenant, scope)
    ):
        return linked
    folded = [store.fold(text) for _, text in passages]
    present = [set(store.words(text)) - STOP_WORDS for text in folded]
    holding: dict[str, list[int]] = {}  # word -> the passages holding it
    for index, words in enumerate(present):
        for word in words:
            holding.setdefault(word, []).append(index)
    tokens = sorted(holding)
    candidates: dict[int, str] = {}
    for first in range(0, len(tokens), 400):
        part = tokens[first : first + 400]
        marks = ",".join("?" * len(part))
        for row in tx.all(
            "SELECT DISTINCT e.id, e.folded FROM entity_words w CROSS JOIN entities e"
            f" WHERE w.tenant = ? AND w.word IN ({marks}) AND e.tenant = w.tenant"
            " AND e.id = w.entity_id AND e.scope = ?",
            [tenant, *part, scope],
        ):
            candidates[row["id"]] = row["folded"]
    for entity_id, name in candidates.items():
        if len(passages) == 1:  # one text: looking for the name costs less than its words
            if named_in(name, folded[0]):
                linked[0].add(entity_id)
            continue
        needed = set(store.words(name)) - STOP_WORDS
        if not needed:
            continue
        rarest = min(needed, key=lambda word: len(holding.get(word, ())))
        for index in holding.get(rarest, ()):
            if needed <= present[index] and named_in(name, folded[index]):
                linked[index].add(entity_id)
    tx.executemany(
        "INSERT INTO mentions (tenant, chunk_id, entity_id) VALUES (?, ?, ?)"
        " ON CONFLICT DO NOTHING",
        [(tenant, passages[i][0], e) for i, ids in enumerate(linked) for e in sorted(ids)],
    )
    return linked
