"""What was true before an undated ``replaces`` (a hunt for Semurg's time travel): the new fact
kept no start (``valid_from`` null: true at every instant), so ``valid_at`` any earlier instant
answered both the target it ended and the one that ended it, and a derived fact through each.
An undated statement takes effect when it is recorded (0098); one that ends another starts
there. Fails on the code before."""

from __future__ import annotations

import recuerdo


def _targets(memory: recuerdo.Memory, name: str, **view: str) -> list[str]:
    return sorted(
        item["object"]
        for item in memory.about(name, hops=1, **view)["items"]
        if item["kind"] == "fact" and item["subject"] == name and item["relation"] == "part_of"
    )


def test_an_undated_replacing_fact_was_not_true_before_it_replaced(
    memory: recuerdo.Memory,
) -> None:
    memory.relate("Wing", "Plant", "part_of")
    memory.relate("Wing", "Depot", "part_of", replaces=True)
    assert _targets(memory, "Wing") == ["Depot"]
    assert _targets(memory, "Wing", valid_at="2000-01-01") == ["Plant"]
    [fact] = [i for i in memory.about("Wing", hops=1)["items"] if i["kind"] == "fact"]
    assert fact["valid_from"] is not None and fact["valid_from"] == fact["recorded_at"]
    assert _targets(memory, "Wing", valid_at=fact["valid_from"]) == ["Depot"]


def test_an_undated_fact_replacing_nothing_keeps_an_open_start(memory: recuerdo.Memory) -> None:
    memory.relate("Hall", "Campus", "part_of", replaces=True)
    assert _targets(memory, "Hall", valid_at="2000-01-01") == ["Campus"]
