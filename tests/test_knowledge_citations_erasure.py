"""Review of 0145: after a subject is forgotten no citation, export or import reaches its
text (the export written to a JSON file and read back, as a user moves it), an export imported
and exported again carries the same citations, and a citation across a passage cut is dropped
with either passage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import recuerdo
from recuerdo.index.chunk import chunk_spans

from .conftest import exported

FILLER = " ".join(f"Sentence number {i} talks about filler topics." for i in range(40))
KEPT = {"source": "Dana", "target": "Acme", "type": "works_at"}


def _through_file(records: list[dict[str, Any]], folder: Path) -> list[dict[str, Any]]:
    path = folder / "export.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    return list(json.loads(path.read_text(encoding="utf-8")))


def _citations(records: list[dict[str, Any]]) -> list[tuple[str, str, str, list[str]]]:
    text = {r["key"]: r["text"] for r in records if r["record"] == "document"}
    return sorted(
        (
            r["subject"],
            r["relation"],
            r["object"],
            sorted(text[s["document_key"]][s["start"] : s["end"]] for s in r["sources"]),
        )
        for r in records
        if r["record"] == "fact"
    )


def _cut_between(first: str, second: str) -> str:
    for count in range(1, 80):
        text = f"{' '.join(FILLER.split('. ')[:count])}. {first} {second} {FILLER}"
        if any(text[: span.end].endswith(first) for span in chunk_spans(text)):
            return text
    raise AssertionError("no filler puts the cut there")


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Dana is our lead engineer.", "Carol says Acme pays her very well."),
        ("Carol says Dana is our lead engineer.", "Acme pays her very well."),
    ],
)
def test_a_citation_across_a_cut_goes_with_a_forgotten_side(
    memory: recuerdo.Memory, base: Path, first: str, second: str
) -> None:
    text = _cut_between(first, second)
    memory.remember_knowledge(
        content=text, facts={"entities": [{"name": "Carol"}], "relations": [KEPT]}
    )
    assert _citations(exported(memory))[0][3] == [f"{first} {second}"]
    memory.forget_knowledge(subject="Carol")
    [fact] = [i for i in memory.about("Acme")["items"] if i["kind"] == "fact"]
    assert fact["citation"]["span_state"] == "asserted"
    records = _through_file(exported(memory), base)
    assert "Carol" not in json.dumps(records)
    assert _citations(records) == [("Dana", "works_at", "Acme", [])]
    fresh = recuerdo.open("fresh", base_dir=base / "fresh", embedder="none")
    try:
        assert fresh.import_records(records)["skipped"] == []
        assert "Carol" not in json.dumps(exported(fresh))
        assert fresh.about("Carol")["items"] == []
    finally:
        fresh.close()


@pytest.mark.parametrize("forgotten", [None, "Carol", "Eve"])
def test_an_export_imported_and_exported_again_keeps_its_citations(
    memory: recuerdo.Memory, base: Path, forgotten: str | None
) -> None:
    """Text cut here (with citations across a cut), passages and turns the caller gave."""
    cut = _cut_between("Dana is our lead engineer.", "Acme pays her very well.")
    memory.remember_knowledge(
        content=f"{cut} Carol met Eve. {FILLER} Eve knows Dana.",
        facts={
            "relations": [
                KEPT,
                {"source": "Carol", "target": "Eve", "type": "met"},
                {"source": "Eve", "target": "Dana", "type": "knows"},
            ]
        },
    )
    memory.remember_knowledge(
        passages=[{"text": "Eve sat. Bob stood."}, {"text": "Carol saw Bob."}],
        facts={"relations": [{"source": "Carol", "target": "Bob", "type": "saw"}]},
    )
    memory.remember_knowledge(
        messages=[{"role": "user", "content": "Zed met Eve."}, {"role": "ai", "content": "Ok."}],
        facts={"relations": [{"source": "Zed", "target": "Eve", "type": "met"}]},
    )
    if forgotten:
        memory.forget_knowledge(subject=forgotten)
    first = _through_file(exported(memory), base)
    assert any(len(quotes) == 1 for *_, quotes in _citations(first))
    fresh = recuerdo.open("fresh", base_dir=base / "fresh", embedder="none")
    try:
        assert fresh.import_records(first)["skipped"] == []
        assert _citations(exported(fresh)) == _citations(first)
    finally:
        fresh.close()
