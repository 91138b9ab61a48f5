"""import-from: every source record is accounted for, a re-import writes nothing, and a source
that is missing or of another kind is refused with a stable code before anything is written."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

import recuerdo
from recuerdo.importers import ImportReport

from .forks import recuerdo_command
from .importing import SOURCES, copy_of, kind_of, run_import, stored, totals

EXPECTED: dict[str, dict[str, dict[str, int]]] = {
    "engram": {
        "sessions": {"read": 3, "imported": 3},
        "observations": {"read": 6, "imported": 4, "skipped": 2},
        "prompts": {"read": 4, "imported": 3, "skipped": 1},
    },
    "mcp-memory": {
        "entities": {"read": 4, "imported": 4},
        "observations": {"read": 7, "imported": 7},
        "relations": {"read": 4, "imported": 4},
    },
    "basic-memory": {
        "notes": {"read": 4, "imported": 4},
        "observations": {"read": 10, "imported": 10},
        "relations": {"read": 7, "imported": 7},
        "categories": {},
        "category_observations": {},
    },
    "notarium": {
        "notes": {"read": 1, "imported": 1},
        "observations": {},
        "relations": {},
        "categories": {"read": 3, "imported": 3},
        "category_observations": {"read": 6, "imported": 6},
        "mutes": {"read": 1, "imported": 1},
    },
    "synsema": {
        "entries": {"read": 5, "imported": 4, "skipped": 1},
        "rules": {"read": 4, "imported": 3, "skipped": 1},
        "plans": {"read": 3, "imported": 3},
        "decisions": {"read": 1, "imported": 1},
    },
}
FIXTURES = sorted(EXPECTED)
REPORT = TypeAdapter(ImportReport)


def _full(counts: dict[str, int]) -> dict[str, int]:
    return {
        "read": 0,
        "imported": 0,
        "updated": 0,
        "unchanged": 0,
        "skipped": 0,
        **counts,
    }


@pytest.mark.parametrize("fixture", FIXTURES)
def test_the_report_accounts_for_every_record(base: Path, fixture: str) -> None:
    """Each kind of record is counted as read, and each one read ends in exactly one outcome;
    every skip is listed with its reason."""
    report = run_import(base, kind_of(fixture), SOURCES[fixture])
    assert report["counts"] == {thing: _full(c) for thing, c in EXPECTED[fixture].items()}
    for thing, counts in report["counts"].items():
        outcomes = counts["imported"] + counts["updated"] + counts["unchanged"]
        assert counts["read"] == outcomes + counts["skipped"], thing
        listed = [s for s in report["skipped"] if s["what"] == thing]
        assert len(listed) == counts["skipped"] and all(s["reason"] for s in listed)
    assert report["kind"] == kind_of(fixture) and report["memory"] == "target"


@pytest.mark.parametrize("fixture", FIXTURES)
def test_the_report_is_exactly_its_declared_type(base: Path, fixture: str) -> None:
    """The report's keys are the ones its TypedDict declares, no more (the JSON the CLI
    prints is this report)."""
    report = run_import(base, kind_of(fixture), SOURCES[fixture])
    assert REPORT.validate_python(report) == report
    with pytest.raises(ValidationError):
        REPORT.validate_python({**report, "extra": 1})


@pytest.mark.parametrize("fixture", FIXTURES)
def test_importing_again_writes_nothing(base: Path, fixture: str) -> None:
    """A second import of the same source finds everything already there: every record read is
    unchanged (or skipped again, for the same reason), and not one row of the store changes."""
    first = run_import(base, kind_of(fixture), SOURCES[fixture])
    before = stored(base)
    second = run_import(base, kind_of(fixture), SOURCES[fixture])
    assert stored(base) == before
    assert totals(second)["imported"] == totals(second)["updated"] == 0
    assert totals(second)["skipped"] == totals(first)["skipped"]
    assert totals(second)["unchanged"] == totals(first)["read"] - totals(first)["skipped"]
    assert second["skipped"] == first["skipped"]


def _with_a_credential_in_engram(path: Path) -> None:
    export = json.loads(path.read_text())
    export["observations"][1]["content"] += " The test key was AKIAIOSFODNN7EXAMPLE."
    path.write_text(json.dumps(export))


def _with_a_credential_in_synsema(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute(
            "UPDATE memory SET content = content || ' (key AKIAIOSFODNN7EXAMPLE)'"
            " WHERE id = 'mem_1'"
        )
    db.close()


@pytest.mark.parametrize(
    ("fixture", "change"),
    [("engram", _with_a_credential_in_engram), ("synsema", _with_a_credential_in_synsema)],
)
def test_a_record_stored_redacted_is_still_found_again(
    base: Path, tmp_path: Path, fixture: str, change: Any
) -> None:
    """A credential in a source record is stored redacted, so the stored text differs from the
    source: a re-import still recognises the record (by its fingerprint) and writes nothing."""
    path = copy_of(fixture, tmp_path)
    change(path)
    run_import(base, kind_of(fixture), path)
    before = stored(base)
    assert not any("AKIAIOSFODNN7EXAMPLE" in line for line in before)
    again = run_import(base, kind_of(fixture), path)
    assert totals(again)["imported"] == totals(again)["updated"] == 0
    assert stored(base) == before


def test_an_origin_tells_two_sources_of_one_kind_apart(base: Path) -> None:
    """The same Synsema file under another origin is another source: its entries are imported
    beside the first ones, each tagged with its origin."""
    run_import(base, "synsema", SOURCES["synsema"])
    again = run_import(base, "synsema", SOURCES["synsema"], origin="other-host")
    assert again["counts"]["entries"]["imported"] == 4
    with recuerdo.open("target", base_dir=base, embedder="none") as memory:
        assert len(memory.recall(tags=["synsema:other-host:mem_1"], from_="*")) == 1
        assert len(memory.recall(tags=["synsema:doc-memory:mem_1"], from_="*")) == 1


def _recuerdo_store(folder: Path) -> Path:
    with recuerdo.open("other", base_dir=folder, embedder="none") as memory:
        memory.remember("learning", "a recuerdo store is no Synsema state")
    return folder / ".recuerdo" / "state" / "other.db"


def _text_file(folder: Path) -> Path:
    path = folder / "notes.txt"
    path.write_text("- [idea] not Markdown\n")
    return path


def _empty_folder(folder: Path) -> Path:
    path = folder / "empty"
    path.mkdir()
    (path / "readme.txt").write_text("no notes here")
    return path


def _bad_line(folder: Path) -> Path:
    path = folder / "memory.jsonl"
    entity = {"type": "entity", "name": "A", "entityType": "x", "observations": []}
    path.write_text(json.dumps(entity) + "\nnope\n")
    return path


REFUSALS = [
    ("engram", lambda f: f / "missing.json", "import_source_not_found"),
    ("markdown", lambda f: f / "no-such-folder", "import_source_not_found"),
    ("engram", lambda f: SOURCES["mcp-memory"], "import_source_invalid"),
    ("engram", lambda f: SOURCES["basic-memory"], "import_source_invalid"),
    ("mcp-memory", lambda f: SOURCES["engram"], "import_source_invalid"),
    ("mcp-memory", _bad_line, "import_source_invalid"),
    ("synsema", lambda f: SOURCES["engram"], "import_source_invalid"),
    ("synsema", _recuerdo_store, "import_source_invalid"),
    ("markdown", _text_file, "import_source_invalid"),
    ("markdown", _empty_folder, "import_source_invalid"),
    ("obsidian", lambda f: SOURCES["basic-memory"], "unknown_import_kind"),
]


@pytest.mark.parametrize(("kind", "make", "code"), REFUSALS)
def test_a_refused_source_leaves_the_store_unchanged(
    base: Path, tmp_path: Path, kind: str, make: Any, code: str
) -> None:
    """A missing source, a source of another kind or an unknown kind is refused whole with a
    stable code, after a real import, and the store is as it was."""
    run_import(base, "mcp-memory", SOURCES["mcp-memory"])
    before = stored(base)
    with pytest.raises(recuerdo.RecuerdoError) as refused:
        run_import(base, kind, make(tmp_path))
    assert refused.value.code == code
    assert refused.value.detail
    assert stored(base) == before


def test_engram_keeps_its_own_scopes(base: Path) -> None:
    """Engram observations carry their projects: a scope is refused (invalid_input)."""
    with pytest.raises(recuerdo.InvalidInput):
        run_import(base, "engram", SOURCES["engram"], scope="project:elsewhere")


@pytest.mark.parametrize("label", ["", "two\nlines", "x" * 101])
def test_a_bad_origin_is_refused(base: Path, label: str) -> None:
    with pytest.raises(recuerdo.InvalidInput):
        run_import(base, "mcp-memory", SOURCES["mcp-memory"], origin=label)


def _cli(base: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        recuerdo_command("--state-dir", str(base), "--memory", "cli", *args),
        capture_output=True,
        text=True,
        env={"RECUERDO_EMBEDDER": "none", "PATH": "/usr/bin:/bin"},
        timeout=120,
        check=False,
    )


def test_the_cli_prints_the_report_as_json_and_as_text(base: Path) -> None:
    """`import-from --json` prints the library's report; without it, a table and the skips."""
    shown = _cli(base, "import-from", "engram", str(SOURCES["engram"]), "--json")
    assert shown.returncode == 0, shown.stderr
    report = REPORT.validate_python(json.loads(shown.stdout))
    assert report["counts"]["observations"]["imported"] == 4
    text = _cli(base, "import-from", "engram", str(SOURCES["engram"]))
    assert text.returncode == 0
    assert "observations" in text.stdout and "unchanged" in text.stdout
    assert "deleted in source" in text.stdout


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["import-from", "obsidian", "."], "unknown_import_kind"),
        (["import-from", "engram", "missing.json"], "import_source_not_found"),
        (["--server", "http://127.0.0.1:9", "import-from", "engram", "x.json"], "invalid_input"),
    ],
)
def test_the_cli_refuses_with_the_error_shape(base: Path, args: list[str], code: str) -> None:
    """Refusals print the one error shape of every door and exit 1."""
    shown = _cli(base, "--json", *args)
    assert shown.returncode == 1
    payload = json.loads(shown.stdout)
    assert payload["ok"] is False and payload["error"] == code and payload["detail"]


