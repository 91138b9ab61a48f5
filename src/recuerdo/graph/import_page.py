"""What one import call learns of the scope it reads into (decision 0175).

An import asked the store, for each record, whether its key was read in before, each entity a
fact names (and dated it back), the fact current for its triple, and which facts await it as
their replacement: some twelve statements a fact, each a round trip on PostgreSQL (25,000
records took 98 s there). A :class:`Page` holds the answers for the whole call: the keys and
entities of the page are read in a few statements, what the call makes is remembered as it
makes it, and the ``import_facts`` rows are written together at the end (:func:`finish`).
"""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass
from typing import Any

from ..errors import RecuerdoError
from ..store.base import Tx, groups, marks
from . import store
from .remember import check_relation


@dataclass
class Page:
    """What one import call has learnt of the scope it reads into, so that each thing is asked
    of the store once a call rather than once a record: a page of facts names each entity
    many times, and each naming was a lookup and a dating back (two statements, of some ten a
    fact: on PostgreSQL each a round trip).

    ``entities``: folded name -> [id, recorded_at] of the entities found or made (recorded_at
    as stored, None when not known here); ``typed``: the (entity, type) pairs recorded."""

    looked_for: set[str] = dataclasses.field(default_factory=set)
    """The folded names the page's reading looked for: one of them not in ``entities`` is
    held by no entity of the scope."""
    entities: dict[str, list[Any]] = dataclasses.field(default_factory=dict)
    typed: set[tuple[int, str]] = dataclasses.field(default_factory=set)
    awaited: set[str] = dataclasses.field(default_factory=set)
    """The fact keys that facts of earlier calls name as their ``replaced_by``, of those of
    the page (read before it)."""
    made: set[int] = dataclasses.field(default_factory=set)
    """The entities made by this call: every fact naming one, and every value of one, was read
    in by this call too."""
    valued: set[int] = dataclasses.field(default_factory=set)
    """The made entities this call gave values to (their values are asked of the store)."""
    keyed: dict[str, int] = dataclasses.field(default_factory=dict)
    """Fact key -> fact, for the facts this call read in."""
    waiting: dict[str, list[int]] = dataclasses.field(default_factory=dict)
    """Fact key -> the facts of this call whose record names it as their ``replaced_by``."""
    rows: list[tuple[str, str, str, int, str | None]] = dataclasses.field(default_factory=list)
    """The ``import_facts`` rows of this call, written together by :func:`finish` (nothing of
    the call reads them: ``keyed`` and ``waiting`` answer for them)."""
    tracked: set[tuple[int, str, int]] = dataclasses.field(default_factory=set)
    """The (subject, relation, object) of the page's facts whose entities the scope held,
    whose current facts were read with the page."""
    current: dict[tuple[int, str, int], dict[str, Any]] = dataclasses.field(default_factory=dict)
    """The current fact (id, attributes, recorded_at) of each tracked triple, and of each of
    a made entity, that has one: what the store would answer, without asking it."""

    def knows(self, triple: tuple[int, str, int]) -> bool:
        return triple in self.tracked or triple[0] in self.made or triple[2] in self.made

    def current_fact(self, tx: Tx, tenant: str, triple: tuple[int, str, int]) -> Any:
        """The current fact of ``triple``, as ``facts`` holds it at this point of the call."""
        if self.knows(triple):
            return self.current.get(triple)
        return tx.one(
            "SELECT id, attributes, recorded_at FROM facts WHERE tenant = ? AND subject_id = ?"
            " AND relation = ? AND object_id = ? AND ended_at IS NULL",
            (tenant, *triple),
        )


def finish(tx: Tx, page: Page) -> None:
    """Write what the call kept for the end (``Page.rows``)."""
    tx.executemany(
        "INSERT INTO import_facts (tenant, scope, key, fact_id, replaced_by_key)"
        " VALUES (?, ?, ?, ?, ?)",
        page.rows,
    )
    page.rows.clear()


def page_of(tx: Tx, tenant: str, scope: str, records: list[Any]) -> Page:
    """A :class:`Page` for ``records``, with the entities they name that the scope holds, and
    the fact keys of theirs that earlier imports' facts await, read in a few statements."""
    names: set[str] = set()
    keys: set[str] = set()
    named: list[tuple[str, Any, str]] = []  # each fact's folded ends and relation
    for record in records:
        if not isinstance(record, dict) or record.get("record") not in ("fact", "entity"):
            continue
        ends = {}
        for field in ("subject", "object", "name"):
            with contextlib.suppress(RecuerdoError):
                ends[field] = store.fold(store.check_name(record.get(field)))
        names.update(ends.values())
        if record["record"] == "fact":
            if isinstance(record.get("key"), str):
                keys.add(record["key"])
            if "subject" in ends and "object" in ends:
                named.append((ends["subject"], record.get("relation"), ends["object"]))
    page = Page(looked_for=names)
    for part in groups(sorted(names), 500):
        for row in tx.all(
            "SELECT id, folded, recorded_at FROM entities WHERE tenant = ? AND scope = ?"
            f" AND folded IN ({marks(part)})",
            (tenant, scope, *part),
        ):
            page.entities[row["folded"]] = [int(row["id"]), row["recorded_at"]]
    held = sorted(entity_id for entity_id, _ in page.entities.values())
    for part in groups(held, 500):
        page.typed.update(
            (int(row["entity_id"]), row["type"])
            for row in tx.all(
                "SELECT entity_id, type FROM entity_types WHERE tenant = ?"
                f" AND entity_id IN ({marks(part)})",
                (tenant, *part),
            )
        )
    page.tracked = _triples(named, page)
    for triple, row in store.current_facts(tx, tenant, sorted(page.tracked)).items():
        page.current[triple] = {
            "id": int(row["id"]),
            "attributes": row["attributes"],
            "recorded_at": row["recorded_at"],
        }
    for part in groups(sorted(keys), 500):
        page.awaited.update(
            row["replaced_by_key"]
            for row in tx.all(
                "SELECT DISTINCT replaced_by_key FROM import_facts WHERE tenant = ?"
                f" AND scope = ? AND replaced_by_key IN ({marks(part)})",
                (tenant, scope, *part),
            )
        )
    return page


