"""The verbs that reach an item by id (or a category by its axis) take a ``scope`` that keeps the
call to it, and ``overview`` counts within scopes: what lets a token limited to scopes use them
at all (its calls must name one of its scopes), so that the lens can show such a token a note
(decision 0130). A scope named so narrows what the call reaches, for every caller: an item
kept in another scope is not found, and nothing changes. Each case fails on the code before
(the verbs took no scope)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import recuerdo
from recuerdo.errors import CapabilityNotGranted, ItemNotFound
from recuerdo.facade import verb

SECRET = "Zorblax payroll"
Ids = dict[str, int]


@pytest.fixture
def ids(memory: recuerdo.Memory) -> Ids:
    """A note, a deleted note, an entry and a category of project b, and a note of project a."""
    b = memory.save("B note", SECRET, scope="project:b")["id"]
    memory.edit(b, "append", "more")
    gone = memory.save("B gone", SECRET, scope="project:b")["id"]
    memory.delete(gone)
    entry = memory.remember("context", SECRET, scope="project:b")
    memory.remember_about("project", SECRET, category="payroll", project="b")
    a = memory.save("A note", "launch list", scope="project:a")["id"]
    return {"b": b, "gone": gone, "entry": entry, "a": a}


KEPT_OUT: dict[str, Callable[[recuerdo.Memory, Ids], Any]] = {
    "get": lambda m, ids: m.get(ids["b"], scope="project:a"),
    "get_entry": lambda m, ids: m.get(ids["entry"], scope="project:a"),
    "history": lambda m, ids: m.history(ids["b"], scope="project:a"),
    "revision": lambda m, ids: m.revision(ids["b"], 1, scope="project:a"),
    "links": lambda m, ids: m.links(ids["b"], scope="project:a"),
    "conflicts": lambda m, ids: m.conflicts(ids["b"], scope="project:a"),
    "edit": lambda m, ids: m.edit(ids["b"], "append", "x", scope="project:a"),
    "delete": lambda m, ids: m.delete(ids["b"], scope="project:a"),
    "delete_hard": lambda m, ids: m.delete(ids["b"], hard=True, scope="project:a"),
    "delete_hard_deleted": lambda m, ids: m.delete(ids["gone"], hard=True, scope="project:a"),
    "restore": lambda m, ids: m.restore(ids["gone"], scope="project:a"),
    "mark_reviewed": lambda m, ids: m.mark_reviewed(ids["b"], scope="project:a"),
    "mute": lambda m, ids: m.mute("payroll", axis="project", project="b", scope="project:a"),
    "unmute": lambda m, ids: m.unmute("payroll", axis="project", project="b", scope="project:a"),
}


def state(memory: recuerdo.Memory, ids: Ids) -> tuple[Any, ...]:
    listed = memory.list_notes(scope="project:b", limit=100)["notes"]
    deleted = memory.list_notes(scope="project:b", status="deleted")["notes"]
    return (
        sorted((n["id"], n["version"], n["muted"]) for n in listed),
        [n["id"] for n in deleted],
        memory.get(ids["entry"])["content"],
        len(memory.journal(limit=1000)),
    )


def views(memory: recuerdo.Memory) -> dict[str, recuerdo.Memory]:
    return {
        "owner": memory,
        "confined": memory.for_principal("lim", memory.tenant, scopes=["project:a"]),
    }


@pytest.mark.parametrize("who", ["owner", "confined"])
@pytest.mark.parametrize("case", sorted(KEPT_OUT))
def test_a_scope_named_keeps_the_call_to_it(
    memory: recuerdo.Memory, ids: Ids, who: str, case: str
) -> None:
    before = state(memory, ids)
    with pytest.raises(ItemNotFound) as refused:
        KEPT_OUT[case](views(memory)[who], ids)
    assert SECRET not in str(refused.value)
    assert state(memory, ids) == before


@pytest.mark.parametrize("who", ["owner", "confined"])
def test_an_entry_of_another_scope_is_not_forgotten(
    memory: recuerdo.Memory, ids: Ids, who: str
) -> None:
    before = state(memory, ids)
    assert views(memory)[who].forget(ids["entry"], scope="project:a") is False
    assert state(memory, ids) == before


@pytest.mark.parametrize("who", ["owner", "confined"])
def test_a_profile_of_another_scope_is_empty(memory: recuerdo.Memory, ids: Ids, who: str) -> None:
    view = views(memory)[who]
    assert view.profile("project", project="b", include_muted=True, scope="project:a") == []


@pytest.mark.parametrize("who", ["owner", "confined"])
def test_the_items_of_the_scope_named_are_reached(
    memory: recuerdo.Memory, ids: Ids, who: str
) -> None:
    view = views(memory)[who]
    memory.remember_about("project", "short lists", category="style", project="a")
    assert view.get(ids["a"], scope="project:a")["title"] == "A note"
    assert [r["version"] for r in view.history(ids["a"], scope="project:a")] == [1]
    assert view.links(ids["a"], scope="project:a")["id"] == ids["a"]
    assert view.edit(ids["a"], "append", "more", scope="project:a")["version"] == 2
    style = view.profile("project", project="a", scope="project:a")
    assert [c["category"] for c in style] == ["style"]
    assert view.mute("style", axis="project", project="a", scope="project:a")["muted"]


def test_a_confined_view_names_only_its_scopes(memory: recuerdo.Memory, ids: Ids) -> None:
    lim = views(memory)["confined"]
    for call in (
        lambda: lim.get(ids["b"], scope="project:b"),
        lambda: lim.get(ids["a"]),
        lambda: lim.overview(),
        lambda: lim.overview(scope=["project:a", "project:b"]),
    ):
        with pytest.raises(CapabilityNotGranted):
            call()


@pytest.mark.parametrize("who", ["owner", "confined"])
def test_an_overview_counts_only_the_scopes_named(
    memory: recuerdo.Memory, ids: Ids, who: str
) -> None:
    memory.create_progress("payroll", ["pay"])
    memory.add_rule("payroll-b", "must", "pay before the fifth")
    counts = views(memory)[who].overview(scope="project:a")
    assert counts["items"] == {"note": 1}
    assert counts["chars"] == len("launch list")
    assert [n["scope"] for n in counts["notes"]] == ["project:a"]
    assert (counts["entries"], counts["deleted_notes"], counts["plans"], counts["rules"]) == (
        [],
        0,
        0,
        0,
    )
    whole = memory.overview()
    assert (whole["plans"], whole["rules"], whole["deleted_notes"]) == (1, 1, 1)


# A verb that reads through another verb, as mirror_push reads through get: what the outer call
# is kept to holds inside too. The inner verb was reached with the handle's scopes set anew,
# so an owner's call kept to project:a read project:b's note through it (review of 0130).
@verb("read", keeps_to_scope=True)
def _title_through_get(self: recuerdo.Memory, id: int, *, scope: str | None = None) -> str:
    return str(self.get(id)["title"])


@verb("read", keeps_to_scope=True)
def _title_through_scoped_get(
    self: recuerdo.Memory, id: int, inner: str, *, scope: str | None = None
) -> str:
    return str(self.get(id, scope=inner)["title"])


@pytest.mark.parametrize("who", ["owner", "two scopes"])
def test_a_verb_called_inside_a_kept_call_keeps_to_its_scope(
    memory: recuerdo.Memory, ids: Ids, who: str
) -> None:
    view = (
        memory
        if who == "owner"
        else memory.for_principal("lim", memory.tenant, scopes=["project:a", "project:b"])
    )
    assert _title_through_get(view, ids["a"], scope="project:a") == "A note"
    with pytest.raises(ItemNotFound):
        _title_through_get(view, ids["b"], scope="project:a")
    with pytest.raises(CapabilityNotGranted):  # a scope named inside cannot widen it either
        _title_through_scoped_get(view, ids["b"], "project:b", scope="project:a")


@pytest.mark.parametrize("scopes", [["project:b"], ["project:a", "project:b"]])
def test_a_view_of_a_confined_view_reaches_no_further(
    memory: recuerdo.Memory, ids: Ids, scopes: list[str]
) -> None:
    """In process, a token's view made another view naming scopes beyond its own, and read
    project:b's note through it."""
    lim = views(memory)["confined"]
    with pytest.raises(CapabilityNotGranted):
        lim.for_principal("lim", memory.tenant, scopes=scopes).get(ids["b"], scope="project:b")
    narrowed = lim.for_principal("lim", memory.tenant, scopes=["project:a"])
    assert narrowed.get(ids["a"], scope="project:a")["title"] == "A note"
    assert lim.for_principal("lim", memory.tenant).scopes == ("project:a",)
