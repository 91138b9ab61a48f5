"""``recent`` of several scopes (decision 0172): the latest notes of each, merged newest first,
pins first, one size limit over the merged text; with a project, the notes of ``user``
recorded as another project's left out (0148). Engram's ``mem_context(project=A)`` reads
A's project scope and ``user`` this way. Every store; each test fails on the code before
(a list of scopes was refused as no label)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest

import recuerdo
from recuerdo.doors import gateway
from recuerdo.doors.profiles import profile
from recuerdo.errors import CapabilityNotGranted, InvalidInput
from recuerdo.security.tokens import Principal

from .conftest import settled_dump

BOTH = ["project:shop", "user"]


def saved(memory: recuerdo.Memory) -> dict[str, int]:
    """Alternating saves of shop's scope and of ``user`` (shop's, billing's, nobody's), and
    one of billing's scope, oldest first."""
    made = [
        ("rule1", {"scope": "project:shop"}),
        ("mine1", {"project": "shop"}),
        ("theirs", {"project": "billing"}),
        ("nobody", {}),
        ("rule2", {"scope": "project:shop"}),
        ("billing", {"scope": "project:billing"}),
        ("mine2", {"project": "shop"}),
    ]
    return {name: memory.save(name, f"{name} text", **where)["id"] for name, where in made}


def test_two_scopes_merge_newest_first_with_the_project_filter(memory: recuerdo.Memory) -> None:
    ids = saved(memory)
    reply = memory.recent(scope=BOTH, project="shop")
    newest = ["mine2", "rule2", "nobody", "mine1", "rule1"]
    assert reply["ids"] == [ids[name] for name in newest]
    assert (reply["truncated"], reply["pinned"], reply["state"]) == (False, [], "answered")
    # Without a project, every note of both scopes; one scope in a list reads as that scope.
    assert set(memory.recent(scope=BOTH)["ids"]) == set(ids.values()) - {ids["billing"]}
    for one in ("project:shop", "user"):
        alone = memory.recent(scope=one, project="shop")
        assert memory.recent(scope=[one], project="shop") == alone
    merged = sorted(
        memory.recent(scope="project:shop")["ids"]
        + memory.recent(scope="user", project="shop")["ids"],
        reverse=True,
    )
    assert reply["ids"] == merged  # ids grow with time here: the merge is the newest of both


def test_pins_of_either_scope_come_first_and_another_projects_stay_out(
    memory: recuerdo.Memory,
) -> None:
    ids = saved(memory)
    for name in ("mine1", "theirs", "billing", "rule1"):
        memory.pin(ids[name])
    reply = memory.recent(scope=BOTH, project="shop")
    assert reply["pinned"] == [ids["mine1"], ids["rule1"]]  # oldest pin first
    assert reply["ids"] == [ids[n] for n in ("mine1", "rule1", "mine2", "rule2", "nobody")]
    assert "pinned)" in reply["text"].split("\n\n")[0]


def test_the_merge_reads_past_each_arms_first_page(memory: recuerdo.Memory) -> None:
    """Each scope's first page is short (a share of one): the merge reads on past it, in
    order, and loses or repeats nothing."""
    made = []
    for n in range(90):
        where = {"scope": "project:shop"} if n % 3 else {"project": "shop"}
        made.append(memory.save(f"n{n}", f"note {n}", **where)["id"])
    memory.save("theirs", "billing's", project="billing")
    reply = memory.recent(scope=BOTH, project="shop", max_bytes=65536)
    assert reply["ids"] == made[::-1] and reply["truncated"] is False


@pytest.mark.parametrize("room", [1, 60, 150, 400])
def test_the_size_limit_cuts_the_merged_list_honestly(memory: recuerdo.Memory, room: int) -> None:
    saved(memory)
    whole = memory.recent(scope=BOTH, project="shop")
    cut = memory.recent(scope=BOTH, project="shop", max_bytes=room)
    assert cut["truncated"] is True and cut["limit_bytes"] == room
    assert cut["returned_bytes"] == len(cut["text"].encode("utf-8")) <= room
    assert cut["ids"] == whole["ids"][: len(cut["ids"])]  # a prefix of the merged order
    assert whole["text"].startswith(cut["text"].removesuffix("..."))


BAD_SCOPES = pytest.mark.parametrize(
    "scope",
    [
        [],
        ["user", ""],
        ["user", 7],
        ["project:shop", None],
        [f"project:p{n}" for n in range(21)],
        {"user": 1},
    ],
    ids=["empty", "blank", "number", "none", "too_many", "mapping"],
)


@BAD_SCOPES
def test_a_bad_list_of_scopes_is_refused_by_name(memory: recuerdo.Memory, scope: Any) -> None:
    saved(memory)
    with pytest.raises(InvalidInput) as refused:
        memory.recent(scope=scope, project="shop")
    assert refused.value.code == "invalid_input" and "scope" in str(refused.value)