def _triples(named: list[tuple[str, Any, str]], page: Page) -> set[tuple[int, str, int]]:
    """(subject, relation, object) of the facts (folded ends, relation as given) both of whose
    entities the page holds (a record whose relation cannot be read is skipped by its
    import)."""
    triples = set()
    for subject_name, given, object_name in named:
        subject, obj = page.entities.get(subject_name), page.entities.get(object_name)
        if subject is None or obj is None:
            continue
        try:
            relation = check_relation(given, "relation")
        except (RecuerdoError, ValueError):
            continue
        triples.add((int(subject[0]), relation, int(obj[0])))
    return triples


def entity_of(tx: Tx, tenant: str, scope: str, name: str, known_at: str | None, page: Page) -> int:
    """The entity of a name, made if new. One made here later than the record says it was
    known is dated back: a document read in before the entity's record named it at the
    document's time, and ``as_of`` reads between the two answered nothing after a round trip."""
    folded = store.fold(name)
    held = page.entities.get(folded)
    if held is None:
        # A name the page looked for and did not find is made without a second look.
        absent = folded in page.looked_for
        found = store.entity(tx, tenant, scope, name, recorded_at=known_at, absent=absent)
        assert found is not None
        # Made here: recorded when the record says; found: not known, dated back below.
        held = page.entities[folded] = [found[0], known_at if found[1] else None]
        if found[1]:
            page.made.add(found[0])
            return int(held[0])
    if known_at is not None and (held[1] is None or held[1] > known_at):
        tx.execute(
            "UPDATE entities SET recorded_at = ? WHERE tenant = ? AND id = ? AND recorded_at > ?",
            (known_at, tenant, held[0], known_at),
        )
        # Not known still when it was not (the statement kept the earlier of the two).
        held[1] = known_at if held[1] is not None else None
    return int(held[0])


def add_types(tx: Tx, tenant: str, entity_id: int, kinds: list[str], page: Page) -> None:
    """The entity's types that the scope did not hold (read with the page) and this call has
    not recorded, in one statement."""
    new = [(entity_id, kind) for kind in kinds if (entity_id, kind) not in page.typed]
    if new:
        store.add_types(tx, tenant, new)
        page.typed.update(new)


def link(
    tx: Tx,
    tenant: str,
    scope: str,
    key: str,
    fact_id: int,
    replaced_by: str | None,
    *,
    new: bool,
    page: Page,
) -> None:
    """Record the fact's key, and link it to the fact its record says replaced it and to the
    facts whose records say it replaced them, wherever each was read in: by this call
    (``Page.keyed``, ``Page.waiting``) or an earlier one (``import_facts``)."""
    page.rows.append((tenant, scope, key, fact_id, replaced_by))
    page.keyed[key] = fact_id
    if replaced_by is not None:
        page.waiting.setdefault(replaced_by, []).append(fact_id)
        # A fact inserted here has no replaced_by yet: set only when the record names one.
        if new and replaced_by in page.keyed:
            tx.execute(
                "UPDATE facts SET replaced_by = ? WHERE tenant = ? AND id = ?",
                (page.keyed[replaced_by], tenant, fact_id),
            )
        elif new:
            tx.execute(
                "UPDATE facts SET replaced_by = (SELECT fact_id FROM import_facts WHERE"
                " tenant = ? AND scope = ? AND key = ?) WHERE tenant = ? AND id = ?",
                (tenant, scope, replaced_by, tenant, fact_id),
            )
    if key in page.awaited:  # facts read in by earlier calls name this one as replacing them
        tx.execute(
            "UPDATE facts SET replaced_by = ? WHERE tenant = ? AND id IN (SELECT fact_id"
            " FROM import_facts WHERE tenant = ? AND scope = ? AND replaced_by_key = ?)",
            (fact_id, tenant, tenant, scope, key),
        )
    waiting = page.waiting.get(key)
    if waiting:  # and those of this call
        tx.execute(
            f"UPDATE facts SET replaced_by = ? WHERE tenant = ? AND id IN ({marks(waiting)})",
            (fact_id, tenant, *waiting),
        )
