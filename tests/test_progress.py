"""Progress plans: creation rules, step moves, resume points, percent and display."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

import recuerdo


def test_resume_point_follows_the_spec(memory: recuerdo.Memory) -> None:
    memory.create_progress("import", ["ingest", "validate", "load"])
    assert memory.resume_point("import") == "ingest"
    memory.start_step("import", "ingest")
    assert memory.resume_point("import") == "ingest"
    memory.complete_step("import", "ingest", "100 rows")
    assert memory.resume_point("import") == "validate"
    memory.fail_step("import", "validate", "bad row 7")
    memory.complete_step("import", "load")
    assert memory.resume_point("import") == "validate"
    memory.complete_step("import", "validate")
    assert memory.resume_point("import") is None
    assert memory.resume_point("unknown") is None


def test_percent(memory: recuerdo.Memory) -> None:
    assert memory.progress_percent("unknown") == 0
    memory.create_progress("empty", [])
    assert memory.progress_percent("empty") == 100
    memory.create_progress("sync", ["fetch", "parse", "store"])
    memory.complete_step("sync", "fetch")
    assert memory.progress_percent("sync") == 33
    memory.skip_step("sync", "parse", "nothing to parse")
    assert memory.progress_percent("sync") == 66
    memory.fail_step("sync", "store")
    assert memory.progress_percent("sync") == 66


def test_unfinished_plan_is_kept_finished_plan_recreated(memory: recuerdo.Memory) -> None:
    memory.create_progress("job", ["a", "b"])
    memory.complete_step("job", "a", "done a")
    kept = memory.create_progress("job", ["x", "y", "z"])
    assert [s["name"] for s in kept["steps"]] == ["a", "b"]
    assert kept["steps"][0]["status"] == "done"
    memory.complete_step("job", "b")
    fresh = memory.create_progress("job", ["x", "y", "z"])
    assert [(s["name"], s["status"]) for s in fresh["steps"]] == [
        ("x", "pending"),
        ("y", "pending"),
        ("z", "pending"),
    ]


def test_display_marks_durations_results_and_errors(memory: recuerdo.Memory) -> None:
    memory.create_progress("sync", ["fetch", "parse", "store", "notify", "clean"])
    memory.start_step("sync", "fetch")
    time.sleep(0.012)
    memory.complete_step("sync", "fetch", "got 100 items")
    memory.start_step("sync", "parse")
    memory.fail_step("sync", "parse", "bad json")
    memory.skip_step("sync", "notify")
    memory.start_step("sync", "store")
    lines = memory.progress_display("sync").splitlines()
    assert lines[0] == "Task: sync (40%)"
    assert re.fullmatch(r"  \[OK\] fetch \((\d+)ms\) -> got 100 items", lines[1])
    assert int(re.findall(r"\((\d+)ms\)", lines[1])[0]) >= 10
    assert re.fullmatch(r"  \[XX\] parse( \(\d+ms\))? ERROR: bad json", lines[2])
    assert lines[3] == "  [>>] store"
    assert lines[4] == "  [--] notify"
    assert lines[5] == "  [  ] clean"


def test_plan_survives_a_reopen(base: Path) -> None:
    with recuerdo.open("resumable", base_dir=base) as mem:
        mem.create_progress("import", ["ingest", "validate", "load"])
        mem.complete_step("import", "ingest")
    with recuerdo.open("resumable", base_dir=base) as mem:
        assert mem.resume_point("import") == "validate"
        assert mem.list_progress()[0]["task"] == "import"
        assert mem.get_progress("import")["percent"] == 33


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda m: m.start_step("nope", "a"), recuerdo.TaskNotFound, "No task 'nope' tracked"),
        (
            lambda m: m.complete_step("job", "zz"),
            recuerdo.StepNotFound,
            "No step 'zz' in task 'job'",
        ),
        (lambda m: m.fail_step("nope", "a"), recuerdo.TaskNotFound, "No task 'nope' tracked"),
        (lambda m: m.progress_display("nope"), recuerdo.TaskNotFound, "No task 'nope' tracked"),
        (
            lambda m: m.create_progress("job2", ["a", "a"]),
            recuerdo.InvalidInput,
            "step names must be unique",
        ),
        (lambda m: m.create_progress("", ["a"]), recuerdo.InvalidInput, "task must be"),
        (lambda m: m.create_progress("job3", "abc"), recuerdo.InvalidInput, "steps must be a list"),
    ],
)
def test_progress_refusals(memory: recuerdo.Memory, call, error, message) -> None:  # type: ignore[no-untyped-def]
    memory.create_progress("job", ["a"])
    before = memory.list_progress()
    with pytest.raises(error) as caught:
        call(memory)
    assert caught.value.detail == message or message in caught.value.detail
    assert caught.value.status in (400, 404)
    assert memory.list_progress() == before


@pytest.mark.parametrize(
    ("result", "shown"),
    [
        ("line1\nline2\n  [OK] fake step", r"line1\nline2\n  [OK] fake step"),
        ("a\r\nb", r"a\r\nb"),
        ("para\u2028graph\x85end", r"para\u2028graph\x85end"),
        ("\x1b[2Jcleared", r"\x1b[2Jcleared"),
        ("tab\tstays, ünïcode too", "tab\tstays, ünïcode too"),
    ],
)
def test_display_keeps_each_step_on_one_line(
    memory: recuerdo.Memory, result: str, shown: str
) -> None:
    memory.create_progress("sync", ["fetch", "store"])
    memory.complete_step("sync", "fetch", result)
    memory.fail_step("sync", "store", result)
    lines = memory.progress_display("sync").split("\n")
    assert lines == [
        "Task: sync (50%)",
        f"  [OK] fetch -> {shown}",
        f"  [XX] store ERROR: {shown}",
    ]
    # The stored text is kept whole: only the display escapes it.
    assert memory.get_progress("sync")["steps"][0]["result"] == result


def test_display_escapes_names_too(memory: recuerdo.Memory) -> None:
    memory.create_progress("a\u2028task", ["one\u2029two"])
    assert memory.progress_display("a\u2028task").split("\n") == [
        r"Task: a\u2028task (0%)",
        r"  [  ] one\u2029two",
    ]


@pytest.mark.parametrize(
    ("mark", "note"),
    [("complete_step", "100 rows"), ("skip_step", "not needed"), ("fail_step", "bad row 7")],
)
def test_a_step_marked_again_keeps_its_note_and_time(
    memory: recuerdo.Memory, mark: str, note: str
) -> None:
    memory.create_progress("job", ["a", "b"])
    memory.start_step("job", "a")
    first = getattr(memory, mark)("job", "a", note)
    time.sleep(0.02)
    again = getattr(memory, mark)("job", "a")
    assert again == first
    assert memory.get_progress("job")["steps"][0] == first
    # A new note given again replaces the note alone.
    replaced = getattr(memory, mark)("job", "a", "second word")
    field = "error" if mark == "fail_step" else "result"
    assert replaced == {**first, field: "second word"}


@pytest.mark.parametrize("note", [b"bytes", {"rows": 1}, ["x"], True])
def test_a_note_that_is_not_text_is_refused(memory: recuerdo.Memory, note: object) -> None:
    memory.create_progress("job", ["a"])
    before = memory.get_progress("job")
    with pytest.raises(recuerdo.InvalidInput) as refused:
        memory.complete_step("job", "a", note)  # type: ignore[arg-type]
    assert refused.value.code == "invalid_input" and "must be text" in refused.value.detail
    assert memory.get_progress("job") == before
