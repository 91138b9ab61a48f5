"""An import asks the store what a page of records needs once a call, not once a record
(decision 0175): whether each key was read in before, which entities the facts name, which
facts await a replacement. A page of facts named each entity, and asked each key, in
statements of its own: about twelve a fact, each a round trip on PostgreSQL (25,000 records
took 98 s there). What is read in is the same: the copy exports as its source does, a
replacement read in a later call than the fact it replaces (or an earlier one) included.
Every store; the statement counts fail on the code before."""

from __future__ import annotations

import random
from typing import Any

import pytest

import recuerdo

from .conftest import statements_run, tx_class_of

PEOPLE = ["Ana Ruiz", "Bo Lind", "Cy Okafor", "Di Moreau", "Ed Vance", "Fa Haddad"]
COMPANIES = ["Acme", "Globex", "Initech"]


def filled(memory: recuerdo.Memory) -> list[dict[str, Any]]:
    """Facts among a few entities in ``user``, some replacing others (a move of job), and the
    scope's export, its header left out."""
    rng = random.Random(5)
    for month in range(1, 13):
        relations = [
            {"source": rng.choice(PEOPLE), "target": rng.choice(PEOPLE), "type": "knows"}
            for _ in range(4)
        ]
        relations.append(
            {
                "source": PEOPLE[month % len(PEOPLE)],
                "target": COMPANIES[month // 6 % len(COMPANIES)],
                "type": "works_at",
                "replaces": "works_at",
            }
        )
        memory.remember_knowledge(
            facts={
                "entities": [{"name": name, "type": "person"} for name in PEOPLE],
                "relations": relations,
            },
            date=f"2024-{month:02d}-01",
        )
    return [r for r in memory.export(limit=1024)["records"] if r["record"] != "export"]


def as_exported(memory: recuerdo.Memory, scope: str) -> list[dict[str, Any]]:
    """The scope's export, without what names the scope or the time of the export."""
    records = memory.export(scope=scope, limit=1024)["records"]
    return sorted(
        (r for r in records if r["record"] != "export"),
        key=lambda r: (r["record"], r["key"]),
    )


def test_a_page_asks_the_store_once_for_its_keys_and_entities(memory: recuerdo.Memory) -> None:
    records = filled(memory)
    facts = [r for r in records if r["record"] == "fact"]
    assert len(facts) >= 30 and any(f.get("replaced_by") for f in facts)
    with (
        pytest.MonkeyPatch.context() as patch,
        statements_run(patch, tx_class_of(memory), this_thread_only=True) as seen,
    ):
        reply = memory.import_records(records, scope="copy")
    assert reply["imported"] == len(records) and reply["skipped"] == []
    sent = [sql for sql, _ in seen]
    # One read of the keys (their writes go together, through executemany)...
    assert sum("import_keys" in sql for sql in sent) == 1
    # ... one read of the entities named (an entity made is only inserted), not two lookups
    # and a dating back per fact
    assert sum("FROM entities" in sql for sql in sent) == 1
    assert sum(sql.startswith("UPDATE entities") for sql in sent) == 0
    # ... and its types recorded once an entity
    assert sum("entity_types" in sql for sql in sent) == 0  # all through executemany
    assert len(sent) < 6 * len(facts)
    assert as_exported(memory, "copy") == as_exported(memory, "user")


@pytest.mark.parametrize("replacement_first", [False, True])
def test_a_replacement_read_in_another_call_still_ends_the_fact_it_replaces(
    memory: recuerdo.Memory, replacement_first: bool
) -> None:
    """The fact a later one replaced, and the later one, read in two calls in either order:
    the first call's fact learns of the second (the page reads which facts await it)."""
    records = filled(memory)
    replaced = {r["replaced_by"] for r in records if r.get("replaced_by")}
    second = [r for r in records if r["key"] in replaced]
    first = [r for r in records if r["key"] not in replaced]
    calls = (second, first) if replacement_first else (first, second)
    for page in calls:
        reply = memory.import_records(page, scope="copy")
        assert reply["imported"] == len(page) and reply["skipped"] == []
    assert as_exported(memory, "copy") == as_exported(memory, "user")
    # Sent again, every record is known already, and nothing is written twice.
    again = memory.import_records(records, scope="copy")
    assert again["imported"] == 0 and len(again["skipped"]) == len(records)
    assert as_exported(memory, "copy") == as_exported(memory, "user")


def test_an_entity_named_before_its_record_is_dated_back_once(memory: recuerdo.Memory) -> None:
    """A fact record read before the record of an entity it names, which says the entity was
    known earlier: the entity made for the fact takes the earlier time (decision 0088), in a
    page as one record alone did."""
    records = filled(memory)
    entities = [r for r in records if r["record"] == "entity"]
    facts = [r for r in records if r["record"] == "fact"]
    early = [{**r, "recorded_at": "2020-01-01T00:00:00.000000Z"} for r in entities]
    memory.import_records([*facts, *early], scope="copy")
    held = {r["name"]: r["recorded_at"] for r in as_exported(memory, "copy") if "name" in r}
    assert held == {r["name"]: "2020-01-01T00:00:00.000000Z" for r in entities}


def test_a_fact_current_here_already_is_not_stored_twice(memory: recuerdo.Memory) -> None:
    """A scope's own export read back into it: every fact is there already (the page reads
    the current facts of the triples whose entities the scope holds), and nothing is stored
    twice. Its ended facts were stored a second time (a fault older than the page: a round
    trip through another scope did the same)."""
    records = filled(memory)
    before = as_exported(memory, "user")
    reply = memory.import_records(records, scope="user")
    facts = [r for r in records if r["record"] == "fact"]
    told = {s["index"]: s["why"] for s in reply["skipped"]}
    assert len(told) == len(facts) and any(r["state"] == "ended" for r in facts)
    for index, record in enumerate(records):
        if record["record"] == "fact":
            here = "here already, ended" if record["state"] == "ended" else "current here"
            assert here in told[index]
    assert as_exported(memory, "user") == before


@pytest.mark.parametrize("held_first", [True, False])
def test_other_attributes_make_a_version_the_later_one_current(
    memory: recuerdo.Memory, held_first: bool
) -> None:
    """The scope holds Ana knows Bo with other attributes: the record read in is a version
    beside it, and the one recorded later stays current, whichever was recorded first."""
    said = [("copy", {"since": 2019}), ("user", {"since": 2020})]
    for scope, attributes in said if held_first else said[::-1]:
        memory.remember_knowledge(
            facts={
                "relations": [
                    {"source": "Ana", "target": "Bo", "type": "knows", "attributes": attributes}
                ]
            },
            scope=scope,
        )
    records = [r for r in memory.export(limit=1024)["records"] if r["record"] != "export"]
    reply = memory.import_records(records, scope="copy")
    assert reply["skipped"] == []
    facts = [r for r in as_exported(memory, "copy") if r["record"] == "fact"]
    current = [f["attributes"] for f in facts if f["state"] == "current"]
    later = said[1][1] if held_first else said[0][1]
    assert len(facts) == 2 and current == [later]


def test_a_round_trip_through_another_scope_adds_nothing(memory: recuerdo.Memory) -> None:
    """user to copy, then copy's export back into user: user holds what it held."""
    records = filled(memory)
    before = as_exported(memory, "user")
    memory.import_records(records, scope="copy")
    back = [
        r for r in memory.export(scope="copy", limit=1024)["records"] if r["record"] != "export"
    ]
    reply = memory.import_records(back, scope="user")
    assert reply["imported"] == len([r for r in back if r["record"] != "fact"])
    assert as_exported(memory, "user") == before


def test_twin_ended_facts_read_back_each_keep_their_replacement(memory: recuerdo.Memory) -> None:
    """A scope holding the same ended fact twice (twins: a page that named it under two keys,
    or a history the import before 0175 stored a second time), each replaced by another fact:
    its own export read back holds each twin to its own record (by the record's key), so
    neither twin's ``replaced_by`` is rewritten to the other's replacement (the review of 0175:
    both records were held by the first twin, which then named the second's replacement)."""

    def fact(key: str, obj: str, ended: bool, replaced_by: str | None) -> dict[str, Any]:
        return {
            "record": "fact",
            "key": key,
            "subject": "Ana",
            "relation": "works_at",
            "object": obj,
            "valid_from": "2024-01-01T00:00:00.000000Z",
            "recorded_at": f"2024-0{1 if ended else 3}-01T00:00:00.000000Z",
            "ended_at": "2024-02-01T00:00:00.000000Z" if ended else None,
            "replaced_by": replaced_by,
        }

    page = [
        fact("x0", "Acme", True, "y"),
        fact("x1", "Acme", True, "z"),
        fact("y", "Globex", False, None),
        fact("z", "Initech", False, None),
    ]
    assert memory.import_records(page, scope="copy")["skipped"] == []
    before = as_exported(memory, "copy")
    twins = [r for r in before if r["record"] == "fact" and r["object"] == "Acme"]
    assert len(twins) == 2 and len({r["replaced_by"] for r in twins}) == 2
    back = memory.export(scope="copy", limit=1024)["records"]
    reply = memory.import_records(back, scope="copy")
    assert sum("ended as the record says" in s["why"] for s in reply["skipped"]) == 2
    assert as_exported(memory, "copy") == before
