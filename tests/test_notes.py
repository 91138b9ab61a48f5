"""Notes: upserts with history, duplicates, conflicts, deletion, review dates, size limits."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import recuerdo
from recuerdo.notes.text import cap_utf8, redact_private
from recuerdo.store.sqlite import sqlite3

from .conftest import query_plan, settled_dump, statements_run


def _age(memory: recuerdo.Memory, item_id: int, column: str, value: str) -> None:
    """Move a timestamp of a stored row (what the passing of time would do)."""
    conn = sqlite3.connect(memory.location)
    conn.execute(f"UPDATE items SET {column} = ? WHERE id = ?", (value, item_id))
    conn.commit()
    conn.close()


def test_upsert_by_key_keeps_every_revision(memory: recuerdo.Memory) -> None:
    first = memory.save("Auth design", "Use sessions.", kind="decision", key="auth/design")
    second = memory.save(
        "Auth design", "Use JWT with rotation.", kind="decision", key="auth/design"
    )
    third = memory.save(
        "Auth design",
        "Use JWT with rotation and revocation lists.",
        kind="decision",
        key="auth/design",
    )
    assert [first["outcome"], second["outcome"], third["outcome"]] == [
        "created",
        "updated",
        "updated",
    ]
    assert first["id"] == second["id"] == third["id"]
    assert third["version"] == 3
    log = memory.history(first["id"])
    assert [(r["version"], r["operation"], r["principal"]) for r in log] == [
        (1, "write", "main"),
        (2, "write", "main"),
        (3, "write", "main"),
    ]
    assert log[1]["chars_removed"] > 0 and log[1]["chars_added"] > 0
    assert memory.revision(first["id"], 1)["content"] == "Use sessions."
    assert memory.revision(first["id"], 2)["content"] == "Use JWT with rotation."
    assert memory.get(first["id"])["content"] == "Use JWT with rotation and revocation lists."


def test_same_key_in_two_scopes_are_two_notes(memory: recuerdo.Memory) -> None:
    a = memory.save("Tasks", "alpha", key="odd/feature/tasks", scope="project:a")
    b = memory.save("Tasks", "beta", key="odd/feature/tasks", scope="project:b")
    c = memory.save("Tasks", "gamma", key="odd/feature/tasks")  # user scope
    assert len({a["id"], b["id"], c["id"]}) == 3
    assert memory.get(a["id"])["content"] == "alpha"
    assert memory.get(b["id"])["scope"] == "project:b"


def test_exact_repeat_within_the_window_is_counted_not_stored(file_memory: recuerdo.Memory) -> None:
    first = file_memory.save("Flaky test", "The CI  test is FLAKY on Mondays", kind="bugfix")
    again = file_memory.save("Flaky test", "the ci test is flaky on mondays", kind="bugfix")
    assert again["outcome"] == "duplicate" and again["id"] == first["id"]
    assert again["duplicates"] == 1
    assert file_memory.get(first["id"])["duplicates"] == 1
    other_kind = file_memory.save("Flaky test", "the ci test is flaky on mondays", kind="learning")
    assert other_kind["outcome"] == "created"
    _age(file_memory, first["id"], "updated_at", "2000-01-01T00:00:00.000000Z")
    later = file_memory.save("Flaky test", "The CI test is flaky on Mondays", kind="bugfix")
    assert later["outcome"] == "created" and later["id"] != first["id"]


def test_same_content_under_a_key_is_a_duplicate_without_revision(memory: recuerdo.Memory) -> None:
    memory.save("K", "same", key="k")
    again = memory.save("K", "same", key="k")
    assert again["outcome"] == "duplicate" and again["version"] == 1
    assert len(memory.history(again["id"])) == 1


def test_stale_expected_version_is_a_conflict_that_keeps_both(memory: recuerdo.Memory) -> None:
    note = memory.save("Plan", "v1 text", key="plan")
    memory.save("Plan", "v2 text by agent A", key="plan", expected_version=1)
    with pytest.raises(recuerdo.Conflict) as caught:
        memory.save("Plan", "v2 text by agent B", key="plan", expected_version=1)
    error = caught.value
    assert error.code == "conflict" and error.status == 409
    assert error.extra["current_version"] == 2
    assert error.extra["conflict_revision_id"] != error.extra["current_revision_id"]
    assert memory.get(note["id"])["content"] == "v2 text by agent A"
    log = memory.history(note["id"])
    conflict = [r for r in log if r["operation"] == "conflict"]
    assert len(conflict) == 1 and conflict[0]["version"] is None and conflict[0]["based_on"] == 1
    assert conflict[0]["revision_id"] == error.extra["conflict_revision_id"]
    assert any(j["operation"] == "conflict" for j in memory.journal())


def test_an_expected_version_of_a_note_deleted_since_is_refused(memory: recuerdo.Memory) -> None:
    """Found by a hunt over the notes: once the note was deleted, the stale version was
    ignored and a new note took the key (undoing the deletion unseen; the deleted note could
    then not be restored). Refused now, nothing stored; restoring it, or saving without a
    version, goes on."""
    note = memory.save("Doc", "v1", key="doc")["id"]
    memory.save("Doc", "v2", key="doc")
    memory.delete(note)
    before = memory.journal()
    with pytest.raises(recuerdo.Conflict) as caught:
        memory.save("Doc", "based on v2", key="doc", expected_version=2)
    assert caught.value.code == "conflict" and "nothing was stored" in caught.value.detail
    assert caught.value.extra == {"id": note, "deleted_version": 2, "expected_version": 2}
    assert memory.list_notes()["notes"] == [] and memory.journal() == before
    memory.restore(note)
    saved = memory.save("Doc", "based on v2", key="doc", expected_version=2)
    assert (saved["id"], saved["outcome"]) == (note, "updated")


def test_an_expected_version_of_an_erased_or_unknown_key_makes_a_note(
    memory: recuerdo.Memory,
) -> None:
    """An erased note leaves no trace to tell it from a key no note ever held: a new note."""
    note = memory.save("Doc", "v1", key="doc")["id"]
    memory.delete(note, hard=True)
    again = memory.save("Doc", "v1 again", key="doc", expected_version=1)
    fresh = memory.save("New", "text", key="never-held", expected_version=3)
    assert again["outcome"] == fresh["outcome"] == "created"
    assert memory.get(again["id"])["content"] == "v1 again"


def test_a_conflict_revision_is_read_by_its_revision_id(memory: recuerdo.Memory) -> None:
    """The revision a conflict names is listed by history and read whole by its revision_id;
    versions are read by number as before."""
    note = memory.save("Plan", "v1", key="plan")
    memory.save("Plan", "v2", key="plan")
    with pytest.raises(recuerdo.Conflict) as caught:
        memory.save("Plan", "stale text", key="plan", expected_version=1)
    kept = caught.value.extra["conflict_revision_id"]
    listed = [r for r in memory.history(note["id"]) if r["revision_id"] == kept]
    assert [(r["operation"], r["version"]) for r in listed] == [("conflict", None)]
    assert memory.revision(note["id"], revision_id=kept)["content"] == "stale text"
    assert memory.revision(note["id"], 2)["content"] == "v2"
    assert memory.get(note["id"])["content"] == "v2"


def test_delete_and_restore_are_in_the_history(memory: recuerdo.Memory) -> None:
    """A soft delete and a restore are revisions without a version: who, when, and the text
    they took away or brought back."""
    saved = memory.save("Temp", "temporary text")
    memory.agent("Cleaner").delete(saved["id"])
    memory.restore(saved["id"])
    log = memory.history(saved["id"])
    assert [(r["operation"], r["version"], r["principal"]) for r in log] == [
        ("write", 1, "main"),
        ("delete", None, "Cleaner"),
        ("restore", None, "main"),
    ]
    assert (log[1]["chars_removed"], log[2]["chars_added"]) == (14, 14)
    deleted = memory.revision(saved["id"], revision_id=log[1]["revision_id"])
    assert deleted["content"] == "temporary text"
    assert memory.get(saved["id"])["version"] == 1


def test_unique_title_refuses_a_title_taken_in_the_scope(memory: recuerdo.Memory) -> None:
    """With unique_title, a title another note of the scope has (any case) is title_taken;
    another scope, a category note of that title, or a save without the flag are not."""
    memory.save("Runbook", "first", scope="project:shop")
    with pytest.raises(recuerdo.TitleTaken) as caught:
        memory.save("runbook", "second", scope="project:shop", unique_title=True)
    assert (caught.value.code, caught.value.status) == ("title_taken", 409)
    elsewhere = memory.save("Runbook", "ops copy", scope="project:ops", unique_title=True)
    assert elsewhere["outcome"] == "created"
    memory.remember_about("project", "Uses Django", category="stack", project="shop")
    document = memory.save(
        "stack", "The stack, for humans", scope="project:shop", unique_title=True
    )
    assert document["outcome"] == "created"
    assert memory.save("Runbook", "a second one", scope="project:shop")["outcome"] == "created"


def test_get_is_never_truncated_and_reports_fields(memory: recuerdo.Memory) -> None:
    body = "x" * 40_000
    saved = memory.save("Big", body, kind="architecture", tags=["a"])
    note = memory.get(saved["id"])
    assert note["content"] == body and note["bytes"] == 40_000
    assert (note["kind"], note["scope"], note["tags"], note["status"]) == (
        "architecture",
        "user",
        ["a"],
        "active",
    )
    assert note["version_token"] == f"{saved['id']}:1"


def test_over_the_cap_is_cut_and_reported_or_refused(file_memory: recuerdo.Memory) -> None:
    body = "é" * 30_000  # 60,000 bytes
    cut = file_memory.save("Long", body)
    assert cut["truncated"] is True
    assert (cut["original_bytes"], cut["limit_bytes"]) == (60_000, 50_000)
    assert file_memory.get(cut["id"])["content"] == "é" * 25_000
    before = settled_dump(file_memory)
    with pytest.raises(recuerdo.ContentTooLarge) as caught:
        file_memory.save("Long strict", body, strict=True)
    assert caught.value.extra == {"original_bytes": 60_000, "limit_bytes": 50_000}
    assert settled_dump(file_memory) == before
    file_memory.configure(note_limit_bytes=100_000)
    assert file_memory.save("Long 2", body)["truncated"] is False


@settings(max_examples=200, deadline=None)
@given(text=st.text(min_size=0, max_size=200), limit=st.integers(0, 800))
def test_utf8_cap_never_splits_a_character(text: str, limit: int) -> None:
    text = text.encode("utf-8", "replace").decode("utf-8")
    capped = cap_utf8(text, limit)
    raw = capped.text.encode("utf-8")
    assert len(raw) <= limit
    assert text.startswith(capped.text)
    assert capped.truncated == (len(text.encode("utf-8")) > limit)
    # nothing that would still fit was dropped
    if capped.truncated:
        next_char = text[len(capped.text)]
        assert len(raw) + len(next_char.encode("utf-8")) > limit


def test_private_spans_and_secrets_never_stored(memory: recuerdo.Memory) -> None:
    saved = memory.save(
        "Deploy", "host ok <private>root pw is x</private> and token sk-ant-" + "q" * 30
    )
    note = memory.get(saved["id"])
    assert "root pw" not in note["content"] and "sk-ant-" not in note["content"]
    assert "[private]" in note["content"] and "secret(API)" in note["content"]
    assert "root pw" not in repr(memory.revision(saved["id"], 1))


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("host ok <private>root pw is x", "host ok [private]"),
        ("a <private>x<private>y</private>root pw</private> b", "a [private] b"),
        ("a <PRIVATE>root pw</Private> b <private>x</private> c", "a [private] b [private] c"),
        ("a </private> b <private>root pw", "a </private> b [private]"),
    ],
    ids=["never-closed", "nested", "any-case", "stray-closing-then-open"],
)
def test_a_private_span_is_never_stored_however_it_is_tagged(
    memory: recuerdo.Memory, given: str, stored: str
) -> None:
    """A <private> never closed was stored in clear, tag and all; a nested span's rest after
    its inner </private> too (a hunt over the CLI and sessions)."""
    saved = memory.save("Deploy", given)
    assert memory.get(saved["id"])["content"] == stored
    assert "root pw" not in repr(memory.revision(saved["id"], 1))


@settings(max_examples=300)
@given(
    st.lists(
        st.sampled_from(["<private>", "</private>", "<PRIVATE>", "</Private>", "x", " ", "<"]),
        max_size=12,
    ).map("".join)
)
def test_redaction_leaves_no_span_open(text: str) -> None:
    redacted = redact_private(text)
    assert "<private>" not in redacted.lower()  # every opened span was taken out
    assert redact_private(redacted) == redacted


def test_soft_delete_hides_everywhere_and_restores(memory: recuerdo.Memory) -> None:
    saved = memory.save("Gone", "soon hidden", key="gone", session="s1")
    memory.delete(saved["id"])
    for call in (memory.get, memory.history, memory.timeline):
        with pytest.raises(recuerdo.ItemNotFound):
            call(saved["id"])
    assert "soon hidden" not in memory.recent()["text"]
    replacement = memory.save("Gone", "new holder of the key", key="gone")
    with pytest.raises(recuerdo.Conflict):
        memory.restore(saved["id"])
    memory.delete(replacement["id"], hard=True)
    restored = memory.restore(saved["id"])
    assert restored["content"] == "soon hidden" and restored["status"] == "active"
    ops = [j["operation"] for j in memory.journal()]
    assert ops[:3] == ["restore", "delete", "write"]


def test_hard_delete_removes_note_and_revisions(file_memory: recuerdo.Memory) -> None:
    saved = file_memory.save("Secret plan", "unique-marker-1234", key="p")
    file_memory.save("Secret plan", "unique-marker-5678", key="p")
    assert file_memory.delete(saved["id"], hard=True) == {"id": saved["id"], "deleted": "hard"}
    with pytest.raises(recuerdo.ItemNotFound):
        file_memory.get(saved["id"])
    dump = "\n".join(settled_dump(file_memory))
    assert "unique-marker" not in dump
    assert file_memory.journal()[0]["operation"] == "delete"


def test_review_dates_move_only_with_mark_reviewed(file_memory: recuerdo.Memory) -> None:
    decision = file_memory.save("Use Postgres", "for reporting", kind="decision", key="db")
    manual = file_memory.save("Scratch", "no review for manual notes")
    assert file_memory.get(manual["id"])["review_at"] is None
    first_due = file_memory.get(decision["id"])["review_at"]
    assert first_due is not None
    _age(file_memory, decision["id"], "review_at", "2001-01-01T00:00:00.000000Z")
    assert file_memory.get(decision["id"])["status"] == "needs_review"
    listed = file_memory.review("list")
    assert [n["id"] for n in listed] == [decision["id"]]
    file_memory.save("Use Postgres", "for reporting and billing", kind="decision", key="db")
    file_memory.edit(decision["id"], "append", "Also analytics.")
    assert file_memory.get(decision["id"])["status"] == "needs_review"  # edits do not reset
    marked = file_memory.mark_reviewed(decision["id"])
    assert marked["review_at"] > "2026"
    assert file_memory.get(decision["id"])["status"] == "active"
    assert file_memory.review("list") == []


def test_review_intervals_are_configurable(memory: recuerdo.Memory) -> None:
    settings_now = memory.configure(review_months={"bugfix": 1, "decision": None})
    assert settings_now["review_months"]["bugfix"] == 1
    assert "decision" not in settings_now["review_months"]
    assert memory.get(memory.save("B", "b", kind="bugfix")["id"])["review_at"] is not None
    assert memory.get(memory.save("D", "d", kind="decision")["id"])["review_at"] is None


def test_journal_filters(memory: recuerdo.Memory) -> None:
    memory.remember("learning", "an entry")
    memory.agent("Writer").save("By writer", "text", scope="project:x")
    memory.save("By main", "text")
    assert {j["principal"] for j in memory.journal()} == {"main", "Writer"}
    assert [j["item_type"] for j in memory.journal(principal="Writer")] == ["note"]
    assert [j["scope"] for j in memory.journal(scope="project:x")] == ["project:x"]
    assert memory.journal(since="2999-01-01T00:00:00Z") == []
    assert len(memory.journal(limit=1)) == 1


def test_the_journal_lists_the_newest_lines_whatever_the_windows_read(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a scope, the journal reads the newest ids first and widens the range until it
    holds the limit. It lists what the whole journal, sorted, would: where the tenant's lines
    are dense, where they are spread among another tenant's (past the widest window, the whole
    listing), and under a filter that keeps few."""
    from recuerdo.notes import history

    monkeypatch.setattr(history, "JOURNAL_WINDOWS", 100)  # the sparse tenant reaches it
    other = memory.for_tenant("other")
    writer = memory.agent("Rare")
    mine: list[int] = []  # the notes' ids in the order they were written, per tenant
    theirs: list[int] = []
    rare: list[int] = []
    for n in range(30):
        mine.append(memory.save(f"Mine {n}", "text", key=f"m{n}")["id"])
        for m in range(3):
            theirs.append(other.save(f"Theirs {n}.{m}", "text", key=f"t{n}.{m}")["id"])
        if n % 10 == 0:
            rare.append(writer.save(f"Rare {n}", "text", key=f"r{n}")["id"])
            mine.append(rare[-1])
    for limit in (1, 3, 40, 1000):
        assert [j["item_id"] for j in memory.journal(limit=limit)] == mine[::-1][:limit]
        assert [j["item_id"] for j in other.journal(limit=limit)] == theirs[::-1][:limit]
        lines = memory.journal(principal="Rare", limit=limit)
        assert [j["item_id"] for j in lines] == rare[::-1][:limit]


