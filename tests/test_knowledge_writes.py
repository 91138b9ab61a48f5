"""Knowledge writes (decision 0089): which span a fact cites, restating what was replaced, and
a known fact stated with other attributes."""

from __future__ import annotations

from typing import Any

import pytest

import recuerdo


def citation(memory: recuerdo.Memory, subject: str, relation: str) -> dict[str, Any]:
    [fact] = [
        i
        for i in memory.about(subject, hops=1)["items"]
        if i["kind"] == "fact" and i["subject"] == subject and i["relation"] == relation
    ]
    cited: dict[str, Any] = fact["citation"]
    return cited


def cite(memory: recuerdo.Memory, text: str, source: str, relation: str, target: str) -> Any:
    reply = memory.remember_knowledge(
        text, facts={"relations": [{"source": source, "target": target, "type": relation}]}
    )
    return citation(memory, source, relation), reply


@pytest.mark.parametrize(
    ("text", "fact", "quoted"),
    [
        # The names inside longer words ("Ann" in "Annabel") do not name them.
        (
            "Annabel met Bob at noon. Later, Ann hired Bo for the shop.",
            ("Ann", "hired", "Bo"),
            "Later, Ann hired Bo for the shop.",
        ),
        # Letters beyond ASCII are letters of the word they are in.
        (
            "Zoëlla visited Ünïonville. Zoë joined Ünïon in May.",
            ("Zoë", "member_of", "Ünïon"),
            "Zoë joined Ünïon in May.",
        ),
        # Case and spacing aside, the first sentence naming both.
        (
            "Priya  RAMAN joined Acme Corp. Priya Raman left Acme Corp.",
            ("Priya Raman", "works_at", "Acme Corp"),
            "Priya  RAMAN joined Acme Corp.",
        ),
        # No sentence names both: the shortest run of sentences of one passage that does.
        (
            "Dana leads billing. The team is small. Priya Raman joined it. Dana hired her.",
            ("Dana", "manages", "Priya Raman"),
            "Priya Raman joined it. Dana hired her.",
        ),
        # A name cut by a sentence break ("Dr." ends one): the passage naming both.
        ("Dr. Smith arrived. He works at Acme now.", ("Dr. Smith", "works_at", "Acme"), None),
    ],
)
def test_a_citation_quotes_a_span_naming_both_ends(
    memory: recuerdo.Memory, text: str, fact: tuple[str, str, str], quoted: str | None
) -> None:
    cited, reply = cite(memory, text, fact[0], fact[1], fact[2])
    assert cited["span_state"] == "verified" and cited["source"]["doc_id"] == reply["doc_id"]
    span = cited["span"]
    assert span["text"] == (quoted or text) and text[span["start"] : span["end"]] == span["text"]


@pytest.mark.parametrize(
    "said",
    [
        {"content": "The weather in Lisbon was sunny all week. Lunch was fish."},
        {"content": "Alicea works at Acmeco."},
        # Each end in a passage of its own, never both in one.
        {"passages": [{"text": "Alice had lunch."}, {"text": "Acme is a company."}]},
        {"messages": [{"role": "user", "content": "Alice?"}, {"content": "Acme, I think."}]},
    ],
)
def test_a_text_naming_no_span_with_both_ends_cites_none(
    memory: recuerdo.Memory, said: dict[str, Any]
) -> None:
    """The fact still names the document it came with, but quotes nothing as its support."""
    relation = {"source": "Alice", "target": "Acme", "type": "works_at"}
    reply = memory.remember_knowledge(**said, facts={"relations": [relation]})
    cited = citation(memory, "Alice", "works_at")
    assert (cited["span"], cited["span_state"]) == (None, "not_in_text")
    assert cited["source"]["kind"] == "document" and cited["source"]["doc_id"] == reply["doc_id"]
    compact = [i for i in memory.about("Alice", compact=True)["items"] if i["kind"] == "fact"]
    assert compact and all("cite" not in i for i in compact)


def test_an_export_and_import_keep_a_citation_with_no_span(memory: recuerdo.Memory) -> None:
    cite(memory, "Lunch was fish.", "Alice", "works_at", "Acme")
    records = memory.export()["records"]
    memory.import_records(records, scope="copy")
    [fact] = [i for i in memory.about("Alice", scope="copy")["items"] if i["kind"] == "fact"]
    assert (fact["citation"]["span"], fact["citation"]["span_state"]) == (None, "not_in_text")


