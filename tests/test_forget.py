"""Forgetting: every form, its idempotency, 'did you mean', and erasure from the file's bytes."""

from __future__ import annotations

from pathlib import Path

import pytest

import recuerdo

from .conftest import db_dump, settled_dump, statements_run, tx_class_of


def graph(memory: recuerdo.Memory, scope: str = "user") -> dict:  # type: ignore[type-arg]
    return memory.remember_knowledge(
        "Zorbulax Quentaris leads the Vexmoor project. The Vexmoor project ships in June.",
        scope=scope,
        source="planning",
        facts={
            "entities": [
                {"name": "Zorbulax Quentaris", "type": "person", "attributes": {"level": 7}},
                {"name": "Vexmoor", "type": "project"},
            ],
            "relations": [{"source": "Zorbulax Quentaris", "target": "Vexmoor", "type": "leads"}],
        },
    )


def test_forget_subject_hides_its_passages_and_facts(memory: recuerdo.Memory) -> None:
    graph(memory)
    other = memory.remember_knowledge("Vexmoor needs a new logo.", source="design")
    reply = memory.forget_knowledge(subject="Zorbulax Quentaris")
    assert reply["facts_removed"] == 1 and reply["passages_hidden"] == 1
    assert reply["already_forgotten"] is False
    assert memory.about("Zorbulax")["state"] == "nothing_stored"
    vex = memory.about("Vexmoor")
    assert [i for i in vex["items"] if i["kind"] == "fact"] == []
    assert any(i.get("doc_id") == other["doc_id"] for i in vex["items"])
    again = memory.forget_knowledge(subject="Zorbulax Quentaris")  # existed, was forgotten
    assert again["already_forgotten"] is True and again["facts_removed"] == 0
    with pytest.raises(recuerdo.UnknownName):  # never existed: refused, never a false success
        memory.forget_knowledge(subject="Zorbulax Quentarix Prime")


def test_unknown_name_offers_close_names_never_guesses(file_memory: recuerdo.Memory) -> None:
    graph(file_memory)
    before = settled_dump(file_memory)
    with pytest.raises(recuerdo.UnknownName) as caught:
        file_memory.forget_knowledge(subject="Zorbulax Quentari")
    assert caught.value.status == 404
    assert caught.value.extra["suggestions"][0] == "Zorbulax Quentaris"
    assert "Did you mean: Zorbulax Quentaris" in caught.value.detail
    assert settled_dump(file_memory) == before


def test_forget_fact_then_again(memory: recuerdo.Memory) -> None:
    graph(memory)
    fact = {"from": "Zorbulax Quentaris", "to": "Vexmoor", "type": "leads"}
    assert memory.forget_knowledge(fact=fact)["facts_removed"] == 1
    again = memory.forget_knowledge(fact=fact)
    assert again["already_forgotten"] is True and again["facts_removed"] == 0


def test_forget_passage_keeps_facts(memory: recuerdo.Memory) -> None:
    reply = graph(memory)
    gone = memory.forget_knowledge(passage=reply["doc_id"])
    assert gone["documents_removed"] == 1 and gone["facts_kept"] == 1
    [fact] = [i for i in memory.about("Vexmoor")["items"] if i["kind"] == "fact"]
    assert fact["citation"]["source"]["kind"] == "asserted"
    assert memory.forget_knowledge(passage=reply["doc_id"])["already_forgotten"] is True


def test_forget_source_and_attribute_and_all(memory: recuerdo.Memory) -> None:
    graph(memory)
    memory.remember_knowledge("More planning notes about Vexmoor.", source="planning")
    memory.remember_knowledge("Design notes.", source="design")
    by_source = memory.forget_knowledge(source="planning")
    assert by_source["documents_removed"] == 2
    assert memory.forget_knowledge(source="planning")["already_forgotten"] is True
    attribute = {"subject": "Zorbulax Quentaris", "key": "level"}
    assert memory.forget_knowledge(attribute=attribute)["attribute_values_removed"] == 1
    assert memory.about("Zorbulax Quentaris")["items"][0]["attributes"] == {}
    assert memory.forget_knowledge(attribute=attribute)["already_forgotten"] is True
    everything = memory.forget_knowledge(all=True)
    assert everything["entities_removed"] == 2 and everything["items_removed"] >= 1
    assert memory.forget_knowledge(all=True)["already_forgotten"] is True
    assert memory.status("user")["ontology"]["entities"] == 0


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"subject": "a", "all": True}, {"all": False}, {"fact": {"from": "a"}}, {"passage": "x"}],
)
def test_forget_needs_exactly_one_well_formed_form(memory: recuerdo.Memory, kwargs: dict) -> None:  # type: ignore[type-arg]
    graph(memory)
    with pytest.raises(recuerdo.InvalidInput):
        memory.forget_knowledge(**kwargs)


