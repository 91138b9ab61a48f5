"""Entities, attributes and facts in the store, and the three ways of looking at them in time.

* the present (default): facts not ended (``ended_at IS NULL``);
* ``as_of`` t: what was *known* at t (recorded at or before t, not ended by then);
* ``valid_at`` t: what was *true* at t (valid_from <= t < valid_to), whatever we know now;
* both: what was known at ``as_of`` about what was true at ``valid_at`` (decision 0151).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core.clock import not_after_now, now_iso, parse_time
from ..errors import InvalidInput
from ..store.base import Row, Tx, rows_by_id
from ..store.entity_names import fold as fold
from ..store.entity_names import nfc
from ..store.entity_names import words as words
from . import values
from .values import encode_fact_attributes

MAX_NAME_BYTES = 1024


def check_name(name: object, field: str = "name") -> str:
    # No NUL: PostgreSQL's text takes none, and SQLite stored what PostgreSQL refused as a
    # store error (the review of 0088).
    if not isinstance(name, str) or not name.strip() or "\0" in name:
        raise InvalidInput(f"{field} must be a non-empty name (with no NUL)")
    cleaned = " ".join(name.split())
    if len(cleaned.encode("utf-8")) > MAX_NAME_BYTES:
        raise InvalidInput(f"{field} is longer than {MAX_NAME_BYTES} bytes")
    return cleaned


def insert_document(
    tx: Tx,
    tenant: str,
    scope: str,
    *,
    title: str | None,
    text: str,
    principal: str,
    said_at: str | None,
    meta: dict[str, Any],
    stored_at: str,
    updated_at: str,
) -> int:
    """A document item of knowledge (a remembered text, an imported one); its id."""
    return int(
        tx.scalar(
            "INSERT INTO items (tenant, scope, item_type, title, content, source, occurred_at,"
            " meta, created_at, updated_at) VALUES (?, ?, 'document', ?, ?, ?, ?, ?, ?, ?)"
            " RETURNING id",
            (
                tenant,
                scope,
                title,
                text,
                principal,
                said_at,
                json.dumps(meta),
                stored_at,
                updated_at,
            ),
        )
    )


def check_key(key: object, field: str) -> str:
    """An attribute's key as it is stored: a non-empty text with no NUL."""
    text = str(key)
    if not text.strip() or "\0" in text or len(text.encode("utf-8")) > MAX_NAME_BYTES:
        raise InvalidInput(
            f"{field} {text[:40]!r} must be a non-empty text of at most {MAX_NAME_BYTES} bytes,"
            " with no NUL"
        )
    return text


