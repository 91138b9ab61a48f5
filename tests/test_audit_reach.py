"""A forget by a caller confined to scopes drops only the audit records within its reach that
quote what it forgot (decision 0139). The scrub dropped every record of the tenant quoting a
forgotten name or asking for a vanished word: a token limited to project:a saved a note named
"Zorblax", erased it, and the owner's searches for "Zorblax" in project:b, and over every
scope, were gone from the audit (a security review). A record that returned the forgotten item
still goes, wherever it was made, and the owner's forget still scrubs the whole tenant."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import recuerdo
from recuerdo.store import audit_sweep, audit_words
from recuerdo.store.postgres import PostgresStore
from recuerdo.store.sqlite.schema import SCHEMA

from .conftest import Server, audit_kept, boss_and_lim
from .postgres import contract_url, opened_on, unique_memory
from .test_audit_words import _opened_at

NAME = "Zorblax"
Label = tuple[str, str | None, tuple[str, ...], str | None]


def _plant(caller: recuerdo.Memory, kind: str) -> Callable[[], Any]:
    """An item of project:a named NAME, written by ``caller``; how ``caller`` erases it."""
    if kind == "hard_delete":
        note = caller.save(NAME, "quixotic launch plan", scope="project:a", key=NAME)["id"]
        return lambda: caller.delete(note, hard=True, scope="project:a")
    if kind == "entry":
        entry = caller.remember("context", f"{NAME} quixotic launch plan", scope="project:a")
        return lambda: caller.forget(entry, scope="project:a")
    caller.remember_knowledge(
        f"{NAME} leads the quixotic launch plan.",
        scope="project:a",
        source="planning",
        facts={"entities": [{"name": NAME, "type": "person"}]},
    )
    return lambda: caller.forget_knowledge("project:a", subject=NAME)


def _label(record: dict[str, Any]) -> Label:
    return (
        record["principal"],
        record["scope"],
        tuple(record["filters"].get("scopes", ())),
        record["query"],
    )


def _left(memory: recuerdo.Memory) -> set[Label]:
    """The audit records ``memory`` still shows, each as its label."""
    return {_label(r) for r in memory.audit(limit=1000)}


# The searches of :func:`_searches` a forget confined to project:a does not reach.
BEYOND_A = {"owner_b", "owner_everywhere", "owner_a_and_b"}


def _searches(memory: recuerdo.Memory, lim: recuerdo.Memory) -> dict[str, Label]:
    """Searches for NAME made before the item was written (so none returned it), by the owner
    in project:b, over every scope, over a and b, and in project:a, and by ``lim`` in
    project:a; what each is in the audit."""
    me = memory.principal
    memory.search(NAME, scope="project:b")
    memory.search(NAME)
    memory.search(NAME, scope=["project:a", "project:b"])
    memory.search(NAME, scope="project:a")
    lim.search(NAME, scope="project:a")
    labels = {
        "owner_b": (me, "project:b", (), NAME),
        "owner_everywhere": (me, None, (), NAME),
        "owner_a_and_b": (me, "project:a", ("project:a", "project:b"), NAME),
        "owner_a": (me, "project:a", (), NAME),
        "lim_a": ("lim", "project:a", (), NAME),
    }
    assert set(labels.values()) <= _left(memory)
    return labels


def _found(memory: recuerdo.Memory) -> Label:
    """An owner's search over every scope that returns the planted item."""
    assert memory.search("quixotic")["results"]
    return (memory.principal, None, (), "quixotic")


@pytest.mark.parametrize("kind", ["hard_delete", "entry", "knowledge"])
def test_a_confined_forget_keeps_the_records_beyond_its_reach(
    memory: recuerdo.Memory, kind: str
) -> None:
    lim = memory.for_principal("lim", memory.tenant, scopes=["project:a"])
    searched = _searches(memory, lim)
    erase = _plant(lim, kind)
    found = _found(memory)
    erase()
    left = _left(memory)
    # Another scope's, every scope's and a and b's searches are no trace of lim's item.
    assert {k for k, label in searched.items() if label in left} == BEYOND_A
    # What returned the item holds its trace, wherever it was made.
    assert found not in left


