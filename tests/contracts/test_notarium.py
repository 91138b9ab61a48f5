"""Notarium's promises (../shared/spec/notarium.md), first part: the two axes, one note per
category, editing and search, kept by ``--profile notarium`` over MCP (test_notarium_recall.py
has recall, documents, the log, the audit, refusals and the stdio door).

Driven as Notarium's agents drive it: the official MCP client calling remember_about_user,
remember_about_project, search, recall, edit_note, get_note, create_note, link and
recent_activity (streamable HTTP under ``recuerdo serve --profile notarium``, and once stdio).
What the owner does in Notarium's own interface (mute a category, delete or restore a note, read
the audit) goes through the native routes of the same server.
"""

from __future__ import annotations

import hashlib
from typing import Any

import anyio
import pytest

from ..conftest import Server
from .conftest import (
    Http,
    Json,
    Mcp,
    Seen,
    Servers,
    Tools,
    http_tools,
    rows,
    run_async,
)

# Unrelated by meaning to every query below, so only a link can bring it into a pack.
FAR_TITLE = "Zebra crossing"
FAR_TEXT = "Purple giraffes eat mangoes in the afternoon."


@pytest.fixture(scope="module")
def server(servers: Servers) -> Server:
    return servers.get("notarium")


def activity(http: Http) -> list[Any]:
    return rows(http.native("journal", {"limit": 1000}))


async def user(tools: Tools, observation: str, category: str = "general", **extra: Any) -> Json:
    arguments = {"observation": observation, "category": category, **extra}
    return await tools.ok("remember_about_user", arguments)


async def project(tools: Tools, name: str, observation: str, category: str = "general") -> Json:
    arguments = {"project": name, "observation": observation, "category": category}
    return await tools.ok("remember_about_project", arguments)


async def note(tools: Tools, title: str, content: str, where: str = "shop") -> int:
    created = await tools.ok("create_note", {"title": title, "content": content, "project": where})
    return int(created["id"])


async def content_of(tools: Tools, note_id: int) -> str:
    return str((await tools.ok("get_note", {"ref": note_id}))["content"])


async def recall(tools: Tools, query: str, **extra: Any) -> Json:
    return await tools.ok("recall", {"query": query, **extra})


def source_ids(pack: Json) -> list[int]:
    return [source["id"] for source in pack["sources"]]


# -- two axes ----------------------------------------------------------------------------------


def test_N1_user_memory_is_the_same_in_every_project(mcp: Mcp) -> None:
    """N1 memory about the user is the same whatever project the agent works in: recall with a
    project packs the user axis too."""

    async def scenario(tools: Tools) -> None:
        mine = await user(tools, "Prefers answers with tea-time examples", "style")
        await project(tools, "shop", "The shop sells tea-time sets", "catalogue")
        for where in ("shop", "ops"):
            pack = await recall(tools, "tea-time", project=where)
            assert mine["note_id"] in source_ids(pack), where
            assert "## style (personal)" in pack["context"], where

    mcp(scenario)


def test_N2_project_memory_stays_in_its_project(mcp: Mcp) -> None:
    """N2 memory about a project is tied to it: another project's recall never packs it."""

    async def scenario(tools: Tools) -> None:
        shop = await project(tools, "shop", "Deploys happen on Tuesdays", "process")
        assert shop["note_id"] in source_ids(await recall(tools, "deploys", project="shop"))
        assert shop["note_id"] not in source_ids(await recall(tools, "deploys", project="ops"))

    mcp(scenario)


def test_N3_the_tool_decides_where_memory_goes(mcp: Mcp) -> None:
    """N3 the agent does not choose class or folder: remember answers {note_id, version_token,
    outcome, path, body_bytes, body_hash (sha256), summary_updated} and the note is an
    agent-memory note at /m/<id>."""

    async def scenario(tools: Tools) -> None:
        reply = await user(tools, "Works from Lisbon", "context")
        for field in ("note_id", "version_token", "outcome", "path", "body_bytes", "body_hash"):
            assert field in reply, field
        assert reply["summary_updated"] is False
        assert reply["path"] == f"/m/{reply['note_id']}"
        body = (await content_of(tools, reply["note_id"])).encode("utf-8")
        assert reply["body_bytes"] == len(body)
        assert reply["body_hash"] == hashlib.sha256(body).hexdigest()

    mcp(scenario)


