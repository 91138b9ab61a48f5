"""A fact's citation after the text it quotes is forgotten (a hunt for Semurg's verified
citations): forgetting a subject blanks the passages naming it, and a fact kept (it is not about
the subject) whose quoted sentence sat in such a passage still pointed at the blanked text. It
was served as ``mismatch`` (as if the text had been changed behind the store's back) even when
another stored text said the fact; export wrote the dead span, and an import of it quoted the
blanks as a verified citation. Each test fails on the code before."""

from __future__ import annotations

import time
from typing import Any

import recuerdo
from recuerdo.index.chunk import chunk_spans

from .conftest import exported

FILLER = " ".join(f"Sentence number {i} talks about filler topics." for i in range(40))
# Carol's sentence also says the kept fact; the filler puts it in a passage of its own.
TEXT = f"{FILLER} Carol met Eve while Dana works at Acme. {FILLER}"
FACTS = {
    "relations": [
        {"source": "Dana", "target": "Acme", "type": "works_at"},
        {"source": "Carol", "target": "Eve", "type": "met"},
    ]
}


def _cited(memory: recuerdo.Memory, name: str = "Acme") -> dict[str, Any]:
    [fact] = [
        item
        for item in memory.about(name)["items"]
        if item["kind"] == "fact" and item["relation"] == "works_at"
    ]
    return dict(fact["citation"])


def test_a_kept_fact_quoting_a_forgotten_passage_is_asserted_not_mismatched(
    memory: recuerdo.Memory,
) -> None:
    stored = memory.remember_knowledge(content=TEXT, facts=FACTS)
    assert stored["passages"] > 1
    assert _cited(memory)["span"]["text"] == "Carol met Eve while Dana works at Acme."
    memory.forget_knowledge(subject="Carol")
    citation = _cited(memory)
    assert citation["span"] is None
    assert citation["span_state"] == "asserted"


def test_another_text_saying_the_fact_is_cited_when_one_is_forgotten(
    memory: recuerdo.Memory,
) -> None:
    memory.remember_knowledge(content="Dana works at Acme.", facts=FACTS)
    memory.remember_knowledge(content=TEXT, facts=FACTS)
    memory.forget_knowledge(subject="Carol")
    citation = _cited(memory)
    assert citation["span_state"] == "verified"
    assert citation["span"]["text"] == "Dana works at Acme."


def test_an_export_after_the_forget_carries_no_dead_span(
    memory: recuerdo.Memory, base: Any
) -> None:
    memory.remember_knowledge(content=TEXT, facts=FACTS)
    memory.forget_knowledge(subject="Carol")
    records = exported(memory)
    [fact] = [r for r in records if r["record"] == "fact"]
    assert fact["sources"] == []
    fresh = recuerdo.open("fresh", base_dir=base / "fresh", embedder="none")
    try:
        fresh.import_records(records)
        citation = _cited(fresh)
        assert citation["span"] is None and citation["span_state"] == "asserted"
    finally:
        fresh.close()


def _dead_citation(memory: recuerdo.Memory) -> None:
    """What a forget before this fix left: the kept fact still cites the blanked sentence."""
    stored = memory.remember_knowledge(content=TEXT, facts=FACTS)
    with memory._store.read() as tx:
        [row] = tx.all(
            "SELECT s.fact_id, s.item_id, s.start, s.stop, s.quote_hash FROM fact_sources s"
            " JOIN facts f ON f.id = s.fact_id WHERE s.item_id = ? AND f.relation = 'works_at'",
            (stored["doc_id"],),
        )
        kept = dict(row)
    memory.forget_knowledge(subject="Carol")
    with memory._store.write() as tx:
        tx.execute(
            "INSERT INTO fact_sources (tenant, fact_id, item_id, start, stop, quote_hash)"
            " VALUES ('local', ?, ?, ?, ?, ?)",
            (kept["fact_id"], kept["item_id"], kept["start"], kept["stop"], kept["quote_hash"]),
        )


def test_a_store_holding_a_dead_citation_serves_the_live_one_and_exports_none(
    memory: recuerdo.Memory,
) -> None:
    memory.remember_knowledge(content="Dana works at Acme.", facts=FACTS)
    _dead_citation(memory)
    citation = _cited(memory)
    assert citation["span_state"] == "verified"
    assert citation["span"]["text"] == "Dana works at Acme."
    [fact] = [r for r in exported(memory) if r["record"] == "fact" and r["relation"] == "works_at"]
    assert [(s["start"], s["end"]) for s in fact["sources"]] == [(0, 19)]


