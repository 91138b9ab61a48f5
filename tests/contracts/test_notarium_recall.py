"""Notarium's promises (../shared/spec/notarium.md), second part: recall (the context pack),
documents, the revision log, the audit, refusals by name and the doors, kept by
``--profile notarium`` over MCP. See test_notarium.py for the two axes, category notes, editing
and search."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ..conftest import Server
from .conftest import (
    Http,
    Json,
    Mcp,
    Seen,
    Servers,
    Tools,
    check_output_schemas,
    find_key,
    names_argument,
    report,
    rows,
    run_async,
    stdio_tools,
)
from .test_notarium import (
    FAR_TEXT,
    FAR_TITLE,
    activity,
    content_of,
    note,
    project,
    recall,
    source_ids,
    user,
)


@pytest.fixture(scope="module")
def server(servers: Servers) -> Server:
    return servers.get("notarium")


# -- recall ------------------------------------------------------------------------------------


def test_N20_recall_is_a_context_pack_with_titled_blocks(mcp: Mcp) -> None:
    """N20 recall answers {context, sources, truncated}: one block per note,
    `## {title} (project: X | personal)` then its content."""

    async def scenario(tools: Tools) -> None:
        await user(tools, "Drinks oolong tea", "drinks")
        await note(tools, "Tea menu", "Oolong tea and green tea")
        pack = await recall(tools, "oolong tea")
        assert pack["truncated"] is False
        assert "## drinks (personal)\nDrinks oolong tea" in pack["context"]
        assert "## Tea menu (project: shop)\nOolong tea and green tea" in pack["context"]
        assert len(pack["sources"]) == 2

    mcp(scenario)


def test_N21_recall_walks_links_both_ways_up_to_depth(mcp: Mcp) -> None:
    """N21 recall walks links in both directions up to `depth` (seeds first, neighbours after),
    skipping links to missing notes."""

    async def scenario(tools: Tools) -> None:
        seed = await note(tools, "Alpha plan", "The alpha rollout plan. See [[Nowhere at all]].")
        far = await note(tools, FAR_TITLE, FAR_TEXT)
        await tools.ok("link", {"from": far, "to": seed})  # points AT the seed
        flat = await recall(tools, "alpha rollout", depth=0)
        assert source_ids(flat) == [seed]
        walked = await recall(tools, "alpha rollout", depth=1)
        assert source_ids(walked) == [seed, far]
        assert [source["hop"] for source in walked["sources"]] == [0, 1]

    mcp(scenario)


def test_N22_a_link_to_a_note_created_later_resolves(mcp: Mcp) -> None:
    """N22 a [[Title]] link to a note created LATER resolves without editing the linking note."""

    async def scenario(tools: Tools) -> None:
        guide = await note(tools, "Deploy guide", f"See [[{FAR_TITLE}]] before deploying.")
        far = await note(tools, FAR_TITLE, FAR_TEXT)
        pack = await recall(tools, "deploying", project="shop", depth=1)
        assert source_ids(pack) == [guide, far]

    mcp(scenario)


def _long_notes(count: int, chars: int) -> list[tuple[str, str]]:
    return [(f"Budget {i}", ("budget words " * chars)[:chars]) for i in range(count)]


def test_N23_recall_packs_whole_blocks_within_the_budget(mcp: Mcp) -> None:
    """N23 the budget is tokens x 4 characters; whole blocks are added in rank order and the pack
    stops at the first that does not fit, saying truncated."""

    async def scenario(tools: Tools) -> None:
        for title, text in _long_notes(3, 400):
            await note(tools, title, text)
        whole = await recall(tools, "budget words")
        assert len(whole["sources"]) == 3 and whole["truncated"] is False
        small = await recall(tools, "budget words", budget_tokens=150)
        assert len(small["context"]) <= 600
        assert small["context"].count("## Budget") == 1
        assert small["truncated"] is True

    mcp(scenario)


def test_N24_a_first_block_too_big_is_cut_never_empty(mcp: Mcp) -> None:
    """N24 when the very first block is bigger than the budget, it is cut to the budget: the pack
    is never empty."""

    async def scenario(tools: Tools) -> None:
        await note(tools, "Huge", "huge text " * 500)
        pack = await recall(tools, "huge text", budget_tokens=20)
        assert 0 < len(pack["context"]) <= 80
        assert pack["truncated"] is True

    mcp(scenario)


def test_N25_the_seed_spellings_budgetTokens_and_maxPerSource(mcp: Mcp) -> None:
    """N25 recall honours the seed's spellings budgetTokens and maxPerSource (a small
    budgetTokens gives a smaller pack; maxPerSource cuts an over-long note with ...)."""

    async def scenario(tools: Tools) -> None:
        await note(tools, "Huge", "huge text " * 500)
        await note(tools, "Also huge", "huge text again " * 300)
        default = await recall(tools, "huge text")
        small = await recall(tools, "huge text", budgetTokens=30)
        assert len(small["context"]) <= 120 < len(default["context"])
        capped = await recall(tools, "huge text", maxPerSource=25)
        assert len(capped["sources"]) == 2
        for block in capped["context"].split("\n\n## "):
            assert len(block) <= 25 * 4 + 40 and block.endswith("..."), block

    mcp(scenario)


def test_N26_max_per_source_keeps_one_note_from_eating_the_pack(mcp: Mcp) -> None:
    """N26 max_per_source caps each note's block (cut with ...), default max(500, budget / 2)
    tokens."""

    async def scenario(tools: Tools) -> None:
        await note(tools, "Huge", "huge text " * 1000)
        await note(tools, "Small", "huge text, briefly")
        pack = await recall(tools, "huge text", max_per_source=50)
        assert len(pack["sources"]) == 2
        huge = next(s for s in pack["sources"] if s["title"] == "Huge")
        assert huge["cut"] is True and huge["tokens"] <= 50
        assert "..." in pack["context"]
        default = await recall(tools, "huge text", budget_tokens=4000)
        huge = next(s for s in default["sources"] if s["title"] == "Huge")
        assert huge["tokens"] <= 2000

    mcp(scenario)


def test_N27_muted_categories_leave_recall_but_not_search(mcp: Mcp, http: Http) -> None:
    """N27 a muted category is left out of recall (and the profile) and still found by search."""

    async def scenario(tools: Tools) -> int:
        muted = await user(tools, "Loves dumplings", "snacks")
        return int(muted["note_id"])

    note_id = mcp(scenario)
    http.native("mute", {"category": "snacks", "axis": "user"})

    async def after(tools: Tools) -> None:
        assert note_id not in source_ids(await recall(tools, "dumplings"))
        hits = (await tools.ok("search", {"query": "dumplings"}))["results"]
        assert [hit["id"] for hit in hits] == [note_id]

    mcp(after)
    assert rows(http.native("profile", {"axis": "user"})) == []


def test_N28_recall_skips_deleted_notes(mcp: Mcp, http: Http) -> None:
    """N28 recall skips notes deleted meanwhile."""

    async def scenario(tools: Tools) -> int:
        return await note(tools, "Old policy", "The refund policy is thirty days")

    note_id = mcp(scenario)
    http.native("delete", {"id": note_id})

    async def after(tools: Tools) -> None:
        assert (await recall(tools, "refund policy"))["sources"] == []

    mcp(after)


# -- documents, the log, the audit -------------------------------------------------------------


def test_N29_create_note_refuses_a_title_taken_in_the_project(mcp: Mcp, http: Http) -> None:
    """N29 create_note refuses a title already used in the same project (title_taken) and
    stores nothing; another project may use it."""

    async def scenario(tools: Tools) -> None:
        await note(tools, "Runbook", "first")
        before = activity(http)
        arguments = {"title": "Runbook", "content": "second", "project": "shop"}
        await tools.refused("create_note", arguments, "title_taken")
        assert activity(http) == before
        await note(tools, "Runbook", "elsewhere", where="ops")

    mcp(scenario)


def test_N30_memory_notes_are_excepted_from_title_protection(mcp: Mcp) -> None:
    """N30 memory is the one class without duplicate-title protection: a category note and a
    document of the same title live side by side."""

    async def scenario(tools: Tools) -> None:
        memory = await project(tools, "shop", "Uses Django", "stack")
        doc = await note(tools, "stack", "The shop's stack, for humans")
        again = await project(tools, "shop", "Uses Postgres", "stack")
        assert again["note_id"] == memory["note_id"] != doc

    mcp(scenario)


def test_N31_the_revision_log_shows_each_change(mcp: Mcp) -> None:
    """N31 the revision log (recent_activity) shows per revision its kind, the principal and the
    characters added and removed."""

    async def scenario(tools: Tools) -> None:
        mine = await user(tools, "Likes ramen", "food")
        await tools.ok(
            "edit_note",
            {
                "ref": mine["note_id"],
                "operation": "find_replace",
                "find": "ramen",
                "content": "udon",
            },
        )
        log = rows(await tools.ok("recent_activity", {}))
        assert [row["operation"] for row in log][:2] == ["edit", "write"]
        assert log[0]["principal"] == "main" and log[0]["item_id"] == mine["note_id"]
        assert log[0]["chars_added"] > 0 and log[0]["chars_removed"] > 0

    mcp(scenario)


def test_N32_the_revision_log_shows_delete_and_restore(mcp: Mcp, http: Http) -> None:
    """N32 a note deleted and restored by its owner shows both in the revision log."""

    async def scenario(tools: Tools) -> int:
        return await note(tools, "Temp", "temporary")

    note_id = mcp(scenario)
    http.native("delete", {"id": note_id})
    http.native("restore", {"id": note_id})

    async def after(tools: Tools) -> None:
        log = rows(await tools.ok("recent_activity", {}))
        mine = [row["operation"] for row in log if row["item_id"] == note_id]
        assert mine[:2] == ["restore", "delete"]

    mcp(after)


def test_N33_the_log_vocabulary_has_every_kind(mcp: Mcp) -> None:
    """N33 the revision log's kinds include write, external, restore, delete and merge (the
    published result schema of recent_activity names them)."""

    async def scenario(tools: Tools) -> None:
        schema = (await tools.listed())["recent_activity"].output_schema
        kinds = {kind for found in find_key(schema, "enum") for kind in found}
        assert {"write", "external", "restore", "delete", "merge"} <= kinds, schema

    mcp(scenario)


def test_N34_the_retrieval_audit_shows_what_the_agent_looked_for(mcp: Mcp, http: Http) -> None:
    """N34 a retrieval audit shows what the agent searched and recalled and whether it found
    something."""

    async def scenario(tools: Tools) -> None:
        await user(tools, "Likes chess", "games")
        await tools.ok("search", {"query": "chess"})
        await recall(tools, "quarterly invoice deadlines")  # nothing near it is stored

    mcp(scenario)
    audit = rows(http.native("audit", {}))
    assert [(row["query"], row["found"]) for row in audit][:2] == [
        ("quarterly invoice deadlines", False),
        ("chess", True),
    ]


def test_N35_search_before_write_appends_to_the_existing_category(mcp: Mcp) -> None:
    """N35 the seed's discipline: search the fact's topic first; when the category exists, the
    same remember appends to it instead of a synonym category."""

    async def scenario(tools: Tools) -> None:
        await user(tools, "Prefers answers in Spanish", "language")
        hits = (await tools.ok("search", {"query": "Spanish answers"}))["results"]
        category = hits[0]["title"]
        again = await user(tools, "Also reads Catalan", category)
        assert again["outcome"] == "appended" and again["note_id"] == hits[0]["id"]

    mcp(scenario)


# -- refusals by name --------------------------------------------------------------------------

CALLS: dict[str, Json] = {
    "remember_about_user": {"observation": "o", "category": "c"},
    "remember_about_project": {"project": "shop", "observation": "o", "category": "c"},
    "search": {"query": "kept"},
    "recall": {"query": "kept"},
    "edit_note": {"ref": "{id}", "operation": "append", "content": "more"},
    "get_note": {"ref": "{id}"},
    "recent_activity": {},
    "create_note": {"title": "Another", "content": "body", "project": "shop"},
    "link": {"from": "{id}", "to": "{other}"},
}


def test_N36_unknown_arguments_are_refused_by_name(mcp: Mcp, http: Http) -> None:
    """N36 an argument a tool does not take is refused by name (unknown_argument), never
    silently dropped, and the store is unchanged: every tool of the profile."""

    async def scenario(tools: Tools) -> None:
        ids = {"{id}": await note(tools, "Kept", "kept"), "{other}": await note(tools, "B", "b")}
        wrong: dict[str, Any] = {}
        for tool, arguments in CALLS.items():
            filled = {k: ids.get(v, v) if isinstance(v, str) else v for k, v in arguments.items()}
            before = activity(http)
            failed, reply = await tools.call(tool, {**filled, "bogus_param": 1})
            if not failed or not names_argument(reply, "bogus_param"):
                wrong[tool] = reply.get("error") or "accepted"
            elif activity(http) != before:
                wrong[tool] = "the store changed"
        assert not wrong, report(wrong)

    mcp(scenario)


def test_N37_an_unknown_tool_is_refused_by_name(mcp: Mcp) -> None:
    """N37 a tool the profile does not have is refused as unknown_tool, naming it."""

    async def scenario(tools: Tools) -> None:
        reply = await tools.refused("remember_everything", {}, "unknown_tool")
        assert "remember_everything" in reply["detail"]

    mcp(scenario)


def test_N38_stdio_door_serves_the_same_tools(mcp: Mcp, tmp_path: Path, seen: Seen) -> None:
    """N38 `recuerdo mcp --profile notarium` serves over stdio the same tools as /mcp, and they
    work."""

    async def over_http(tools: Tools) -> set[str]:
        return set(await tools.listed())

    expected = mcp(over_http)
    assert set(CALLS) <= expected

    async def scenario() -> None:
        async with stdio_tools(tmp_path, "desk", "notarium", seen) as tools:
            assert set(await tools.listed()) == expected
            mine = await user(tools, "Over a pipe", "transport")
            assert await content_of(tools, mine["note_id"]) == "Over a pipe"

    run_async(scenario)


def test_X4_every_notarium_tool_publishes_its_result_schema(mcp: Mcp, seen: Seen) -> None:
    """X4 typed results: every Notarium tool publishes an outputSchema, and every reply this
    module saw validates against it."""

    async def scenario(tools: Tools) -> None:
        mine = await user(tools, "Typed", "typed")
        await tools.ok("get_note", {"ref": mine["note_id"]})
        await recall(tools, "typed")
        await check_output_schemas(tools, seen)

    mcp(scenario)
