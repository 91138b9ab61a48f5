"""The project a note of ``user`` is about (decision 0148): save(project=) records it as the
tag project:<name>, search and recent with project leave out the notes of ``user`` recorded as
another project's, on every store. Notes of other scopes, and notes recording no project,
are untouched by the filter."""

from __future__ import annotations

from typing import Any

import pytest

import recuerdo

from .conftest import settled_dump


def found(memory: recuerdo.Memory, read: str, **filters: Any) -> set[int]:
    if read == "search":
        reply = memory.search("zebra", stages=["lexical"], **filters)
        return {hit["id"] for hit in reply["results"]}
    return set(memory.recent(**filters)["ids"])


@pytest.mark.parametrize("read", ["search", "recent"])
def test_a_read_with_a_project_leaves_out_another_projects_user_notes(
    memory: recuerdo.Memory, read: str
) -> None:
    shop = memory.save("Shop", "shop zebra", project="shop")["id"]
    billing = memory.save("Billing", "billing zebra", project="billing")["id"]
    nobody = memory.save("Nobody", "nobody zebra")["id"]
    scoped = memory.save("Scoped", "scoped zebra", scope="project:billing")["id"]
    assert found(memory, read, project="shop") == {shop, nobody, scoped}
    assert found(memory, read, project="shop", scope="user") == {shop, nobody}
    assert found(memory, read) == {shop, billing, nobody, scoped}


def test_a_project_replaces_the_project_tag_and_keeps_the_others(
    memory: recuerdo.Memory,
) -> None:
    first = memory.save("Editor", "vim", key="editor", tags=["mine", "project:shop"])
    assert memory.get(first["id"])["tags"] == ["mine", "project:shop"]
    memory.save("Editor", "neovim", key="editor", project="billing")
    assert memory.get(first["id"])["tags"] == ["mine", "project:billing"]
    memory.save("Editor", "helix", key="editor", tags=["theirs"], project="billing")
    assert memory.get(first["id"])["tags"] == ["theirs", "project:billing"]
    assert found(memory, "recent", project="shop") == set()


def test_a_repeat_is_one_of_the_same_project(memory: recuerdo.Memory) -> None:
    shop = memory.save("Editor", "vim", project="shop")
    billing = memory.save("Editor", "vim", project="billing")
    again = memory.save("Editor", "vim", project="shop")
    plain = memory.save("Editor", "vim")  # no project: any repeat, as before
    assert billing["outcome"] == "created" and billing["id"] != shop["id"]
    assert (again["outcome"], again["id"]) == ("duplicate", shop["id"])
    assert plain["outcome"] == "duplicate"


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"scope": "project:shop", "project": "shop"}, recuerdo.InvalidInput),
        ({"project": ""}, recuerdo.InvalidInput),
        ({"project": "a\x00b"}, recuerdo.InvalidInput),
        ({"project": "shop", "tags": [f"t{n}" for n in range(64)]}, recuerdo.InvalidTags),
    ],
    ids=["a-projects-scope", "blank", "nul", "one-tag-too-many"],
)
def test_a_project_that_cannot_be_recorded_is_refused_storing_nothing(
    memory: recuerdo.Memory, arguments: dict[str, Any], error: type[Exception]
) -> None:
    with pytest.raises(error):
        memory.save("Editor", "vim", **arguments)
    assert memory.recent()["ids"] == []


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"scope": "project:shop", "project": "shop"}, recuerdo.InvalidInput),
        ({"project": "a\x00b"}, recuerdo.InvalidInput),
        ({"project": "shop", "tags": [f"t{n}" for n in range(64)]}, recuerdo.InvalidTags),
    ],
    ids=["a-projects-scope", "nul", "one-tag-too-many"],
)
def test_a_refused_project_save_over_a_note_leaves_the_store_unchanged(
    file_memory: recuerdo.Memory, arguments: dict[str, Any], error: type[Exception]
) -> None:
    """The refusal above, over a note already kept at the key: nothing of the file changes."""
    file_memory.save("Editor", "emacs", key="editor", project="shop")
    before = settled_dump(file_memory)
    with pytest.raises(error):
        file_memory.save("Editor", "vim", key="editor", **arguments)
    assert settled_dump(file_memory) == before


def test_what_save_says_of_a_keyed_repeat_and_of_tags_without_project(
    memory: recuerdo.Memory,
) -> None:
    """As save's project says (a guard of the documented behaviour, not a change): the same
    text at the key changes nothing, its project neither; tags given without project replace
    the project: tag with the others (the note is then of no project, read by every one)."""
    first = memory.save("Editor", "vim zebra", key="editor", project="shop")
    again = memory.save("Editor", "vim zebra", key="editor", project="billing")
    assert again["outcome"] == "duplicate"
    assert memory.get(first["id"])["tags"] == ["project:shop"]
    memory.save("Editor", "helix zebra", key="editor", tags=["mine"])
    assert memory.get(first["id"])["tags"] == ["mine"]
    assert found(memory, "search", project="billing") == {first["id"]}


@pytest.mark.parametrize(
    "name", ["p" * 150, "p" * 250, "a\nb", "a\rb"], ids=["150-chars", "250-chars", "lf", "cr"]
)
def test_a_name_no_tag_can_hold_is_named_by_a_digest(memory: recuerdo.Memory, name: str) -> None:
    """A project's name is the caller's text (Engram's, for the profile and the importer:
    decision 0138 keys such a personal observation): one too long for a tag or of several
    lines is named by a digest, not refused."""
    saved = memory.save("Editor", "vim zebra", project=name)
    (tag,) = memory.get(saved["id"])["tags"]
    assert tag.startswith("project:~") and len(tag) == len("project:~") + 12
    assert found(memory, "search", project=name) == {saved["id"]}
    assert found(memory, "recent", project=name) == {saved["id"]}
    assert found(memory, "search", project=name + "x") == set()
    assert found(memory, "search", project="q" * len(name)) == set()
