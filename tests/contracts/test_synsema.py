"""Synsema's promises (../shared/spec/synsema.md), kept by ``recuerdo.profiles.synsema``.

Driven as Synsema's scripts drive it: its functions, through :class:`Program` in this process
(what an embedder running several programs does) and, where the promise is about a program
(its declaration, its environment, the files beside it, a crash), in a real Python process
using the module-level functions. The "more than limit" promise is also kept by the CLI and the
native doors (HTTP and MCP), checked here against a real ``recuerdo serve``.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy
import pytest

import recuerdo
from recuerdo.profiles.synsema import Program, sandbox

from ..conftest import tree
from .conftest import run_program

CATEGORIES = "preference, rule, learning, decision, context"


@pytest.fixture
def program(base: Path) -> Iterator[Program]:
    declared = Program(base_dir=base)
    declared.require_memory("shop")
    yield declared
    declared.release()


def contents(entries: list[Any]) -> list[str]:
    return [entry["content"] for entry in entries]


# -- declaration and identity ------------------------------------------------------------------


def test_Y1_the_declared_name_is_the_identity(base: Path) -> None:
    """Y1 the declared name is the identity of the state: two programs declaring the same name
    share one memory, whatever their own names."""
    first, second = Program(base_dir=base), Program(base_dir=base)
    first.require_memory("shop").remember("learning", "written by the first program")
    assert contents(second.require_memory("shop").recall()) == ["written by the first program"]
    assert (base / ".recuerdo" / "state" / "shop.db").is_file()
    first.release()
    second.release()


@pytest.mark.parametrize("bad", ["../x", "a/b", "", "with space", "x.db"])
def test_Y2_invalid_names_are_refused_before_anything_exists(base: Path, bad: str) -> None:
    """Y2 names match [a-zA-Z0-9_-]+; anything else is `Invalid memory name`, before a file."""
    with pytest.raises(recuerdo.InvalidMemoryName, match="Invalid memory name"):
        Program(base_dir=base).require_memory(bad)
    assert tree(base) == []


def test_Y3_a_declaration_needs_a_name(base: Path) -> None:
    """Y3 a declaration with no name is an error."""
    with pytest.raises(TypeError):
        Program(base_dir=base).require_memory()  # type: ignore[call-arg]
    assert tree(base) == []


def test_Y4_one_program_declares_one_name(program: Program, base: Path) -> None:
    """Y4 the same name twice is fine; a second name is `Multiple memory declarations`."""
    assert program.require_memory("shop") is program.require_memory("shop")
    with pytest.raises(recuerdo.MultipleMemoryDeclarations, match="Multiple memory declarations"):
        program.require_memory("other")
    assert not (base / ".recuerdo" / "state" / "other.db").exists()


UNDECLARED = """
import json
from recuerdo.profiles import synsema
calls = {
    "remember": lambda: synsema.remember("learning", "x"),
    "recall": lambda: synsema.recall(),
    "forget_memory": lambda: synsema.forget_memory(1),
    "memory_summary": lambda: synsema.memory_summary(),
    "create_progress": lambda: synsema.create_progress("t", ["a"]),
    "resume_point": lambda: synsema.resume_point("t"),
    "add_rule": lambda: synsema.add_rule("r", "must", "x <= 1"),
    "check_rules": lambda: synsema.check_rules(None, {"x": 2}),
}
out = {}
for name, call in calls.items():
    try:
        call()
        out[name] = "ran"
    except Exception as exc:
        out[name] = str(exc)
