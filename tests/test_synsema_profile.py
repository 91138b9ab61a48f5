"""The Synsema profile's declaration rules: capability, one name per program, ceilings."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import recuerdo
from recuerdo.profiles.synsema import Program

from .conftest import run_python, tree

CALLS: list[tuple[str, Callable[[Program], Any]]] = [
    ("remember", lambda p: p.remember("learning", "x", [])),
    ("recall", lambda p: p.recall()),
    ("forget_memory", lambda p: p.forget_memory(1)),
    ("memory_summary", lambda p: p.memory_summary()),
    ("create_progress", lambda p: p.create_progress("t", ["a"])),
    ("start_step", lambda p: p.start_step("t", "a")),
    ("complete_step", lambda p: p.complete_step("t", "a")),
    ("fail_step", lambda p: p.fail_step("t", "a")),
    ("skip_step", lambda p: p.skip_step("t", "a")),
    ("resume_point", lambda p: p.resume_point("t")),
    ("progress_percent", lambda p: p.progress_percent("t")),
    ("progress_display", lambda p: p.progress_display("t")),
    ("add_rule", lambda p: p.add_rule("r", "must", "x <= 1")),
    ("check_rules", lambda p: p.check_rules(None, {"x": 2})),
    ("get_rules", lambda p: p.get_rules()),
]


@pytest.mark.parametrize(("name", "call"), CALLS, ids=[name for name, _ in CALLS])
def test_every_function_needs_the_declaration_and_creates_nothing(
    name: str, call: Callable[[Program], Any], base: Path
) -> None:
    program = Program(base_dir=base)
    with pytest.raises(recuerdo.CapabilityNotGranted) as caught:
        call(program)
    assert caught.value.code == "capability_not_granted"
    assert caught.value.status == 403
    assert "Capability not granted: memory" in str(caught.value)
    assert 'require_memory("' in str(caught.value)
    assert tree(base) == []


def test_the_message_names_the_script_stem(tmp_path: Path) -> None:
    script = tmp_path / "shop_bot.py"
    script.write_text(
        "from recuerdo.profiles.synsema import remember\n"
        "try:\n    remember('learning', 'x')\n"
        "except Exception as exc:\n    print(type(exc).__name__, exc)\n"
    )
    done = run_python(
        f"import runpy; runpy.run_path({str(script)!r}, run_name='__main__')", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("CapabilityNotGranted Capability not granted: memory")
    assert 'require_memory("shop_bot")' in done.stdout
    assert not (tmp_path / ".recuerdo").exists()


def test_same_name_twice_is_fine_another_name_is_refused(base: Path) -> None:
    program = Program(base_dir=base)
    first = program.require_memory("support-agent")
    assert program.require_memory("support-agent") is first
    with pytest.raises(recuerdo.MultipleMemoryDeclarations) as caught:
        program.require_memory("other-agent")
    assert caught.value.code == "multiple_memory_declarations"
    assert "Multiple memory declarations" in str(caught.value)
    assert not (base / ".recuerdo" / "state" / "other-agent.db").exists()
    assert program.declared_name == "support-agent"
    program.release()


@pytest.mark.parametrize("bad", ["../x", "a/b", "", "with space", "x.db", "naïve", "a\nb"])
def test_invalid_names_are_refused_before_any_file(bad: str, base: Path) -> None:
    program = Program(base_dir=base)
    with pytest.raises(recuerdo.InvalidMemoryName) as caught:
        program.require_memory(bad)
    assert caught.value.code == "invalid_memory_name"
    assert "Invalid memory name" in str(caught.value)
    assert tree(base) == []
    with pytest.raises(recuerdo.InvalidMemoryName):
        recuerdo.open(bad, base_dir=base)
    assert tree(base) == []


@pytest.mark.parametrize(
    ("ceiling", "name", "allowed"),
    [
        ("memory=shop-*", "shop-eu", True),
        ("memory=shop-*", "ops", False),
        ("net,fs", "shop-eu", False),
        ("", "anything", False),
        ("memory", "anything", True),
        ("net memory=a-* memory=b-*", "b-1", True),
    ],
)
def test_host_ceiling(
    ceiling: str, name: str, allowed: bool, base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RECUERDO_CAPS", ceiling)
    program = Program(base_dir=base)
    if allowed:
        program.require_memory(name).remember("learning", "inside the ceiling")
        assert (base / ".recuerdo" / "state" / f"{name}.db").is_file()
        program.release()
        return
    with pytest.raises(recuerdo.CapabilityNotGranted) as caught:
        program.require_memory(name)
    assert "Capability not granted: memory" in str(caught.value)
    with pytest.raises(recuerdo.CapabilityNotGranted):
        recuerdo.open(name, base_dir=base)
    assert tree(base) == []


def test_sandbox_denies_memory_inside_only(base: Path) -> None:
    program = Program(base_dir=base)
    program.require_memory("sandboxed")
    program.remember("learning", "outside")
    with recuerdo.sandbox():
        with pytest.raises(recuerdo.CapabilityNotGranted):
            program.remember("learning", "inside")
        with pytest.raises(recuerdo.CapabilityNotGranted):
            program.recall()
    assert [e["content"] for e in program.recall()] == ["outside"]
    program.release()


def test_sandbox_denies_a_declaration_and_creates_nothing(base: Path) -> None:
    with recuerdo.sandbox(), pytest.raises(recuerdo.CapabilityNotGranted):
        Program(base_dir=base).require_memory("never")
    assert tree(base) == []


def test_agents_write_and_read_their_own_namespace(base: Path) -> None:
    program = Program(base_dir=base)
    program.require_memory("newsroom")
    with program.agent("Writer"):
        program.remember("context", "draft ready")
    with program.agent("Analyzer"):
        program.remember("context", "numbers checked")
        assert [e["content"] for e in program.recall()] == ["numbers checked"]
        assert [e["content"] for e in program.recall(**{"from": "Writer"})] == ["draft ready"]
        assert len(program.recall(**{"from": "*"})) == 2
    assert len(program.recall()) == 2
    assert {e["source"] for e in program.recall()} == {"Writer", "Analyzer"}
    program.release()


def test_summary_prints_and_returns(base: Path, capsys: pytest.CaptureFixture[str]) -> None:
    program = Program(base_dir=base)
    program.require_memory("summary")
    program.remember("learning", "a")
    program.add_rule("max_discount", "must", "discount <= 0.20", "pricing")
    text = program.memory_summary()
    assert capsys.readouterr().out.strip() == text
    assert text.splitlines()[0] == "Agent Memory: 1 entries, 1 rules"
    assert "  [must  ] max_discount: discount <= 0.20" in text.splitlines()
    program.release()