def test_the_journal_reads_its_newest_ids_not_every_line(
    file_memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first statement of an unscoped listing reads a range of the newest ids, in id order:
    before, every line of the tenant was read through the scope index and sorted, to keep the
    newest few (3.8 ms at 10,000 notes, growing with the journal)."""
    saved = [file_memory.save(f"Note {n}", "text", key=f"k{n}")["id"] for n in range(30)]
    with statements_run(monkeypatch) as seen:
        lines = file_memory.journal(limit=5)
    assert [j["item_id"] for j in lines] == saved[::-1][:5]
    [(sql, params), *_] = [(sql, p) for sql, p in seen if "FROM journal WHERE" in sql]
    plan = query_plan(file_memory, sql, params)
    assert not any("TEMP B-TREE" in step for step in plan), plan
    assert any("INTEGER PRIMARY KEY (rowid>?)" in step for step in plan), plan


NOTE_REFUSALS: list[tuple[str, Callable[[recuerdo.Memory], Any], str]] = [
    ("empty title", lambda m: m.save("  ", "body"), "empty_title"),
    ("empty content", lambda m: m.save("T", " \n "), "empty_content"),
    ("bad kind", lambda m: m.save("T", "b", kind="Not A Kind!"), "invalid_input"),
    (
        "bad expected version",
        lambda m: m.save("T", "b", key="k", expected_version="1"),
        "invalid_input",
    ),
    ("get unknown", lambda m: m.get(99_999), "item_not_found"),
    ("history unknown", lambda m: m.history(99_999), "item_not_found"),
    ("revision unknown version", lambda m: m.revision(1, 7), "item_not_found"),
    ("revision unknown id", lambda m: m.revision(1, revision_id=99_999), "item_not_found"),
    ("revision by both", lambda m: m.revision(1, 1, revision_id=1), "invalid_input"),
    ("revision by neither", lambda m: m.revision(1), "invalid_input"),
    ("title taken", lambda m: m.save("existing", "b", unique_title=True), "title_taken"),
    ("timeline bad count", lambda m: m.timeline(1, before=-1), "invalid_input"),
    ("delete unknown", lambda m: m.delete(99_999), "item_not_found"),
    ("restore live note", lambda m: m.restore(1), "item_not_found"),
    ("mark unknown", lambda m: m.mark_reviewed(99_999), "item_not_found"),
    ("review bad action", lambda m: m.review("purge"), "invalid_input"),
    ("journal bad since", lambda m: m.journal(since="yesterday"), "invalid_input"),
    ("configure bad limit", lambda m: m.configure(note_limit_bytes=5), "invalid_input"),
    ("recent bad size", lambda m: m.recent(max_bytes=0), "invalid_input"),
    ("empty observation", lambda m: m.remember_about("user", "   "), "empty_content"),
    ("profile bad axis", lambda m: m.profile("team"), "invalid_input"),
    ("blank session id", lambda m: m.session_start(" "), "invalid_input"),
    ("passive not text", lambda m: m.capture_passive(42), "invalid_input"),
    ("unmute unknown", lambda m: m.unmute("nothing"), "item_not_found"),
    ("edit unknown note", lambda m: m.edit(99_999, "append", "x"), "item_not_found"),
    ("edit nothing", lambda m: m.edit(1), "operation_content_mismatch"),
    ("edit without operation", lambda m: m.edit(1, content="x"), "operation_content_mismatch"),
    ("edit blank title", lambda m: m.edit(1, title="  "), "empty_title"),
    ("get bad id", lambda m: m.get("1"), "invalid_input"),
]


@pytest.mark.parametrize(
    ("label", "call", "code"), NOTE_REFUSALS, ids=[r[0] for r in NOTE_REFUSALS]
)
def test_note_refusals_store_nothing(
    file_memory: recuerdo.Memory, label: str, call: Callable[[recuerdo.Memory], Any], code: str
) -> None:
    file_memory.save("Existing", "already here", key="k")
    before = settled_dump(file_memory)
    with pytest.raises(recuerdo.RecuerdoError) as caught:
        call(file_memory)
    assert caught.value.code == code
    assert settled_dump(file_memory) == before


def test_notes_survive_reopen(base: Path) -> None:
    with recuerdo.open("notes-reopen", base_dir=base) as mem:
        saved = mem.save("Keep", "kept across processes", key="keep")
    with recuerdo.open("notes-reopen", base_dir=base) as mem:
        assert mem.get(saved["id"])["content"] == "kept across processes"
        assert mem.save("Keep", "v2", key="keep")["version"] == 2