print(json.dumps(out))
"""


def test_Y5_without_a_declaration_every_verb_names_the_line_to_add(tmp_path: Path) -> None:
    """Y5 without a declaration every verb fails with `Capability not granted: memory`, naming
    the exact line to add; no file or directory is created."""
    messages = run_program(tmp_path, UNDECLARED)
    for name, message in messages.items():
        assert message.startswith("Capability not granted: memory"), (name, message)
        assert 'require_memory("shop_bot")' in message, (name, message)
    assert tree(tmp_path) == ["shop_bot.py"]


DECLARED = """
import json
from recuerdo.profiles.synsema import require_memory, remember
require_memory("shop")
remember("learning", "kept")
print(json.dumps("ok"))
"""


def test_Y6_state_lives_under_recuerdo_state_or_the_state_dir(tmp_path: Path) -> None:
    """Y6 state is <base>/.recuerdo/state/<name>.db (the program's folder); RECUERDO_STATE_DIR
    relocates it."""
    here = tmp_path / "here"
    here.mkdir()
    run_program(here, DECLARED)
    assert (here / ".recuerdo" / "state" / "shop.db").is_file()
    there, elsewhere = tmp_path / "there", tmp_path / "elsewhere"
    there.mkdir()
    elsewhere.mkdir()
    run_program(there, DECLARED, env={"RECUERDO_STATE_DIR": str(elsewhere)})
    assert (elsewhere / ".recuerdo" / "state" / "shop.db").is_file()
    assert tree(there) == ["shop_bot.py"]


def test_Y7_an_in_memory_store_touches_no_disk(base: Path) -> None:
    """Y7 an in-memory store exists for REPL-like use: nothing on disk."""
    scratch = Program(base_dir=base)
    scratch.require_memory("repl", in_memory=True).remember("learning", "only in RAM")
    assert contents(scratch.recall()) == ["only in RAM"]
    scratch.release()
    assert tree(base) == []


def test_Y8_a_sandbox_and_the_threads_it_starts_are_denied(program: Program) -> None:
    """Y8 memory is denied inside a sandbox, including threads started there."""
    outcomes: list[str] = []

    def worker() -> None:
        try:
            program.remember("learning", "from a sandboxed thread")
            outcomes.append("wrote")
        except recuerdo.CapabilityNotGranted:
            outcomes.append("denied")

    with sandbox():
        with pytest.raises(recuerdo.CapabilityNotGranted):
            program.remember("learning", "inside")
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
    assert outcomes == ["denied"]
    assert program.recall() == []


@pytest.mark.parametrize(
    ("ceiling", "name", "allowed"),
    [
        ("memory=shop-*", "shop-eu", True),
        ("memory=shop-*", "ops", False),
        ("net", "shop-eu", False),
    ],
)
def test_Y9_the_host_ceiling_caps_the_names(
    base: Path, monkeypatch: pytest.MonkeyPatch, ceiling: str, name: str, allowed: bool
) -> None:
    """Y9 the host can cap memory names with a pattern (memory=shop-*); a ceiling without memory
    denies the family and creates no file."""
    monkeypatch.setenv("RECUERDO_CAPS", ceiling)
    capped = Program(base_dir=base)
    if allowed:
        capped.require_memory(name).remember("learning", "inside the ceiling")
        capped.release()
        assert (base / ".recuerdo" / "state" / f"{name}.db").is_file()
    else:
        with pytest.raises(recuerdo.CapabilityNotGranted):
            capped.require_memory(name)
        assert tree(base) == []


def test_Y10_a_tool_must_declare_its_own_memory(program: Program, base: Path) -> None:
    """Y10 a tool the program calls must declare its own memory: the program's does not leak."""
    tool = Program(base_dir=base)
    with pytest.raises(recuerdo.CapabilityNotGranted):
        tool.recall()
    program.remember("learning", "the program's own")
    assert contents(program.recall()) == ["the program's own"]


def test_Y11_every_execution_context_shares_the_one_memory(program: Program) -> None:
    """Y11 main code, workers and handlers (threads here) share the one declared memory."""
    threads = [
        threading.Thread(target=program.remember, args=("context", f"worker {i}")) for i in range(6)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    program.remember("context", "main")
    assert sorted(contents(program.recall())) == ["main"] + [f"worker {i}" for i in range(6)]


CRASH = """
import json, os, signal
from recuerdo.profiles.synsema import require_memory, remember
require_memory("shop")
remember("decision", "written just before the crash")
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_Y12_every_write_is_saved_at_once(tmp_path: Path) -> None:
    """Y12 every write is saved at once: a crash right after it loses nothing."""
    (tmp_path / "shop_bot.py").write_text(CRASH)
    done = subprocess.run(
        [sys.executable, "shop_bot.py"], cwd=tmp_path, capture_output=True, timeout=120, check=False
    )
    assert done.returncode == -9
    survivor = Program(base_dir=tmp_path)
    assert contents(survivor.require_memory("shop").recall()) == ["written just before the crash"]
    survivor.release()


def test_Y13_a_thread_started_inside_an_agent_writes_as_that_agent(program: Program) -> None:
    """Y13 an entry records its writer: the agent's name (threads it starts included), or
    `main` for top-level code."""
    program.remember("context", "top level")
    with program.agent("Writer"):
        program.remember("context", "in the block")
        thread = threading.Thread(target=program.remember, args=("context", "in its thread"))
        thread.start()
        thread.join()
    sources = {e["content"]: e["source"] for e in program.recall(**{"from": "*"})}
    assert sources == {"top level": "main", "in the block": "Writer", "in its thread": "Writer"}


# -- entries -----------------------------------------------------------------------------------


def test_Y14_categories_are_a_fixed_english_set(program: Program) -> None:
    """Y14 remember(category, content, tags) returns an id; the categories are preference, rule,
    learning, decision, context; another is refused with the list."""
    ids = [program.remember(c, f"a {c}") for c in CATEGORIES.split(", ")]
    assert len(set(ids)) == 5 and all(isinstance(i, int) for i in ids)
    with pytest.raises(recuerdo.InvalidCategory) as caught:
        program.remember("x", "nope")
    assert str(caught.value) == f"Invalid memory category: 'x'. Valid categories: {CATEGORIES}"
    assert len(program.recall()) == 5


def test_Y15_recall_filters_by_category_tags_and_mode(program: Program) -> None:
    """Y15 category is an exact match; tags are exact and case-sensitive; mode "all" (any case)
    needs every tag, anything else means any tag."""
    program.remember("learning", "both", ["api", "perf"])
    program.remember("learning", "api only", ["api"])
    program.remember("decision", "upper", ["API"])
    assert contents(program.recall("decision")) == ["upper"]
    assert sorted(contents(program.recall(tags=["api"]))) == ["api only", "both"]
    assert contents(program.recall(tags=["api", "perf"], mode="ALL")) == ["both"]
    assert len(program.recall(tags=["api", "perf"], mode="whatever")) == 2
    assert program.recall("preference") == []


def test_Y16_search_is_a_case_insensitive_substring(program: Program) -> None:
    """Y16 search finds any substring of the content, in any case; free search by skipping
    arguments: recall(None, None, "monday")."""
    program.remember("learning", "API is slow on Mondays")
    program.remember("learning", "Deploys on Tuesdays")
    assert contents(program.recall(None, None, "monday")) == ["API is slow on Mondays"]
    assert contents(program.recall(search="ON MON")) == ["API is slow on Mondays"]
    assert contents(program.recall(search="s slo")) == ["API is slow on Mondays"]


def test_Y17_limit_defaults_to_200_and_bad_limits_fall_back(base: Path) -> None:
    """Y17 limit defaults to 200; a negative or non-numeric limit falls back to the default."""
    quick = Program(base_dir=base)
    quick.require_memory("many", in_memory=True)
    for i in range(205):
        quick.remember("context", f"entry {i}")
    assert len(quick.recall()) == 200
    assert len(quick.recall(limit=-3)) == len(quick.recall(limit="lots")) == 200
    assert contents(quick.recall(limit=1)) == ["entry 204"]
    quick.release()


def test_Y18_from_chooses_the_writer(program: Program) -> None:
    """Y18 `from`: inside agent X the default is X's own entries; top-level code sees all; "*"
    means all; any other string names one writer."""
    program.remember("context", "by main")
    with program.agent("Writer"):
        program.remember("context", "by writer")
        assert contents(program.recall()) == ["by writer"]
        assert len(program.recall(**{"from": "*"})) == 2
        assert contents(program.recall(**{"from": "main"})) == ["by main"]
    assert len(program.recall()) == 2
    assert program.recall(**{"from": "nobody"}) == []


def test_Y19_results_are_newest_first_with_their_fields(program: Program) -> None:
    """Y19 results come newest first (by update time), each {id, category, content, source,
    tags}."""
    first = program.remember("learning", "older", ["a"])
    second = program.remember("decision", "newer", ["b"])
    found = program.recall()
    assert [e["id"] for e in found] == [second, first]
    expected = {"id": second, "category": "decision", "content": "newer", "source": "main"}
    assert {k: found[0][k] for k in expected} == expected and found[0]["tags"] == ["b"]


def test_Y20_forget_says_whether_and_never_reuses_an_id(base: Path) -> None:
    """Y20 forget_memory removes an entry from recall and says whether something was forgotten;
    an id is never reused, even for the newest entry after a restart."""
    first = Program(base_dir=base)
    first.require_memory("shop")
    first.remember("learning", "kept")
    newest = first.remember("learning", "to forget")
    assert first.forget_memory(newest) is True
    assert first.forget_memory(newest) is False and first.forget_memory(999) is False
    assert contents(first.recall()) == ["kept"]
    first.release()
    again = Program(base_dir=base)
    again.require_memory("shop")
    assert again.remember("learning", "after restart") > newest
    again.release()


def test_Y21_the_summary_counts_entries_rules_and_violations(
    program: Program, capsys: pytest.CaptureFixture[str]
) -> None:
    """Y21 memory_summary() prints a summary starting `Agent Memory: N entries, M rules`, with
    counts by category, the rules (`[must  ] name: description`) and recent violations."""
    program.remember("learning", "a")
    program.remember("learning", "b")
    program.remember("decision", "c")
    program.add_rule("max_discount", "must", "discount <= 0.20", "pricing")
    program.check_rules("pricing", {"discount": 0.5})
    text = program.memory_summary()
    lines = text.splitlines()
    assert capsys.readouterr().out.strip() == text.strip()
    assert lines[0] == "Agent Memory: 3 entries, 1 rules"
    assert any(re.fullmatch(r"\s*learning: 2", line) for line in lines)
    assert "  [must  ] max_discount: discount <= 0.20" in lines
    assert any("[MUST] Rule 'max_discount' violated" in line for line in lines)


def test_Y22_secrets_are_stored_redacted(program: Program, base: Path) -> None:
    """Y22 secrets written to memory are stored redacted, never in clear (not even on disk)."""
    key = "sk-abcdefghijklmnopqrstuvwxyz123456"
    program.remember("context", f"the API key is {key}")
    assert key not in program.recall()[0]["content"]
    program.release()
    for path in (base / ".recuerdo" / "state").iterdir():
        assert key.encode() not in path.read_bytes(), path


# -- progress ----------------------------------------------------------------------------------


def test_Y23_create_progress_keeps_an_unfinished_plan(program: Program) -> None:
    """Y23 create_progress creates the plan; an unfinished one is left as it is; a complete one
    is recreated."""
    program.create_progress("sync", ["fetch", "store"])
    program.complete_step("sync", "fetch")
    program.create_progress("sync", ["other"])
    assert program.resume_point("sync") == "store"
    program.complete_step("sync", "store")
    program.create_progress("sync", ["again"])
    assert program.resume_point("sync") == "again"


def test_Y24_unknown_tasks_and_steps_are_named(program: Program) -> None:
    """Y24 an unknown task is `No task 'x' tracked`; an unknown step `No step 'y' in task 'x'`."""
    with pytest.raises(recuerdo.RecuerdoError, match="No task 'x' tracked"):
        program.start_step("x", "y")
    program.create_progress("x", ["a"])
    with pytest.raises(recuerdo.RecuerdoError, match="No step 'y' in task 'x'"):
        program.complete_step("x", "y")


def test_Y25_resume_point_is_the_step_to_pick_up(program: Program) -> None:
    """Y25 resume_point: the first step in progress or failed, else the first pending, else
    nothing (ingest done -> validate)."""
    program.create_progress("import", ["ingest", "validate", "load"])
    program.complete_step("import", "ingest")
    assert program.resume_point("import") == "validate"
    program.start_step("import", "load")
    assert program.resume_point("import") == "load"
    program.complete_step("import", "load")
    program.fail_step("import", "validate", "bad row")
    assert program.resume_point("import") == "validate"
    program.complete_step("import", "validate")
    assert program.resume_point("import") is None


def test_Y26_progress_percent(program: Program) -> None:
    """Y26 progress_percent: 0 for an unknown task, 100 without steps, skipped counts as done."""
    assert program.progress_percent("nothing") == 0
    program.create_progress("empty", [])
    assert program.progress_percent("empty") == 100
    program.create_progress("sync", ["a", "b", "c"])
    program.complete_step("sync", "a")
    program.skip_step("sync", "b")
    assert program.progress_percent("sync") == 66


def test_Y27_progress_display(program: Program) -> None:
    """Y27 progress_display shows `Task: sync (33%)`, then a line per step with its mark (OK, >>,
    XX, --, blank), the result after `->` and ` ERROR: ...` for a failure."""
    program.create_progress("sync", ["fetch", "parse", "load", "index", "report", "mail"])
    program.complete_step("sync", "fetch", "got 100 items")
    program.skip_step("sync", "parse")
    program.start_step("sync", "load")
    program.fail_step("sync", "index", "disk full")
    lines = program.progress_display("sync").splitlines()
    assert lines[0] == "Task: sync (33%)"
    assert re.fullmatch(r"\s*\[OK\] fetch( \(\d+ms\))? -> got 100 items", lines[1]), lines[1]
    assert "[--] parse" in lines[2] and "[>>] load" in lines[3]
    assert "[XX] index" in lines[4] and "ERROR: disk full" in lines[4]
    assert re.fullmatch(r"\s*\[  \] report", lines[5]), lines[5]


# -- owner rules -------------------------------------------------------------------------------


def test_Y28_rule_levels(program: Program) -> None:
    """Y28 add_rule takes the levels must, should, avoid, prefer; another is
    `Invalid rule level: 'x'`; the same name replaces the rule."""
    for level in ("must", "should", "avoid", "prefer"):
        program.add_rule(f"r_{level}", level, "x <= 1")
    with pytest.raises(recuerdo.InvalidRuleLevel, match="Invalid rule level: 'x'"):
        program.add_rule("bad", "x", "x <= 1")
    program.add_rule("r_must", "should", "x <= 2", "pricing")
    rules = {rule["name"]: rule for rule in program.get_rules()}
    assert len(rules) == 4
    replaced = {key: rules["r_must"][key] for key in ("name", "level", "description", "category")}
    assert replaced == {
        "name": "r_must",
        "level": "should",
        "description": "x <= 2",
        "category": "pricing",
    }


def test_Y28b_a_rule_whose_bound_cannot_be_read_is_kept_without_a_condition(
    program: Program,
) -> None:
    """Y28b Synsema takes any description (an unparseable condition is never a violation):
    '20%' or '1,000' raised invalid_condition in a program and stopped it (the review of 0107).
    The rule is kept with no condition, and a warning says why."""
    with pytest.warns(UserWarning, match="'pct_cap' has no condition.*20%"):
        rule = program.add_rule("pct_cap", "must", "pct < 20%")
    assert rule["condition"] is None and "20%" in rule["unread"]
    assert program.check_rules(None, {"pct": 50}) == []
    assert [r["name"] for r in program.get_rules()] == ["pct_cap"]


@pytest.mark.parametrize(
    ("description", "value", "violated"),
    [
        ("discount <= 0.20", 0.25, True),
        ("discount <= 0.20", 0.20, False),
        ("keep discount >= 0.05 always", 0.01, True),
        ("discount < 1", 1, True),
        ("discount > 1", 1, True),
        ("discount == 3", 3, False),
        ("discount != 3", 3, True),
        ("discount <= 0.20 and discount >= 9", 0.1, False),
    ],
)
def test_Y29_the_condition_is_the_first_comparison(
    program: Program, description: str, value: float, violated: bool
) -> None:
    """Y29 the condition is the first `variable op number` of the description (<= >= < > == !=);
    it states what must hold, so a violation is when it is false."""
    program.add_rule("cap", "must", description, "pricing")
    found = program.check_rules("pricing", {"discount": value})
    assert bool(found) is violated, found


def test_Y30_a_violation_names_rule_condition_and_context(program: Program) -> None:
    """Y30 a violation is {rule, level, message} with a message like
    `[MUST] Rule 'max_discount' violated: discount <= 0.20. Context: {...}`."""
    program.add_rule("max_discount", "must", "discount <= 0.20", "pricing")
    [violation] = program.check_rules("pricing", {"discount": 0.25})
    assert violation["rule"] == "max_discount" and violation["level"] == "must"
    assert violation["message"] == (
        "[MUST] Rule 'max_discount' violated: discount <= 0.20. Context: {\"discount\": 0.25}"
    )


def test_Y31_missing_variables_and_unreadable_conditions_pass(program: Program) -> None:
    """Y31 a missing variable or an unparseable condition is not a violation; NaN is (fail
    closed); a rule without a category applies to every category."""
    program.add_rule("cap", "must", "discount <= 0.20")
    program.add_rule("vague", "should", "be reasonable with discounts")
    assert program.check_rules("pricing", {}) == []
    assert program.check_rules("pricing", {"other": 5}) == []
    assert [v["rule"] for v in program.check_rules("pricing", {"discount": math.nan})] == ["cap"]
    assert [v["rule"] for v in program.check_rules("shipping", {"discount": 0.5})] == ["cap"]


@pytest.mark.parametrize(
    "value",
    [Decimal("0.25"), Fraction(1, 4), numpy.float64(0.25), numpy.float32(0.25), 1],
    ids=["Decimal", "Fraction", "float64", "float32", "int"],
)
def test_Y32_every_real_number_is_compared(program: Program, value: Any) -> None:
    """Y32 a must-rule `discount <= 0.20` is violated by every kind of real number (Decimal,
    Fraction, numpy scalars), not only float."""
    program.add_rule("max_discount", "must", "discount <= 0.20", "pricing")
    assert [v["rule"] for v in program.check_rules("pricing", {"discount": value})] == [
        "max_discount"
    ]


@pytest.mark.parametrize(
    "value", ["0.25", "cheap", object(), [0.25]], ids=["text-number", "text", "object", "list"]
)
def test_Y33_a_value_that_is_not_a_number_is_a_violation(program: Program, value: Any) -> None:
    """Y33 a rule's variable given a value that is not a number is a violation, never a silent
    pass (checks fail closed)."""
    program.add_rule("max_discount", "must", "discount <= 0.20", "pricing")
    assert [v["rule"] for v in program.check_rules("pricing", {"discount": value})] == [
        "max_discount"
    ]


def test_Y34_conditions_are_never_evaluated_as_code(program: Program, tmp_path: Path) -> None:
    """Y34 conditions are read, never evaluated with eval."""
    marker = tmp_path / "pwned"
    program.add_rule("trap", "must", f"__import__('pathlib').Path({str(marker)!r}).touch() < 1")
    program.add_rule("cap", "must", f"discount <= 1 or open({str(marker)!r}, 'w')")
    program.check_rules(None, {"discount": 5})
    assert not marker.exists()


def test_Y35_get_rules_lists_by_category(program: Program) -> None:
    """Y35 get_rules(category?) lists {name, level, description, category}, all of them or one
    category's."""
    program.add_rule("cap", "must", "discount <= 0.20", "pricing")
    program.add_rule("global", "prefer", "latency < 100")
    program.add_rule("ship", "avoid", "weight > 30", "shipping")
    assert sorted(r["name"] for r in program.get_rules()) == ["cap", "global", "ship"]
    pricing = [r["name"] for r in program.get_rules("pricing")]
    assert "cap" in pricing and "ship" not in pricing
