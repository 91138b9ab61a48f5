"""The mirror: a local task file and its whole copy in memory (Engram's mirror workflow),
through the real CLI, against a local memory and a real server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

import recuerdo

from .conftest import Server
from .forks import recuerdo_command

KEY = "odd/auth/tasks"
DOC = "# Auth tasks\n\n- [x] design tokens\n- [ ] rotate keys\n- [ ] revoke on logout\n"


def mirror(
    base: Path, *args: str, server: str | None = None, memory: str = "work"
) -> tuple[int, Any]:
    command = recuerdo_command("--state-dir", str(base), "--json")
    command += ["--server", server] if server else []
    done = subprocess.run(
        [*command, "--memory", memory, "mirror", *args],
        capture_output=True, text=True, timeout=120, cwd=base,
    )  # fmt: skip
    try:
        return done.returncode, json.loads(done.stdout)
    except ValueError:
        raise AssertionError(done.stdout + done.stderr) from None


@pytest.fixture
def task_file(base: Path) -> Path:
    file = base / "odd" / "tasks" / "auth.md"
    file.parent.mkdir(parents=True)
    file.write_text(DOC)
    return file


def status(base: Path, file: Path) -> str:
    code, reports = mirror(base, "status", str(file))
    assert code == 0, reports
    return str(reports[0]["status"])


def test_push_keeps_the_whole_document_and_shows_the_evidence(base: Path, task_file: Path) -> None:
    code, pushed = mirror(base, "push", str(task_file), "--key", KEY, "--scope", "project:shop")
    assert code == 0 and pushed["status"] == "in_sync", pushed
    assert pushed["local_sha256"] == pushed["memory_sha256"] and pushed["version"] == 1
    with recuerdo.open("work", base_dir=base) as memory:
        copy = memory.mirror_get(KEY, scope="project:shop")
    assert copy["content"] == DOC and copy["locator"].endswith("odd/tasks/auth.md")
    assert status(base, task_file) == "in_sync"


def test_status_tells_which_side_moved(base: Path, task_file: Path) -> None:
    mirror(base, "push", str(task_file), "--key", KEY)
    task_file.write_text(DOC + "- [ ] audit sessions\n")
    assert status(base, task_file) == "local_ahead"
    mirror(base, "push", str(task_file), "--key", KEY)
    assert status(base, task_file) == "in_sync"
    with recuerdo.open("work", base_dir=base) as memory:  # another parent writes the mirror
        memory.save("auth tasks", DOC + "- [x] audit sessions\n", key=KEY, kind="mirror")
    assert status(base, task_file) == "memory_ahead"
    task_file.write_text(DOC + "- [ ] something else\n")
    assert status(base, task_file) == "diverged"


def test_diverged_copies_are_both_kept_and_never_overwritten(base: Path, task_file: Path) -> None:
    mirror(base, "push", str(task_file), "--key", KEY)
    with recuerdo.open("work", base_dir=base) as memory:
        theirs = memory.save("auth", DOC + "- [x] theirs\n", key=KEY, kind="mirror")
    task_file.write_text(DOC + "- [ ] mine\n")
    code, pushed = mirror(base, "push", str(task_file), "--key", KEY)
    assert code == 1 and pushed["status"] == "diverged", pushed
    with recuerdo.open("work", base_dir=base) as memory:
        assert memory.get(theirs["id"])["content"].endswith("- [x] theirs\n")  # not overwritten
        kept = [r for r in memory.history(theirs["id"]) if r["operation"] == "conflict"]
        assert len(kept) == 1  # the pushed text is kept beside it


def test_a_push_to_another_memory_with_no_note_there_is_a_first_push(
    base: Path, task_file: Path
) -> None:
    """The last sync's version goes with every push of the file (a target that holds another
    note at the key is then a conflict, never an overwrite): where no note ever held the key
    it makes one (0084's first version refused it: the review of 0ae5fdf)."""
    mirror(base, "push", str(task_file), "--key", KEY)
    code, pushed = mirror(base, "push", str(task_file), "--key", KEY, memory="elsewhere")
    assert code == 0 and (pushed["outcome"], pushed["version"]) == ("created", 1), pushed
    with recuerdo.open("work", base_dir=base) as memory:
        for text in ("other v1", "other v2", "other v3"):
            memory.save("auth", text, key=KEY, kind="mirror", scope="project:other")
    code, pushed = mirror(base, "push", str(task_file), "--key", KEY, "--scope", "project:other")
    assert code == 1 and pushed["status"] == "diverged", pushed


def test_a_push_to_a_note_deleted_since_says_nothing_was_stored(
    base: Path, task_file: Path
) -> None:
    """Decision 0084: the push is refused, and the report says so (it said the pushed text
    was kept as a conflict); a pull leaves the file (it failed with a KeyError); --force
    starts a new note."""
    mirror(base, "push", str(task_file), "--key", KEY)
    with recuerdo.open("work", base_dir=base) as memory:
        memory.delete(memory.mirror_get(KEY)["id"])
        before = memory.journal()
    task_file.write_text(DOC + "- [ ] after the delete\n")
    code, pushed = mirror(base, "push", str(task_file), "--key", KEY)
    assert code == 1 and pushed["status"] == "diverged", pushed
    with recuerdo.open("work", base_dir=base) as memory:
        assert memory.journal() == before and memory.list_notes()["notes"] == []
    assert "nothing was stored" in pushed["detail"] and pushed["deleted_version"] == 1
    code, pulled = mirror(base, "pull", str(task_file), "--force")
    assert code == 1 and pulled["status"] == "refused", pulled
    assert task_file.read_text().endswith("after the delete\n")
    code, forced = mirror(base, "push", str(task_file), "--key", KEY, "--force")
    assert code == 0 and forced["outcome"] == "created", forced


def test_pull_refuses_to_lose_local_changes_unless_forced(base: Path, task_file: Path) -> None:
    mirror(base, "push", str(task_file), "--key", KEY)
    task_file.write_text(DOC + "- [ ] local only\n")
    code, refused = mirror(base, "pull", str(task_file))
    assert code == 1 and refused["status"] == "refused", refused
    assert task_file.read_text().endswith("local only\n")
    code, pulled = mirror(base, "pull", str(task_file), "--force")
    assert code == 0 and pulled["status"] == "in_sync"
    assert task_file.read_text() == DOC


def test_an_unreachable_memory_leaves_the_push_pending_then_sync_sends_it(
    base: Path, task_file: Path
) -> None:
    dead = "http://127.0.0.1:9"  # nothing listens there
    code, pushed = mirror(base, "push", str(task_file), "--key", KEY, server=dead)
    assert code == 1 and pushed["status"] == "pending", pushed
    assert status(base, task_file) == "pending"
    server = Server(base, memory="work")
    try:
        code, synced = mirror(base, "sync", server=server.url)
        assert code == 0 and [r["status"] for r in synced] == ["in_sync"], synced
        code, reports = mirror(base, "status", str(task_file), server=server.url)
        assert reports[0]["status"] == "in_sync"
    finally:
        server.stop()


def test_a_stale_push_through_a_server_is_reported_diverged(base: Path, task_file: Path) -> None:
    """The server's conflict reached the command as a generic remote error: it printed an
    error, not the report that both copies are kept."""
    server = Server(base, memory="work")
    try:
        mirror(base, "push", str(task_file), "--key", KEY, server=server.url)
        with recuerdo.open("work", base_dir=base) as memory:
            memory.save("auth", DOC + "- [x] theirs\n", key=KEY, kind="mirror")
        task_file.write_text(DOC + "- [ ] mine\n")
        code, pushed = mirror(base, "push", str(task_file), "--key", KEY, server=server.url)
        assert code == 1 and pushed["status"] == "diverged", pushed
        assert pushed["current_version"] == 2 and pushed["conflict_revision_id"]
    finally:
        server.stop()


def test_resume_runs_the_seed_order_and_finds_the_next_task(base: Path, task_file: Path) -> None:
    mirror(base, "push", str(task_file), "--key", KEY)
    task_file.write_text(DOC.replace("- [ ] rotate keys", "- [x] rotate keys"))
    code, report = mirror(base, "resume", "auth", "--file", str(task_file))
    assert code == 0
    assert list(report) == [
        "1_recent",
        "2_search",
        "3_document",
        "4_local_file",
        "5_reconciliation",
    ]
    assert report["3_document"]["content"] == DOC  # the whole document, not a preview
    reconciliation = report["5_reconciliation"]
    assert reconciliation["state"] == "differs"
    assert reconciliation["lines_only_in_local"] == ["- [x] rotate keys"]
    assert reconciliation["next_task"] == "revoke on logout"


def test_resume_reports_a_missing_mirror_instead_of_claiming_success(base: Path) -> None:
    code, report = mirror(base, "resume", "nothing-here")
    assert code == 0 and report["5_reconciliation"]["state"] == "missing"
    assert report["3_document"]["state"] == "nothing_stored"


def test_a_document_over_the_limit_is_refused_never_cut(base: Path, task_file: Path) -> None:
    task_file.write_text("- [ ] x\n" * 10_000)  # 80,000 bytes: over the default 50,000
    code, refused = mirror(base, "push", str(task_file), "--key", KEY)
    assert code == 1 and refused["error"] == "content_too_large", refused
    with recuerdo.open("work", base_dir=base) as memory:
        assert memory.mirror_get(KEY)["state"] == "nothing_stored"


def test_a_refused_pull_of_a_file_never_synced_leaves_no_entry(base: Path, task_file: Path) -> None:
    """`pull --key` of a file never synced here, whose text differs from memory's, is refused
    (diverged). Its placeholder entry (no version) stayed in the ledger, and the next push of
    the file was sent without expected_version: it replaced memory's newer text unchecked."""
    with recuerdo.open("work", base_dir=base) as memory:
        memory.save("auth tasks", DOC + "- [ ] written elsewhere\n", key=KEY, kind="mirror")
    before = task_file.read_bytes()
    code, refused = mirror(base, "pull", str(task_file), "--key", KEY)
    assert code == 1 and refused["status"] == "refused", refused
    assert task_file.read_bytes() == before
    code, status = mirror(base, "status", str(task_file))
    assert status[0]["status"] == "local_ahead" and status[0]["detail"] == "never pushed"
    code, pushed = mirror(base, "push", str(task_file), "--key", KEY)
    # Checked against what memory holds: both texts kept, nothing overwritten.
    assert pushed["status"] == "diverged" and pushed["expected_version"] == 0, pushed