# -- one note per category ---------------------------------------------------------------------


def test_N4_observations_append_to_their_category_note(mcp: Mcp) -> None:
    """N4 an observation is appended to its category's note (created on first use): trailing
    whitespace trimmed, joined with a blank line."""

    async def scenario(tools: Tools) -> None:
        first = await user(tools, "Likes ramen  \n", "food")
        second = await user(tools, "Dislikes coriander\n\n", "food")
        third = await user(tools, "Eats late", "food")
        outcomes = [reply["outcome"] for reply in (first, second, third)]
        assert outcomes == ["created", "appended", "appended"]
        assert first["note_id"] == second["note_id"] == third["note_id"]
        content = await content_of(tools, first["note_id"])
        assert content == "Likes ramen\n\nDislikes coriander\n\nEats late"

    mcp(scenario)


def test_N5_a_new_category_is_a_new_note(mcp: Mcp) -> None:
    """N5 a new category means a new note."""

    async def scenario(tools: Tools) -> None:
        food = await user(tools, "Likes ramen", "food")
        music = await user(tools, "Likes jazz", "music")
        assert music["outcome"] == "created" and music["note_id"] != food["note_id"]
        assert await content_of(tools, food["note_id"]) == "Likes ramen"

    mcp(scenario)


@pytest.mark.parametrize("label", ["", "   ", "a[b", "a]b", "a|b", "a#b", "a\rb", "a\nb"])
def test_N6_a_category_is_a_label_not_a_path(mcp: Mcp, http: Http, label: str) -> None:
    """N6 a blank category, or one containing [ ] | # CR LF, is refused by name; nothing stored."""

    async def scenario(tools: Tools) -> None:
        arguments = {"observation": "x", "category": label}
        await tools.refused("remember_about_user", arguments, "invalid_label")

    mcp(scenario)
    assert activity(http) == []


def test_N7_non_latin_categories_never_collide(mcp: Mcp) -> None:
    """N7 categories written only in non-Latin letters are distinct notes."""

    async def scenario(tools: Tools) -> None:
        labels = ["日本", "中文", "한국어", "Ελληνικά", "русский"]
        ids = [(await user(tools, f"fact {i}", label))["note_id"] for i, label in enumerate(labels)]
        assert len(set(ids)) == len(labels)
        for i, note_id in enumerate(ids):
            assert await content_of(tools, note_id) == f"fact {i}"

    mcp(scenario)


def test_N8_a_summary_is_overwritten_when_given_and_kept_when_omitted(mcp: Mcp) -> None:
    """N8 summary (one line) is stored on the category note: overwritten when given, kept when
    omitted."""

    async def scenario(tools: Tools) -> None:
        first = await user(tools, "Likes ramen", "food", summary="Food tastes")
        assert first["summary_updated"] is True
        await user(tools, "Likes udon", "food")
        assert (await tools.ok("get_note", {"ref": first["note_id"]}))["summary"] == "Food tastes"
        again = await user(tools, "Likes soba", "food", summary="Noodles, mostly")
        assert again["summary_updated"] is True
        assert (await tools.ok("get_note", {"ref": first["note_id"]}))["summary"] == (
            "Noodles, mostly"
        )

    mcp(scenario)


def test_N9_a_profile_entry_per_category(mcp: Mcp, http: Http) -> None:
    """N9 the summary feeds the derived profile: one entry per category with its summary (or a
    snippet of about 160 characters), token estimate, muted flag and modified time."""

    async def scenario(tools: Tools) -> None:
        await user(tools, "Likes ramen", "food", summary="Food tastes")
        await user(tools, "word " * 100, "long")

    mcp(scenario)
    entries = {entry["category"]: entry for entry in rows(http.native("profile", {"axis": "user"}))}
    assert set(entries) == {"food", "long"}
    assert "Food tastes" in str(entries["food"])
    long = entries["long"]
    snippet = next(value for value in long.values() if isinstance(value, str) and "word" in value)
    assert len(snippet) <= 170
    for entry in entries.values():
        assert {"tokens", "muted"} <= set(entry) or {"token_estimate", "muted"} <= set(entry)


