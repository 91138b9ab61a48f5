"""A search buffered by another handle (or process) just before a forget never reaches the
file after it (decision 0085): the forget writes its own handle's buffer first, and others
drop what they took before they learned of it."""

from __future__ import annotations

from pathlib import Path

import pytest

import recuerdo

from .conftest import audit_kept
from .postgres import opened_on

NAME = "Zorblat Quux"
FACTS = {"relations": [{"source": NAME, "target": "Acme", "type": "works_at"}]}


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_search_buffered_elsewhere_before_a_forget_never_reaches_the_file(
    backend: str, base: Path, held_upkeep: None
) -> None:
    with (
        opened_on(backend, base, "twins") as (name, where),
        recuerdo.open(name, embedder="none", **where) as forgetting,
        recuerdo.open(name, embedder="none", **where) as searching,
    ):
        forgetting.remember_knowledge(f"{NAME} works at Acme.", facts=FACTS)
        assert searching.search(NAME)["results"]  # buffered: the upkeep is held
        forgetting.forget_knowledge(subject=NAME)
        # The other handle writes its buffer after the forget: the record taken before is
        # dropped, not written quoting the forgotten name (it was, until decision 0085).
        assert searching._audit.flush(searching._store) == 0
        assert searching._audit.dropped == 1
        searching.search("deploy window")
        assert searching._audit.flush(searching._store) == 1  # taken after: kept
        queries = audit_kept(forgetting)
        assert queries == ["deploy window"]
        assert NAME.lower() not in repr(audit_kept(forgetting, "filters")).lower()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_handles_own_forget_drops_none_of_its_records(
    backend: str, base: Path, held_upkeep: None
) -> None:
    """Its buffer is written before its forget scrubs: nothing of it is dropped, and what it
    takes after the forget is kept."""
    with opened_on(backend, base, "own") as (name, where):
        with recuerdo.open(name, embedder="none", **where) as memory:
            memory.remember_knowledge(f"{NAME} works at Acme.", facts=FACTS)
            memory.search("deploy window")
            memory.forget_knowledge(subject=NAME)
            memory.search("release train")
            memory._audit.flush(memory._store)
            assert audit_kept(memory) == ["deploy window", "release train"]
            assert memory._audit.dropped == 0
        # A handle opened after the forget counts from it: its records are kept.
        with recuerdo.open(name, embedder="none", **where) as later:
            later.search("rollback plan")
            assert later._audit.flush(later._store) == 1 and later._audit.dropped == 0