@pytest.mark.parametrize("kind", ["hard_delete", "entry", "knowledge"])
def test_the_owners_forget_still_scrubs_the_whole_tenant(
    memory: recuerdo.Memory, kind: str
) -> None:
    lim = memory.for_principal("lim", memory.tenant, scopes=["project:a"])
    searched = _searches(memory, lim)
    erase = _plant(memory, kind)
    found = _found(memory)
    erase()
    left = _left(memory)
    assert not left & {*searched.values(), found}


@pytest.mark.parametrize("kind", ["hard_delete", "entry", "knowledge"])
def test_a_view_of_two_scopes_drops_what_lies_within_both(
    memory: recuerdo.Memory, kind: str
) -> None:
    """A search over a and b lies within a view of both, and is dropped by its forget; one
    over every scope is not."""
    lim = memory.for_principal("lim", memory.tenant, scopes=["project:a"])
    both = memory.for_principal("both", memory.tenant, scopes=["project:a", "project:b"])
    searched = _searches(memory, lim)
    erase = _plant(both, kind)
    erase()
    left = _left(memory)
    assert {k for k, label in searched.items() if label in left} == {"owner_everywhere"}


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
@pytest.mark.parametrize("step", [audit_words.STEP, audit_sweep.STEP])
@pytest.mark.parametrize("forget", ["hard_delete", "entry"])
def test_a_store_at_an_older_schema_keeps_to_the_reach_too(
    base: Path, kind: str, step: str, forget: str
) -> None:
    """Before the records' words were kept a forget reads every record; before the sweep it
    deletes those it drops (a restore's store, opened at its own schema first)."""
    name = unique_memory("reach")
    try:
        with _opened_at(kind, base, name, SCHEMA.names().index(step)) as memory:
            lim = memory.for_principal("lim", memory.tenant, scopes=["project:a"])
            searched = _searches(memory, lim)
            _plant(lim, forget)()
            left = _left(memory)
            assert {k for k, label in searched.items() if label in left} == BEYOND_A
    finally:
        if kind == "postgres":
            PostgresStore(contract_url(), name).drop()


def test_a_confined_token_over_http_keeps_another_scopes_audit(tmp_path: Path) -> None:
    owner, limited = boss_and_lim(tmp_path)
    server = Server(tmp_path)
    try:
        server.ok(owner, "search", {"query": NAME, "scope": "project:b"})
        server.ok(owner, "search", {"query": NAME, "scope": "project:a"})
        server.ok(limited, "search", {"query": NAME, "scope": "project:a"})
        planted = {"title": NAME, "content": "quixotic", "key": NAME, "scope": "project:a"}
        note = server.ok(limited, "save", planted)["id"]
        server.ok(owner, "search", {"query": "quixotic", "scope": "project:a"})
        server.ok(limited, "delete", {"id": note, "hard": True, "scope": "project:a"})
        left = {
            (r["principal"], r["scope"], r["query"])
            for r in server.ok(owner, "audit", {"limit": 1000})
        }
        assert left == {("boss", "project:b", NAME)}
    finally:
        server.stop()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