@dataclass(frozen=True)
class View:
    """Which facts a read sees (see the module docstring)."""

    as_of: str | None = None
    valid_at: str | None = None

    def sql(self, alias: str = "f") -> tuple[str, list[Any]]:
        if self.as_of is not None and self.valid_at is not None:
            # Known by as_of, and true at valid_at as known then (decision 0151). A fact's end
            # of truth (valid_to) is written with its end in the memory (ended_at): one still
            # current at as_of had no end of truth then, whatever it has now. A current fact
            # with an end of truth (an import's record) had it from the start.
            return (
                f"{alias}.recorded_at <= ? AND ({alias}.valid_from IS NULL OR"
                f" {alias}.valid_from <= ?) AND ({alias}.valid_to IS NULL OR"
                f" {alias}.valid_to > ? OR {alias}.ended_at > ?)",
                [self.as_of, self.valid_at, self.valid_at, self.as_of],
            )
        if self.as_of is not None:
            return (
                f"{alias}.recorded_at <= ? AND ({alias}.ended_at IS NULL OR {alias}.ended_at > ?)",
                [self.as_of, self.as_of],
            )
        if self.valid_at is not None:
            return (
                f"({alias}.valid_from IS NULL OR {alias}.valid_from <= ?) AND "
                f"({alias}.valid_to IS NULL OR {alias}.valid_to > ?)",
                [self.valid_at, self.valid_at],
            )
        return f"{alias}.ended_at IS NULL", []

    def items_sql(self, alias: str = "i") -> tuple[str, list[Any]]:
        """Which stored texts (items) the read sees: with ``as_of``, those stored by then; with
        ``valid_at``, those said by then (their date, else when they were stored)."""
        clauses, params = [], []
        if self.as_of is not None:
            clauses.append(f"{alias}.created_at <= ?")
            params.append(self.as_of)
        if self.valid_at is not None:
            clauses.append(f"coalesce({alias}.occurred_at, {alias}.created_at) <= ?")
            params.append(self.valid_at)
        return " AND ".join(clauses) or "1 = 1", params

    @classmethod
    def of(cls, as_of: object, valid_at: object) -> View:
        """The view a caller asked for. An ``as_of`` later than now is refused: what the memory
        will know is not known yet, and the same question asked again later would answer
        differently (a ``valid_at`` may be later: a fact may hold from a future date). One a
        caller's clock put a little ahead reads now (``not_after_now``, decision 0165)."""
        known = None if as_of is None else not_after_now(as_of, "as_of")
        return cls(known, None if valid_at is None else parse_time(valid_at, "valid_at"))

    def knows(self, recorded_at: str) -> bool:
        """Whether an entity recorded then is visible: ``as_of`` hides what came later (what
        is true at ``valid_at`` does not depend on when it was learnt)."""
        return self.as_of is None or recorded_at <= self.as_of


_LOOKUP_CHUNK = 500  # bound parameters per query, far below SQLite's limit


def known_entities(tx: Tx, tenant: str, scope: str, names: list[str]) -> dict[str, int]:
    """Folded name -> entity id for those of ``names`` that exist: a batch of facts resolves
    its ends in a few queries instead of two per fact."""
    folded = sorted({fold(name) for name in names})
    found: dict[str, int] = {}
    for first in range(0, len(folded), _LOOKUP_CHUNK):
        part = folded[first : first + _LOOKUP_CHUNK]
        marks = ", ".join("?" * len(part))
        for row in tx.all(
            "SELECT folded, id FROM entities WHERE tenant = ? AND scope = ?"
            f" AND folded IN ({marks})",
            (tenant, scope, *part),
        ):
            found[row["folded"]] = int(row["id"])
    return found


def entity(
    tx: Tx,
    tenant: str,
    scope: str,
    name: str,
    *,
    source: str | None = None,
    create: bool = True,
    recorded_at: str | None = None,
    absent: bool = False,
) -> tuple[int, bool] | None:
    """(entity id, created) for a name in a scope; None when absent and not created. A new
    entity is recorded at ``recorded_at`` (the time of the call that names it), else now.
    ``absent``: the caller read already that the scope holds no such entity (an import's
    page), and it is made without being looked for again."""
    folded = fold(name)
    found = None
    if not absent:
        found = tx.scalar(
            "SELECT id FROM entities WHERE tenant = ? AND scope = ? AND folded = ?",
            (tenant, scope, folded),
        )
    if found is not None:
        return int(found), False
    if not create:
        return None
    new_id = int(
        tx.scalar(
            "INSERT INTO entities (tenant, scope, name, folded, source, recorded_at)"
            " VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
            (tenant, scope, name, folded, source, recorded_at or now_iso()),
        )
    )
    tx.executemany(
        "INSERT INTO entity_words (tenant, word, entity_id) VALUES (?, ?, ?)"
        " ON CONFLICT DO NOTHING",
        [(tenant, word, new_id) for word in set(words(folded))],
    )
    return new_id, True


def add_type(tx: Tx, tenant: str, entity_id: int, kind: str) -> None:
    add_types(tx, tenant, [(entity_id, kind)])


def add_types(tx: Tx, tenant: str, typed: Sequence[tuple[int, str]]) -> None:
    """Each (entity id, type) recorded, in one statement."""
    tx.executemany(
        "INSERT INTO entity_types (tenant, entity_id, type) VALUES (?, ?, ?)"
        " ON CONFLICT DO NOTHING",
        # as check_type stores it (0091)
        [(tenant, entity_id, nfc(kind).strip().lower()) for entity_id, kind in typed],
    )


