"""A statement said of an earlier time than what is current is history, not the present: a city
dated 2019 learnt after one dated 2025 became current, and a back-dated ``replaces`` ended the
later fact before it began (true at no instant) and became current itself (a hunt over the
knowledge graph). Each test fails on the code before."""

from __future__ import annotations

import recuerdo


def _city(memory: recuerdo.Memory, **view: str) -> object:
    items = memory.about("Bob", **view)["items"]
    entity = next(item for item in items if item["kind"] == "entity")
    return entity["attributes"]["city"]["value"]


def _works_at(memory: recuerdo.Memory, **view: str) -> list[str]:
    items = memory.about("Alice", compact=True, **view)["items"]
    return sorted(item["fact"] for item in items if item["kind"] == "fact")


def _said(memory: recuerdo.Memory, city: str, date: str) -> dict[str, object]:
    facts = {"entities": [{"name": "Bob", "attributes": {"city": city}}]}
    return dict(memory.remember_knowledge(facts=facts, date=date))


def test_an_older_value_learnt_later_is_history(memory: recuerdo.Memory) -> None:
    _said(memory, "London", "2025-03-01")
    assert _said(memory, "Paris", "2019-05-01")["attributes_changed"] == 1
    assert _city(memory) == "London"
    assert _city(memory, valid_at="2020-01-01") == "Paris"
    assert _city(memory, valid_at="2025-06-01") == "London"
    assert _said(memory, "Paris", "2019-05-01")["outcome"] == "already"  # a retry
    assert _said(memory, "Rome", "2026-01-01")["attributes_changed"] == 1
    assert _city(memory) == "Rome"  # a later one still takes over


def test_a_back_dated_replacement_ends_where_the_later_fact_begins(
    memory: recuerdo.Memory,
) -> None:
    memory.relate("Alice", "Globex", "works_at", replaces=True, date="2025-03-01")
    memory.relate("Alice", "Acme", "works_at", replaces=True, date="2019-05-01")
    assert _works_at(memory) == ["Alice works_at Globex"]
    assert _works_at(memory, valid_at="2020-01-01") == ["Alice works_at Acme"]
    assert _works_at(memory, valid_at="2025-06-01") == ["Alice works_at Globex"]
    memory.relate("Alice", "Initech", "works_at", replaces=True)  # undated: now
    assert _works_at(memory) == ["Alice works_at Initech"]  # a later one still takes over
