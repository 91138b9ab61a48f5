"""Engram's promise that a topic key belongs to (project, scope), for personal observations
(decision 0138): all of them live in ``user``, so the key holds the project; one saved before,
under its topic key alone, is taken over by the next save of its topic key, not forked.

Driven like test_engram.py: the official MCP client calling mem_* tools over streamable HTTP
(``recuerdo serve --profile engram``); what the owner wrote earlier goes through the native
route.
"""

from __future__ import annotations

from typing import Any

import pytest

from ..conftest import Server
from .conftest import Http, Json, Mcp, Servers, Tools, rows
from .test_engram import save


@pytest.fixture(scope="module")
def server(servers: Servers) -> Server:
    return servers.get("engram")


def personal(project: str, key: str = "prefs/editor", **extra: Any) -> Json:
    return {"scope": "personal", "project": project, "topic_key": key, "title": "Editor", **extra}


@pytest.mark.parametrize(
    ("here", "there"),
    [
        (("shop", "prefs/editor"), ("billing", "prefs/editor")),
        (("org/a", "prefs"), ("org", "a/prefs")),  # joined by a slash, both read org/a/prefs
    ],
    ids=["one-key-two-projects", "a-slash-in-the-project"],
)
def test_E5b_personal_observations_of_two_projects_are_two(
    mcp: Mcp, here: tuple[str, str], there: tuple[str, str]
) -> None:
    """E5b the same topic_key, personal, in two projects: two observations, each updated by
    its own project's next save and read back whole."""

    async def scenario(tools: Tools) -> None:
        mine = await save(tools, content="vim", **personal(*here))
        theirs = await save(tools, content="emacs", **personal(*there))
        assert theirs["outcome"] == "created" and theirs["id"] != mine["id"]
        again = await save(tools, content="neovim", **personal(*here))
        assert (again["id"], again["outcome"], again["version"]) == (mine["id"], "updated", 2)
        for saved, text in ((mine, "neovim"), (theirs, "emacs")):
            whole = await tools.ok("mem_get_observation", {"id": saved["id"]})
            assert whole["content"] == text

    mcp(scenario)


def test_E5c_a_personal_note_keyed_before_is_taken_over_not_forked(mcp: Mcp, http: Http) -> None:
    """E5c a personal observation saved before 0138 (scope user, keyed by its topic key) is
    updated by its project's next save of that key, which then keeps it; another project's
    save of the key makes its own observation."""
    before = http.native(
        "save", {"title": "Editor", "content": "vim", "scope": "user", "key": "prefs/editor"}
    )

    async def scenario(tools: Tools) -> None:
        taken = await save(tools, content="neovim", **personal("shop"))
        assert (taken["id"], taken["outcome"], taken["version"]) == (before["id"], "updated", 2)
        assert taken["former_key"] == "prefs/editor"
        other = await save(tools, content="emacs", **personal("billing"))
        assert other["outcome"] == "created" and other["id"] != before["id"]
        again = await save(tools, content="helix", **personal("shop", expected_version=2))
        assert (again["id"], again["version"]) == (before["id"], 3)
        assert "former_key" not in again
        history = rows(await tools.ok("mem_history", {"id": before["id"]}))
        assert [row["version"] for row in history if row.get("version")] == [1, 2, 3]

    mcp(scenario)


def test_E5d_a_personal_note_keyed_before_and_deleted_is_not_saved_over(
    mcp: Mcp, http: Http
) -> None:
    """E5d a save based on a version of a personal observation keyed the old way and deleted
    since is refused, naming restoring (as for any observation, E8b): it is not made anew."""
    before = http.native(
        "save", {"title": "Editor", "content": "vim", "scope": "user", "key": "prefs/editor"}
    )
    http.native("delete", {"id": before["id"]})

    async def scenario(tools: Tools) -> None:
        refused = await tools.refused(
            "mem_save", {**personal("shop", expected_version=1), "content": "neovim"}, "conflict"
        )
        assert "restore it" in refused["detail"].lower()
        await tools.ok("mem_restore", {"id": before["id"]})
        taken = await save(tools, content="neovim", **personal("shop", expected_version=1))
        assert (taken["id"], taken["version"]) == (before["id"], 2)

    mcp(scenario)
