"""Personal Engram observations are keyed by (project, topic key) by the importer as by the
profile (decision 0138): two projects' personal observations with one topic key are two notes,
an import and a later mem_save of the key meet at one note, and a note an earlier import keyed
by the topic key alone is moved to its new key once, then left alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

import recuerdo

from .conftest import Server
from .contracts.conftest import Seen, http_tools
from .importing import run_import, stored, totals
from .test_importers_engram_records import _export

KEY = "prefs/editor"


def observation(id: int, project: str, content: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": id,
        "type": "preference",
        "title": "Editor",
        "content": content,
        "project": project,
        "scope": "personal",
        "topic_key": KEY,
        **extra,
    }


def notes_at(base: Path, key: str) -> list[dict[str, Any]]:
    """The user scope's notes at keys ending in ``key``: id, key, version and content."""
    with recuerdo.open("target", base_dir=base, embedder="none") as memory:
        records = memory.export(scope="user")["records"]
        keys = [r["note_key"] for r in records if str(r.get("note_key")).endswith(key)]
        notes = [memory.get(memory.mirror_get(k, scope="user")["id"]) for k in keys]
    return [{name: note[name] for name in ("id", "key", "version", "content")} for note in notes]


def test_two_projects_personal_observations_stay_two_and_mem_save_updates_its_own(
    base: Path, tmp_path: Path
) -> None:
    """Imported, each is its project's note; importing again writes nothing; then mem_save of
    one project's key updates that project's note, not the other's and not a new one."""
    path = _export(tmp_path, [observation(1, "Shop", "vim"), observation(2, "billing", "emacs")])
    first = run_import(base, "engram", path)
    assert first["counts"]["observations"]["imported"] == 2
    assert sorted(n["content"] for n in notes_at(base, KEY)) == ["emacs", "vim"]
    before = stored(base)
    again = run_import(base, "engram", path)
    assert stored(base) == before and totals(again)["imported"] == totals(again)["updated"] == 0

    async def scenario() -> None:
        async with http_tools(server.url, "target", Seen()) as tools:
            arguments = {"title": "Editor", "content": "neovim", "type": "preference"}
            saved = await tools.ok(
                "mem_save", {**arguments, "scope": "personal", "project": "shop", "topic_key": KEY}
            )
            assert saved["outcome"] == "updated", saved

    # Over HTTP: a stdio server's environment (the MCP client's) runs the installed recuerdo.
    server = Server(base, memory="target", profile="engram")
    try:
        anyio.run(scenario)
    finally:
        server.stop()
    assert sorted(n["content"] for n in notes_at(base, KEY)) == ["emacs", "neovim"]


@pytest.mark.parametrize(
    "records",
    [
        [observation(1, "shop", "vim")],
        [observation(1, "shop", "vi"), observation(2, "shop", "vim")],
    ],
    ids=["one-observation", "two-revisions"],
)
def test_a_note_an_earlier_import_keyed_by_topic_alone_is_moved_once(
    base: Path, tmp_path: Path, records: list[dict[str, Any]]
) -> None:
    """An earlier import wrote the note at the topic key in user: the next import moves it to
    its project's key (the same note, no new revision), and the one after writes nothing."""
    with recuerdo.open("target", base_dir=base, embedder="none") as memory:
        for record in records:  # as the importer before 0138 saved it
            old = memory.save("Editor", record["content"], kind="preference", scope="user", key=KEY)
    moved = run_import(base, "engram", _export(tmp_path, records))
    assert totals(moved)["imported"] == 0 and moved["counts"]["observations"]["updated"] == 1
    [note] = notes_at(base, KEY)
    assert (note["id"], note["key"], note["version"]) == (old["id"], f"shop/{KEY}", len(records))
    before = stored(base)
    again = run_import(base, "engram", _export(tmp_path, records))
    assert stored(base) == before and totals(again)["updated"] == 0


def test_a_note_an_earlier_import_merged_from_two_projects_is_split(
    base: Path, tmp_path: Path
) -> None:
    """Before 0138 two projects' personal observations of one topic key were one note: the
    next import moves it to the first project's key and makes the second's note, each holding
    its own text; the import after that writes nothing."""
    records = [observation(1, "shop", "vim"), observation(2, "billing", "emacs")]
    with recuerdo.open("target", base_dir=base, embedder="none") as memory:
        for record in records:  # as the importer before 0138 saved them: one note
            old = memory.save("Editor", record["content"], kind="preference", scope="user", key=KEY)
    split = run_import(base, "engram", _export(tmp_path, records))
    assert split["counts"]["observations"] == {
        "read": 2,
        "imported": 1,
        "updated": 1,
        "unchanged": 0,
        "skipped": 0,
    }
    held = {note["key"]: (note["id"] == old["id"], note["content"]) for note in notes_at(base, KEY)}
    assert held == {f"shop/{KEY}": (True, "vim"), f"billing/{KEY}": (False, "emacs")}
    before = stored(base)
    run_import(base, "engram", _export(tmp_path, records))
    assert stored(base) == before