def test_many_relations_each_cite_their_own_sentence(memory: recuerdo.Memory) -> None:
    """Names that share words and prefixes ("Person 1", "Person 10") each find their own
    sentence among hundreds of passages."""
    n = 300
    text = " ".join(f"Person {i} works at Company {i}." for i in range(n))
    relations = [
        {"source": f"Person {i}", "target": f"Company {i}", "type": "works_at"} for i in range(n)
    ]
    memory.remember_knowledge(text, facts={"relations": relations})
    for i in (0, 1, 10, 101, n - 1):
        cited = citation(memory, f"Person {i}", "works_at")
        assert cited["span"]["text"] == f"Person {i} works at Company {i}."


def facts_of(memory: recuerdo.Memory, subject: str, **view: Any) -> list[tuple[Any, ...]]:
    return [
        (i["object"], i["attributes"], i["state"])
        for i in memory.about(subject, hops=1, **view)["items"]
        if i["kind"] == "fact" and i["subject"] == subject and not i["derived"]
    ]


def test_restating_what_was_replaced_makes_it_current_again(memory: recuerdo.Memory) -> None:
    """She moved back: the same undated call as an earlier one is stored again once something
    replaced what it said."""
    for company in ("Acme", "Globex", "Acme"):
        reply = memory.relate("Alice", company, "works_at", replaces=True)
        assert (reply["outcome"], reply["facts_created"]) == ("stored", 1)
    assert facts_of(memory, "Alice") == [("Acme", {}, "current")]
    assert memory.relate("Alice", "Acme", "works_at", replaces=True)["outcome"] == "already"
    for city in ("Paris", "London", "Paris"):
        reply = memory.remember_knowledge(
            facts={"entities": [{"name": "Bob", "attributes": {"city": city}}]}
        )
        assert (reply["outcome"], reply["attributes_changed"]) == ("stored", 1)
    [bob] = [i for i in memory.about("Bob")["items"] if i["kind"] == "entity"]
    assert bob["attributes"]["city"]["value"] == "Paris"


def test_a_call_that_replaces_within_itself_is_already_when_retried(
    memory: recuerdo.Memory,
) -> None:
    call = {
        "facts": {
            "entities": [
                {"name": "Bob", "attributes": {"city": "Paris"}},
                {"name": "Bob", "attributes": {"city": "London"}},
            ],
            "relations": [
                {"source": "Bob", "target": "Acme", "type": "works_at", "replaces": True},
                {"source": "Bob", "target": "Globex", "type": "works_at", "replaces": True},
            ],
        },
        "content": "Bob works at Globex.",
    }
    first = memory.remember_knowledge(**call)
    again = memory.remember_knowledge(**call)
    assert again["outcome"] == "already" and again["doc_id"] == first["doc_id"]
    assert facts_of(memory, "Bob") == [("Globex", {}, "current")]


def test_a_dated_call_again_is_already_whatever_came_later(memory: recuerdo.Memory) -> None:
    """The same statement of the same time: a later-dated one that replaced it stays current."""
    memory.relate("Alice", "Acme", "works_at", replaces=True, date="2020-01-01")
    memory.relate("Alice", "Globex", "works_at", replaces=True, date="2021-01-01")
    again = memory.relate("Alice", "Acme", "works_at", replaces=True, date="2020-01-01")
    assert (again["outcome"], again["facts_created"]) == ("already", 0)
    assert facts_of(memory, "Alice") == [("Globex", {}, "current")]


def test_a_call_again_after_its_subject_was_forgotten_is_stored(memory: recuerdo.Memory) -> None:
    memory.relate("Alice", "Acme", "works_at", date="2020-01-01")
    memory.forget_knowledge(subject="Alice")
    reply = memory.relate("Alice", "Acme", "works_at", date="2020-01-01")
    assert (reply["outcome"], reply["facts_created"]) == ("stored", 1)
    assert facts_of(memory, "Alice") == [("Acme", {}, "current")]