@BAD_SCOPES
def test_a_refused_list_of_scopes_leaves_the_store_unchanged(
    file_memory: recuerdo.Memory, scope: Any
) -> None:
    saved(file_memory)
    before = settled_dump(file_memory)
    with pytest.raises(InvalidInput):
        file_memory.recent(scope=scope, project="shop")
    assert settled_dump(file_memory) == before


@pytest.mark.parametrize("tool", ["mem_context", "mem_search"])
def test_a_blank_project_reads_as_no_project_through_engram(tmp_path: Path, tool: str) -> None:
    """Engram trims a project (``project_of``): a blank one is none. Read as a project, it
    mapped to [project:default, user] with no project to filter ``user`` by, and every
    project's personal observations came back (billing's here), where no project reads
    project default's scope (mem_context) or every scope (mem_search, shop's too)."""
    pool = gateway.MemoryPool(tmp_path, "mem")
    tools = {entry.name: entry for entry in profile("engram")}
    run = functools.partial(gateway.call, pool, memory_name="mem")
    boss = Principal("boss", "t")
    made = [
        ("Plain", {}),
        ("Theirs", {"project": "billing", "scope": "personal"}),
        ("Shop", {"project": "shop"}),
    ]
    for title, where in made:
        run(boss, tool=tools["mem_save"], arguments={"title": title, "content": "zebra", **where})
    asked: dict[str, Any] = {"query": "zebra"} if tool == "mem_search" else {}

    def ids(**more: Any) -> list[int]:
        reply = run(boss, tool=tools[tool], arguments={**asked, **more})
        return reply["ids"] if tool == "mem_context" else [h["id"] for h in reply["results"]]

    for blank in ("   ", ""):
        assert sorted(ids(project=blank)) == sorted(ids())
    pool.close()


def test_a_view_confined_to_a_scope_does_not_read_user_through_a_list(
    memory: recuerdo.Memory,
) -> None:
    """A token limited to project:shop names ``user`` in the list: refused, as a search of
    both is (0167); its own scope alone it reads."""
    ids = saved(memory)
    lim = memory.for_principal("lim", memory.tenant, scopes=["project:shop"])
    with pytest.raises(CapabilityNotGranted):
        lim.recent(scope=BOTH, project="shop")
    with pytest.raises(CapabilityNotGranted):
        lim.recent(scope=["project:shop", "project:billing"])
    assert lim.recent(scope=["project:shop"], project="shop")["ids"] == [ids["rule2"], ids["rule1"]]


@pytest.mark.parametrize("tool", ["mem_context", "mem_search"])
def test_a_token_confined_to_a_project_reads_no_personal_observation_through_engram(
    tmp_path: Path, tool: str
) -> None:
    """Through the Engram door as the gateway runs it for a token: mem_context(project=shop)
    reads shop's scope and ``user``; a token limited to project:shop reads shop's scope alone
    and is told ``user`` was out of its reach (0173; refused before, as mem_search was since
    0167), is refused ``user`` when it names it, and a token reaching both reads both."""
    pool = gateway.MemoryPool(tmp_path, "mem")
    tools = {entry.name: entry for entry in profile("engram")}
    run = functools.partial(gateway.call, pool, memory_name="mem")
    boss = Principal("boss", "t")
    rule = run(
        boss,
        tool=tools["mem_save"],
        arguments={"title": "Rule", "content": "zebra rule", "project": "shop"},
    )
    mine = run(
        boss,
        tool=tools["mem_save"],
        arguments={
            "title": "Mine",
            "content": "zebra mine",
            "project": "shop",
            "scope": "personal",
        },
    )
    asked: dict[str, Any] = {"project": "shop"} | (
        {"query": "zebra"} if tool == "mem_search" else {}
    )

    def reply_to(principal: Principal, **more: Any) -> dict[str, Any]:
        return dict(run(principal, tool=tools[tool], arguments={**asked, **more}))

    def ids(principal: Principal, **more: Any) -> set[int]:
        reply = reply_to(principal, **more)
        return set(reply["ids"]) if tool == "mem_context" else {h["id"] for h in reply["results"]}

    lim = Principal("lim", "t", scopes=("project:shop",))
    assert ids(lim) == ids(lim, scope="project") == {rule["id"]}
    assert reply_to(lim)["scopes_out_of_reach"] == ["user"]
    assert "scopes_out_of_reach" not in reply_to(lim, scope="project")
    with pytest.raises(CapabilityNotGranted):
        ids(lim, scope="personal")
    both = Principal("both", "t", scopes=("project:shop", "user"))
    assert ids(both) == ids(boss) == {rule["id"], mine["id"]}
    assert "scopes_out_of_reach" not in reply_to(both)
    pool.close()