def _store_bytes(folder: Path) -> bytes:
    """Every file under the state folder: the store, its WAL, and the saved vector index."""
    return b"".join(path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file())


@pytest.mark.parametrize("form", ["subject", "passage", "all"])
def test_forgotten_words_leave_every_file(base: Path, form: str) -> None:
    marker = "Qwyxzzelmarker"
    mem = recuerdo.open("erase", base_dir=base)
    for number in range(30):  # enough pages that deleted rows would linger if not erased
        mem.remember_knowledge(
            f"Background passage number {number} about ordinary things.", source="noise"
        )
    reply = mem.remember_knowledge(
        f"{marker} Vantheris is the secret codename of project {marker}.",
        facts={"entities": [{"name": f"{marker} Vantheris", "type": "codename"}]},
        source="secrets",
    )
    mem._upkeep.drain()  # chunks, full-text entries and vectors all hold the marker now
    state = base / ".recuerdo" / "state"
    assert marker.encode() in _store_bytes(state) or marker.lower().encode() in _store_bytes(state)
    if form == "subject":
        mem.forget_knowledge(subject=f"{marker} Vantheris")
        mem.forget_knowledge(passage=reply["doc_id"])
    elif form == "passage":
        mem.forget_knowledge(passage=reply["doc_id"])
        mem.forget_knowledge(subject=f"{marker} Vantheris")
    else:
        mem.forget_knowledge(all=True)
    open_files = _store_bytes(state)  # while the memory is open: the WAL is still there
    mem.close()
    for raw in (open_files, _store_bytes(state)):
        for needle in (marker, marker.lower(), "vantheris"):
            assert needle.encode() not in raw, needle
    with recuerdo.open("erase", base_dir=base) as again:
        assert again.search(marker)["results"] == []


@pytest.mark.parametrize("form", ["passage", "entry", "note"])
def test_forgotten_vectors_leave_the_saved_index(
    base: Path, monkeypatch: pytest.MonkeyPatch, form: str
) -> None:
    """A memory large enough to search through an HNSW index saved beside its file: once a
    passage, an entry or a note is forgotten (and its orphaned vector collected), its vector is
    in no file of the state folder, neither as stored nor as the index holds it."""
    import numpy as np

    from recuerdo.index import vectors

    from .test_vector_index_file import HashEmbedder, as_indexed

    monkeypatch.setattr(vectors, "EXACT_LIMIT", 20)
    marker = "Plorvintex vector marker"
    state = base / ".recuerdo" / "state"
    mem = recuerdo.open("erase", base_dir=base, embedder=HashEmbedder())
    mem.remember_many([{"category": "learning", "content": f"filler {n}"} for n in range(40)])
    if form == "passage":
        doc = mem.remember_knowledge(marker, source="secrets")["doc_id"]
    elif form == "entry":
        entry = mem.remember("learning", marker)
    else:
        note = mem.save("Secret plan", marker)["id"]
    mem._upkeep.drain()
    with mem._store.read() as tx:
        row = tx.one(
            "SELECT e.id, e.vector FROM embeddings e JOIN chunks c ON c.hash = e.hash"
            " JOIN items i ON i.id = c.item_id WHERE i.content LIKE ?",
            (f"%{marker}%",),
        )
    assert row is not None
    mem.search(marker, stages=["meaning"])
    assert mem._meaning.vectors(HashEmbedder()).write_generation()
    folder = state / "erase.db-vectors"
    needles = [bytes(row["vector"])[4:], as_indexed(folder, int(row["id"]))]
    assert needles[1] in _store_bytes(folder)  # control: the saved index holds it
    if form == "passage":
        mem.forget_knowledge(passage=doc)
    elif form == "entry":
        assert mem.forget(entry)
    else:
        mem.delete(note, hard=True)
    mem._upkeep.drain()  # the orphaned vector is collected, and erased from the index
    index_files = _store_bytes(folder)  # while open: the index is rewritten already
    mem.close()
    for raw in (index_files, _store_bytes(state)):
        for needle in needles:
            assert needle not in raw
    assert np.frombuffer(needles[1], dtype=np.int8).any()  # a real vector was looked for