def test_an_import_leaves_out_a_span_outside_every_passage(
    memory: recuerdo.Memory, base: Any
) -> None:
    """An export written before this fix names the blanked span: imported, it quoted blanks
    and verified them."""
    memory.remember_knowledge(content=TEXT, facts=FACTS)
    memory.forget_knowledge(subject="Carol")
    records = exported(memory)
    [document] = [r for r in records if r["record"] == "document"]
    [fact] = [r for r in records if r["record"] == "fact"]
    start = TEXT.index("Carol met")
    stop = start + len("Carol met Eve while Dana works at Acme.")
    assert document["text"][start:stop].isspace()
    fact["sources"] = [{"document_key": document["key"], "start": start, "end": stop}]
    fresh = recuerdo.open("fresh", base_dir=base / "fresh", embedder="none")
    try:
        assert fresh.import_records(records)["skipped"] == []
        citation = _cited(fresh)
        assert citation["span"] is None and citation["span_state"] == "asserted"
    finally:
        fresh.close()


def _cut_between(first: str, second: str) -> str:
    """A text cut into passages between ``first`` and ``second`` (found by trying where the
    filler puts the cut)."""
    for count in range(1, 80):
        text = f"{' '.join(FILLER.split('. ')[:count])}. {first} {second} {FILLER}"
        if any(text[: span.end].endswith(first) for span in chunk_spans(text)):
            return text
    raise AssertionError("no filler puts the cut there")


def test_a_fact_named_on_either_side_of_a_passage_cut_is_cited_across_it(
    memory: recuerdo.Memory, base: Any
) -> None:
    """Cited ``not_in_text`` before: the citer looked inside one passage only, so where the
    text was cut decided whether the fact was cited."""
    first, second = "Dana is our lead engineer.", "Acme pays her very well."
    text = _cut_between(first, second)
    memory.remember_knowledge(content=text, facts={"relations": [FACTS["relations"][0]]})
    citation = _cited(memory)
    assert citation["span_state"] == "verified"
    assert citation["span"]["text"] == f"{first} {second}"
    fresh = recuerdo.open("fresh", base_dir=base / "fresh", embedder="none")
    try:
        fresh.import_records(exported(memory))
        assert _cited(fresh)["span"] == citation["span"]
    finally:
        fresh.close()


def test_ends_named_passages_apart_are_not_cited(memory: recuerdo.Memory) -> None:
    text = f"Dana is our lead engineer. {FILLER} {FILLER} Acme pays her very well."
    assert len(chunk_spans(text)) > 2
    memory.remember_knowledge(content=text, facts={"relations": [FACTS["relations"][0]]})
    assert _cited(memory)["span_state"] == "not_in_text"


def test_a_read_as_of_an_instant_cites_only_texts_stored_by_then(
    memory: recuerdo.Memory,
) -> None:
    """The read hid the later text's passages but quoted it as the fact's citation."""
    memory.remember_knowledge(content="Dana works at Acme.", facts=FACTS)
    known = _cited(memory)["source"]["ingested_at"]
    time.sleep(0.01)  # the restatement is stored strictly later
    memory.remember_knowledge(content="A later memo: Dana works at Acme still.", facts=FACTS)
    assert _cited(memory)["span"]["text"] == "A later memo: Dana works at Acme still."
    [fact] = [
        item
        for item in memory.about("Acme", as_of=known)["items"]
        if item["kind"] == "fact" and item["relation"] == "works_at"
    ]
    assert fact["citation"]["span"]["text"] == "Dana works at Acme."
    assert fact["citation"]["source"]["ingested_at"] == known


def test_a_store_holding_only_a_dead_citation_serves_the_fact_as_asserted(
    memory: recuerdo.Memory,
) -> None:
    """Review of 0145: with no other source, the dead row was still served as ``mismatch``
    (the text changed behind the store's back) while export left it out, so the same fact
    read ``asserted`` once exported and imported."""
    _dead_citation(memory)
    citation = _cited(memory)
    assert citation["span"] is None
    assert citation["span_state"] == "asserted"
    assert citation["source"]["kind"] == "asserted"


def test_a_changed_text_inside_a_live_passage_is_still_a_mismatch(
    memory: recuerdo.Memory,
) -> None:
    """Only a span outside every live passage is forgotten text: one whose passage is live
    but whose text no longer matches is served as changed."""
    stored = memory.remember_knowledge(content="Dana works at Acme.", facts=FACTS)
    with memory._store.write() as tx:
        tx.execute(
            "UPDATE items SET content = ? WHERE id = ?", ("Dana works at Acne.", stored["doc_id"])
        )
    citation = _cited(memory)
    assert citation["span"] is None
    assert citation["span_state"] == "mismatch"