def test_N10_a_repeated_idempotency_key_is_skipped(mcp: Mcp) -> None:
    """N10 a repeated idempotency_key within 24 h is `skipped`: a retry does not append twice."""

    async def scenario(tools: Tools) -> None:
        first = await user(tools, "Moved to Porto", "context", idempotency_key="k-1")
        retry = await user(tools, "Moved to Porto", "context", idempotency_key="k-1")
        assert (first["outcome"], retry["outcome"]) == ("created", "skipped")
        assert await content_of(tools, first["note_id"]) == "Moved to Porto"

    mcp(scenario)


def test_N11_a_stale_version_token_overwrites_nothing(mcp: Mcp) -> None:
    """N11 remember with a stale version_token is a version conflict; nothing is written."""

    async def scenario(tools: Tools) -> None:
        first = await user(tools, "one", "log")
        await user(tools, "two", "log")
        arguments = {
            "observation": "three",
            "category": "log",
            "version_token": first["version_token"],
        }
        await tools.refused("remember_about_user", arguments, "version_conflict")
        assert await content_of(tools, first["note_id"]) == "one\n\ntwo"

    mcp(scenario)


def test_N12_concurrent_appends_are_all_kept(server: Server, name: str, seen: Seen) -> None:
    """N12 concurrent appends to one category are serialized: none is lost."""

    async def one(i: int) -> None:
        async with http_tools(server.url, name, seen) as tools:
            await user(tools, f"fact number {i}", "burst")

    async def scenario() -> str:
        async with anyio.create_task_group() as group:
            for i in range(8):
                group.start_soon(one, i)
        async with http_tools(server.url, name, seen) as tools:
            found = await tools.ok("search", {"query": "fact number"})
            return await content_of(tools, found["results"][0]["id"])

    content = run_async(scenario)
    assert sorted(content.split("\n\n")) == sorted(f"fact number {i}" for i in range(8))


# -- editing -----------------------------------------------------------------------------------

DOC = "# Intro\nHello there\n\n## Setup\nInstall it\n\n## Usage\nRun it"
EDITS: list[tuple[Json, str]] = [
    ({"operation": "append", "content": "The end"}, DOC + "\n\nThe end"),
    ({"operation": "prepend", "content": "Draft"}, "Draft\n\n" + DOC),
    ({"operation": "replace", "content": "All new"}, "All new"),
    (
        {"operation": "replace_section", "section": "Setup", "content": "Use pip"},
        DOC.replace("Install it", "Use pip"),
    ),
    (
        {"operation": "find_replace", "find": "Hello there", "content": "Hi"},
        DOC.replace("Hello there", "Hi"),
    ),
    (
        {"operation": "findReplace", "find": "Run it", "content": "Run it twice"},
        DOC.replace("Run it", "Run it twice"),
    ),
]


@pytest.mark.parametrize(
    ("edit", "expected"), EDITS, ids=[str(edit["operation"]) for edit, _ in EDITS]
)
def test_N13_edit_note_operations(mcp: Mcp, edit: Json, expected: str) -> None:
    """N13 edit_note edits a note by append, prepend, replace, replace_section or find_replace,
    the last also spelled as the seed does (findReplace)."""

    async def scenario(tools: Tools) -> None:
        note_id = await note(tools, "Guide", DOC)
        await tools.ok("edit_note", {"ref": note_id, **edit})
        # Where blank lines go around a heading is layout, not the operation's meaning.
        assert (await content_of(tools, note_id)).split() == expected.split()

    mcp(scenario)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello\n\n\nRemove me\n\nEnd", "Hello\n\nEnd"),
        ("Hello\nRemove me\nEnd", "Hello\nEnd"),
        ("Hello\n\nRemove me\nEnd", "Hello\n\nEnd"),
    ],
)
def test_N14_find_replace_with_empty_content_deletes(mcp: Mcp, text: str, expected: str) -> None:
    """N14 find_replace with empty content deletes the text and rejoins the gap with the larger
    of the two surrounding runs of line breaks (at most 2)."""

    async def scenario(tools: Tools) -> None:
        note_id = await note(tools, "Gap", text)
        edit = {"ref": note_id, "operation": "find_replace", "find": "Remove me", "content": ""}
        await tools.ok("edit_note", edit)
        assert await content_of(tools, note_id) == expected

    mcp(scenario)