WRITES = {
    "entry": (
        lambda m, w: m.remember(category="learning", content=w),
        lambda m, written: m.forget(written),
    ),
    "note": (
        lambda m, w: m.save(title="Codename", content=w),
        lambda m, written: m.delete(written["id"], hard=True),
    ),
    "passage": (
        lambda m, w: m.remember_knowledge(w, source="secrets"),
        lambda m, written: m.forget_knowledge(passage=written["doc_id"]),
    ),
}


@pytest.mark.parametrize("kind", sorted(WRITES))
def test_a_query_just_before_a_forget_leaves_the_audit_with_it(base: Path, kind: str) -> None:
    """The audit buffers its records: a forget right after a search naming what it forgets
    must still scrub that search, not let it reach the file afterwards."""
    marker = "Plumvoxtrelmarker"
    write, erase = WRITES[kind]
    with recuerdo.open("audit-race", base_dir=base) as mem:
        written = write(mem, f"The {marker} codename of the launch.")
        mem._upkeep.drain()
        for _ in range(3):  # searches naming the marker, then at once the forget
            assert mem.search(marker)["results"]
        erase(mem, written)
        queries = [record["query"] or "" for record in mem.audit(limit=100)]
        assert not [q for q in queries if marker.lower() in q.lower()], queries
    dump = "\n".join(db_dump(base / ".recuerdo" / "state" / "audit-race.db"))
    assert marker.lower() not in dump.lower()


def test_a_forgotten_turn_leaves_the_turns_around_it(base: Path) -> None:
    """A message's words are its neighbours' context (their chunks' words, and the vector
    text of the turn it answers): forgetting it cuts them again in the same transaction, so
    its words leave every file while the turns around it stay found."""
    marker = "Quokkazanzibmarker"
    mem = recuerdo.open("turns", base_dir=base)
    added = mem.add_messages(
        "trip",
        [
            {"speaker": "Ana", "text": "we booked the cabin by the lake", "date": "2026-01-01"},
            {"speaker": "Ben", "text": f"my passport number is {marker}", "date": "2026-01-01"},
            {"speaker": "Ana", "text": "great, the ferry leaves at nine", "date": "2026-01-01"},
        ],
    )
    first, secret, last = added["ids"]
    mem._upkeep.drain()
    state = base / ".recuerdo" / "state"
    assert marker.lower().encode() in _store_bytes(state).lower()
    assert mem.forget_knowledge(added["scope"], passage=secret)["messages_removed"] == 1
    assert mem.search("passport", scope=added["scope"])["results"] == []
    # Each remaining turn is found first by its own words (and the other by its context now).
    assert mem.search("cabin", scope=added["scope"])["results"][0]["id"] == first
    assert mem.search("ferry", scope=added["scope"])["results"][0]["id"] == last
    open_files = _store_bytes(state)  # while the memory is open: the WAL is still there
    mem.close()
    for data in (open_files, _store_bytes(state)):
        assert marker.lower().encode() not in data.lower()


def _statements_forgetting_a_scope(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch, entities: int
) -> int:
    scope = f"project:many{entities}"
    memory.remember_knowledge(
        facts={"entities": [{"name": f"Person {n}", "type": "person"} for n in range(entities)]},
        scope=scope,
    )
    with statements_run(monkeypatch, tx_class_of(memory)) as seen:
        memory.forget_knowledge(scope, all=True)
    return len(seen)


def test_forgetting_a_scope_costs_the_same_statements_however_many_entities(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch, held_upkeep: None
) -> None:
    """Each entity of a forgotten scope is recorded as forgotten (so a later forget of it says
    ``already_forgotten``): the records are written together, not two statements each. The
    upkeep is held: its worker's statements, sent meanwhile, would be counted too."""
    memory._upkeep.stop(drain=False)  # its timer wakes it too, poked or not
    _statements_forgetting_a_scope(memory, monkeypatch, 1)  # the memory's secret made first
    few = _statements_forgetting_a_scope(memory, monkeypatch, 3)
    many = _statements_forgetting_a_scope(memory, monkeypatch, 30)
    assert few == many
    again = memory.forget_knowledge("project:many30", subject="Person 17")
    assert again["already_forgotten"] is True
