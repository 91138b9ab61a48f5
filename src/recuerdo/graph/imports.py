"""The knowledge records of an import (``document``, ``entity``, ``fact``), which
``transfer.import_records`` reads in.

Each record is checked whole, with the checks the write verbs make, before anything of it is
written: a record found malformed half-way left rows behind (a fact, an attribute) while the
reply called it skipped, and the same page sent again failed on the rows it had left; a field
the write verbs refuse (no time, a type that is a number, an object where a time goes) reached
the store and failed the whole call. What is written then follows the write path's rules: one
current value per attribute, one current fact per (subject, relation, object), an entity known
from the first record that names it (decision 0088).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from ..core.clock import now_iso, parse_time
from ..core.text import checked_label, checked_text
from ..errors import RecuerdoError
from ..index.chunk import Span
from ..index.chunks import check_spans, insert_chunks
from ..notes.transfer import record_key
from ..store.base import Row, Tx, groups, marks
from . import cite, store, values
from .import_page import Page, add_types, entity_of, link
from .remember import LIMITS, check_relation, check_type

KINDS = ("document", "entity", "fact")
"""The records read in here, each given the call's :class:`Page`."""
MAX_DOCUMENT_BYTES = LIMITS["passages"] * (LIMITS["passage_bytes"] + 2)
"""The largest text a ``remember_knowledge`` call stores (its passages, joined)."""


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _whole(check: Callable[_P, _R]) -> Callable[_P, _R]:
    """A check whose refusal makes the record malformed (skipped), not the whole import."""

    def checked(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return check(*args, **kwargs)
        except RecuerdoError as error:
            raise ValueError(error.detail) from error

    return checked


def _time(value: object, field: str) -> str | None:
    return None if value is None else parse_time(value, field)


def _list(value: object, field: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{field} is a list")
    return value


def _object(value: object, field: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{field} is an object")
    return value


def _items(record: dict[str, Any], name: str) -> list[tuple[str, dict[str, Any]]]:
    """The objects of a record's list ``name``, each with the field that names it."""
    listed = _list(record.get(name), name)
    return [(f"{name}[{i}]", _object(given, f"{name}[{i}]")) for i, given in enumerate(listed)]


def _text(given: dict[str, Any], field: str, name: str, meaning: str) -> str:
    value = given.get(name)
    if not isinstance(value, str):
        raise ValueError(f"{field}.{name} is {meaning}")
    return value


def _offset(value: object, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{field} is a whole number from 0")
    return value


def _label(value: object, field: str) -> str | None:
    return None if value is None else checked_label(value, field)


def _types(value: object, field: str) -> list[str]:
    return [check_type(kind, f"{field}[{i}]") for i, kind in enumerate(_list(value, field))]


@dataclass(frozen=True)
class _Document:
    text: str
    spans: list[Span]
    mentions: list[list[str]]
    name: str | None
    source: str | None
    kind: str
    date: str | None
    ingested_at: str


@_whole
def _checked_document(record: dict[str, Any]) -> _Document:
    text = checked_text(record.get("text"), "text", max_bytes=MAX_DOCUMENT_BYTES)
    spans, mentions = [], []
    for index, passage in enumerate(_list(record.get("passages"), "passages")):
        field = f"passages[{index}]"
        _object(passage, field)
        start = _offset(passage.get("start"), f"{field}.start")
        spans.append(Span(start, _offset(passage.get("end"), f"{field}.end")))
        named = _list(passage.get("mentions"), f"{field}.mentions")
        mentions.append([store.check_name(name, f"{field}.mentions") for name in named])
    check_spans(text, spans)
    return _Document(
        text=text,
        spans=spans,
        mentions=mentions,
        name=_label(record.get("name"), "name"),
        source=_label(record.get("source"), "source"),
        kind=checked_label(record.get("kind", "text"), "kind"),
        date=_time(record.get("date"), "date"),
        ingested_at=_time(record.get("ingested_at"), "ingested_at") or now_iso(),
    )


def import_document(
    tx: Tx,
    tenant: str,
    principal: str,
    scope: str,
    record: dict[str, Any],
    page: Page,
) -> None:
    doc = _checked_document(record)
    meta = {"kind": doc.kind, "source": doc.source, "import_key": record["key"]}
    doc_id = store.insert_document(
        tx,
        tenant,
        scope,
        title=doc.name,
        text=doc.text,
        principal=principal,
        said_at=doc.date,
        meta=meta,
        stored_at=doc.ingested_at,
        updated_at=now_iso(),
    )
    chunk_ids = insert_chunks(tx, tenant, doc_id, doc.text, doc.spans, title=doc.name or "")
    # Each name once: an entity looked up (and dated back) per mention was two statements a
    # mention of every passage.
    entities = {
        name: entity_of(tx, tenant, scope, name, doc.ingested_at, page)
        for name in {name for names in doc.mentions for name in names}
    }
    tx.executemany(
        "INSERT INTO mentions (tenant, chunk_id, entity_id) VALUES (?, ?, ?)"
        " ON CONFLICT DO NOTHING",
        [
            (tenant, chunk_id, entities[name])
            for names, chunk_id in zip(doc.mentions, chunk_ids, strict=True)
            for name in names
        ],
    )


@dataclass(frozen=True)
class _Value:
    key: str
    encoded: str
    valid_from: str | None
    recorded_at: str
    ended_at: str | None

    def said(self) -> tuple[str, str, str | None, str]:
        """What was said and when: a value held here that says it is this one, even if this
        import has ended it since."""
        return (self.key, self.encoded, self.valid_from, self.recorded_at)


@dataclass(frozen=True)
class _Entity:
    name: str
    types: list[str]
    values: list[_Value]
    recorded_at: str | None


@_whole
def _checked_entity(record: dict[str, Any]) -> _Entity:
    kept = []
    for field, given in _items(record, "attributes"):
        key = store.check_key(_text(given, field, "key", "a text"), f"{field}.key")
        if "value" not in given:
            raise ValueError(f"{field} has no value")
        kind, canonical = values.typed(given["value"], f"attribute {key!r}")
        recorded_at = parse_time(given.get("recorded_at"), f"{field}.recorded_at")
        kept.append(
            _Value(
                key=key,
                encoded=values.encode(kind, canonical),
                valid_from=_time(given.get("valid_from"), f"{field}.valid_from"),
                recorded_at=recorded_at,
                ended_at=_time(given.get("ended_at"), f"{field}.ended_at"),
            )
        )
    return _Entity(
        name=store.check_name(record.get("name")),
        types=_types(record.get("types"), "types"),
        values=kept,
        recorded_at=_time(record.get("recorded_at"), "recorded_at"),
    )


def import_entity(
    tx: Tx,
    tenant: str,
    principal: str,
    scope: str,
    record: dict[str, Any],
    page: Page,
) -> None:
    entity = _checked_entity(record)
    entity_id = entity_of(tx, tenant, scope, entity.name, entity.recorded_at, page)
    add_types(tx, tenant, entity_id, entity.types, page)
    # An entity this call made holds no value but those this call gave it.
    asked = entity_id not in page.made or entity_id in page.valued
    held = Counter(
        (r["key"], r["value"], r["valid_from"], r["recorded_at"])
        for r in (
            tx.all(
                "SELECT key, value, valid_from, recorded_at FROM attributes"
                " WHERE tenant = ? AND entity_id = ?",
                (tenant, entity_id),
            )
            if asked
            else ()
        )
    )
    if entity.values:
        page.valued.add(entity_id)
    for value in entity.values:
        if held[value.said()]:  # a copy read back (A to B to A) adds no row twice
            held[value.said()] -= 1
            continue
        _add_value(tx, tenant, entity_id, value)


def _add_value(tx: Tx, tenant: str, entity_id: int, value: _Value) -> None:
    """One value of an attribute's history, beside those held here: of two current values the
    one recorded later stays current and ends the other then (as a write would have, in that
    order). The rows were inserted as they came, and an entity held here with another value
    had two current ones."""
    ended_at = value.ended_at
    if ended_at is None:
        current = tx.one(
            "SELECT id, value, recorded_at FROM attributes WHERE tenant = ? AND entity_id = ?"
            " AND key = ? AND ended_at IS NULL ORDER BY recorded_at DESC, id DESC",
            (tenant, entity_id, value.key),
        )
        if current is not None and current["value"] == value.encoded:
            return
        if current is not None and current["recorded_at"] > value.recorded_at:
            ended_at = current["recorded_at"]
        elif current is not None:
            tx.execute(
                "UPDATE attributes SET ended_at = ? WHERE tenant = ? AND id = ?",
                (value.recorded_at, tenant, current["id"]),
            )
    tx.execute(
        "INSERT INTO attributes (tenant, entity_id, key, value, valid_from, recorded_at,"
        " ended_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (tenant, entity_id, *value.said(), ended_at),
    )


@dataclass(frozen=True)
class _Fact:
    subject: str
    relation: str
    object: str
    types: tuple[list[str], list[str]]
    attributes: str
    valid_from: str | None
    valid_to: str | None
    recorded_at: str
    ended_at: str | None
    source: str | None
    replaced_by: str | None
    sources: list[tuple[str, int, int]]

    @property
    def ends(self) -> tuple[str, str]:
        return self.subject, self.object


@_whole
def _checked_fact(record: dict[str, Any]) -> _Fact:
    attributes = record.get("attributes") or {}
    _object(attributes, "attributes")
    replaced_by = record.get("replaced_by")
    if replaced_by is not None and not isinstance(replaced_by, str):
        raise ValueError("replaced_by is the key of a fact record")
    sources = []
    for field, given in _items(record, "sources"):
        key = _text(given, field, "document_key", "the key of a document record")
        start = _offset(given.get("start"), f"{field}.start")
        stop = _offset(given.get("end"), f"{field}.end")
        if stop < start:
            raise ValueError(f"{field} ends before it starts")
        sources.append((key, start, stop))
    return _Fact(
        subject=store.check_name(record.get("subject"), "subject"),
        relation=check_relation(record.get("relation"), "relation"),
        object=store.check_name(record.get("object"), "object"),
        types=(
            _types(record.get("subject_types"), "subject_types"),
            _types(record.get("object_types"), "object_types"),
        ),
        attributes=_finite(attributes),
        valid_from=_time(record.get("valid_from"), "valid_from"),
        valid_to=_time(record.get("valid_to"), "valid_to"),
        recorded_at=parse_time(record.get("recorded_at"), "recorded_at"),
        ended_at=_time(record.get("ended_at"), "ended_at"),
        source=_label(record.get("source"), "source"),
        replaced_by=replaced_by,
        sources=sources,
    )


def _finite(attributes: dict[str, Any]) -> str:
    """A fact's attributes as stored, refused as the write verbs refuse them: an import kept
    NaN and Infinity, which ``relate`` refuses and no JSON reader takes (the review of 0088).
    Fractions keep their digits, as ``relate`` keeps them."""
    return values.encode_fact_attributes(values.fact_attributes(attributes, "attributes"))


def _cited(
    tx: Tx, tenant: str, scope: str, sources: list[tuple[str, int, int]]
) -> list[tuple[int, int, int, str]]:
    """(document id, start, stop, quote) of each source whose document was read in here (one
    that was not, or is forgotten, is left out); a span past its document's end is refused."""
    key_of = tx.json_text("meta", "import_key")
    keys = sorted({key for key, _, _ in sources})
    docs = {  # each document read once, however many sources cite it
        row["key"]: row
        for part in groups(keys, 500)
        for row in tx.all(
            f"SELECT id, content, {key_of} AS key FROM items WHERE tenant = ? AND scope = ?"
            f" AND item_type = 'document' AND {key_of} IN ({marks(part)})",
            (tenant, scope, *part),
        )
    }
    passages = cite.live_passages(tx, tenant, {int(doc["id"]) for doc in docs.values()})
    cited = []
    for index, (key, start, stop) in enumerate(sources):
        doc = docs.get(key)
        if doc is None:
            continue
        if stop > len(doc["content"]):
            raise ValueError(f"sources[{index}] runs past the end of its document")
        if stop > start and not cite.in_passages(passages.get(int(doc["id"]), []), start, stop):
            continue
        cited.append((int(doc["id"]), start, stop, doc["content"][start:stop]))
    return cited


def import_fact(
    tx: Tx,
    tenant: str,
    principal: str,
    scope: str,
    record: dict[str, Any],
    page: Page,
) -> str | None:
    fact = _checked_fact(record)
    cited = _cited(tx, tenant, scope, fact.sources) if fact.sources else []
    subject, obj = (
        entity_of(tx, tenant, scope, name, fact.recorded_at, page) for name in fact.ends
    )
    for entity_id, kinds in ((subject, fact.types[0]), (obj, fact.types[1])):
        add_types(tx, tenant, entity_id, kinds, page)
    # As a write would: a fact current here already is not stored twice (the import read in a
    # second copy of every fact a scope shared with the one it came from).
    held = ended = None
    triple = (subject, fact.relation, obj)
    if fact.ended_at is None:
        current = page.current_fact(tx, tenant, triple)
        if current is not None and not values.same_fact_attributes(
            current["attributes"], fact.attributes
        ):
            # Other attributes make another version, as ``relate`` makes it (the held fact's
            # were kept and the record's dropped: the review of 0088), the later one current.
            fact = _versioned(fact, current)
            ended = current["id"] if fact.ended_at is None else None
        elif current is not None:
            held = current["id"]
    elif triple in page.tracked:  # history: the same ended fact, read back (A to B to A)
        held = _held_history(tx, tenant, triple, fact, record["key"])
    fact_id = (
        store.insert_fact(
            tx,
            (tenant, scope, subject, fact.relation, obj),
            fact.attributes,
            fact.valid_from,
            fact.recorded_at,
            fact.source,
            valid_to=fact.valid_to,
            ended_at=fact.ended_at,
        )
        if held is None
        else int(held)
    )
    if held is None and fact.ended_at is None and page.knows(triple):
        page.current[triple] = {
            "id": fact_id,
            "attributes": fact.attributes,
            "recorded_at": fact.recorded_at,
        }
    if ended is not None:  # ended where the record begins, replaced by it: one statement
        tx.execute(
            "UPDATE facts SET valid_to = ?, ended_at = ?, replaced_by = ?"
            " WHERE tenant = ? AND id = ?",
            (fact.valid_from or fact.recorded_at, fact.recorded_at, fact_id, tenant, ended),
        )
    link(tx, tenant, scope, record["key"], fact_id, fact.replaced_by, new=held is None, page=page)
    for doc_id, start, stop, quote in cited:
        store.cite(tx, tenant, fact_id, doc_id, start, stop, quote)
    if held is None:
        return None
    added = ", its sources were added to it" if cited else ""
    here = "here already, ended as the record says" if fact.ended_at else "current here already"
    return (
        f"the fact {fact.subject} {fact.relation} {fact.object} is {here}"
        f" (fact {fact_id}): nothing was stored twice{added}"
    )


def _held_history(
    tx: Tx, tenant: str, triple: tuple[int, str, int], fact: _Fact, key: str
) -> int | None:
    """The ended fact held here that the record says, if any: the same triple, times and
    attributes. A scope's history read back into it (its own export, or a round trip through
    another scope) was stored a second time, where its current facts were not. Of twins (the
    same fact held twice), the one the record was exported from: the first held both records,
    and each record's ``replaced_by`` was written on it (the review of 0175)."""
    held = [
        row
        for row in tx.all(
            "SELECT id, attributes, valid_from, valid_to, twin FROM facts WHERE tenant = ?"
            " AND subject_id = ? AND relation = ? AND object_id = ? AND recorded_at = ?"
            " AND ended_at = ? ORDER BY id",
            (tenant, *triple, fact.recorded_at, fact.ended_at),
        )
        if (row["valid_from"], row["valid_to"]) == (fact.valid_from, fact.valid_to)
        and values.same_fact_attributes(row["attributes"], fact.attributes)
    ]
    # The export's key (transfer._fact_key): folded names, times, and the twin when not 0.
    ends = (store.fold(fact.subject), fact.relation, store.fold(fact.object))
    for row in held:
        twin = [int(row["twin"])] if row["twin"] else []
        if record_key("fact", *ends, fact.valid_from, fact.recorded_at, *twin) == key:
            return int(row["id"])
    return int(held[0]["id"]) if held else None


def _versioned(fact: _Fact, current: Row) -> _Fact:
    """The record as a version beside the current fact of other attributes: recorded later,
    it stays as it is (and ends the current one once written); recorded earlier, it is
    history, ended where the current one begins (its ``replaced_by`` is left to the record's
    own)."""
    if fact.recorded_at > current["recorded_at"]:
        return fact
    return dataclasses.replace(
        fact, valid_to=fact.valid_to or current["recorded_at"], ended_at=current["recorded_at"]
    )
