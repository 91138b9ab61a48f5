"""The Synsema seed's own example and its four test blocks, through both Python doors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import pytest

import recuerdo
from recuerdo.profiles.synsema import Program

from .conftest import run_python


class Family(Protocol):
    def remember(self, category: str, content: str, tags: list[str]) -> int: ...
    def recall(self, *args: object, **kwargs: object) -> list[dict[str, object]]: ...
    def create_progress(self, task: str, steps: list[str]) -> object: ...
    def start_step(self, task: str, step: str) -> object: ...
    def complete_step(self, task: str, step: str, result: str) -> object: ...
    def resume_point(self, task: str) -> str | None: ...
    def add_rule(self, name: str, level: str, description: str, category: str) -> object: ...
    def check_rules(self, category: str, context: dict[str, float]) -> list[object]: ...


class _ProfileFamily:
    """The Synsema profile with `from` spelled as Synsema spells it."""

    def __init__(self, program: Program) -> None:
        self.p = program

    def __getattr__(self, name: str) -> object:
        return getattr(self.p, name)

    def recall(self, *args: object, **kwargs: object) -> list[dict[str, object]]:
        if "from_" in kwargs:
            kwargs["from"] = kwargs.pop("from_")
        return self.p.recall(*args, **kwargs)  # type: ignore[arg-type]


@pytest.fixture(params=["open", "synsema"])
def family(request: pytest.FixtureRequest, base: Path) -> Iterator[Family]:
    if request.param == "open":
        mem = recuerdo.open("doc-memory", base_dir=base)
        yield mem  # type: ignore[misc]
        mem.close()
    else:
        program = Program(base_dir=base)
        program.require_memory("doc-memory")
        yield _ProfileFamily(program)  # type: ignore[misc]
        program.release()


def test_doc_example_remember_then_recall(family: Family) -> None:
    family.remember("learning", "demo note from run", ["demo"])
    assert family.recall("learning", ["demo"])[0]["content"] == "demo note from run"


def test_newest_first(family: Family) -> None:
    family.remember("learning", "older fact", ["api"])
    family.remember("learning", "API is slow on Mondays", ["api"])
    notes = family.recall("learning", ["api"])
    assert notes[0]["content"] == "API is slow on Mondays"
    assert [n["content"] for n in notes] == ["API is slow on Mondays", "older fact"]


def test_limit_and_writer_namespace(family: Family) -> None:
    family.remember("context", "note-a", ["ns"])
    family.remember("context", "note-b", ["ns"])
    assert len(family.recall("context", ["ns"], limit=1)) == 1
    assert len(family.recall("context", ["ns"], from_="main")) >= 2
    assert len(family.recall("context", ["ns"], from_="nobody")) == 0


def test_progress_resume_point(family: Family) -> None:
    family.create_progress("import", ["ingest", "validate", "load"])
    family.start_step("import", "ingest")
    family.complete_step("import", "ingest", "100 rows")
    assert family.resume_point("import") == "validate"


def test_numeric_must_rule_flags_violation(family: Family) -> None:
    family.add_rule("max_discount", "must", "discount <= 0.20", "pricing")
    assert len(family.check_rules("pricing", {"discount": 0.25})) > 0
    assert family.check_rules("pricing", {"discount": 0.10}) == []


def test_a_second_process_recalls_what_the_first_remembered(base: Path) -> None:
    with recuerdo.open("shared-name", base_dir=base) as mem:
        mem.remember("learning", "written by the parent process", ["ipc"])
        mem.create_progress("sync", ["fetch", "store"])
        mem.complete_step("sync", "fetch", "got 100 items")
    script = f"""
import json
from recuerdo.profiles.synsema import Program
program = Program(base_dir={str(base)!r})
program.require_memory("shared-name")
seen = [e["content"] for e in program.recall(tags=["ipc"])]
program.remember("decision", "written by the child process", ["ipc"])
print(json.dumps({{"seen": seen, "resume": program.resume_point("sync")}}))
"""
    done = run_python(script)
    assert done.returncode == 0, done.stderr
    child = json.loads(done.stdout)
    assert child["seen"] == ["written by the parent process"]
    assert child["resume"] == "store"
    with recuerdo.open("shared-name", base_dir=base) as mem:
        contents = [e["content"] for e in mem.recall(tags=["ipc"])]
    assert contents == ["written by the child process", "written by the parent process"]


def test_module_level_profile_in_a_script(tmp_path: Path) -> None:
    """The profile as a script uses it: module functions, the state next to the cwd."""
    script = """
from recuerdo.profiles.synsema import (require_memory, remember, recall, create_progress,
    start_step, complete_step, resume_point, add_rule, check_rules, memory_summary)
require_memory("doc-memory")
remember("learning", "demo note from run", ["demo"])
print("recalled -> " + recall("learning", ["demo"])[0]["content"])
create_progress("import", ["ingest", "validate", "load"])
start_step("import", "ingest")
complete_step("import", "ingest", "100 rows")
print("resume -> " + resume_point("import"))
add_rule("max_discount", "must", "discount <= 0.20", "pricing")
print("violations ->", len(check_rules("pricing", {"discount": 0.25})))
memory_summary()
"""
    done = run_python(script, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:3] == ["recalled -> demo note from run", "resume -> validate", "violations -> 1"]
    assert lines[3] == "Agent Memory: 1 entries, 1 rules"
    assert (tmp_path / ".recuerdo" / "state" / "doc-memory.db").is_file()