def set_attribute(
    tx: Tx,
    tenant: str,
    entity_id: int,
    key: str,
    value: object,
    valid_from: str | None,
    recorded_at: str,
) -> tuple[bool, int]:
    """Make ``value`` the current value of ``key``; the older value stays as history.
    Returns whether anything changed, and the row of the current value."""
    kind, canonical = values.typed(value, f"attribute {key!r}")
    encoded = values.encode(kind, canonical)
    current = tx.one(
        "SELECT id, value, coalesce(valid_from, recorded_at) AS since FROM attributes"
        " WHERE tenant = ? AND entity_id = ? AND key = ? AND ended_at IS NULL",
        (tenant, entity_id, key),
    )
    if current is not None and current["value"] == encoded:
        return False, int(current["id"])
    if current is not None and valid_from is not None and valid_from < current["since"]:
        # Said of a time before the current value took effect: history, not the present (a
        # value dated 2019 learnt after one dated 2025 became current: a hunt over the graph).
        # Ended as it is recorded: no instant of our knowledge had it current.
        return True, int(
            tx.scalar(
                "INSERT INTO attributes (tenant, entity_id, key, value, valid_from, recorded_at,"
                " ended_at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (tenant, entity_id, key, encoded, valid_from, recorded_at, recorded_at),
            )
        )
    if current is not None:
        tx.execute(
            "UPDATE attributes SET ended_at = ? WHERE tenant = ? AND id = ?",
            (recorded_at, tenant, current["id"]),
        )
    row_id = tx.scalar(
        "INSERT INTO attributes (tenant, entity_id, key, value, valid_from, recorded_at)"
        " VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
        (tenant, entity_id, key, encoded, valid_from, recorded_at),
    )
    return True, int(row_id)


def attributes_of(tx: Tx, tenant: str, entity_id: int, view: View) -> dict[str, Any]:
    """The attribute values the view sees: current ones; those known at ``as_of``; or at
    ``valid_at``, for each key the value that took effect last by then (its date, else when it
    was recorded)."""
    if view.valid_at is not None:
        # With as_of too, only the values recorded by then compete (decision 0151).
        known = "" if view.as_of is None else " AND recorded_at <= ?"
        rows = tx.all(
            "SELECT key, value, coalesce(valid_from, recorded_at) AS since FROM attributes"
            " WHERE tenant = ? AND entity_id = ? AND coalesce(valid_from, recorded_at) <= ?"
            f"{known} ORDER BY since, id",
            (tenant, entity_id, view.valid_at, *([] if view.as_of is None else [view.as_of])),
        )
        return {row["key"]: values.decode(row["value"]) for row in rows}  # the last one wins
    if view.as_of is not None:
        where, params = (
            "recorded_at <= ? AND (ended_at IS NULL OR ended_at > ?)",
            [view.as_of, view.as_of],
        )
    else:
        where, params = "ended_at IS NULL", []
    rows = tx.all(
        f"SELECT key, value FROM attributes WHERE tenant = ? AND entity_id = ? AND {where}",
        [tenant, entity_id, *params],
    )
    return {row["key"]: values.decode(row["value"]) for row in rows}


