"""A view confined to scopes (``Memory.for_principal(scopes=)``, what the doors give a token
limited to them) keeps the doors' rule itself: a verb runs only when it names one of those
scopes, or reaches nothing kept in a scope. The view filtered the items it read by id (decision
0097), but a verb called without a scope, or one that takes none, read and wrote every scope:
``recent()`` packed another scope's notes whole, ``session_start`` of another scope's session
answered its summary, ``session_end`` rewrote that summary's note, ``capture_passive`` with
that session filed notes in its scope, ``save(scope=...)`` wrote anywhere, and ``overview``,
``summary``, ``list_progress`` and ``get_rules`` counted and named what the token may not see
(a hunt over what a caller may reach). Each refusal test fails on the code before."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import recuerdo

SECRET = "Project B payroll is 1.2M"
LEARNED = "## Key Learnings\n1. the payroll batch runs every night at two"
Setting = tuple[recuerdo.Memory, recuerdo.Memory, dict[str, Any]]


@pytest.fixture
def setting(memory: recuerdo.Memory) -> Setting:
    """The owner's session ``sb`` of project b, a note in it and its summary; a profile of
    project b, a plan and a rule; ``lim``, a view limited to project:a, and a note of project
    a the owner filed under that session (the view may not file one there itself)."""
    memory.session_start("sb", project="b")
    memory.save("B secret", SECRET, scope="project:b", session="sb")
    memory.session_end("sb", summary=f"summary: {SECRET}")
    memory.remember_about("project", SECRET, category="payroll", project="b")
    memory.create_progress("payroll for B", steps=["pay"])
    memory.add_rule("payroll-b", "must", "pay project B before the fifth")
    lim = memory.for_principal("lim", memory.tenant, scopes=["project:a"])
    mine = memory.save("A plan", "Launch checklist for A", scope="project:a", session="sb")["id"]
    return memory, lim, {"mine": mine}


def state(memory: recuerdo.Memory) -> tuple[Any, ...]:
    """What the owner sees of project b and the session: unchanged by every refusal."""
    notes = memory.list_notes(scope="project:b", limit=100)["notes"]
    secret = next(n["id"] for n in notes if n["title"] == "B secret")
    return (
        memory.recent(scope="project:b")["text"],
        sorted((n["id"], n["version"]) for n in notes),
        memory.session_start("sb"),
        len(memory.journal(limit=1000)),
        memory.timeline(secret, before=50, after=50),
    )


REFUSED: dict[str, Callable[[recuerdo.Memory, dict[str, Any]], Any]] = {
    "recent": lambda lim, ids: lim.recent(),
    "list_notes": lambda lim, ids: lim.list_notes(),
    "journal": lambda lim, ids: lim.journal(),
    "timeline": lambda lim, ids: lim.timeline(ids["mine"]),
    "profile": lambda lim, ids: lim.profile("project", project="b"),
    "session_start": lambda lim, ids: lim.session_start("sb"),
    "session_end": lambda lim, ids: lim.session_end("sb", summary="rewritten by lim"),
    "capture_passive": lambda lim, ids: lim.capture_passive(LEARNED, session="sb"),
    "save": lambda lim, ids: lim.save("planted", "planted by lim", scope="project:b"),
    # Its own scope, filed under project b's session: the owner's timeline of sb showed them
    # (decision 0123 kept what the view reads, not where it files).
    "save_in_session": lambda lim, ids: lim.save(
        "planted", "planted by lim", scope="project:a", session="sb"
    ),
    "save_key_in_session": lambda lim, ids: lim.save(
        "A plan", "moved by lim", scope="project:a", key="plan", session="sb"
    ),
    "capture_passive_in_session": lambda lim, ids: lim.capture_passive(
        LEARNED, scope="project:a", session="sb"
    ),
    "search": lambda lim, ids: lim.search("payroll", scope=["project:a", "project:b"]),
    "overview": lambda lim, ids: lim.overview(),
    "summary": lambda lim, ids: lim.summary(),
    "list_progress": lambda lim, ids: lim.list_progress(),
    "get_rules": lambda lim, ids: lim.get_rules(),
    "add_rule": lambda lim, ids: lim.add_rule("payroll-b", "avoid", "nothing"),
}


@pytest.mark.parametrize("verb", REFUSED)
def test_a_confined_view_runs_no_verb_that_names_no_scope_it_reaches(
    setting: Setting, verb: str
) -> None:
    memory, lim, ids = setting
    before = state(memory)
    with pytest.raises(recuerdo.CapabilityNotGranted) as refused:
        REFUSED[verb](lim, ids)
    assert refused.value.code == "capability_not_granted"
    assert "project:b" not in str(refused.value)
    assert state(memory) == before
    assert memory.get_rules()[0]["level"] == "must"


def test_a_confined_view_still_runs_what_names_its_scope(setting: Setting) -> None:
    """Named within reach, a verb runs, and so do the verbs it calls itself (``mirror_push``
    reads and saves through ``get`` and ``save``, which the view alone would refuse)."""
    memory, lim, _ = setting
    shown = lim.recent(scope="project:a")["text"]
    assert "Launch checklist" in shown and SECRET not in shown
    assert lim.capture_passive(LEARNED, scope="project:a", session="sa")["scope"] == "project:a"
    assert lim.save("Later", "the next step for A", scope="project:a", session="sa")["id"]
    pushed = lim.mirror_push("doc/plan", "the plan", locator="plan.md", scope="project:a")
    assert pushed["outcome"] == "created"
    again = lim.mirror_push("doc/plan", "the plan, v2", locator="plan.md", scope="project:a")
    assert again["outcome"] == "updated"
    assert lim.relate("Alpha", "Beta", "partners_with", scope="project:a")["facts_created"] == 1
    assert lim.bind_address("lim@local")["bound"] == "new"  # reaches no scope: always runs
    assert [s["scope"] for s in lim.status(scope="project:a")["scopes"]] == ["project:a"]
    # The owner's own view is not confined.
    assert SECRET in memory.recent()["text"]


def test_a_view_files_under_a_session_of_any_scope_it_reaches(setting: Setting) -> None:
    """The session rule refuses only a session kept outside the view's reach: a view of the
    user's scope and project a files a note of either under the owner's session of project a,
    and under a session it starts by saving (kept in its note's scope); the owner files under
    any session."""
    memory, _, _ = setting
    memory.session_start("sa", project="a")
    both = memory.for_principal("both", memory.tenant, scopes=["user", "project:a"])
    first = memory.save("First", "the owner's note of project a", scope="project:a", session="sa")
    mine = both.save("Mine", "a note of the user's scope", scope="user", session="sa")["id"]
    listed = memory.timeline(first["id"], after=10)
    assert listed["session"] == "sa" and [n["id"] for n in listed["after"]] == [mine]
    assert both.save("New", "its own session", scope="user", session="new")["id"]
    assert memory.session_start("new")["scope"] == "user"
    assert memory.save("Owner", "across scopes", scope="user", session="sb")["id"]


def _planted_folder(memory: recuerdo.Memory, folder: Path) -> Path:
    """Project b's notes as Markdown, one of them edited: read back, it would be a revision."""
    memory.export_markdown(folder, scope="project:b")
    file = next(f for f in folder.rglob("*.md") if "B secret" in f.read_text(encoding="utf-8"))
    file.write_text(file.read_text(encoding="utf-8") + "\nplanted by lim\n", encoding="utf-8")
    return folder


OWNERS: dict[str, Callable[[recuerdo.Memory, recuerdo.Memory, Path], Any]] = {
    "export_markdown": lambda memory, lim, at: lim.export_markdown(at / "out"),
    "export_markdown_b": lambda memory, lim, at: lim.export_markdown(at / "out", scope="project:b"),
    "import_markdown": lambda memory, lim, at: lim.import_markdown(_planted_folder(memory, at)),
    "backup": lambda memory, lim, at: lim.backup(at / "out.jsonl.gz"),
}


@pytest.mark.parametrize("method", OWNERS)
def test_a_confined_view_runs_no_owner_method_beyond_its_scopes(
    setting: Setting, tmp_path: Path, method: str
) -> None:
    """The owner's methods that are no verbs (the doors never offer them) kept no scope: a
    confined view exported every scope's notes as Markdown, read a folder back into project b,
    and wrote a backup of the whole memory."""
    memory, lim, _ = setting
    before = state(memory)
    with pytest.raises(recuerdo.CapabilityNotGranted) as refused:
        OWNERS[method](memory, lim, tmp_path)
    assert refused.value.code == "capability_not_granted"
    assert "project:b" not in str(refused.value)
    assert state(memory) == before
    assert not list(tmp_path.glob("out*"))


def test_a_confined_view_exports_its_own_scope_as_markdown(
    setting: Setting, tmp_path: Path
) -> None:
    """Its front matter lists the links the owner made to another scope's notes without them
    (a linked note's title is the owner's secret too)."""
    memory, lim, ids = setting
    (hidden,) = [
        n["id"] for n in memory.list_notes(scope="project:b")["notes"] if n["title"] == "B secret"
    ]
    memory.link(ids["mine"], hidden)
    assert "B secret" in next(iter(_exported(memory, tmp_path / "owner", "project:a")))
    texts = _exported(lim, tmp_path / "lim", "project:a")
    assert len(texts) == 1 and "Launch checklist for A" in texts[0]
    assert "B secret" not in texts[0] and SECRET not in texts[0]


def _exported(memory: recuerdo.Memory, folder: Path, scope: str) -> list[str]:
    memory.export_markdown(folder, scope=scope)
    return [file.read_text(encoding="utf-8") for file in folder.rglob("*.md")]
