"""Category notes on the user and project axes (remember_about, profile, mute)."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

import recuerdo

from .conftest import settled_dump
from .forks import python_command


def test_append_joins_with_a_blank_line_and_keeps_summary(memory: recuerdo.Memory) -> None:
    first = memory.remember_about(
        "user", "  Prefers short answers.  \n", category="style", summary="How to talk to them"
    )
    assert first["outcome"] == "created" and first["summary_updated"] is True
    second = memory.remember_about("user", "Likes examples in Python.", category="style")
    assert second["outcome"] == "appended" and second["summary_updated"] is False
    assert second["note_id"] == first["note_id"]
    body = memory.get(first["note_id"])["content"]
    assert body == "Prefers short answers.\n\nLikes examples in Python."
    assert second["body_bytes"] == len(body.encode())
    assert second["body_hash"] == hashlib.sha256(body.encode()).hexdigest()
    assert memory.profile("user")[0]["summary"] == "How to talk to them"
    memory.remember_about("user", "Third fact.", category="style", summary="New line")
    assert memory.profile("user")[0]["summary"] == "New line"


def test_user_axis_is_the_same_in_every_project(memory: recuerdo.Memory) -> None:
    a = memory.remember_about("user", "fact one", category="general", project="shop")
    b = memory.remember_about("user", "fact two", category="general", project="blog")
    assert a["note_id"] == b["note_id"] and b["scope"] == "user"
    p1 = memory.remember_about("project", "uses Django", category="stack", project="shop")
    p2 = memory.remember_about("project", "uses Hugo", category="stack", project="blog")
    assert p1["note_id"] != p2["note_id"]
    assert (p1["scope"], p2["scope"]) == ("project:shop", "project:blog")


def test_labels_in_other_scripts_never_collide(memory: recuerdo.Memory) -> None:
    ids = {
        memory.remember_about("user", f"fact {label}", category=label)["note_id"]
        for label in ("日本", "中国", "Ελλάδα", "Россия", "123", "日本 notes", "notes")
    }
    assert len(ids) == 7
    same = memory.remember_about("user", "again", category="Notes")["note_id"]
    assert same in ids  # case and spacing do not make a new category


@pytest.mark.parametrize("label", ["", "  ", "a[b", "a]b", "a|b", "#tag", "a\nb", "a\rb"])
def test_bad_labels_are_refused(file_memory: recuerdo.Memory, label: str) -> None:
    before = settled_dump(file_memory)
    with pytest.raises(recuerdo.InvalidLabel) as caught:
        file_memory.remember_about("user", "x", category=label)
    assert caught.value.code == "invalid_label"
    assert settled_dump(file_memory) == before


def test_idempotency_key_skips_retries(memory: recuerdo.Memory) -> None:
    first = memory.remember_about("user", "once", category="c", idempotency_key="req-1")
    retry = memory.remember_about("user", "once", category="c", idempotency_key="req-1")
    assert retry["outcome"] == "skipped" and retry["note_id"] == first["note_id"]
    assert memory.get(first["note_id"])["content"] == "once"
    other = memory.agent("Other").remember_about(
        "user", "twice", category="c", idempotency_key="req-1"
    )
    assert other["outcome"] == "appended"  # the key belongs to one principal


@pytest.mark.parametrize(("observation", "category"), [("twice", "c"), ("once", "contacts")])
def test_a_used_idempotency_key_with_another_observation_is_refused(
    file_memory: recuerdo.Memory, observation: str, category: str
) -> None:
    """Found by a hunt over the notes: it answered ``skipped`` with the earlier reply, even in
    another category, and the new observation was never stored."""
    file_memory.remember_about("user", "once", category="c", idempotency_key="req-1")
    before = settled_dump(file_memory)
    with pytest.raises(recuerdo.Conflict) as refused:
        file_memory.remember_about("user", observation, category=category, idempotency_key="req-1")
    assert refused.value.code == "conflict" and "req-1" in refused.value.detail
    assert settled_dump(file_memory) == before
    retry = file_memory.remember_about("user", " once ", category="c", idempotency_key="req-1")
    assert retry["outcome"] == "skipped"


def test_a_key_that_is_a_credential_dedupes_nothing(file_memory: recuerdo.Memory) -> None:
    """Redacted, every credential given as a key reads the same: two observations with two
    different ones were refused as a reused key (and skipped before that). Neither is lost."""
    outcomes = []
    for token in ("ghp_" + "a" * 36, "ghp_" + "b" * 36):
        reply = file_memory.remember_about(
            "user", f"observation with {token[-1]}", category="c", idempotency_key=token
        )
        outcomes.append(reply["outcome"])
    assert outcomes == ["created", "appended"]
    note = file_memory.get(reply["note_id"])["content"]
    assert "observation with a" in note and "observation with b" in note


def test_stale_version_token_on_append(file_memory: recuerdo.Memory) -> None:
    first = file_memory.remember_about("user", "a", category="c")
    file_memory.remember_about("user", "b", category="c")
    before = settled_dump(file_memory)
    with pytest.raises(recuerdo.VersionConflict):
        file_memory.remember_about("user", "c", category="c", version_token=first["version_token"])
    assert settled_dump(file_memory) == before


def test_project_axis_needs_a_project_and_axis_is_checked(memory: recuerdo.Memory) -> None:
    with pytest.raises(recuerdo.InvalidInput, match="needs a project"):
        memory.remember_about("project", "x")
    with pytest.raises(recuerdo.InvalidInput, match="axis must be"):
        memory.remember_about("team", "x")


def test_mute_keeps_out_of_profile_and_recent_not_search(memory: recuerdo.Memory) -> None:
    memory.remember_about("user", "secret hobby: chess", category="hobbies")
    memory.remember_about("user", "works in Lisbon", category="work")
    memory.mute("hobbies")
    assert [c["category"] for c in memory.profile("user")] == ["work"]
    shown = memory.profile("user", include_muted=True)
    assert [(c["category"], c["muted"]) for c in shown] == [("hobbies", True), ("work", False)]
    assert "chess" not in memory.recent()["text"]
    memory.unmute("hobbies")
    assert "chess" in memory.recent()["text"]
    with pytest.raises(recuerdo.ItemNotFound):
        memory.mute("never-written")


def test_profile_snippet_and_tokens(memory: recuerdo.Memory) -> None:
    memory.remember_about("project", "word " * 100, category="long", project="p")
    [entry] = memory.profile("project", project="p")
    assert len(entry["summary"]) == 160 and entry["summary"].endswith("…")
    assert entry["from_summary"] is False
    assert entry["tokens"] == 125  # 499 characters / 4, rounded up


APPENDER = """
import sys, recuerdo
mem = recuerdo.open("shared-cat", base_dir=sys.argv[1]).agent("p" + sys.argv[2])
for i in range(200):
    mem.remember_about("project", f"obs p{sys.argv[2]} n{i}", category="log", project="x")