def test_a_known_fact_with_other_attributes_is_a_new_version(memory: recuerdo.Memory) -> None:
    memory.relate("Alice", "Acme", "works_at", attributes={"role": "engineer"})
    [first] = [i for i in memory.about("Alice", hops=1)["items"] if i.get("relation") == "works_at"]
    reply = memory.relate("Alice", "Acme", "works_at", attributes={"role": "manager"})
    assert (reply["facts_created"], reply["facts_existing"], reply["facts_replaced"]) == (1, 0, 1)
    assert facts_of(memory, "Alice") == [("Acme", {"role": "manager"}, "current")]
    then = facts_of(memory, "Alice", as_of=first["recorded_at"])
    assert then == [("Acme", {"role": "engineer"}, "ended")]
    # Attributes are laid over the current ones, key by key; none given change nothing.
    memory.relate("Alice", "Acme", "works_at", attributes={"since": 2020})
    same = memory.relate("Alice", "Acme", "works_at")
    assert (same["facts_created"], same["facts_existing"]) == (0, 1)
    assert facts_of(memory, "Alice") == [("Acme", {"role": "manager", "since": 2020}, "current")]
    exported = [r for r in memory.export()["records"] if r["record"] == "fact"]
    assert [(r["attributes"], r["state"]) for r in exported] == [
        ({"role": "engineer"}, "ended"),
        ({"role": "manager"}, "ended"),
        ({"role": "manager", "since": 2020}, "current"),
    ]


@pytest.mark.parametrize("date", [None, "2024-05-01"])
@pytest.mark.parametrize("content", [None, "Alice works at Acme."])
def test_a_batch_stating_a_fact_twice_keeps_both_versions(
    memory: recuerdo.Memory, date: str | None, content: str | None
) -> None:
    relations = [
        {"source": "Alice", "target": "Acme", "type": "works_at", "attributes": {"role": role}}
        for role in ("engineer", "manager")
    ]
    reply = memory.remember_knowledge(content, facts={"relations": relations}, date=date)
    assert (reply["facts_created"], reply["facts_replaced"]) == (2, 1)
    assert facts_of(memory, "Alice") == [("Acme", {"role": "manager"}, "current")]
    exported = [r for r in memory.export()["records"] if r["record"] == "fact"]
    assert len({r["key"] for r in exported}) == 2
    memory.import_records(memory.export()["records"], scope="copy")
    assert facts_of(memory, "Alice", scope="copy") == [("Acme", {"role": "manager"}, "current")]


@pytest.mark.parametrize(
    ("relation", "error"),
    [
        ({"type": "---"}, recuerdo.FactsShape),
        ({"type": "works_at", "attributes": {"weight": float("nan")}}, recuerdo.InvalidInput),
        ({"type": "works_at", "attributes": {"w": [float("inf")]}}, recuerdo.InvalidInput),
        ({"type": "works_at", "attributes": ["a list"]}, recuerdo.FactsShape),
    ],
)
def test_a_relation_with_no_type_or_a_non_json_attribute_is_refused(
    memory: recuerdo.Memory, relation: dict[str, Any], error: type[recuerdo.RecuerdoError]
) -> None:
    with pytest.raises(error):
        memory.remember_knowledge(facts={"relations": [{"source": "X", "target": "Y", **relation}]})
    assert memory.about("X")["state"] == "nothing_stored"


def test_relate_says_its_facts_came_from_the_agent(memory: recuerdo.Memory) -> None:
    assert memory.relate("X", "Y", "knows")["extraction"] == "agent_facts"
    assert memory.remember_knowledge("X met Y.")["extraction"] == "known_names_only"


def test_zero_hops_derive_no_chain(memory: recuerdo.Memory) -> None:
    memory.relate("Room", "Floor", "part_of")
    memory.relate("Floor", "Building", "part_of")
    assert [i["kind"] for i in memory.about("Room", hops=0)["items"]] == ["entity"]
    derived = [i for i in memory.about("Room", hops=1)["items"] if i.get("derived")]
    assert [i["object"] for i in derived] == ["Building"]


def test_entities_made_for_mentions_are_counted(memory: recuerdo.Memory) -> None:
    memory.relate("Rosa", "Acme", "works_at")
    reply = memory.remember_knowledge(
        passages=[
            {"text": "Quentin met Rosa.", "mentions": ["Quentin", "Rosa"]},
            {"text": "quentin left.", "mentions": ["QUENTIN"]},
        ]
    )
    assert reply["entities_created"] == 1
    assert memory.status("user")["ontology"]["entities"] == 3