def with_attribute(
    tx: Tx, tenant: str, scope: str, key: str, value: object, view: View
) -> list[Row]:
    """Entities (id, name) whose value of ``key`` is ``value`` (compared typed: 12 is not
    "12"), as the view sees it."""
    kind, canonical = values.typed(value, f"attribute {key!r}")
    wanted = values.encode(kind, canonical)
    # A decimal keeps the digits it was given ("1.80"), and is found by its value: 1.8 asked
    # missed 1.80 stored (the CLI reads fractions as exact decimals since 0113).
    same = values.same_value if kind == "decimal" else None
    rows = tx.all(
        "SELECT DISTINCT e.id, e.name, e.recorded_at, a.value FROM attributes a JOIN entities e"
        " ON e.tenant = a.tenant AND e.id = a.entity_id WHERE e.tenant = ? AND e.scope = ?"
        f" AND a.key = ? AND {'a.value LIKE ?' if same else 'a.value = ?'} ORDER BY e.id",
        (tenant, scope, key, values.KIND_PATTERN.format(kind=kind) if same else wanted),
    )
    asked = values.decode(wanted)
    found: list[Row] = []
    judged: set[int] = set()
    for row in rows:
        if row["id"] in judged or not view.knows(row["recorded_at"]):
            continue
        if same is not None and not same(values.decode(row["value"]), asked):
            continue
        # Its current value decides, once: a row for each spelling the entity's value was
        # ever written in ("1.8", "1.80") named the entity as many times among the seeds.
        judged.add(row["id"])
        if _holds(attributes_of(tx, tenant, row["id"], view).get(key), asked, same):
            found.append(row)
    return found


def _holds(current: Any, asked: dict[str, Any], same: Any) -> bool:
    """Whether the entity's current value of the key is the one asked for."""
    return current is not None and (current == asked if same is None else same(current, asked))


NEXT_TWIN = (
    "(SELECT count(*) FROM facts d WHERE d.tenant = ? AND d.subject_id = ? AND d.relation = ?"
    " AND d.object_id = ? AND d.recorded_at = ? AND d.valid_from IS NOT DISTINCT FROM ?)"
)
"""The ``twin`` of a fact about to be stored (bind tenant, subject, relation, object,
recorded_at, valid_from): how many alike facts came before it in the same call (see migration m008).
The facts :func:`add_plain_facts` inserts together have none: each is the first alike in its
call (a new version of one, later in the call, is stored by :func:`add_fact`)."""


def _merged(stored: str, given: dict[str, Any]) -> dict[str, Any] | None:
    """A current fact's attributes with the ``given`` ones laid over them, as entity attributes
    are set key by key; None when that changes nothing (``1.80`` over ``1.8`` changes it, as
    an entity's decimal does)."""
    old = values.decode_fact_attributes(stored)
    merged = {**old, **values.decode_fact_attributes(encode_fact_attributes(given))}
    return None if encode_fact_attributes(merged) == encode_fact_attributes(old) else merged


def add_fact(
    tx: Tx,
    *,
    tenant: str,
    scope: str,
    subject: int,
    relation: str,
    obj: int,
    attributes: dict[str, Any],
    valid_from: str | None,
    source: str | None,
    replaces: bool,
    recorded_at: str,
) -> tuple[int, bool, int]:
    """(fact id, created, facts replaced). The same current fact is not stored twice; stated
    with attributes that change it, it gets a new version (the new fact) from the call's date,
    else from now, and the older one ends then, replaced by it."""
    existing = tx.one(
        "SELECT id, attributes FROM facts WHERE tenant = ? AND subject_id = ? AND relation = ?"
        " AND object_id = ? AND ended_at IS NULL",
        (tenant, subject, relation, obj),
    )
    replaced = 0
    merged = None if existing is None else _merged(existing["attributes"], attributes)
    if existing is not None and merged is None:
        fact_id, created = int(existing["id"]), False
    else:
        since = valid_from if existing is None else valid_from or recorded_at
        if since is None and replaces and _ends_another(tx, tenant, (subject, relation, obj)):
            # Undated, it takes effect now (0098): true at no earlier instant than the target
            # it ends, or a valid_at before it answered both (0145).
            since = recorded_at
        fact_id = insert_fact(
            tx,
            (tenant, scope, subject, relation, obj),
            encode_fact_attributes(attributes if merged is None else merged),
            since,
            recorded_at,
            source,
        )
        created = True
        if existing is not None:
            replaced = tx.execute(
                "UPDATE facts SET valid_to = ?, ended_at = ?, replaced_by = ?"
                " WHERE tenant = ? AND id = ?",
                (since, recorded_at, fact_id, tenant, existing["id"]),
            )
    if replaces:
        replaced += _replace_others(
            tx, tenant, (subject, relation, obj), fact_id, created, valid_from, recorded_at
        )
    return fact_id, created, replaced


