"""save(former_key=...): a note still under the key an earlier naming gave it is found there,
updated and moved to the new key, on every store (decision 0138); and the Engram mapping that
names such keys for personal observations."""

from __future__ import annotations

import pytest

import recuerdo
from recuerdo.profiles.engram_scopes import observation_key, personal_key

OLD, NEW = "prefs/editor", "shop/prefs/editor"


def test_a_note_at_the_former_key_is_updated_and_moved(memory: recuerdo.Memory) -> None:
    old = memory.save("Editor", "vim", key=OLD)
    moved = memory.save("Editor", "neovim", key=NEW, former_key=OLD)
    assert (moved["id"], moved["version"], moved["outcome"]) == (old["id"], 2, "updated")
    assert (moved["key"], moved["former_key"]) == (NEW, OLD)
    assert memory.get(old["id"])["key"] == NEW
    # The former key is free: another naming of it makes its own note.
    other = memory.save("Editor", "emacs", key="billing/prefs/editor", former_key=OLD)
    assert other["outcome"] == "created" and "former_key" not in other
    again = memory.save("Editor", "helix", key=NEW, former_key=OLD)
    assert (again["id"], again["version"]) == (old["id"], 3) and "former_key" not in again


def test_the_same_text_at_the_former_key_is_moved_as_a_repeat(memory: recuerdo.Memory) -> None:
    old = memory.save("Editor", "vim", key=OLD)
    moved = memory.save("Editor", "vim", key=NEW, former_key=OLD)
    assert (moved["id"], moved["version"], moved["outcome"]) == (old["id"], 1, "duplicate")
    assert moved["former_key"] == OLD and memory.get(old["id"])["key"] == NEW


def test_a_note_at_the_key_wins_over_the_former_one(memory: recuerdo.Memory) -> None:
    old = memory.save("Editor", "vim", key=OLD)
    new = memory.save("Editor", "emacs", key=NEW)
    saved = memory.save("Editor", "helix", key=NEW, former_key=OLD)
    assert saved["id"] == new["id"] and "former_key" not in saved
    assert memory.get(old["id"])["key"] == OLD


def test_only_the_scope_named_is_looked_in(memory: recuerdo.Memory) -> None:
    memory.save("Editor", "vim", key=OLD, scope="project:shop")
    saved = memory.save("Editor", "neovim", key=NEW, former_key=OLD)
    assert saved["outcome"] == "created" and "former_key" not in saved


def test_a_stale_version_of_a_moved_note_is_a_conflict(memory: recuerdo.Memory) -> None:
    old = memory.save("Editor", "vim", key=OLD)
    memory.save("Editor", "neovim", key=OLD)
    with pytest.raises(recuerdo.Conflict):
        memory.save("Editor", "emacs", key=NEW, former_key=OLD, expected_version=1)
    assert memory.get(old["id"])["content"] == "neovim"


def test_a_deleted_note_at_the_former_key_is_not_saved_over(memory: recuerdo.Memory) -> None:
    old = memory.save("Editor", "vim", key=OLD)
    memory.delete(old["id"])
    with pytest.raises(recuerdo.Conflict) as refused:
        memory.save("Editor", "neovim", key=NEW, former_key=OLD, expected_version=1)
    assert refused.value.code == "conflict" and "restore it" in refused.value.detail.lower()


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"former_key": OLD}, "former_key needs key"),
        ({"key": NEW, "former_key": " "}, "former_key"),
    ],
    ids=["no-key", "blank"],
)
def test_a_former_key_without_a_key_or_blank_is_refused(
    memory: recuerdo.Memory, arguments: dict[str, str], field: str
) -> None:
    with pytest.raises(recuerdo.InvalidInput) as refused:
        memory.save("Editor", "vim", **arguments)
    assert field in refused.value.detail
    assert memory.search("vim")["results"] == []


@pytest.mark.parametrize(
    ("project", "topic", "key"),
    [
        ("Shop", " prefs/editor ", "shop/prefs/editor"),
        (None, "prefs/editor", "default/prefs/editor"),
        ("  ", "prefs/editor", "default/prefs/editor"),
        ("org/a", "prefs", "org%2Fa/prefs"),
        ("org", "a/prefs", "org/a/prefs"),
        ("50%/x", "k", "50%25%2Fx/k"),
    ],
)
def test_a_personal_key_names_its_project_first(project: str | None, topic: str, key: str) -> None:
    assert personal_key(project, topic) == key


def test_a_personal_key_too_long_names_its_project_by_digest() -> None:
    long_project = "p" * 150
    key = personal_key(long_project, "k" * 60)
    assert len(key) <= 200 and key.startswith("~") and key.endswith("/" + "k" * 60)
    assert key != personal_key("q" * 150, "k" * 60)


@pytest.mark.parametrize(
    ("scope", "topic", "expected"),
    [
        ("personal", " prefs/editor ", ("shop/prefs/editor", "prefs/editor")),
        ("project", "prefs/editor", ("prefs/editor", None)),
        (None, "prefs/editor", ("prefs/editor", None)),
        ("personal", None, (None, None)),
        ("personal", "", ("", None)),  # left for the save to refuse, as before
    ],
)
def test_an_observation_key_is_the_profile_and_importer_rule(
    scope: str | None, topic: str | None, expected: tuple[object, object]
) -> None:
    assert observation_key("Shop", scope, topic) == expected
