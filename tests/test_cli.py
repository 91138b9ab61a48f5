"""The generated CLI, run as a real process and through click's runner."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from recuerdo.doors.cli import cli
from recuerdo.verbs import VERBS

from .conftest import tree
from .forks import recuerdo_command


def run(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        recuerdo_command(*args),
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        input=stdin,
        timeout=60,
        check=False,
    )


def test_the_installed_command_runs(tmp_path: Path) -> None:
    """The ``recuerdo`` console script beside this interpreter (what ``pip install`` puts on
    PATH), run as a new process: the other CLI tests fork ``python -m recuerdo``."""
    installed = Path(sys.executable).parent / "recuerdo"
    env = {**os.environ, "RECUERDO_STATE_DIR": str(tmp_path), "RECUERDO_EMBEDDER": "none"}
    wrote = subprocess.run(
        [str(installed), "--memory", "m", "remember", "learning", "installed command works"],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert (wrote.returncode, wrote.stderr) == (0, "")
    read = subprocess.run(
        [str(installed), "--memory", "m", "recall", "--json"],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert read.returncode == 0, read.stderr
    assert [item["content"] for item in json.loads(read.stdout)] == ["installed command works"]


def test_no_memory_named_fails_clearly_and_creates_nothing(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "RECUERDO_MEMORY"}
    done = subprocess.run(
        recuerdo_command("recall"),
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "--memory NAME" in done.stderr and "RECUERDO_MEMORY" in done.stderr
    assert tree(tmp_path) == []


def test_the_issue_examples(tmp_path: Path) -> None:
    ran = run(
        "--memory",
        "cli",
        "remember",
        "learning",
        "API is slow",
        "--tag",
        "api",
        "--tag",
        "perf",
        cwd=tmp_path,
    )
    assert ran.returncode == 0, ran.stderr
    entry_id = int(ran.stdout)
    ran = run(
        "--memory",
        "cli",
        "recall",
        "--category",
        "learning",
        "--tag",
        "api",
        "--search",
        "SLOW",
        "--mode",
        "all",
        "--limit",
        "5",
        "--from",
        "main",
        "--json",
        cwd=tmp_path,
    )
    assert ran.returncode == 0, ran.stderr
    [entry] = json.loads(ran.stdout)
    assert (entry["id"], entry["content"], entry["tags"]) == (
        entry_id,
        "API is slow",
        ["api", "perf"],
    )
    assert (tmp_path / ".recuerdo" / "state" / "cli.db").is_file()


def test_memory_from_the_environment_and_a_human_table(tmp_path: Path) -> None:
    env = {"RECUERDO_MEMORY": "envmem", "RECUERDO_STATE_DIR": str(tmp_path)}
    assert run("remember", "decision", "Ship on Fridays? never", env=env).returncode == 0
    ran = run("recall", env=env)
    assert ran.returncode == 0
    header, row = ran.stdout.splitlines()[:2]
    assert header.split()[:3] == ["id", "category", "content"]
    assert "Ship on Fridays? never" in row
    assert (tmp_path / ".recuerdo" / "state" / "envmem.db").is_file()


def test_errors_in_text_and_json(tmp_path: Path) -> None:
    ran = run("-m", "cli", "remember", "bogus", "x", cwd=tmp_path)
    assert ran.returncode == 1
    assert ran.stderr.startswith("error: invalid_category: Invalid memory category: 'bogus'")
    ran = run("-m", "cli", "--json", "remember", "bogus", "x", cwd=tmp_path)
    assert ran.returncode == 1
    assert json.loads(ran.stdout) == {
        "ok": False,
        "error": "invalid_category",
        "detail": "Invalid memory category: 'bogus'. Valid categories: preference, rule, "
        "learning, decision, context",
    }
    before = tree(tmp_path)
    ran = run("-m", "../x", "recall", cwd=tmp_path)
    assert ran.returncode == 1 and "invalid_memory_name" in ran.stderr
    assert tree(tmp_path) == before


def test_json_arguments_and_stdin(tmp_path: Path) -> None:
    batch = [{"category": "rule", "content": "one"}, {"category": "rule", "content": "two"}]
    ran = run(
        "-m",
        "cli",
        "--json",
        "remember_many",
        "--entries",
        "-",
        cwd=tmp_path,
        stdin=json.dumps(batch),
    )
    assert ran.returncode == 0, ran.stderr
    assert len(json.loads(ran.stdout)) == 2
    ran = run("-m", "cli", "remember_many", "--entries", "{not json", cwd=tmp_path)
    assert ran.returncode == 1 and "must be JSON" in ran.stderr


@pytest.fixture
def runner(tmp_path: Path) -> CliRunner:
    return CliRunner(env={"RECUERDO_STATE_DIR": str(tmp_path), "RECUERDO_MEMORY": "runner"})


def test_progress_and_rules_through_the_cli(runner: CliRunner) -> None:
    assert (
        runner.invoke(
            cli, ["create_progress", "import", "--step", "ingest", "--step", "validate"]
        ).exit_code
        == 0
    )
    assert runner.invoke(cli, ["complete_step", "import", "ingest", "100 rows"]).exit_code == 0
    assert runner.invoke(cli, ["resume_point", "import"]).output.strip() == "validate"
    shown = runner.invoke(cli, ["progress_display", "import"]).output.splitlines()
    assert shown[:2] == ["Task: import (50%)", "  [OK] ingest -> 100 rows"]
    assert (
        runner.invoke(cli, ["add_rule", "max_discount", "must", "discount <= 0.20"]).exit_code == 0
    )
    result = runner.invoke(
        cli, ["--json", "check_rules", "pricing", "--context", '{"discount": 0.25}']
    )
    assert json.loads(result.output)[0]["rule"] == "max_discount"
    missing = runner.invoke(cli, ["start_step", "nope", "a"])
    assert missing.exit_code == 1 and "task_not_found" in missing.output


def test_agent_option(runner: CliRunner) -> None:
    runner.invoke(cli, ["--agent", "Writer", "remember", "context", "draft"])
    runner.invoke(cli, ["remember", "context", "main note"])
    mine = json.loads(runner.invoke(cli, ["--agent", "Writer", "--json", "recall"]).output)
    assert [e["content"] for e in mine] == ["draft"]
    assert mine[0]["source"] == "Writer"


def test_every_verb_is_a_command_with_help(runner: CliRunner) -> None:
    for verb in VERBS:
        shown = runner.invoke(cli, [verb.name, "--help"])
        assert shown.exit_code == 0, verb.name
        assert verb.description.split(".")[0][:40] in " ".join(shown.output.split())


def test_demo_runs_a_scripted_session(tmp_path: Path) -> None:
    ran = run(
        "--state-dir",
        str(tmp_path),
        "demo",
        stdin="learning: tests run in CI #ci\n?ci\nnonsense: x\nsummary\nquit\n",
    )
    assert ran.returncode == 0, ran.stderr
    out = ran.stdout
    assert "This memory is empty; a short tour first" in out
    assert "remembered #3: [learning] tests run in CI  tags: ci" in out
    assert "refused (invalid_category)" in out
    assert out.rstrip().splitlines()[-3] == "Agent Memory: 3 entries, 0 rules"


def test_dashed_verb_names_are_accepted(runner: CliRunner) -> None:
    assert runner.invoke(cli, ["create-progress", "job", "--step", "a"]).exit_code == 0
    assert runner.invoke(cli, ["resume-point", "job"]).output.strip() == "a"


def test_note_verbs_through_the_cli(runner: CliRunner) -> None:
    saved = json.loads(
        runner.invoke(
            cli,
            ["--json", "save", "--kind", "decision", "--key", "plan", "--", "Plan", "- one\n- two"],
        ).output
    )
    assert saved["outcome"] == "created"
    note_id = str(saved["id"])
    edited = runner.invoke(cli, ["--json", "edit", note_id, "find_replace", "", "--find=- two"])
    assert json.loads(edited.output)["outcome"] == "edited"
    shown = json.loads(runner.invoke(cli, ["--json", "get", note_id]).output)
    assert shown["content"] == "- one"
    history = runner.invoke(cli, ["history", note_id]).output.splitlines()
    assert history[0].split()[:3] == ["revision_id", "version", "operation"]
    refused = runner.invoke(cli, ["edit", note_id, "replace_section", "x", "--section", "Nope"])
    assert refused.exit_code == 1 and "section_not_found" in refused.output
    assert runner.invoke(cli, ["delete", note_id, "--hard"]).exit_code == 0
    assert "item_not_found" in runner.invoke(cli, ["get", note_id]).output


@pytest.mark.parametrize("verb", ["check_rules", "get_rules"])
def test_checking_the_rules_of_a_mistyped_memory_fails_and_creates_nothing(
    tmp_path: Path, verb: str
) -> None:
    """check_rules keeps its violations (a write), but a check of a memory that does not
    exist found no rule and passed, making the memory (the review: a gate `check_rules &&
    deploy` passed on a typo)."""
    ran = run(
        "--state-dir", str(tmp_path), "--json", "--memory", "nosuch", verb,
        *(["--context", '{"cost": 5}'] if verb == "check_rules" else []),
    )  # fmt: skip
    assert ran.returncode == 1 and "memory_not_found" in ran.stdout + ran.stderr
    assert not list(tmp_path.rglob("*.db"))
    assert list(tmp_path.iterdir()) == []
