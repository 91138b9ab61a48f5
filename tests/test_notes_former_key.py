"""save(former_key=...): a note still under the key an earlier naming gave it is found there,
updated and moved to the new key, on every store (decision 0138); and the Engram mapping that
names such keys for personal observations."""

from __future__ import annotations

from pathlib import Path

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
    # Refused, the save moved nothing: the note is still found where its writer left it.
    assert memory.get(old["id"])["key"] == OLD


def test_a_deleted_note_at_the_former_key_is_not_saved_over(memory: recuerdo.Memory) -> None:
    old = memory.save("Editor", "vim", key=OLD)
    memory.delete(old["id"])
    with pytest.raises(recuerdo.Conflict) as refused:
        memory.save("Editor", "neovim", key=NEW, former_key=OLD, expected_version=1)
    assert refused.value.code == "conflict" and "restore it" in refused.value.detail.lower()
    # Refused, nothing stored: NEW is still free, and the deleted note is as it was.
    assert memory.save("Editor", "helix", key=NEW)["outcome"] == "created"
    memory.restore(old["id"])
    note = memory.get(old["id"])
    assert (note["key"], note["version"], note["content"]) == (OLD, 1, "vim")


@pytest.mark.parametrize("expected_version", [0, 2], ids=["read-none", "stale"])
def test_a_refused_save_leaves_the_note_at_its_former_key(
    memory: recuerdo.Memory, expected_version: int
) -> None:
    """The move was written before the conflict was found, and the conflict revision is
    committed: a refused save still moved the note (its owner's next save at the old key made
    a second note)."""
    old = memory.save("Editor", "vim", key=OLD)
    with pytest.raises(recuerdo.Conflict):
        memory.save("Editor", "emacs", key=NEW, former_key=OLD, expected_version=expected_version)
    note = memory.get(old["id"])
    assert (note["key"], note["version"], note["content"]) == (OLD, 1, "vim")
    assert memory.save("Editor", "nano", key=OLD)["id"] == old["id"]
    assert all(line["operation"] != "move" for line in memory.journal())


@pytest.mark.parametrize("text", ["neovim", "vim"], ids=["updated", "repeat"])
def test_a_move_is_in_the_journal(memory: recuerdo.Memory, text: str) -> None:
    """The key changed with no trace: a repeat moved writes no version, and no line said the
    note now answers to another key."""
    old = memory.save("Editor", "vim", key=OLD)
    memory.save("Editor", text, key=NEW, former_key=OLD)
    memory.save("Editor", "helix", key=NEW, former_key=OLD)  # at its key now: no second move
    lines = [line for line in reversed(memory.journal()) if line["item_id"] == old["id"]]
    moved = ["write", "move", *(["write"] if text != "vim" else []), "write"]
    assert [line["operation"] for line in lines] == moved
    assert lines[1]["version"] == 1 and lines[1]["scope"] == "user"


def test_a_category_note_is_not_taken_over(memory: recuerdo.Memory) -> None:
    """A category note's key is its label's: moved, remember_about no longer found it and
    started a second note for the category."""
    kept = memory.remember_about("user", "likes tea", category="drinks")
    before = memory.get(kept["note_id"])
    with pytest.raises(recuerdo.InvalidInput) as refused:
        memory.save("Drinks", "coffee", key="drinks", former_key=before["key"])
    assert "category" in refused.value.detail
    assert memory.get(kept["note_id"]) == before
    again = memory.remember_about("user", "likes mate", category="drinks")
    assert again["note_id"] == kept["note_id"]


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


@pytest.mark.parametrize(
    ("project", "topic"),
    [
        ("~" + personal_key("p" * 150, "k" * 60)[1:13], "k" * 60),  # a name like a digest
        ("a\nb", "k"),  # a line break a key may not hold
        ("x~", "k"),
    ],
    ids=["digest-like", "line-break", "tilde"],
)
def test_no_project_name_is_taken_for_another(project: str, topic: str) -> None:
    """A project named like another's digest had that project's key (the same note), and one
    with a line break had a key the save refused."""
    key = personal_key(project, topic)
    assert not key.startswith("~") and "\n" not in key
    assert key != personal_key("p" * 150, "k" * 60)


@pytest.mark.parametrize("project", ["shopapi", "p" * 150, "é" * 150])
def test_every_topic_key_engram_takes_has_a_key(memory: recuerdo.Memory, project: str) -> None:
    """A topic key of 187-200 characters made a key over the limit: the save was refused,
    where it went through before keys held the project."""
    topics = ["k" * 195, "k" * 194 + "j", "k" * 300]
    keys = {personal_key(project, topic) for topic in topics}
    assert len(keys) == 3 and all(len(key) <= 200 for key in keys)
    saved = [
        memory.save(
            "Pref", f"text {n}", key=key, former_key=observation_key(project, "personal", t)[1]
        )
        for n, (key, t) in enumerate((personal_key(project, t), t) for t in topics)
    ]
    assert [s["outcome"] for s in saved] == ["created"] * 3
    assert personal_key("other", "k" * 195) not in keys


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


@pytest.mark.parametrize(
    ("text", "edited", "outcome"),
    [("neovim", False, "behind"), ("vim", True, "updated"), ("neovim", True, "conflicts")],
    ids=["unedited", "edited-repeat-moved", "edited-stale"],
)
def test_a_markdown_file_written_before_the_move_reads_into_the_moved_note(
    memory: recuerdo.Memory, tmp_path: Path, text: str, edited: bool, outcome: str
) -> None:
    """The file names the note's id and the key it had: found by id only when the keys agree,
    then by its old key (free since the move), it made a second note beside the moved one."""
    old = memory.save("Editor", "vim", key=OLD)
    memory.export_markdown(tmp_path)
    [path] = tmp_path.rglob("*.md")
    if edited:
        path.write_text(path.read_text().replace("\nvim\n", "\nvim, tabs\n"))
    memory.save("Editor", text, key=NEW, former_key=OLD)
    report = memory.import_markdown(tmp_path)
    assert (report["created"], report[outcome]) == (0, 1), report
    assert [n["id"] for n in memory.list_notes()["notes"]] == [old["id"]]
    assert memory.get(old["id"])["key"] == NEW
    if outcome == "updated":
        assert memory.get(old["id"])["content"] == "vim, tabs"
        assert f'key: "{NEW}"' in path.read_text()


def test_a_moved_note_keeps_its_pending_conflict_and_its_version_check(
    memory: recuerdo.Memory,
) -> None:
    """The version the writer read is the note's at its former key; a conflict kept aside
    before the move is still the note's after it."""
    old = memory.save("Editor", "vim", key=OLD)
    with pytest.raises(recuerdo.Conflict):
        memory.save("Editor", "nano", key=OLD, expected_version=0)
    moved = memory.save("Editor", "neovim", key=NEW, former_key=OLD, expected_version=1)
    assert (moved["id"], moved["version"], moved["former_key"]) == (old["id"], 2, OLD)
    assert [c["content"] for c in memory.conflicts(old["id"])] == ["nano"]