@pytest.mark.parametrize("reached", [("project:a",), ("project:a", "project:b")])
def test_a_confined_forget_elsewhere_drops_only_the_buffered_records_within_its_reach(
    backend: str, base: Path, held_upkeep: None, reached: tuple[str, ...]
) -> None:
    """Another handle (or process) drops the records it took before a forget, which it cannot
    tell from those quoting what was forgotten (decision 0085). A confined caller's forget
    made it drop every record of the tenant: a token limited to project:a, forgetting in a
    loop, kept the owner's searches in every other process from the audit."""
    with (
        opened_on(backend, base, "reach") as (name, where),
        recuerdo.open(name, embedder="none", **where) as one,
        recuerdo.open(name, embedder="none", **where) as two,
    ):
        lim = one.for_principal("lim", one.tenant, scopes=list(reached))
        note = lim.save(NAME, "quixotic", scope="project:a", key=NAME)["id"]
        two.search("deploy window", scope="project:b")
        two.search("release train")
        two.search("rollback plan", scope=["project:a", "project:b"])
        two.search("canary", scope="project:a")
        lim.delete(note, hard=True, scope="project:a")
        lim.search("after the forget", scope="project:a")
        one._audit.flush(one._store)
        two._audit.flush(two._store)
        beyond = {"deploy window", "release train", "rollback plan"} - {
            *(["deploy window", "rollback plan"] if "project:b" in reached else [])
        }
        assert set(audit_kept(one)) == {*beyond, "after the forget"}
        assert (one._audit.dropped, two._audit.dropped) == (0, 4 - len(beyond))
        # Taken after the forget, kept.
        two.search("canary again", scope="project:a")
        assert two._audit.flush(two._store) == 1


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
@pytest.mark.parametrize("kind", ["hard_delete", "entry", "knowledge"])
def test_a_record_buffered_elsewhere_that_returned_the_item_never_reaches_the_file(
    backend: str, base: Path, held_upkeep: None, kind: str
) -> None:
    """A record that returned a forgotten item goes wherever it was made (0139), one still
    buffered in another process too. A confined forget moves no tenant count, and the other
    process kept its searches over every scope, or over more scopes than the forget reached,
    that returned the item: the audit held the erased item's id and its search."""
    with (
        opened_on(backend, base, "returned") as (name, where),
        recuerdo.open(name, embedder="none", **where) as one,
        recuerdo.open(name, embedder="none", **where) as two,
    ):
        lim = one.for_principal("lim", one.tenant, scopes=["project:a"])
        erase = _plant(lim, kind)
        assert two.search("quixotic")["results"]
        assert two.search("quixotic", scope=["project:a", "project:b"])["results"]
        two.search("deploy window")  # returned nothing: no trace of the item, kept
        erase()
        one._audit.flush(one._store)
        two._audit.flush(two._store)
        assert audit_kept(one) == ["deploy window"]
        assert audit_kept(one, "returned") == ["[]"]


@pytest.mark.parametrize("tag", ['api_key="abcdefghijkl"', "-----BEGIN PRIVATE KEY-----"])
def test_a_search_over_two_scopes_stays_one_over_two_when_a_secret_is_redacted(
    memory: recuerdo.Memory, tag: str
) -> None:
    """The filters were redacted as JSON text, and a secret's redaction could cut through
    their quotes: the record's filters no longer read, and a search over a and b was taken
    for one in a alone, emptied by a forget confined to a and shown to a token of a."""
    lim = memory.for_principal("lim", memory.tenant, scopes=["project:a"])
    memory.search(NAME, scope=["project:a", "project:b"], tags=[tag])
    _plant(lim, "hard_delete")()
    left = memory.audit(limit=1000)
    assert [(r["query"], r["filters"].get("scopes")) for r in left] == [
        (NAME, ["project:a", "project:b"])
    ]
    assert tag not in str(left)  # still redacted
    assert lim.audit(scope="project:a", limit=1000) == []


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_an_about_elsewhere_is_kept_when_a_confined_forget_reached_none_of_its_scopes(
    backend: str, base: Path, held_upkeep: None
) -> None:
    """What ``about`` returned are entities and facts as well as passages, ids memory holds
    elsewhere than among its items: taken for gone items, its records buffered in another
    process were dropped by any confined forget, in any scope."""
    with (
        opened_on(backend, base, "about") as (name, where),
        recuerdo.open(name, embedder="none", **where) as one,
        recuerdo.open(name, embedder="none", **where) as two,
    ):
        # Entity and fact ids past the items' (one passage).
        people = [f"Person{i}" for i in range(20)] + ["Quillon"]
        facts = {"relations": [{"source": p, "target": "Acme", "type": "works_at"} for p in people]}
        one.remember_knowledge("Quillon works at Acme.", scope="project:b", facts=facts)
        lim = one.for_principal("lim", one.tenant, scopes=["project:a"])
        erase = _plant(lim, "hard_delete")
        assert two.about("Quillon", scope="project:b")["items"]
        erase()
        two._audit.flush(two._store)
        assert audit_kept(one) == ["Quillon"]