print("ok")
"""


@pytest.mark.slow
def test_four_processes_append_to_one_category_and_lose_nothing(base: Path) -> None:
    recuerdo.open("shared-cat", base_dir=base).close()
    procs = [
        subprocess.Popen(
            python_command(APPENDER, str(base), str(n)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(4)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0 and out.strip() == "ok", err
    with recuerdo.open("shared-cat", base_dir=base) as mem:
        [entry] = mem.profile("project", project="x")
        body = mem.get(entry["note_id"])["content"]
        observations = body.split("\n\n")
        assert len(observations) == 800
        assert set(observations) == {f"obs p{p} n{i}" for p in range(4) for i in range(200)}
        assert len(mem.history(entry["note_id"])) == 800


def test_a_version_token_of_a_category_note_deleted_since_is_refused(
    memory: recuerdo.Memory,
) -> None:
    """The token was ignored once the category note was deleted, and a new note took its key
    (the deleted one could then not be restored; the review of decision 0084)."""
    first = memory.remember_about("user", "likes tea", category="drinks")
    memory.delete(first["note_id"])
    before = memory.journal()
    with pytest.raises(recuerdo.Conflict) as caught:
        memory.remember_about(
            "user", "likes coffee", category="drinks", version_token=first["version_token"]
        )
    assert caught.value.extra["version_token"] == first["version_token"]
    assert caught.value.extra["id"] == first["note_id"]
    assert memory.list_notes()["notes"] == [] and memory.journal() == before
    memory.restore(first["note_id"])
    again = memory.remember_about(
        "user", "likes coffee", category="drinks", version_token=first["version_token"]
    )
    assert (again["note_id"], again["outcome"]) == (first["note_id"], "appended")


def test_a_profile_snippet_ends_on_a_whole_character(memory: recuerdo.Memory) -> None:
    """Found by a hunt: the 160-character snippet was cut inside a flag (a lone letter shown)."""
    memory.remember_about("user", "\U0001f1eb\U0001f1f7" * 100, category="flags")
    snippet = memory.profile("user")[0]["summary"]
    assert snippet.endswith("…") and len(snippet) <= 160
    assert snippet[:-1] == "\U0001f1eb\U0001f1f7" * (len(snippet[:-1]) // 2)
