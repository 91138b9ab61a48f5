"""Engram's promises (../shared/spec/engram.md), first part: saving, finding, context,
sessions, passive capture, review and what is stored, kept by ``--profile engram`` over MCP.

Driven as Engram's users drive it: the official MCP client calling mem_* tools over streamable
HTTP (``recuerdo serve --profile engram``, /mcp); test_engram_workflow.py has versions and
conflicts, refusals and the stdio door.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

import pytest

from recuerdo.index.embed import load_embedder
from recuerdo.store.sqlite import sqlite3

from ..conftest import Server
from .conftest import (
    Http,
    Json,
    Mcp,
    Servers,
    Tools,
    rows,
)


@pytest.fixture(scope="module")
def server(servers: Servers) -> Server:
    return servers.get("engram")


def journal(http: Http) -> list[Any]:
    """Every change the store recorded (the owner's view, through the native route)."""
    return rows(http.native("journal", {"limit": 1000}))


def when(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


async def save(tools: Tools, **arguments: Any) -> Json:
    return await tools.ok("mem_save", {"title": "Note", "content": "Body", **arguments})


async def search(tools: Tools, **arguments: Any) -> list[Json]:
    return rows((await tools.ok("mem_search", arguments))["results"])


# -- saving ------------------------------------------------------------------------------------


def test_E1_empty_title_is_refused_before_any_side_effect(mcp: Mcp, http: Http) -> None:
    """E1 mem_save needs a title: an empty one is refused before anything is stored."""

    async def scenario(tools: Tools) -> None:
        await tools.refused("mem_save", {"title": "", "content": "lost"}, "empty_title")
        assert await search(tools, query="lost") == []

    mcp(scenario)
    assert journal(http) == []


def test_E2_personal_scope_is_apart_from_the_project(mcp: Mcp) -> None:
    """E2 scope is `project` by default or `personal`: a personal observation is not in the
    project's results, and the project's is not in the personal ones."""

    async def scenario(tools: Tools) -> None:
        await save(tools, title="Editor", content="Prefers vim keybindings", scope="personal")
        await save(tools, title="Stack", content="Shop runs vim plugins in CI", project="shop")
        personal = await search(tools, query="vim", scope="personal")
        project = await search(tools, query="vim", project="shop")
        assert [hit["title"] for hit in personal] == ["Editor"]
        assert [hit["title"] for hit in project] == ["Stack"]

    mcp(scenario)


def test_E3_topic_key_updates_the_same_observation(mcp: Mcp) -> None:
    """E3 mem_save with a topic_key updates that topic's observation and counts a revision."""

    async def scenario(tools: Tools) -> None:
        key = {"topic_key": "odd/checkout/tasks", "project": "shop", "title": "tasks"}
        first = await save(tools, content="- [ ] one", **key)
        second = await save(tools, content="- [x] one", **key)
        assert first["outcome"] == "created" and second["outcome"] == "updated"
        assert second["id"] == first["id"] and second["version"] == first["version"] + 1
        whole = await tools.ok("mem_get_observation", {"id": first["id"]})
        assert whole["content"] == "- [x] one"

    mcp(scenario)


def test_E4_every_revision_of_a_topic_stays_readable(mcp: Mcp) -> None:
    """E4 Engram loses the old content of an upsert; we keep every revision, listed by
    mem_history and read whole by mem_revision."""

    async def scenario(tools: Tools) -> None:
        key = {"topic_key": "odd/cart/tasks", "project": "shop", "title": "cart tasks"}
        first = await save(tools, content="first text", **key)
        await save(tools, content="second text", **key)
        history = rows(await tools.ok("mem_history", {"id": first["id"]}))
        assert [row["version"] for row in history if row.get("version")] == [1, 2]
        old = await tools.ok("mem_revision", {"id": first["id"], "version": 1})
        assert old["content"] == "first text"

    mcp(scenario)


@pytest.mark.parametrize(
    "other",
    [{"scope": "personal"}, {"project": "billing"}],
    ids=["other-scope", "other-project"],
)
def test_E5_the_same_key_elsewhere_is_another_observation(mcp: Mcp, other: Json) -> None:
    """E5 the same topic_key in another scope or project is another observation."""

    async def scenario(tools: Tools) -> None:
        here = await save(tools, topic_key="auth/design", project="shop", content="JWT")
        there = await save(tools, topic_key="auth/design", content="Sessions", **other)
        assert there["outcome"] == "created" and there["id"] != here["id"]
        mine = await tools.ok("mem_get_observation", {"id": here["id"]})
        assert mine["content"] == "JWT"

    mcp(scenario)


def test_E6_an_exact_repeat_is_counted_not_stored_twice(mcp: Mcp) -> None:
    """E6 an exact repeat (same text once lower-cased and whitespace collapsed, same project,
    scope, type and title) within 15 minutes raises a duplicate counter instead of a copy."""

    async def scenario(tools: Tools) -> None:
        same = {"title": "DB", "type": "decision", "project": "shop"}
        first = await tools.ok("mem_save", {**same, "content": "Use Postgres 16"})
        again = await tools.ok("mem_save", {**same, "content": "  use   POSTGRES 16 "})
        assert again["id"] == first["id"] and again["duplicates"] == 1
        assert [hit["id"] for hit in await search(tools, query="postgres", project="shop")] == [
            first["id"]
        ]

    mcp(scenario)


def test_E7_update_changes_title_and_content_keeping_a_revision(mcp: Mcp) -> None:
    """E7 mem_update(id, title?, content?) changes what it is given; the earlier text stays as a
    revision."""

    async def scenario(tools: Tools) -> None:
        saved = await save(tools, title="Old title", content="old body", project="shop")
        await tools.ok("mem_update", {"id": saved["id"], "title": "New title", "content": "new"})
        whole = await tools.ok("mem_get_observation", {"id": saved["id"]})
        assert (whole["title"], whole["content"]) == ("New title", "new")
        await tools.ok("mem_update", {"id": saved["id"], "title": "Newest title"})
        whole = await tools.ok("mem_get_observation", {"id": saved["id"]})
        assert (whole["title"], whole["content"]) == ("Newest title", "new")
        old = await tools.ok("mem_revision", {"id": saved["id"], "version": 1})
        assert old["content"] == "old body"

    mcp(scenario)


def test_E8_soft_delete_hides_an_observation_everywhere(mcp: Mcp) -> None:
    """E8 mem_delete is soft by default: the observation is hidden from get, search and context."""

    async def scenario(tools: Tools) -> None:
        saved = await save(tools, title="Secret plan", content="zebra launch", project="shop")
        gone = await tools.ok("mem_delete", {"id": saved["id"]})
        assert gone["deleted"] == "soft"
        await tools.refused("mem_get_observation", {"id": saved["id"]}, "item_not_found")
        assert await search(tools, query="zebra", project="shop") == []
        context = await tools.ok("mem_context", {"project": "shop"})
        assert "zebra" not in context["text"]

    mcp(scenario)


def test_E8b_a_soft_deleted_observation_can_be_restored(mcp: Mcp) -> None:
    """E8b (extension, decision 0084): a save based on an observation deleted since is refused,
    naming restoring; mem_restore brings it back, and the save then goes through."""

    async def scenario(tools: Tools) -> None:
        key = {"topic_key": "odd/cart/tasks", "project": "shop", "title": "cart tasks"}
        saved = await save(tools, content="zebra first", **key)
        await tools.ok("mem_delete", {"id": saved["id"]})
        refused = await tools.refused(
            "mem_save", {**key, "content": "zebra second", "expected_version": 1}, "conflict"
        )
        assert "restore it" in refused["detail"].lower()
        await tools.refused("mem_restore", {"id": saved["id"] + 1000}, "item_not_found")
        back = await tools.ok("mem_restore", {"id": saved["id"]})
        assert back["id"] == saved["id"]
        again = await save(tools, content="zebra second", expected_version=1, **key)
        assert again["id"] == saved["id"] and again["outcome"] == "updated"
        assert [hit["id"] for hit in await search(tools, query="zebra", project="shop")] == [
            saved["id"]
        ]
        await tools.refused("mem_restore", {"id": saved["id"]}, "item_not_found")  # live

    mcp(scenario)


def test_E9_hard_delete_removes_the_observation_and_its_revisions(mcp: Mcp, http: Http) -> None:
    """E9 mem_delete with hard_delete removes the observation for good, revisions included."""

    async def scenario(tools: Tools) -> int:
        saved = await save(tools, topic_key="t/k", content="one", project="shop")
        await save(tools, topic_key="t/k", content="two", project="shop")
        await tools.ok("mem_delete", {"id": saved["id"], "hard_delete": True})
        await tools.refused("mem_get_observation", {"id": saved["id"]}, "item_not_found")
        return int(saved["id"])

    note_id = mcp(scenario)
    reply = http.post("/v1/history", {"id": note_id})
    assert reply.status == 404 and reply.body["error"] == "item_not_found"


# -- finding -----------------------------------------------------------------------------------


def test_E10_search_hits_are_previews_that_say_so(mcp: Mcp) -> None:
    """E10 mem_search results are previews: cut ones say truncated, and are shorter than the
    observation."""

    async def scenario(tools: Tools) -> None:
        long = "Checkout tasks. " + "details " * 400
        await save(tools, title="checkout", content=long, project="shop")
        await save(tools, title="short", content="checkout is green", project="shop")
        hits = {hit["title"]: hit for hit in await search(tools, query="checkout", project="shop")}
        assert hits["checkout"]["truncated"] is True
        assert len(hits["checkout"]["preview"]) < len(long)
        assert hits["short"]["truncated"] is False
        assert hits["short"]["preview"] == "checkout is green"

    mcp(scenario)


def test_E11_get_observation_is_whole_never_truncated(mcp: Mcp) -> None:
    """E11 mem_get_observation returns the full content, never truncated."""

    async def scenario(tools: Tools) -> None:
        long = "".join(f"line {i}: {'ñandú ' * 8}\n" for i in range(600))
        saved = await save(tools, title="big", content=long, project="shop")
        assert saved["truncated"] is False
        whole = await tools.ok("mem_get_observation", {"id": saved["id"]})
        assert whole["content"] == long

    mcp(scenario)


QUERIES = ['- " : *', "NOT OR AND", "(unbalanced", "col:umn", "^$~%", "NEAR/2", "    ", ""]


def test_E12_any_query_text_is_safe_and_blank_is_empty(mcp: Mcp) -> None:
    """E12 queries with operator characters never error; a blank query returns [] (never null)."""

    async def scenario(tools: Tools) -> None:
        await save(tools, title="colon", content="a note about col umn", project="shop")
        for query in QUERIES:
            reply = await tools.ok("mem_search", {"query": query, "project": "shop"})
            assert isinstance(reply["results"], list), (query, reply)
            if not query.strip():
                assert reply["results"] == [], (query, reply)

    mcp(scenario)


def test_E13_search_limit_defaults_to_10_and_caps_at_20(mcp: Mcp) -> None:
    """E13 mem_search returns 10 results by default and at most 20."""

    async def scenario(tools: Tools) -> None:
        for i in range(21):
            await save(tools, title=f"widget {i}", content=f"widget number {i}", project="shop")
        assert len(await search(tools, query="widget", project="shop")) == 10
        assert len(await search(tools, query="widget", project="shop", limit=20)) == 20
        # A larger limit is capped, not refused: the schema and the mapping agree.
        assert len(await search(tools, query="widget", project="shop", limit=50)) == 20

    mcp(scenario)


def test_E14_match_mode_all_needs_every_word(mcp: Mcp) -> None:
    """E14 match_mode `any` finds items with any query word; `all` only items with every one."""

    async def scenario(tools: Tools) -> None:
        await save(tools, title="a", content="redis cache eviction", project="shop")
        await save(tools, title="b", content="redis replication lag", project="shop")
        query = {"query": "redis eviction", "project": "shop"}
        anyword = await search(tools, **query, match_mode="any")
        every = await search(tools, **query, match_mode="all")
        assert {hit["title"] for hit in anyword} == {"a", "b"}
        assert {hit["title"] for hit in every} == {"a"}

    mcp(scenario)


@pytest.mark.skipif(load_embedder() is None, reason="no embedding model installed")
def test_E15_X2_a_paraphrase_finds_a_note_right_after_it_is_saved(mcp: Mcp) -> None:
    """E15 X2 search is words and meaning: a paraphrase right after mem_save finds the note by
    meaning (the reader waits for a small backlog instead of answering `queued`)."""

    async def scenario(tools: Tools) -> None:
        await save(
            tools,
            title="Car maintenance",
            content="The automobile needs new brake pads before winter.",
            project="garage",
        )
        reply = await tools.ok("mem_search", {"query": "vehicle repair", "project": "garage"})
        assert reply["meaning"] == "armed", reply
        assert [hit["title"] for hit in reply["results"]] == ["Car maintenance"]

    mcp(scenario)


# -- context, sessions, timeline ---------------------------------------------------------------


def test_E16_context_is_cut_utf8_safe_and_marked(mcp: Mcp) -> None:
    """E16 mem_context gives the project's recent context within max_bytes: a cut is UTF-8 safe
    and marked truncated, and max_bytes is capped at 64 KiB."""

    async def scenario(tools: Tools) -> None:
        await save(tools, title="Año", content="ñandú " * 200, project="shop")
        for limit in (61, 62, 63, 64):
            cut = await tools.ok("mem_context", {"project": "shop", "max_bytes": limit})
            assert cut["truncated"] is True
            assert len(cut["text"].encode("utf-8")) <= limit
            assert "\ufffd" not in cut["text"]
        whole = await tools.ok("mem_context", {"project": "shop"})
        assert whole["truncated"] is False and "Año" in whole["text"]
        capped = await tools.ok("mem_context", {"project": "shop", "max_bytes": 1_000_000})
        assert capped["limit_bytes"] == 65536

    mcp(scenario)


def test_E16_pinned_observations_come_first_in_context_flagged(mcp: Mcp, http: Http) -> None:
    """Extension: an observation the owner pinned opens mem_context, within max_bytes and
    flagged pinned; a named context set (context_set) follows it."""

    async def scenario(tools: Tools) -> None:
        old = (await save(tools, title="Pinned rule", content="Never deploy", project="shop"))["id"]
        chosen = (await save(tools, title="Chosen", content="Runbook", project="shop"))["id"]
        for step in range(3):
            await save(tools, title=f"Newer {step}", content="noise", project="shop")
        http.native("pin", {"id": old})
        http.native("context_set", {"name": "oncall", "ids": [chosen]})
        context = await tools.ok("mem_context", {"project": "shop", "context_set": "oncall"})
        assert context["ids"][:2] == [old, chosen] and context["pinned"] == [old]
        assert context["text"].startswith("## Pinned rule") and "pinned)" in context["text"]
        small = await tools.ok("mem_context", {"project": "shop", "max_bytes": 40})
        assert small["pinned"] == [old] and len(small["text"].encode()) <= 40

    mcp(scenario)


def test_E17_timeline_shows_neighbours_in_the_same_session(mcp: Mcp) -> None:
    """E17 mem_timeline(observation_id, before, after) lists the observations saved just before
    and after it in the same session."""

    async def scenario(tools: Tools) -> None:
        await tools.ok("mem_session_start", {"id": "s1", "project": "shop"})
        ids = []
        for step in range(4):
            saved = await save(tools, title=f"step {step}", session_id="s1", project="shop")
            ids.append(saved["id"])
        await save(tools, title="elsewhere", session_id="s2", project="shop")
        line = await tools.ok("mem_timeline", {"observation_id": ids[1], "before": 1, "after": 2})
        assert [row["id"] for row in line["before"]] == [ids[0]]
        assert [row["id"] for row in line["after"]] == ids[2:4]

    mcp(scenario)


@pytest.mark.parametrize("tool", ["mem_session_end", "mem_session_summary"])
def test_E18_a_session_summary_reaches_the_next_context(mcp: Mcp, tool: str) -> None:
    """E18 mem_session_end / mem_session_summary record the session's summary, which the next
    session's mem_context shows."""

    async def scenario(tools: Tools) -> None:
        await tools.ok("mem_session_start", {"id": "s9", "project": "shop"})
        if tool == "mem_session_end":
            await tools.ok(tool, {"id": "s9", "summary": "Refunds flow is half done"})
        else:
            await tools.ok(tool, {"session_id": "s9", "content": "Refunds flow is half done"})
        context = await tools.ok("mem_context", {"project": "shop"})
        assert "Refunds flow is half done" in context["text"]

    mcp(scenario)


def test_E19_save_prompt_keeps_the_users_prompt(mcp: Mcp) -> None:
    """E19 mem_save_prompt(content, session_id?, project?) stores the user's prompt, found again
    by the project's context or search."""

    async def scenario(tools: Tools) -> None:
        prompt = "Please add a refunds endpoint to the zebra service"
        arguments = {"content": prompt, "session_id": "s1", "project": "shop"}
        await tools.ok("mem_save_prompt", arguments)
        context = await tools.ok("mem_context", {"project": "shop"})
        found = await search(tools, query="refunds zebra", project="shop")
        assert prompt in context["text"] or any(prompt in hit["preview"] for hit in found)

    mcp(scenario)


def test_E20_suggested_topic_keys_are_stable_family_slugs(mcp: Mcp) -> None:
    """E20 mem_suggest_topic_key(type, title, content) gives a stable `family/slug` key."""

    async def scenario(tools: Tools) -> None:
        await save(tools)  # a read needs its memory to exist (reads never create one)
        ask = {"type": "bugfix", "title": "Fix login timeout", "content": "raise it to 30 s"}
        first = await tools.ok("mem_suggest_topic_key", ask)
        again = await tools.ok("mem_suggest_topic_key", ask)
        assert first["key"] == again["key"]
        assert re.fullmatch(r"[a-z0-9-]+/[a-z0-9-]+", first["key"]), first

    mcp(scenario)


# -- passive capture and review ----------------------------------------------------------------

LEARNINGS = """\
## Key Learnings
1. This earlier section is not the last one and is ignored entirely

## Work log
Did things.

{heading}
1. **Always** run the `migrations` before deploying code
2. short one
3. Supercalifragilistic expialidocious
4. Cache invalidation needs a version key per tenant
"""


def test_E21_passive_capture_reads_the_last_learnings_section(mcp: Mcp) -> None:
    """E21 mem_capture_passive takes the last `Key Learnings` (or `Learnings`, `Aprendizajes
    Clave`) section's numbered items, strips markdown, keeps items of at least 20 characters and
    4 words, saves each as a passive observation and answers {extracted, saved, duplicates}."""

    async def scenario(tools: Tools) -> None:
        headings = ["## Key Learnings", "## Learnings", "## Aprendizajes Clave"]
        for project, heading in enumerate(headings):
            text = LEARNINGS.format(heading=heading)
            arguments = {"content": text, "project": f"p{project}"}
            reply = await tools.ok("mem_capture_passive", arguments)
            assert (reply["extracted"], reply["saved"], reply["duplicates"]) == (2, 2, 0), heading
            contents = []
            for note_id in reply["ids"]:
                whole = await tools.ok("mem_get_observation", {"id": note_id})
                assert whole["kind"] == "passive"
                contents.append(whole["content"])
            assert contents == [
                "Always run the migrations before deploying code",
                "Cache invalidation needs a version key per tenant",
            ], heading

    mcp(scenario)


def test_E22_passive_capture_skips_what_the_project_knows(mcp: Mcp) -> None:
    """E22 mem_capture_passive de-duplicates within the project: a repeat saves nothing and
    counts duplicates; another project saves its own."""

    async def scenario(tools: Tools) -> None:
        text = LEARNINGS.format(heading="## Key Learnings")
        await tools.ok("mem_capture_passive", {"content": text, "project": "shop"})
        again = await tools.ok("mem_capture_passive", {"content": text, "project": "shop"})
        assert (again["saved"], again["duplicates"]) == (0, 2)
        other = await tools.ok("mem_capture_passive", {"content": text, "project": "ops"})
        assert other["saved"] == 2

    mcp(scenario)


def test_E22b_passive_capture_in_a_session_goes_to_its_project(mcp: Mcp) -> None:
    """E22b mem_capture_passive names a session, not a project: the learnings are the session's
    project's, in its context (the profile's default project sent them to project:default)."""

    async def scenario(tools: Tools) -> None:
        text = LEARNINGS.format(heading="## Key Learnings").replace("tenant", "region")
        await tools.ok("mem_session_start", {"id": "s22", "project": "Depot"})
        reply = await tools.ok("mem_capture_passive", {"content": text, "session_id": "s22"})
        assert (reply["scope"], reply["saved"]) == ("project:depot", 2)
        context = await tools.ok("mem_context", {"project": "depot"})
        assert "version key per region" in context["text"]
        alone = text.replace("region", "store")
        reply = await tools.ok("mem_capture_passive", {"content": alone})
        assert reply["scope"] == "project:default"
        named = {"content": alone, "session_id": "s22", "project": "yard"}
        assert (await tools.ok("mem_capture_passive", named))["scope"] == "project:yard"

    mcp(scenario)


def test_E23_decisions_policies_and_preferences_get_review_dates(mcp: Mcp) -> None:
    """E23 decisions, policies and preferences get review dates (about 6, 12 and 3 months)."""

    async def scenario(tools: Tools) -> None:
        for kind, months in (("decision", 6), ("policy", 12), ("preference", 3)):
            saved = await save(tools, title=f"a {kind}", type=kind, project="shop")
            whole = await tools.ok("mem_get_observation", {"id": saved["id"]})
            ahead = when(whole["review_at"]) - when(whole["created_at"])
            assert timedelta(days=months * 28) <= ahead <= timedelta(days=months * 31 + 1), kind

    mcp(scenario)


def test_E24_past_review_date_reads_needs_review_until_marked(
    mcp: Mcp, server: Server, name: str
) -> None:
    """E24 a memory past its review date is `needs_review` (listed by mem_review) and only an
    explicit mark_reviewed clears it; reading it never does."""

    async def first(tools: Tools) -> int:
        saved = await save(tools, title="Use Postgres", type="decision", project="shop")
        return int(saved["id"])

    note_id = mcp(first)
    # Six months cannot pass in a test: the review date is moved into the past in the file.
    path = server.base / ".recuerdo" / "state" / f"{name}.db"
    with sqlite3.connect(path) as conn:
        conn.execute(
            "UPDATE items SET review_at = '2001-01-01T00:00:00.000000Z' WHERE id = ?", (note_id,)
        )

    async def second(tools: Tools) -> None:
        due = rows(await tools.ok("mem_review", {"action": "list", "project": "shop"}))
        assert [row["id"] for row in due] == [note_id]
        whole = await tools.ok("mem_get_observation", {"id": note_id})
        assert whole["status"] == "needs_review"
        await search(tools, query="postgres", project="shop")
        assert rows(await tools.ok("mem_review", {"action": "list", "project": "shop"}))
        await tools.ok("mem_review", {"action": "mark_reviewed", "observation_id": note_id})
        assert rows(await tools.ok("mem_review", {"action": "list", "project": "shop"})) == []
        whole = await tools.ok("mem_get_observation", {"id": note_id})
        assert whole["status"] == "active"

    mcp(second)


# -- what is stored ----------------------------------------------------------------------------


def test_E25_over_long_content_is_cut_and_reported(mcp: Mcp) -> None:
    """E25 content over 50,000 bytes is cut on a UTF-8 boundary and reported (truncated,
    original_bytes, limit_bytes), never silently."""

    async def scenario(tools: Tools) -> None:
        content = "é" * 30_001
        saved = await save(tools, title="huge", content=content, project="shop")
        assert saved["truncated"] is True
        assert (saved["original_bytes"], saved["limit_bytes"]) == (60_002, 50_000)
        whole = await tools.ok("mem_get_observation", {"id": saved["id"]})
        assert content.startswith(whole["content"])
        assert 49_990 <= len(whole["content"].encode("utf-8")) <= 50_000

    mcp(scenario)


def test_E26_private_spans_and_credentials_never_reach_the_store(mcp: Mcp) -> None:
    """E26 <private>...</private> is redacted before storage, and so are credentials."""

    async def scenario(tools: Tools) -> None:
        text = (
            "Login with <private>hunter2</private>; "
            "key sk-abcdefghijklmnopqrstuvwxyz123456 for the zebra API"
        )
        saved = await save(tools, title="creds", content=text, project="shop")
        whole = await tools.ok("mem_get_observation", {"id": saved["id"]})
        assert "hunter2" not in whole["content"]
        assert "sk-abcdefghijklmnopqrstuvwxyz123456" not in whole["content"]
        assert "zebra API" in whole["content"]
        assert await search(tools, query="hunter2", project="shop") == []

    mcp(scenario)
