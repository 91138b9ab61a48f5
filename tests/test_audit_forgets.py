"""A search buffered by another handle (or process) just before a forget never reaches the
file after it (decision 0085): the forget writes its own handle's buffer first, and others
drop what they took before they learned of it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import recuerdo

from .conftest import audit_kept
from .postgres import opened_on

NAME = "Zorblat Quux"
FACTS = {"relations": [{"source": NAME, "target": "Acme", "type": "works_at"}]}


Twins = tuple[recuerdo.Memory, recuerdo.Memory]


@pytest.fixture(params=["sqlite", "postgres"])
def twins(request: pytest.FixtureRequest, base: Path, held_upkeep: None) -> Iterator[Twins]:
    """Two handles on one memory (as two processes have), their upkeep held: a search's
    record stays in its handle's buffer until the test flushes it."""
    with (
        opened_on(request.param, base, "twins") as (name, where),
        recuerdo.open(name, embedder="none", **where) as one,
        recuerdo.open(name, embedder="none", **where) as two,
    ):
        yield one, two


def test_a_search_buffered_elsewhere_before_a_forget_never_reaches_the_file(twins: Twins) -> None:
    forgetting, searching = twins
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
    assert audit_kept(forgetting, "filters") == ["{}"]  # the kept search's: no name in them


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


@pytest.mark.parametrize("same_handle", [True, False])
def test_a_search_under_way_when_a_forget_commits_is_dropped(
    twins: Twins, same_handle: bool
) -> None:
    """A search whose read began before the forget committed, and that records after it,
    found what was forgotten: its record keeps the count from before its read (the review of
    0085: it took the count when it recorded, and was kept, quoting the name and the item)."""
    forgetting, other = twins
    searching = forgetting if same_handle else other
    forgetting.remember_knowledge(f"{NAME} works at Acme.", facts=FACTS)
    record = searching._audit.record

    def forget_then_record(**fields: Any) -> None:
        forgetting.forget_knowledge(subject=NAME)  # commits while the search is under way
        record(**fields)

    searching._audit.record = forget_then_record  # type: ignore[method-assign]
    assert searching.search(NAME)["results"]
    searching._audit.record = record  # type: ignore[method-assign]
    searching._audit.flush(searching._store)
    assert searching._audit.dropped == 1
    assert NAME not in audit_kept(forgetting)


def test_a_forget_drops_no_other_tenants_records_and_a_forget_of_nothing_none(
    twins: Twins,
) -> None:
    """One count for the whole memory let any tenant's forget, even of nothing, drop every
    tenant's buffered records in other processes (the review of 0085)."""
    owner, other = twins
    ann, bob = owner.for_tenant("ann"), other.for_tenant("bob")
    ann.remember_knowledge(f"{NAME} works at Acme.", facts=FACTS)
    ann_elsewhere = other.for_tenant("ann")
    bob.search("deploy window")
    ann_elsewhere.search("release train")
    assert ann.forget(10**9) is False  # nothing to forget: counts nothing
    other._audit.flush(other._store)
    assert other._audit.dropped == 0
    ann_elsewhere.search("rollback plan")
    bob.search("release notes")
    ann.forget_knowledge(subject=NAME)
    other._audit.flush(other._store)
    assert other._audit.dropped == 1  # ann's, taken before ann's forget; bob's is kept
    assert audit_kept(other, tenant="bob") == ["deploy window", "release notes"]
    assert audit_kept(other, tenant="ann") == ["release train"]
