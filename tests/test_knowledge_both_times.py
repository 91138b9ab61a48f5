"""``about`` with both ``as_of`` and ``valid_at``: what the memory knew at one instant about
what was true at another (decision 0151). ``as_of`` alone was read, and ``valid_at`` ignored:
a fact replaced since answered for a time it no longer covered."""

from __future__ import annotations

import time

import pytest

import recuerdo
from recuerdo.core.clock import now_iso


def _instant() -> str:
    """An instant strictly between the writes before and after it."""
    time.sleep(0.002)
    moment = now_iso()
    time.sleep(0.002)
    return moment


def _works_at(memory: recuerdo.Memory, **view: str) -> list[str]:
    items = memory.about("Alice", compact=True, **view)["items"]
    return sorted(item["fact"] for item in items if item["kind"] == "fact")


def _city(memory: recuerdo.Memory, **view: str) -> object:
    items = memory.about("Bob", **view)["items"]
    entity = next(item for item in items if item["kind"] == "entity")
    return entity["attributes"].get("city", {}).get("value")


@pytest.mark.parametrize(
    ("known", "true_at", "expected"),
    [
        ("before", "2026-06-01", ["Alice works_at Acme"]),  # then, nothing had ended Acme
        ("before", "2018-06-01", []),  # Acme only from 2019
        ("after", "2020-06-01", ["Alice works_at Acme"]),  # the old code: Globex
        ("after", "2026-06-01", ["Alice works_at Globex"]),
        ("after", "2018-06-01", []),  # the old code: Globex
    ],
)
def test_a_fact_is_read_as_known_then_for_the_time_asked(
    memory: recuerdo.Memory, known: str, true_at: str, expected: list[str]
) -> None:
    memory.relate("Alice", "Acme", "works_at", replaces=True, date="2019-05-01")
    before = _instant()
    memory.relate("Alice", "Globex", "works_at", replaces=True, date="2025-03-01")
    after = _instant()
    as_of = before if known == "before" else after
    assert _works_at(memory, as_of=as_of, valid_at=true_at) == expected


@pytest.mark.parametrize(
    ("known", "true_at", "expected"),
    [
        ("before", "2020-06-01", None),  # then only London, from 2025, was known
        ("before", "2026-06-01", "London"),
        ("after", "2020-06-01", "Paris"),  # the old code: London
        ("after", "2026-06-01", "London"),
    ],
)
def test_an_attribute_is_read_as_known_then_for_the_time_asked(
    memory: recuerdo.Memory, known: str, true_at: str, expected: str | None
) -> None:
    facts = {"entities": [{"name": "Bob", "attributes": {"city": "London"}}]}
    memory.remember_knowledge(facts=facts, date="2025-03-01")
    before = _instant()
    facts = {"entities": [{"name": "Bob", "attributes": {"city": "Paris"}}]}
    memory.remember_knowledge(facts=facts, date="2019-05-01")
    after = _instant()
    as_of = before if known == "before" else after
    assert _city(memory, as_of=as_of, valid_at=true_at) == expected


def test_a_current_fact_with_an_end_of_truth_is_not_read_past_it(
    memory: recuerdo.Memory,
) -> None:
    """An import's record may hold a current fact with a ``valid_to`` (written with the fact,
    not by a replacement): as known now, it is true up to then, as ``valid_at`` alone reads it.
    Read with both, it was seen for any later time."""
    record = {
        "record": "fact",
        "key": "k-fact",
        "subject": "Alice",
        "relation": "works_at",
        "object": "Acme",
        "recorded_at": "2024-01-01T00:00:00.000000Z",
        "valid_from": "2019-01-01T00:00:00.000000Z",
        "valid_to": "2020-01-01T00:00:00.000000Z",
    }
    assert memory.import_records(records=[record])["imported"] == 1
    now = _instant()
    assert _works_at(memory, valid_at="2022-06-01") == []
    assert _works_at(memory, as_of=now, valid_at="2022-06-01") == []
    assert _works_at(memory, as_of=now, valid_at="2019-06-01") == ["Alice works_at Acme"]
