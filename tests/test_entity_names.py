"""A name written in either of Unicode's spellings of an accented letter (NFC "é", or NFD "e"
and a combining accent) names one entity: the two made two, and a forget of one spelling left
the other (a hunt over the knowledge graph). The step m038 folds again the names stored before;
recover does for the files it copies. Each test fails on the code before."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

import recuerdo
from recuerdo.store.entity_names import STEP, fold
from recuerdo.store.postgres import PostgresStore
from recuerdo.store.sqlite import SQLiteStore
from recuerdo.store.sqlite.recover import recover_file
from recuerdo.store.sqlite.schema import SCHEMA

from .postgres import contract_url, unique_memory
from .test_audit_words import _opened_at

NFC = unicodedata.normalize("NFC", "José Müller")
NFD = unicodedata.normalize("NFD", "José Müller")


def _facts(memory: recuerdo.Memory, name: str, scope: str = "user") -> list[str]:
    items = memory.about(name, compact=True, scope=scope)["items"]
    return sorted(unicodedata.normalize("NFC", i["fact"]) for i in items if i["kind"] == "fact")


def test_both_spellings_name_one_entity(memory: recuerdo.Memory) -> None:
    assert NFC != NFD
    memory.relate(NFC, "Acme", "works_at")
    second = memory.relate(NFD, "Globex", "advises")
    assert second["entities_created"] == 1  # Globex alone
    assert _facts(memory, NFD) == [f"{NFC} advises Globex", f"{NFC} works_at Acme"]
    memory.forget_knowledge(subject=NFD)
    assert _facts(memory, NFC) == []
    assert _facts(memory, "Acme") == []


def test_a_passage_in_the_other_spelling_is_linked_and_forgotten(memory: recuerdo.Memory) -> None:
    memory.relate(NFC, "Acme", "works_at")
    memory.remember_knowledge(f"{NFD} signed the lease on Friday.")
    assert memory.forget_knowledge(subject=NFC)["passages_hidden"] == 1


def _write_as_old_code_did(memory: recuerdo.Memory, scope: str) -> None:
    """An entity of the NFD spelling in ``scope``, its folded name and words as the code
    before the step wrote them (case folding alone): made anew when the scope holds the NFC
    spelling (the duplicate the old code made), else the one there rewritten."""
    old = " ".join(NFD.casefold().split())
    with memory._store.write() as tx:
        entity = tx.scalar(
            "SELECT id FROM entities WHERE scope = ? AND name = ?", (scope, NFD)
        ) or tx.scalar(
            "INSERT INTO entities (tenant, scope, name, folded, recorded_at)"
            " VALUES ('local', ?, ?, ?, '2026-01-01T00:00:00Z') RETURNING id",
            (scope, NFD, old),
        )
        tx.execute("UPDATE entities SET folded = ? WHERE id = ?", (old, entity))
        tx.execute("DELETE FROM entity_words WHERE entity_id = ?", (entity,))
        tx.executemany(
            "INSERT INTO entity_words (tenant, word, entity_id) VALUES ('local', ?, ?)",
            [(word, entity) for word in {"jose\u0301", "mu\u0308ller"}],
        )


def _folded(memory: recuerdo.Memory) -> list[tuple[str, str]]:
    with memory._store.read() as tx:
        rows = tx.all("SELECT scope, folded FROM entities WHERE name <> 'Acme' ORDER BY id")
    return [(row["scope"], row["folded"]) for row in rows]


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_the_step_folds_the_names_stored_before_it(base: Path, kind: str) -> None:
    """Scope "a" holds the old spelling alone: its name is folded again, and found by either
    spelling and by one of its words. Scope "b" holds both already: the step keeps both."""
    name = unique_memory("names")
    try:
        with _opened_at(kind, base, name, SCHEMA.names().index(STEP)) as memory:
            memory.relate(NFD, "Acme", "works_at", scope="a")
            _write_as_old_code_did(memory, "a")
            memory.relate(NFC, "Acme", "works_at", scope="b")
            _write_as_old_code_did(memory, "b")
        with _opened_at(kind, base, name, None) as memory:
            assert _folded(memory) == [("a", fold(NFC)), ("b", fold(NFC)), ("b", NFD.casefold())]
            assert _facts(memory, NFC, "a") == [f"{NFC} works_at Acme"]
            assert _facts(memory, "Müller", "a") == [f"{NFC} works_at Acme"]
            assert _facts(memory, NFC, "b") == [f"{NFC} works_at Acme"]
    finally:
        if kind == "postgres":
            PostgresStore(contract_url(), name).drop()


def test_recover_folds_the_names_it_copies(base: Path) -> None:
    with _opened_at("sqlite", base, "", SCHEMA.names().index(STEP)) as memory:
        memory.relate(NFD, "Acme", "works_at")
        _write_as_old_code_did(memory, "user")
    recover_file(base / "old.db", base / "recovered.db")
    store = SQLiteStore(str(base / "recovered.db"))
    try:
        with recuerdo.open("recovered", store=store, embedder="none") as memory:
            assert _folded(memory) == [("user", fold(NFC))]
            assert _facts(memory, NFC) == [f"{NFC} works_at Acme"]
    finally:
        store.close()


RELATION = "casado_con_señora"


def test_a_relation_or_a_type_in_either_spelling_is_one(memory: recuerdo.Memory) -> None:
    """The review of 0091: relations and types were stored as given, so one spelling made a
    second fact and a second type, and a forget of one left the other."""
    nfd = unicodedata.normalize("NFD", RELATION)
    memory.relate("José", "Ana", RELATION)
    assert memory.relate("José", "Ana", nfd)["facts_created"] == 0
    for spelling in ("Compañía", unicodedata.normalize("NFD", "Compañía")):
        memory.remember_knowledge(facts={"entities": [{"name": "Acme", "type": spelling}]})
    types = memory.status(scope="user")["ontology"]["entity_types"]
    assert [(t["type"], t["members"]) for t in types] == [("compañía", 1)]
    assert (
        memory.forget_knowledge(fact={"from": "José", "to": "Ana", "type": nfd})["facts_removed"]
        == 1
    )
    assert _facts(memory, "José") == []


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_the_step_recomposes_relations_and_types(base: Path, kind: str) -> None:
    name = unique_memory("relations")
    nfd = unicodedata.normalize("NFD", RELATION)
    try:
        with _opened_at(kind, base, name, SCHEMA.names().index(STEP)) as memory:
            memory.relate("José", "Ana", RELATION)
            memory.remember_knowledge(facts={"entities": [{"name": "Acme", "type": "compañía"}]})
            with memory._store.write() as tx:  # as the code before the step stored them
                tx.execute("UPDATE facts SET relation = ?", (nfd,))
                tx.execute(
                    "UPDATE entity_types SET type = ?", (unicodedata.normalize("NFD", "compañía"),)
                )
        with _opened_at(kind, base, name, None) as memory:
            assert _facts(memory, "José") == [f"José {RELATION} Ana"]
            types = memory.status(scope="user")["ontology"]["entity_types"]
            assert [t["type"] for t in types] == ["compañía"]
    finally:
        if kind == "postgres":
            PostgresStore(contract_url(), name).drop()