def test_a_table_or_column_without_a_home_is_reported(base: Path, tmp_path: Path) -> None:
    """The Synsema reader maps what it recognises: an unknown table is named with its rows and
    columns, an unknown entry column is kept in the entry's data line, a table that lacks a
    column it needs is left out with the reason."""
    path = copy_of("synsema", tmp_path)
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE kv (k TEXT, v TEXT)")
        db.execute("INSERT INTO kv VALUES ('visits', '3')")
        db.execute("ALTER TABLE memory ADD COLUMN mood TEXT")
        db.execute("UPDATE memory SET mood = 'calm' WHERE id = 'mem_1'")
        db.execute("ALTER TABLE rules RENAME COLUMN level TO severity")
    db.close()
    report = run_import(base, "synsema", path)
    left_out = {s["ref"]: s["reason"] for s in report["skipped"] if s["what"] == "table"}
    assert "1 rows" in left_out["kv"] and "k, v" in left_out["kv"]
    assert "level" in left_out["rules"]
    assert report["counts"]["rules"]["read"] == 0
    with recuerdo.open("target", base_dir=base, embedder="none") as memory:
        [entry] = memory.recall(tags=["synsema:doc-memory:mem_1"], from_="*")
        assert entry["content"] == 'Formal tone preferred\n\ndata: {"mood": "calm"}'


def test_a_rule_whose_bound_cannot_be_read_is_imported_without_a_condition(
    base: Path, tmp_path: Path
) -> None:
    """A Synsema rule stating '20%' was skipped as invalid_condition (0107), so the import lost
    it; Synsema kept it (an unparseable condition is never a violation)."""
    path = copy_of("synsema", tmp_path)
    with sqlite3.connect(path) as db:
        name = db.execute("SELECT name FROM rules WHERE active = 1 LIMIT 1").fetchone()[0]
        db.execute(
            "UPDATE rules SET description = 'pct < 20%', condition = NULL WHERE name = ?", (name,)
        )
    db.close()
    report = run_import(base, "synsema", path)
    assert not [s for s in report["skipped"] if s["ref"] == f"rules {name}"], report["skipped"]
    with recuerdo.open("target", base_dir=base, embedder="none") as memory:
        [rule] = [r for r in memory.get_rules() if r["name"] == name]
    assert (rule["description"], rule["condition"]) == ("pct < 20%", None)
