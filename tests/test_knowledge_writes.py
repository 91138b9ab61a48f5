"""Knowledge writes (decision 0089): which span a fact cites."""

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
