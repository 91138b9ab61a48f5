"""The mirror's local state said the truth (decision 0101), through the real CLI: a document
holding a secret, a queued push whose file is gone, a first push over another machine's
document, CRLF files, a damaged ledger or queue file. Each test checks the store and the files
after the command, refusals included."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

import recuerdo

from .test_mirror import mirror

KEY = "odd/deploy/tasks"
CREDENTIAL = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD"
SECRET_DOC = f"# Deploy\n- [ ] set OPENAI_API_KEY={CREDENTIAL}\n- [ ] ship\n"
DEAD = "http://127.0.0.1:9"  # nothing listens there: the memory cannot be reached


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def stored(base: Path, key: str = KEY) -> Any:
    with recuerdo.open("work", base_dir=base) as memory:
        return memory.mirror_get(key)


def test_a_document_holding_a_secret_is_never_reported_identical(base: Path) -> None:
    """The push said in_sync, "identical", while memory held secret(API) in place of the key;
    afterwards status said local_ahead forever and a pull was refused."""
    file = base / "deploy.md"
    file.write_text(SECRET_DOC)
    code, pushed = mirror(base, "push", str(file), "--key", KEY)
    assert code == 0 and pushed["status"] == "in_sync_except_redacted", pushed
    assert pushed["in_sync"] is False and pushed["redacted"] == {"content": ["API"]}
    assert "identical" not in pushed["detail"]
    copy = stored(base)
    assert CREDENTIAL not in copy["content"] and "secret(API)" in copy["content"]
    assert pushed["local_sha256"] == sha(file.read_bytes())  # the file's real hash
    assert pushed["memory_sha256"] == copy["sha256"] != pushed["local_sha256"]

    code, reports = mirror(base, "status", str(file))
    assert code == 0 and reports[0]["status"] == "in_sync_except_redacted", reports
    code, again = mirror(base, "push", str(file), "--key", KEY)
    assert code == 0 and (again["status"], again["outcome"]) == (
        "in_sync_except_redacted",
        "duplicate",
    )
    code, pulled = mirror(base, "pull", str(file))  # nothing to pull: the file keeps its key
    assert code == 0 and pulled["status"] == "in_sync_except_redacted", pulled
    assert file.read_text() == SECRET_DOC and stored(base)["version"] == 1

    # Memory moves on: its copy has the placeholder, so a plain pull would write it over the
    # file's credential; refused, the file untouched.
    with recuerdo.open("work", base_dir=base) as memory:
        memory.save("deploy", copy["content"] + "- [x] theirs\n", key=KEY, kind="mirror")
    code, refused = mirror(base, "pull", str(file))
    assert code == 1 and refused["status"] == "refused", refused
    assert file.read_text() == SECRET_DOC


def test_the_verb_reports_what_it_did_not_store_as_sent(memory: recuerdo.Memory) -> None:
    """mirror_push hashed the text after the guard replaced the key: "identical"."""
    reply = memory.mirror_push(KEY, SECRET_DOC)
    assert reply["in_sync"] is False and reply["redacted"] == {"content": ["API"]}
    assert reply["local_sha256"] == sha(SECRET_DOC.encode())
    assert CREDENTIAL not in memory.mirror_get(KEY)["content"]
    clean = memory.mirror_push("odd/clean/tasks", "# Clean\n- [ ] a\n")
    assert clean["in_sync"] is True and clean["redacted"] == {}


def test_sync_pushes_the_queued_copy_when_the_file_is_gone(base: Path) -> None:
    """sync re-read each queued file: one deleted (or renamed) raised FileNotFoundError, and
    the queue never drained. Each item is now reported on its own."""
    gone, kept, big = (base / name for name in ("gone.md", "kept.md", "big.md"))
    gone.write_text("# Gone\n- [ ] a\n")
    kept.write_text("# Kept\n- [ ] b\n")
    big.write_text("- [ ] x\n" * 10_000)  # over the note limit: refused, never cut
    for file, key in ((gone, "odd/gone/tasks"), (kept, "odd/kept/tasks"), (big, "odd/big/t")):
        code, pushed = mirror(base, "push", str(file), "--key", key, server=DEAD)
        assert code == 1 and pushed["status"] == "pending", pushed
    gone.unlink()
    code, reports = mirror(base, "sync")
    assert code == 1, reports  # the refused one
    by_file = {Path(r["file"]).name: r for r in reports}
    assert by_file["gone.md"]["status"] == "memory_ahead", reports
    assert "gone" in by_file["gone.md"]["detail"]
    assert by_file["kept.md"]["status"] == "in_sync"
    assert by_file["big.md"]["error"] == "content_too_large"
    assert stored(base, "odd/gone/tasks")["content"] == "# Gone\n- [ ] a\n"  # the queued copy
    assert stored(base, "odd/kept/tasks")["content"] == "# Kept\n- [ ] b\n"
    assert stored(base, "odd/big/t")["state"] == "nothing_stored"
    queue = sorted(p.name for p in (base / ".recuerdo" / "mirror-pending").iterdir())
    assert len(queue) == 1  # only the refused push still waits
    code, pulled = mirror(base, "pull", str(gone))
    assert code == 0 and gone.read_text() == "# Gone\n- [ ] a\n", pulled


def test_a_first_push_never_replaces_another_document_at_the_key(base: Path) -> None:
    """A machine with no ledger entry pushed with no version: the document another machine
    stored at the key was replaced unseen (the upsert trap), and the push said in_sync."""
    theirs, mine = "# Auth\n- [x] design (A did this)\n", "# Auth\n- [ ] design\n"
    file = base / "auth.md"
    file.write_text(theirs)
    mirror(base, "push", str(file), "--key", KEY)
    ledger = base / ".recuerdo" / "mirror.json"
    ledger.unlink()  # another machine: the same memory, no ledger
    file.write_text(mine)
    code, pushed = mirror(base, "push", str(file), "--key", KEY)
    assert code == 1 and pushed["status"] == "diverged", pushed
    assert "never synced from here" in pushed["detail"] and pushed["conflict_revision_id"]
    copy = stored(base)
    assert (copy["content"], copy["version"]) == (theirs, 1)  # not replaced
    with recuerdo.open("work", base_dir=base) as memory:
        kept = [r for r in memory.history(copy["id"]) if r["operation"] == "conflict"]
        revision = memory.revision(copy["id"], revision_id=kept[0]["revision_id"])
    assert len(kept) == 1 and revision["content"] == mine  # both kept
    assert not ledger.exists() or json.loads(ledger.read_text()) == {}

    file.write_text(theirs)  # the same document: no conflict, the file is now synced
    code, pushed = mirror(base, "push", str(file), "--key", KEY)
    assert code == 0 and (pushed["status"], pushed["outcome"]) == ("in_sync", "duplicate")
    ledger.unlink()
    file.write_text(mine)
    code, forced = mirror(base, "push", str(file), "--key", KEY, "--force")  # explicit
    assert code == 0 and forced["outcome"] == "updated", forced
    assert stored(base)["content"] == mine


def test_a_first_push_of_a_document_with_a_secret_matches_its_stored_copy(base: Path) -> None:
    """The second machine's copy holds the key, the stored one its placeholder: the same
    document, no conflict."""
    file = base / "deploy.md"
    file.write_text(SECRET_DOC)
    mirror(base, "push", str(file), "--key", KEY)
    (base / ".recuerdo" / "mirror.json").unlink()
    code, pushed = mirror(base, "push", str(file), "--key", KEY)
    assert code == 0 and pushed["outcome"] == "duplicate", pushed
    assert pushed["status"] == "in_sync_except_redacted"


def test_crlf_files_are_kept_byte_for_byte(base: Path) -> None:
    """read_text and write_text turned CRLF into LF: memory held another document, the hash
    reported was not the file's, and a pull rewrote the file LF."""
    data = b"# Auth\r\n- [ ] rotate keys\r\n"
    file = base / "auth.md"
    file.write_bytes(data)
    code, pushed = mirror(base, "push", str(file), "--key", KEY)
    assert code == 0 and pushed["status"] == "in_sync", pushed
    assert pushed["local_sha256"] == sha(data) == pushed["memory_sha256"]
    assert stored(base)["content"].encode() == data
    with recuerdo.open("work", base_dir=base) as memory:
        memory.save("auth", data.decode() + "- [ ] more\r\n", key=KEY, kind="mirror")
    code, pulled = mirror(base, "pull", str(file))
    assert code == 0 and pulled["status"] == "in_sync", pulled
    assert file.read_bytes() == data + b"- [ ] more\r\n"
    code, reports = mirror(base, "status", str(file))
    assert reports[0]["status"] == "in_sync" and reports[0]["local_sha256"] == sha(
        file.read_bytes()
    )


