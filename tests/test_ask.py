"""ask: a question's graph answer: current facts first, cited; seeds; passages; grounding; k,
hops, as_of, valid_at and compact honoured."""

from __future__ import annotations

import json
from typing import Any

import pytest

import recuerdo

TEXT = "Priya Raman joined Acme Corp in March 2021. She leads the billing team."


def priya(memory: recuerdo.Memory, *, moved: bool = True) -> None:
    memory.remember_knowledge(
        TEXT,
        date="2021-03-01",
        source="hr-notes",
        facts={
            "entities": [
                {"name": "Priya Raman", "type": "person"},
                {"name": "Acme Corp", "type": "company"},
            ],
            "relations": [{"source": "Priya Raman", "target": "Acme Corp", "type": "works_at"}],
        },
    )
    if moved:
        memory.relate("Priya Raman", "Globex", "works_at", replaces=True, date="2023-06-01")


def employers(answer: Any) -> list[str]:
    return [f["object"] for f in answer["facts"] if f["relation"] == "works_at"]


def test_the_current_fact_comes_first_with_its_citation(memory: recuerdo.Memory) -> None:
    priya(memory)
    memory.relate("Priya Raman", "Billing", "leads")
    answer = memory.ask("where does Priya work?")
    assert answer["state"] == "answered"
    first = answer["facts"][0]
    assert (first["subject"], first["relation"], first["object"]) == (
        "Priya Raman",
        "works_at",
        "Globex",
    )
    assert employers(answer) == ["Globex"]  # the ended Acme fact is left out
    assert all(fact["citation"]["found_by"]["seed"] == "Priya Raman" for fact in answer["facts"])
    assert [seed["name"] for seed in answer["seeds"]] == ["Priya Raman"]
    [passage] = answer["passages"]
    assert passage["text"] == TEXT and passage["citation"]["span_state"] == "verified"
    assert "graph" in passage["found_by"]


def test_ended_facts_only_when_asked_for(memory: recuerdo.Memory) -> None:
    priya(memory)
    assert employers(memory.ask("Priya works")) == ["Globex"]
    assert employers(memory.ask("Priya works", valid_at="2022-01-01")) == ["Acme Corp"]
    then = [f for f in memory.ask("Priya works", valid_at="2022-01-01")["facts"]]
    assert then[0]["state"] == "ended"


def test_as_of_hides_what_was_stored_later(memory: recuerdo.Memory) -> None:
    priya(memory, moved=False)
    known = memory.ask("Priya")["facts"][0]["recorded_at"]
    memory.remember_knowledge("Priya Raman moved to Globex in Berlin.")
    memory.relate("Priya Raman", "Globex", "works_at")
    then = memory.ask("Priya Raman Berlin", as_of=known)
    assert employers(then) == ["Acme Corp"]
    assert not any("Berlin" in p["text"] for p in then["passages"])
    assert memory.ask("Globex", as_of=known)["seeds"] == []
    before = memory.ask("Priya Raman", as_of="2020-01-01")
    assert before["state"] == "nothing_stored" and before["grounding"] == {
        "state": "nothing_stored"
    }


def test_k_caps_facts_and_passages_together(memory: recuerdo.Memory) -> None:
    priya(memory)
    for i in range(10):
        memory.relate("Priya Raman", f"Team {i}", "leads")
    default = memory.ask("Priya")
    assert len(default["facts"]) + len(default["passages"]) == 8 and default["k"] == 8
    one = memory.ask("Priya", k=1)
    assert len(one["facts"]) + len(one["passages"]) == 1
    with pytest.raises(recuerdo.InvalidInput):
        memory.ask("Priya", k=101)


def test_hops_bound_the_walk(memory: recuerdo.Memory) -> None:
    for a, b in (("Ann", "Bo"), ("Bo", "Cy"), ("Cy", "Di")):
        memory.relate(a, b, "mentors")

    def reached(hops: int) -> set[str]:
        return {f"{f['subject']}>{f['object']}" for f in memory.ask("Ann", hops=hops)["facts"]}

    assert reached(0) == set()
    assert reached(1) == {"Ann>Bo"}
    assert reached(2) == {"Ann>Bo", "Bo>Cy"}
    assert reached(3) == {"Ann>Bo", "Bo>Cy", "Cy>Di"}


def test_derived_facts_are_marked(memory: recuerdo.Memory) -> None:
    memory.relate("Acme", "Initech", "owns")
    [derived] = [f for f in memory.ask("who owns Initech?")["facts"] if f["derived"]]
    assert (derived["relation"], derived["direction"]) == ("owned_by", "derived")
    assert derived["citation"]["found_by"]["reasoning"]["rule"] == "inverse of owns"


@pytest.mark.parametrize(
    ("query", "state", "uncovered"),
    [
        ("Priya billing team", "grounded", None),
        ("Priya billing budget", "related", ["budget"]),
        ("quantum chromodynamics", "nothing_stored", None),
    ],
)
def test_grounding(
    memory: recuerdo.Memory, query: str, state: str, uncovered: list[str] | None
) -> None:
    priya(memory, moved=False)
    grounding = memory.ask(query)["grounding"]
    assert grounding["state"] == state
    assert grounding.get("uncovered") == uncovered


def test_compact_gives_each_item_once_in_fewer_bytes(memory: recuerdo.Memory) -> None:
    priya(memory)
    full = memory.ask("Priya Raman")
    small = memory.ask("Priya Raman", compact=True)
    assert len(json.dumps(small)) < len(json.dumps(full))
    items = small["facts"] + small["passages"]
    assert len(items) == len(full["facts"]) + len(full["passages"])
    assert not any("citation" in item or "found_by" in item for item in items)
    assert {item["fact"] for item in small["facts"]} == {"Priya Raman works_at Globex"}


def test_scopes_never_meet(memory: recuerdo.Memory) -> None:
    priya(memory)
    assert memory.ask("Priya Raman", scope="other")["state"] == "nothing_stored"
    assert memory.ask("Priya Raman", scope="user")["state"] == "answered"