def _ends_another(tx: Tx, tenant: str, fact: tuple[int, str, int]) -> bool:
    """Whether the subject holds another current target of the relation (an undated fact
    takes effect now, so it ends every one of them)."""
    subject, relation, obj = fact
    return (
        tx.one(
            "SELECT 1 FROM facts WHERE tenant = ? AND subject_id = ? AND relation = ?"
            " AND object_id <> ? AND ended_at IS NULL LIMIT 1",
            (tenant, subject, relation, obj),
        )
        is not None
    )


def _replace_others(
    tx: Tx,
    tenant: str,
    fact: tuple[int, str, int],
    fact_id: int,
    created: bool,
    valid_from: str | None,
    recorded_at: str,
) -> int:
    """End the subject's other current targets of the relation that took effect no later than
    the fact; how many. One that took effect later is the present, and a new fact said of an
    earlier time ends where it begins: a back-dated statement ended a later fact before that
    fact began (true at no instant) and became current itself (a hunt over the graph)."""
    subject, relation, obj = fact
    since = valid_from or recorded_at
    others = "tenant = ? AND subject_id = ? AND relation = ? AND object_id <> ?"
    others += " AND ended_at IS NULL"
    started = "coalesce(valid_from, recorded_at)"
    if created:
        later = tx.one(
            f"SELECT id, {started} AS since FROM facts WHERE {others} AND {started} > ?"
            " ORDER BY since, id LIMIT 1",
            (tenant, subject, relation, obj, since),
        )
        if later is not None:
            tx.execute(
                "UPDATE facts SET valid_to = ?, ended_at = ?, replaced_by = ?"
                " WHERE tenant = ? AND id = ?",
                (later["since"], recorded_at, later["id"], tenant, fact_id),
            )
    return tx.execute(
        "UPDATE facts SET valid_to = ?, ended_at = ?, replaced_by = ?"
        f" WHERE {others} AND {started} <= ?",
        (since, recorded_at, fact_id, tenant, subject, relation, obj, since),
    )


def insert_fact(
    tx: Tx,
    fact: tuple[str, str, int, str, int],
    attributes: str,
    valid_from: str | None,
    recorded_at: str,
    source: str | None,
    *,
    valid_to: str | None = None,
    ended_at: str | None = None,
) -> int:
    """Insert ``(tenant, scope, subject, relation, object)`` (ended already when an import
    reads in a fact's history); return its id."""
    tenant, _, subject, relation, obj = fact
    return int(
        tx.scalar(
            "INSERT INTO facts (tenant, scope, subject_id, relation, object_id, attributes,"
            " valid_from, valid_to, recorded_at, ended_at, source, twin)"
            f" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, {NEXT_TWIN}) RETURNING id",
            (
                *fact,
                attributes,
                valid_from,
                valid_to,
                recorded_at,
                ended_at,
                source,
                *(tenant, subject, relation, obj, recorded_at, valid_from),
            ),
        )
    )


_TRIPLES_PER_QUERY = 300  # three parameters each
_ROWS_PER_INSERT = 100  # nine parameters each

Triple = tuple[int, str, int]


def current_facts(tx: Tx, tenant: str, triples: list[Triple]) -> dict[Triple, Row]:
    """(subject, relation, object) -> the current fact (id, attributes, recorded_at) of those
    that have one, in a few queries for a batch."""
    current: dict[Triple, Row] = {}
    for first in range(0, len(triples), _TRIPLES_PER_QUERY):
        part = triples[first : first + _TRIPLES_PER_QUERY]
        rows = ", ".join("(?, ?, ?)" for _ in part)
        for row in tx.all(
            f"WITH wanted (s, r, o) AS (VALUES {rows})"
            " SELECT DISTINCT s, r, o, f.id, f.attributes, f.recorded_at FROM wanted JOIN facts f"
            " ON f.tenant = ? AND f.subject_id = s AND f.relation = r AND f.object_id = o"
            " AND f.ended_at IS NULL",
            [*(value for triple in part for value in triple), tenant],
        ):
            current[(int(row["s"]), str(row["r"]), int(row["o"]))] = row
    return current