def test_a_file_that_is_not_utf8_is_refused_by_name(base: Path) -> None:
    """A push of a Latin-1 file died with a raw UnicodeDecodeError."""
    file = base / "auth.md"
    file.write_bytes("# Auth\n- [ ] caf\u00e9\n".encode("latin-1"))
    code, refused = mirror(base, "push", str(file), "--key", KEY)
    assert code == 1 and refused["error"] == "invalid_input", refused
    assert "not UTF-8" in refused["detail"] and str(file) in refused["detail"]
    with recuerdo.open("work", base_dir=base) as memory:
        assert memory.mirror_get(KEY)["state"] == "nothing_stored"


@pytest.mark.parametrize("damaged", ["ledger", "queue"])
def test_a_damaged_ledger_or_queue_file_is_a_named_refusal(base: Path, damaged: str) -> None:
    """Every mirror command died with a raw JSONDecodeError, naming no file."""
    file = base / "auth.md"
    file.write_text("# Auth\n- [ ] rotate keys\n")
    mirror(base, "push", str(file), "--key", KEY)
    root = base / ".recuerdo"
    assert [p.name for p in root.iterdir() if p.name.startswith(".mirror")] == []  # no temp
    target = root / "mirror.json" if damaged == "ledger" else root / "mirror-pending" / "x.json"
    target.parent.mkdir(exist_ok=True)
    target.write_bytes(root.joinpath("mirror.json").read_bytes()[:40])
    before = target.read_bytes()
    file.write_text("# Auth\n- [ ] rotate keys\n- [ ] more\n")
    # The commands that read the damaged file (a push reads the ledger and its own queue
    # file, not the other queued ones; a sync reads the queue).
    commands = [["status"], ["status", str(file)]]
    commands += (
        [["push", str(file), "--key", KEY], ["pull", str(file)], ["resume", "auth"]]
        if damaged == "ledger"
        else [["sync"]]
    )
    for args in commands:
        code, refused = mirror(base, *args)
        assert code == 1 and refused["error"] == "document_corrupt", (args, refused)
        assert (
            refused["path"] == str(target.resolve())
            and str(target.resolve()) in (refused["detail"])
        )
        assert target.read_bytes() == before  # left for the user to look at
    copy = stored(base, KEY)
    assert (copy["version"], copy["content"]) == (1, "# Auth\n- [ ] rotate keys\n")
    assert file.read_text().endswith("- [ ] more\n")