def _held(memory: recuerdo.Memory) -> tuple[list[Any], int]:
    """The user scope's notes as exported (keys, texts, revisions), and the journal's length."""
    records = memory.export(scope="user")["records"]
    return [r for r in records if r["record"] != "export"], len(memory.journal(limit=1000))


@pytest.mark.parametrize(
    "records",
    [
        [observation(1, "shop", "vim")],
        [observation(1, "shop", "vi"), observation(2, "shop", "vim")],
        [observation(1, "shop", "vim"), observation(2, "billing", "emacs")],
    ],
    ids=["one-observation", "two-revisions", "two-projects"],
)
def test_a_re_import_after_the_move_writes_nothing_on_every_store(
    memory: recuerdo.Memory, tmp_path: Path, records: list[dict[str, Any]]
) -> None:
    """The file store's test above, on the in-memory store and PostgreSQL too: the import
    moves the note an earlier import keyed by topic alone (a journal line says so), and the
    import after it writes nothing."""
    for record in records:  # as the importer before 0138 saved them
        old = memory.save("Editor", record["content"], kind="preference", scope="user", key=KEY)
    path = _export(tmp_path, records)
    projects = len({record["project"] for record in records})
    first = totals(recuerdo.import_from(memory, "engram", path))
    assert (first["imported"], first["updated"]) == (projects - 1, 1)
    note = memory.get(old["id"])
    shop = [record["content"] for record in records if record["project"] == "shop"]
    assert (note["key"], note["content"]) == (f"shop/{KEY}", shop[-1])
    moves = [line["item_id"] for line in memory.journal() if line["operation"] == "move"]
    assert moves == [old["id"]]
    before = _held(memory)
    again = totals(recuerdo.import_from(memory, "engram", path))
    assert (again["imported"], again["updated"]) == (0, 0)
    assert _held(memory) == before


def test_imported_personal_observations_are_read_by_their_project(
    base: Path, tmp_path: Path
) -> None:
    """Decision 0148: the importer records each personal observation's project as the profile
    does, so mem_search and mem_context of one project leave out the other's (keyed or not);
    a re-import writes nothing, and mem_save over an imported note keeps the import's tags."""
    path = _export(
        tmp_path,
        [
            observation(1, "Shop", "vim zebra"),
            observation(2, "billing", "emacs zebra"),
            observation(3, "shop", "tabs zebra", topic_key=None),
            observation(4, "billing", "spaces zebra", topic_key=None),
        ],
    )
    assert run_import(base, "engram", path)["counts"]["observations"]["imported"] == 4
    before = stored(base)
    assert totals(run_import(base, "engram", path))["imported"] == 0 and stored(base) == before

    async def scenario() -> None:
        async with http_tools(server.url, "target", Seen()) as tools:
            for project, texts in (("shop", {"vim", "tabs"}), ("billing", {"emacs", "spaces"})):
                read = {"project": project, "scope": "personal"}
                hits = (await tools.ok("mem_search", {"query": "zebra", **read}))["results"]
                context = await tools.ok("mem_context", read)
                assert {hit["id"] for hit in hits} == set(context["ids"])
                assert {hit["preview"].split()[0] for hit in hits} == texts
            saved = await tools.ok(
                "mem_save",
                {"title": "Editor", "content": "neovim", "type": "preference", "topic_key": KEY}
                | {"scope": "personal", "project": "shop"},
            )
            assert saved["outcome"] == "updated", saved

    server = Server(base, memory="target", profile="engram")
    try:
        anyio.run(scenario)
    finally:
        server.stop()
    with recuerdo.open("target", base_dir=base, embedder="none") as memory:
        tags = memory.get(memory.mirror_get(f"shop/{KEY}", scope="user")["id"])["tags"]
    assert "project:shop" in tags and "engram-id:1" in tags


def test_a_personal_observation_of_a_project_no_tag_can_hold_is_imported(
    base: Path, tmp_path: Path
) -> None:
    """A project of 250 characters or of two lines (any text Engram was given: decision 0138
    keys it) is recorded by a digest: its personal observation is imported, not refused."""
    records = [observation(1, "x" * 250, "vim"), observation(2, "a\nb", "nano")]
    done = run_import(base, "engram", _export(tmp_path, records))
    assert done["counts"]["observations"]["imported"] == 2, done.get("skipped")