REFUSALS: list[tuple[Json, str, str]] = [
    ({"operation": "append"}, "operation_content_mismatch", ""),
    (
        {"operation": "replace_section", "section": "Nope", "content": "x"},
        "section_not_found",
        'No section titled "Nope". Headings present: "Intro", "Setup", "Usage"',
    ),
    ({"operation": "find_replace", "find": "zzz", "content": "x"}, "find_not_found", ""),
    ({"operation": "find_replace", "find": "it", "content": "x"}, "find_ambiguous", ""),
    ({"operation": "append", "content": "x", "version_token": "stale"}, "version_conflict", ""),
]


@pytest.mark.parametrize(
    ("edit", "code", "message"), REFUSALS, ids=[code for _, code, _ in REFUSALS]
)
def test_N15_edit_refusals_are_named_and_change_nothing(
    mcp: Mcp, http: Http, edit: Json, code: str, message: str
) -> None:
    """N15 edit errors are refused by name (operation and content together, missing section with
    the headings present, find text missing or repeated, stale version token) and change
    nothing."""

    async def scenario(tools: Tools) -> None:
        note_id = await note(tools, "Guide", DOC)
        before = activity(http)
        arguments = {"ref": note_id, **edit}
        if edit.get("version_token") == "stale":
            await tools.ok("edit_note", {"ref": note_id, "operation": "append", "content": "v2"})
            before = activity(http)
            arguments["version_token"] = f"{note_id}:1"
        reply = await tools.refused("edit_note", arguments, code)
        assert message in reply["detail"]
        assert activity(http) == before

    mcp(scenario)


def test_N16_an_edit_that_changes_nothing_writes_no_revision(mcp: Mcp, http: Http) -> None:
    """N16 an edit that changes nothing writes no revision."""

    async def scenario(tools: Tools) -> None:
        note_id = await note(tools, "Same", "Hello")
        before = activity(http)
        edit = {"ref": note_id, "operation": "find_replace", "find": "Hello", "content": "Hello"}
        await tools.ok("edit_note", edit)
        await tools.ok("edit_note", {"ref": note_id, "operation": "replace", "content": "Hello"})
        assert activity(http) == before
        assert (await tools.ok("get_note", {"ref": note_id}))["version"] == 1

    mcp(scenario)


# -- search ------------------------------------------------------------------------------------


def test_N17_search_gives_ranked_fragments_with_path(mcp: Mcp) -> None:
    """N17 search answers ranked fragments with score, path (/m/<id>) and modified time, and it
    covers agent memory on purpose (it is the check before writing)."""

    async def scenario(tools: Tools) -> None:
        memory = await user(tools, "Uses a standing desk", "work")
        doc = await note(tools, "Desk policy", "Every desk is a standing desk")
        hits = (await tools.ok("search", {"query": "standing desk"}))["results"]
        assert {hit["id"] for hit in hits} == {memory["note_id"], doc}
        scores = [hit["score"] for hit in hits]
        assert scores == sorted(scores, reverse=True)
        for hit in hits:
            assert hit["path"] == f"/m/{hit['id']}"
            assert hit["updated_at"]

    mcp(scenario)


def test_N18_class_agent_memory_finds_only_memory(mcp: Mcp) -> None:
    """N18 search with class "agent-memory" finds the notes written by remember_about_*, and
    only those."""

    async def scenario(tools: Tools) -> None:
        mine = await user(tools, "Prefers dark mode", "ui")
        theirs = await project(tools, "shop", "Shop uses dark mode too", "ui")
        await note(tools, "Theme", "The dark mode palette")
        hits = (await tools.ok("search", {"query": "dark mode", "class": "agent-memory"}))[
            "results"
        ]
        assert {hit["id"] for hit in hits} == {mine["note_id"], theirs["note_id"]}

    mcp(scenario)


def test_N19_search_limit(mcp: Mcp) -> None:
    """N19 search takes a limit (1..100)."""

    async def scenario(tools: Tools) -> None:
        for i in range(3):
            await note(tools, f"Lamp {i}", f"lamp number {i}")
        assert len((await tools.ok("search", {"query": "lamp", "limit": 2}))["results"]) == 2
        assert len((await tools.ok("search", {"query": "lamp"}))["results"]) == 3

    mcp(scenario)