def test_sync_reports_a_queued_file_it_cannot_read(base: Path) -> None:
    """A queued file turned unreadable raised UnboundLocalError out of sync when it came
    first (its text was never read): the review of 0101. It is reported, and stays queued."""
    bad = base / "bad.md"
    bad.write_text("# bad\n- [ ] a\n")
    assert mirror(base, "push", str(bad), "--key", "odd/bad/tasks", server=DEAD)[0] == 1
    bad.write_bytes("# bad\n- [ ] caf\u00e9\n".encode("latin-1"))
    code, reports = mirror(base, "sync")
    assert code == 1 and [r["status"] for r in reports] == ["refused"], reports
    assert "not UTF-8" in reports[0]["detail"]
    assert len(list((base / ".recuerdo" / "mirror-pending").iterdir())) == 1


def test_a_pull_writes_the_file_a_link_names(base: Path) -> None:
    """The atomic write replaced the link itself with a file: the linked file stayed old and
    the ledger held two entries (the review of 0101)."""
    (base / "shared").mkdir()
    target = base / "shared" / "auth.md"
    target.write_text("# Auth\n- [ ] a\n")
    link = base / "auth.md"
    link.symlink_to(target)
    assert mirror(base, "push", str(link), "--key", KEY)[0] == 0
    with recuerdo.open("work", base_dir=base) as memory:
        memory.save("auth", "# Auth\n- [ ] a\n- [x] b\n", key=KEY, kind="mirror")
    code, pulled = mirror(base, "pull", str(link))
    assert code == 0, pulled
    assert link.is_symlink() and target.read_text() == "# Auth\n- [ ] a\n- [x] b\n"
    code, reports = mirror(base, "status")
    assert [r["status"] for r in reports] == ["in_sync"]


def test_a_first_push_of_the_same_text_keeps_the_notes_title_and_kind(base: Path) -> None:
    """Version 0 with the same text went on as an update, and retitled the note (the review
    of 0101): another title or kind is a conflict, and the note stays as it was."""
    doc = "# Auth\n- [ ] a\n"
    with recuerdo.open("work", base_dir=base) as memory:
        memory.save("Auth rollout decision", doc, key=KEY, kind="decision")
    file = base / "auth.md"
    file.write_text(doc)
    code, pushed = mirror(base, "push", str(file), "--key", KEY)
    assert code == 1 and pushed["status"] != "in_sync", pushed
    with recuerdo.open("work", base_dir=base) as memory:
        note = memory.mirror_get(KEY)
        held = memory.get(note["id"])
    assert (held["title"], held["kind"], held["version"]) == (
        "Auth rollout decision",
        "decision",
        1,
    )


def _record_many(state: str, prefix: str, count: int) -> None:
    from recuerdo.doors.mirror import Ledger

    ledger = Ledger(state)
    for n in range(count):
        ledger.record(Path(state) / f"{prefix}{n}.md", {"key": f"k{n}", "sha256": "x"})


def test_two_mirror_commands_at_once_lose_no_ledger_entry(base: Path) -> None:
    """The ledger was read, changed and written without a lock: two commands at once kept
    one's entries only (noted by the fix of 0101)."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=_record_many, args=(str(base), prefix, 150)) for prefix in "ab"
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
        assert worker.exitcode == 0
    ledger = json.loads((base / ".recuerdo" / "mirror.json").read_text())
    assert len(ledger) == 300