def add_plain_facts(
    tx: Tx,
    *,
    tenant: str,
    scope: str,
    facts: list[tuple[int, str, int, dict[str, Any]]],
    valid_from: str | None,
    source: str | None,
    recorded_at: str,
) -> tuple[int, int, list[int]]:
    """Store many (subject, relation, object, attributes) facts that replace nothing and cite
    nothing, in order, as :func:`add_fact` would one by one (a fact already current, or
    repeated in the batch, is not stored twice; one stated with attributes that change it gets
    a new version), in a few statements. Returns how many were created, how many versions
    they ended, and the current fact of each."""
    found = current_facts(tx, tenant, [(s, r, o) for s, r, o, _ in facts])
    current = {triple: str(row["attributes"]) for triple, row in found.items()}
    ids = {triple: int(row["id"]) for triple, row in found.items()}
    new, versions = [], []
    for subject, relation, obj, attributes in facts:
        triple = (subject, relation, obj)
        if triple not in current:
            current[triple] = encode_fact_attributes(attributes)
            new.append((tenant, scope, *triple, current[triple], valid_from, recorded_at, source))
            continue
        merged = _merged(current[triple], attributes)
        if merged is not None:  # rare: stored one by one after the new ones, in order
            current[triple] = encode_fact_attributes(merged)
            versions.append((subject, relation, obj, attributes))
    for first in range(0, len(new), _ROWS_PER_INSERT):
        part = new[first : first + _ROWS_PER_INSERT]
        # Each new triple is once in the batch: the rows say which id is whose.
        for row in tx.all(
            "INSERT INTO facts (tenant, scope, subject_id, relation, object_id, attributes,"
            " valid_from, recorded_at, source) VALUES"
            f" {', '.join('(?, ?, ?, ?, ?, ?, ?, ?, ?)' for _ in part)}"
            " RETURNING id, subject_id, relation, object_id",
            [value for fact in part for value in fact],
        ):
            ids[(int(row["subject_id"]), str(row["relation"]), int(row["object_id"]))] = int(
                row["id"]
            )
    replaced = 0
    for subject, relation, obj, attributes in versions:
        fact_id, _, ended = add_fact(
            tx,
            tenant=tenant,
            scope=scope,
            subject=subject,
            relation=relation,
            obj=obj,
            attributes=attributes,
            valid_from=valid_from,
            source=source,
            replaces=False,
            recorded_at=recorded_at,
        )
        ids[(subject, relation, obj)] = fact_id
        replaced += ended
    return len(new) + len(versions), replaced, sorted(ids.values())


def quote_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def cite(
    tx: Tx, tenant: str, fact_id: int, item_id: int, start: int, stop: int, quote: str
) -> None:
    tx.execute(
        "INSERT INTO fact_sources (tenant, fact_id, item_id, start, stop, quote_hash)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (tenant, fact_id, item_id, start, stop, quote_hash(quote)),
    )


def entity_rows(tx: Tx, tenant: str, ids: list[int]) -> dict[int, Row]:
    return rows_by_id(tx, "SELECT * FROM entities", ids, where="tenant = ?", params=(tenant,))


def types_of(tx: Tx, tenant: str, ids: list[int]) -> dict[int, list[str]]:
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    found: dict[int, list[str]] = {}
    for row in tx.all(
        f"SELECT entity_id, type FROM entity_types WHERE tenant = ? AND entity_id IN ({marks})"
        " ORDER BY type",
        [tenant, *ids],
    ):
        found.setdefault(row["entity_id"], []).append(row["type"])
    return found