def test_a_search_under_way_here_when_a_confined_forget_commits_keeps_no_trace(
    memory: recuerdo.Memory,
) -> None:
    """A search over every scope by another thread of this process, whose read began before
    a confined forget committed and which records after the forget wrote the buffer: it
    returned the item, and was written with the item's id in it."""
    lim = memory.for_principal("lim", memory.tenant, scopes=["project:a"])
    note = lim.save(NAME, "quixotic", scope="project:a", key=NAME)["id"]
    log = memory._audit
    with log.reading(memory.tenant):  # the other thread's search, begun
        lim.delete(note, hard=True, scope="project:a")
        log.record(
            tenant=memory.tenant,
            principal=memory.principal,
            verb="search",
            query="quixotic",
            filters={},
            returned=[note],
        )
        log.record(
            tenant=memory.tenant,
            principal=memory.principal,
            verb="search",
            query="deploy window",
            filters={},
            returned=[],
        )
    log.flush(memory._store)
    assert [(r["query"], r["returned"]) for r in memory.audit(limit=100)] == [("deploy window", [])]


# A scope name a credential's pattern matches (a GitHub token's shape).
ODD = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


@pytest.mark.parametrize("owner", [False, True], ids=["confined", "owner"])
def test_a_write_to_a_scope_named_like_a_secret_is_refused(
    memory: recuerdo.Memory, owner: bool
) -> None:
    """A write's arguments are redacted after its reach is checked, its scope among them: a
    view limited to such a scope wrote into ``secret(API)``, one scope for every such name and
    beyond its reach, so it could not erase what it wrote (nor could any other view of it)."""
    caller = memory if owner else memory.for_principal("lim", memory.tenant, scopes=[ODD])
    with pytest.raises(recuerdo.errors.InvalidInput, match="scope"):
        caller.save(NAME, "quixotic", scope=ODD, key=NAME)
    with pytest.raises(recuerdo.errors.InvalidInput, match="scope"):
        caller.remember("context", "quixotic", scope=ODD)
    assert memory.status()["scopes"] == []


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_threads_searching_through_confined_forgets_keep_no_trace_of_them(
    backend: str, base: Path
) -> None:
    """Threads of two handles search over every scope while a view of project:a saves and
    erases notes (the upkeep running): no record that returned an erased note is kept."""
    with (
        opened_on(backend, base, "threads") as (name, where),
        recuerdo.open(name, embedder="none", **where) as one,
        recuerdo.open(name, embedder="none", **where) as two,
    ):
        lim = one.for_principal("lim", one.tenant, scopes=["project:a"])
        done = threading.Event()
        failed: list[BaseException] = []

        def search(memory: recuerdo.Memory) -> None:
            try:
                while not done.is_set():
                    memory.search("quixotic")
                    memory.search("quixotic", scope=["project:a", "project:b"])
            except BaseException as exc:  # reported below
                failed.append(exc)

        threads = [threading.Thread(target=search, args=(m,)) for m in (one, two, two)]
        for thread in threads:
            thread.start()
        erased = []
        try:
            for i in range(15):
                note = lim.save(f"plan {i}", f"quixotic plan {i}", scope="project:a")["id"]
                time.sleep(0.01)
                lim.delete(note, hard=True, scope="project:a")
                erased.append(note)
        finally:
            done.set()
            for thread in threads:
                thread.join()
        assert not failed
        for memory in (one, two):
            memory._audit.flush(memory._store)
        returned = {i for r in audit_kept(one, "returned") for i in json.loads(r)}
        assert not returned & set(erased)
