"""Engram filters personal observations by project as well as scope (decision 0148): a read
of project A's personal observations does not show project B's. They all live in ``user``;
each records its project (the tag ``project:<name>``), and a note of ``user`` recording none
(written before, or natively) is of no project and shown to every project.

Driven like test_engram.py: the official MCP client calling mem_* tools over streamable HTTP;
what the owner does goes through the native routes.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from ..conftest import Server
from .conftest import Http, Json, Mcp, Seen, Servers, Tools
from .test_engram import save, search


@pytest.fixture(scope="module")
def server(servers: Servers) -> Server:
    return servers.get("engram")


def personal(project: str | None, title: str, **extra: Any) -> Json:
    named = {} if project is None else {"project": project}
    return {"scope": "personal", "title": title, "content": f"{title} zebra", **named, **extra}


async def saved_pair(tools: Tools, key: str | None) -> tuple[int, int]:
    """One personal observation of shop and one of billing (with ``key`` as topic key)."""
    keyed = {} if key is None else {"topic_key": key}
    shop = await save(tools, **personal("shop", "Shop editor", **keyed))
    billing = await save(tools, **personal("billing", "Billing editor", **keyed))
    return shop["id"], billing["id"]


async def read_ids(tools: Tools, read: str, project: str | None) -> set[int]:
    """The ids a personal read of ``project`` returns (mem_search or mem_context)."""
    named = {} if project is None else {"project": project}
    if read == "search":
        return {hit["id"] for hit in await search(tools, query="zebra", scope="personal", **named)}
    reply = await tools.ok("mem_context", {"scope": "personal", **named})
    return set(reply["ids"])


READS = ["search", "context"]
KEYS = [None, "prefs/editor"]


@pytest.mark.parametrize("key", KEYS, ids=["keyless", "keyed"])
@pytest.mark.parametrize("read", READS)
def test_P1_a_projects_personal_read_leaves_out_another_projects(
    mcp: Mcp, read: str, key: str | None
) -> None:
    """P1 mem_search and mem_context of shop's personal observations return shop's, not
    billing's; a read naming no project returns both (Engram's 'omit for all')."""

    async def scenario(tools: Tools) -> None:
        shop, billing = await saved_pair(tools, key)
        assert await read_ids(tools, read, "shop") == {shop}
        assert await read_ids(tools, read, " Billing ") == {billing}  # as Engram matches it
        assert await read_ids(tools, read, None) == {shop, billing}

    mcp(scenario)


@pytest.mark.parametrize("read", READS)
def test_P2_saved_without_a_project_is_the_default_projects(mcp: Mcp, read: str) -> None:
    """P2 a personal observation saved without a project is project default's (as its topic
    key is, decision 0138): read with default, not with another project."""

    async def scenario(tools: Tools) -> None:
        plain = (await save(tools, **personal(None, "Plain editor")))["id"]
        shop = (await save(tools, **personal("shop", "Shop editor")))["id"]
        assert await read_ids(tools, read, "default") == {plain}
        assert await read_ids(tools, read, "shop") == {shop}

    mcp(scenario)


@pytest.mark.parametrize("read", READS)
def test_P3_a_note_recording_no_project_is_shown_to_every_project(
    mcp: Mcp, http: Http, read: str
) -> None:
    """P3 a note of ``user`` written before projects were recorded (keyless, or keyed by its
    topic key alone as before 0138) is of no project: every project's personal read shows
    it, as before (whose it is cannot be told; hiding it would hide it from all)."""
    old = [
        http.native("save", {"title": f"Old {n}", "content": "old zebra", "scope": "user", **k})
        for n, k in enumerate([{}, {"key": "prefs/editor"}])
    ]

    async def scenario(tools: Tools) -> None:
        shop, billing = await saved_pair(tools, None)
        legacy = {note["id"] for note in old}
        assert await read_ids(tools, read, "shop") == {shop, *legacy}
        assert await read_ids(tools, read, "billing") == {billing, *legacy}

    mcp(scenario)


def test_P4_another_projects_pinned_personal_observation_stays_out(mcp: Mcp, http: Http) -> None:
    """P4 mem_context puts pins first: billing's pinned personal observation is not shop's."""

    async def scenario(tools: Tools) -> None:
        shop, billing = await saved_pair(tools, None)
        http.native("pin", {"id": billing})
        context = await tools.ok("mem_context", {"project": "shop", "scope": "personal"})
        assert (context["ids"], context["pinned"]) == ([shop], [])
        http.native("pin", {"id": shop})
        context = await tools.ok("mem_context", {"project": "shop", "scope": "personal"})
        assert (context["ids"], context["pinned"]) == ([shop], [shop])

    mcp(scenario)


def test_P5_the_same_text_in_two_projects_is_two_observations(mcp: Mcp) -> None:
    """P5 Engram counts a repeat within (project, scope): billing saving shop's personal text
    makes billing's own observation, not a duplicate of shop's it could not read back."""

    async def scenario(tools: Tools) -> None:
        first = await save(tools, **personal("shop", "Editor"))
        other = await save(tools, **personal("billing", "Editor"))
        again = await save(tools, **personal("shop", "Editor"))
        assert other["outcome"] == "created" and other["id"] != first["id"]
        assert (again["outcome"], again["id"]) == ("duplicate", first["id"])
        assert await read_ids(tools, "search", "billing") == {other["id"]}

    mcp(scenario)


def test_P6_reads_leave_the_store_as_it_was(mcp: Mcp, http: Http) -> None:
    """P6 the project reads change nothing: the export and the journal are the same after."""

    def state() -> tuple[Any, Any]:
        return (
            http.native("export", {"scope": "user", "limit": 1024})["records"][1:],  # past its time
            http.native("journal", {"limit": 1000}),
        )

    async def writes(tools: Tools) -> None:
        await saved_pair(tools, None)
        await saved_pair(tools, "prefs/editor")

    async def reads(tools: Tools) -> None:
        for read in READS:
            for project in ("shop", "billing", "default", None):
                await read_ids(tools, read, project)

    mcp(writes)
    before = state()
    mcp(reads)
    assert state() == before


def test_P7_an_export_read_into_another_memory_keeps_the_project(
    mcp: Mcp, http: Http, server: Server, seen: Seen
) -> None:
    """P7 export, then import into an empty memory: each personal observation is still its
    project's there (the recorded project travels with the note's tags)."""
    other = f"c{uuid.uuid4().hex[:12]}"
    there = Http(server, other, seen)

    async def writes(tools: Tools) -> None:
        await saved_pair(tools, None)
        await saved_pair(tools, "prefs/editor")

    mcp(writes)
    records = http.native("export", {"scope": "user", "limit": 1024})["records"]
    assert there.native("import", {"records": records, "scope": "user"})["imported"] >= 4

    async def reads(tools: Tools) -> None:
        for read in READS:
            shop = await read_ids(tools, read, "shop")
            billing = await read_ids(tools, read, "billing")
            assert len(shop) == len(billing) == 2 and not shop & billing
            for found in (shop, billing):
                titles = {
                    (await tools.ok("mem_get_observation", {"id": i}))["title"] for i in found
                }
                assert len({title.split()[0] for title in titles}) == 1  # one project's

    Mcp(server, other, seen)(reads)


def test_P8_a_search_naming_a_project_and_no_scope_reads_its_personal_observations_too(
    mcp: Mcp,
) -> None:
    """P8 Engram filters the scope only when one is given: mem_search(project=shop) alone
    returns shop's observations and shop's personal ones, not billing's of either scope. It
    read shop's project scope alone (decision 0167)."""

    async def scenario(tools: Tools) -> None:
        shop_personal, billing_personal = await saved_pair(tools, None)
        shop = (await save(tools, project="shop", title="Shop rule", content="zebra rule"))["id"]
        billing = (await save(tools, project="billing", title="Bill", content="zebra bill"))["id"]
        found = {hit["id"] for hit in await search(tools, query="zebra", project="shop")}
        assert found == {shop, shop_personal}
        assert billing not in found and billing_personal not in found
        scoped = await search(tools, query="zebra", project="shop", scope="project")
        assert {hit["id"] for hit in scoped} == {shop}

    mcp(scenario)


