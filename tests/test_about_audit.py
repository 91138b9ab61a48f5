"""An ``about`` call's audit record names the items it read from (its passages' documents and
its facts' cited ones), as every other record does: it named entity, fact and chunk ids, so a
forget of an item whose id shared such a number dropped the record, and a forget of the
document it quoted left it (decision 0168)."""

from __future__ import annotations

import recuerdo

TEXT = "Vexmoor Quaddle works at the Harbour Trust. Vexmoor Quaddle lives in Port Lorne."


def _abouts(memory: recuerdo.Memory) -> list[dict]:
    memory._audit.flush(memory._store)
    return [r for r in memory.audit(limit=1000) if r["verb"] == "about"]


def _read_about(memory: recuerdo.Memory) -> tuple[int, set[int]]:
    """A document about Vexmoor Quaddle, after a long note (its chunks come first, so chunk
    ids run ahead of item ids), and an about call read from it: the document's id, and the
    other numbers the reply shows (entities, facts, chunks)."""
    filler = "\n\n".join(f"Paragraph {n} of filler text." * 40 for n in range(12))
    memory.save("Filler", filler)
    stored = memory.remember_knowledge(
        TEXT,
        source="harbour",
        facts={
            "entities": [
                {"name": "Vexmoor Quaddle", "type": "person"},
                {"name": "Harbour Trust", "type": "organization"},
            ],
            "relations": [
                {"source": "Vexmoor Quaddle", "target": "Harbour Trust", "type": "works_at"}
            ],
        },
    )
    memory._upkeep.drain()
    reply = memory.about("Vexmoor Quaddle")
    assert reply["state"] == "answered"
    doc = stored["doc_id"]
    others = {int(i["id"]) for i in reply["items"] if i.get("id") is not None} - {doc}
    return doc, others


def test_a_forget_of_another_item_sharing_a_number_keeps_the_about_record(
    memory: recuerdo.Memory,
) -> None:
    _, others = _read_about(memory)
    assert len(_abouts(memory)) == 1
    items = {n["id"] for n in memory.list_notes()["notes"]}
    sharing = min(items & others, default=None)  # the filler note, or one of the notes below
    for n in range(60):
        if sharing is not None:
            break
        note = memory.save(f"Unrelated {n}", f"Nothing about the harbour, {n}.")["id"]
        sharing = note if note in others else None
    assert sharing is not None, "no item took a number of the reply"
    memory.delete(sharing, hard=True)
    assert len(_abouts(memory)) == 1


def test_a_forget_of_a_document_read_drops_the_about_record(memory: recuerdo.Memory) -> None:
    """The name stays in another document, so no word of the record's query went: only the
    ids it returned can say it read the forgotten one."""
    memory.remember_knowledge(
        "Vexmoor Quaddle sails on Sundays.",
        source="sailing",
        facts={"entities": [{"name": "Vexmoor Quaddle", "type": "person"}], "relations": []},
    )
    doc, _ = _read_about(memory)
    assert len(_abouts(memory)) == 1
    memory.forget_knowledge("user", passage=doc)
    assert memory.about("Vexmoor Quaddle")["state"] == "answered"
    assert [r["query"] for r in _abouts(memory)] == ["Vexmoor Quaddle"]  # the new call's only