def test_P9_context_naming_a_project_and_no_scope_reads_its_personal_observations_too(
    mcp: Mcp, http: Http
) -> None:
    """P9 mem_context(project=shop) alone is shop's recent context as Engram gives it: shop's
    observations and shop's personal ones, newest first, pins first, one max_bytes over the
    merged text; not billing's of either scope. It read shop's project scope alone (0167
    left it; decision 0172). With a scope, that scope alone."""

    async def scenario(tools: Tools) -> None:
        shop = (await save(tools, project="shop", title="Shop rule", content="zebra rule"))["id"]
        shop_personal, billing_personal = await saved_pair(tools, None)
        billing = (await save(tools, project="billing", title="Bill", content="zebra bill"))["id"]
        newer = (await save(tools, project="shop", title="Shop later", content="zebra"))["id"]
        context = await tools.ok("mem_context", {"project": "shop"})
        assert context["ids"] == [newer, shop_personal, shop]
        assert billing not in context["ids"] and billing_personal not in context["ids"]
        assert "Shop editor" in context["text"] and context["truncated"] is False
        http.native("pin", {"id": shop})
        http.native("pin", {"id": billing_personal})
        pinned = await tools.ok("mem_context", {"project": "shop"})
        assert (pinned["ids"], pinned["pinned"]) == ([shop, newer, shop_personal], [shop])
        cut = await tools.ok("mem_context", {"project": "shop", "max_bytes": 120})
        assert cut["truncated"] is True and cut["returned_bytes"] <= 120
        assert cut["ids"] == pinned["ids"][: len(cut["ids"])]
        scoped = await tools.ok("mem_context", {"project": "shop", "scope": "project"})
        assert scoped["ids"] == [shop, newer]
        alone = await tools.ok("mem_context", {})  # neither: project default's scope, as before
        assert alone["ids"] == []

    mcp(scenario)
