"""Synsema imports keep every record (decision 0102): an origin too long for a tag still
gives each entry its own marker, and a plan's steps keep the fields the plan can hold, so a
second import of the same file writes nothing."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

import recuerdo
from recuerdo.importers.common import fingerprint

from .importing import run_import, stored, totals

LONG_STEM = "customer-support-assistant-production-eu-west-memory-state-" + "x" * 60


def digest(text: str) -> str:
    """The digest docs/importers.md names: ``~`` and 12 hex digits of the SHA-256."""
    return "~" + hashlib.sha256(text.encode()).hexdigest()[:12]


def _state(path: Path, entries: int = 3) -> Path:
    """A Synsema state file with ``entries`` active entries mem_1..mem_n, oldest first."""
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE memory (id TEXT PRIMARY KEY, category TEXT, content TEXT, data TEXT,"
            " tags TEXT, source TEXT, confidence REAL, active INTEGER, created_at REAL,"
            " updated_at REAL)"
        )
        for number in range(1, entries + 1):
            db.execute(
                "INSERT INTO memory VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    f"mem_{number}",
                    "learning",
                    f"fact number {number}",
                    "{}",
                    "[]",
                    "main",
                    1.0,
                    1,
                    1e9 + number,
                    1e9 + number,
                ),
            )
    db.close()
    return path


def _entries(base: Path) -> dict[str, list[str]]:
    """Every live entry's content and its synsema marker tags."""
    with recuerdo.open("target", base_dir=base, embedder="none") as memory:
        return {
            entry["content"]: [t for t in entry["tags"] if t.startswith("synsema:")]
            for entry in memory.recall(from_="*", limit=100)
        }


def test_a_long_file_name_keeps_every_entry(base: Path, tmp_path: Path) -> None:
    """The default origin is the file name (here 119 characters): each entry keeps its own
    marker, the origin replaced by its digest, and nothing is cut or forgotten."""
    path = _state(tmp_path / f"{LONG_STEM}.db")
    first = run_import(base, "synsema", path)
    assert first["counts"]["entries"] == {
        "read": 3,
        "imported": 3,
        "updated": 0,
        "unchanged": 0,
        "skipped": 0,
    }
    short = digest(LONG_STEM)
    assert _entries(base) == {f"fact number {n}": [f"synsema:{short}:mem_{n}"] for n in (1, 2, 3)}
    assert any(short in note["detail"] for note in first["fields"])
    before = stored(base)
    again = run_import(base, "synsema", path)
    assert stored(base) == before
    assert totals(again)["unchanged"] == 3 and totals(again)["imported"] == 0


def test_an_origin_of_a_hundred_characters_keeps_every_entry(base: Path, tmp_path: Path) -> None:
    path = _state(tmp_path / "doc.db")
    origin = "o" * 100
    report = run_import(base, "synsema", path, origin=origin)
    assert report["counts"]["entries"]["imported"] == 3
    assert len(_entries(base)) == 3
    before = stored(base)
    again = run_import(base, "synsema", path, origin=origin)
    assert stored(base) == before and again["counts"]["entries"]["unchanged"] == 3


def test_a_marker_that_fits_is_the_plain_one(base: Path, tmp_path: Path) -> None:
    """Short origins keep the marker earlier imports wrote, so those imports are found."""
    run_import(base, "synsema", _state(tmp_path / "doc.db"), origin="o" * 80)
    assert _entries(base)["fact number 1"] == [f"synsema:{'o' * 80}:mem_1"]


def test_an_entry_stored_under_a_cut_marker_is_replaced_not_doubled(
    base: Path, tmp_path: Path
) -> None:
    """What an import before the fix left (the last entry, under the cut marker every entry
    shared) is recognised as that entry's import and replaced, not kept beside it."""
    path = _state(tmp_path / f"{LONG_STEM}.db")
    cut = f"synsema:{LONG_STEM}:mem_3"[:100]  # what imports before the fix wrote
    created = "created:2001-09-09T01:46:43Z"
    said = fingerprint("learning", "fact number 3", [cut, created])
    with recuerdo.open("target", base_dir=base, embedder="none") as memory:
        memory.remember("learning", "fact number 3", [cut, created, said])
    report = run_import(base, "synsema", path)
    assert report["counts"]["entries"]["imported"] == 2
    assert report["counts"]["entries"]["updated"] == 1
    entries = _entries(base)
    assert sorted(entries) == ["fact number 1", "fact number 2", "fact number 3"]
    assert entries["fact number 3"] == [f"synsema:{digest(LONG_STEM)}:mem_3"]


def _progress(path: Path, rows: list[tuple[str, str, str | None, str | None]]) -> Path:
    """A Synsema state file whose task 'sync' has these (step, status, result, error) rows."""
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE progress (task_name TEXT, step_name TEXT, status TEXT, started_at REAL,"
            " finished_at REAL, result TEXT, error TEXT, metadata TEXT, retries INTEGER)"
        )
        db.executemany(
            "INSERT INTO progress VALUES ('sync', ?, ?, 1, 2, ?, ?, '{}', 0)",
            rows,
        )
    db.close()
    return path


def test_a_plan_keeps_each_steps_result_and_error_and_is_found_again(
    base: Path, tmp_path: Path
) -> None:
    """A failed step keeps its error and, after it, its result; a skipped step keeps its
    reason; a step with both keeps both; a credential is stored redacted. The same file again
    writes nothing (the stored steps are compared as stored)."""
    path = _progress(
        tmp_path / "shop.db",
        [
            ("fetch", "done", "got 100 items", None),
            ("load", "failed", "partial: 40 rows", "timeout"),
            ("notify", "skipped", None, "no recipients"),
            ("report", "done", "sent with AKIAIOSFODNN7EXAMPLE", "one mail bounced"),
            ("archive", "pending", "stale result", None),
        ],
    )
    first = run_import(base, "synsema", path)
    assert first["counts"]["plans"]["imported"] == 1
    assert any(
        note["outcome"] == "skipped" and "pending" in note["field"] for note in first["fields"]
    )
    with recuerdo.open("target", base_dir=base, embedder="none") as memory:
        steps = memory.get_progress("sync")["steps"]
    assert [(s["name"], s["status"], s["result"], s["error"]) for s in steps] == [
        ("fetch", "done", "got 100 items", None),
        ("load", "failed", None, "timeout\n\nresult: partial: 40 rows"),
        ("notify", "skipped", "no recipients", None),
        ("report", "done", "sent with secret(API)\n\nerror: one mail bounced", None),
        ("archive", "pending", None, None),
    ]
    before = stored(base)
    for _ in range(2):
        again = run_import(base, "synsema", path)
        assert again["counts"]["plans"]["unchanged"] == 1
        assert stored(base) == before


def test_a_changed_failed_step_is_moved_again(base: Path, tmp_path: Path) -> None:
    """A failed step whose error changed in the source is updated once, then unchanged."""
    path = _progress(tmp_path / "shop.db", [("load", "failed", None, "timeout")])
    run_import(base, "synsema", path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE progress SET error = 'disk full'")
    db.close()
    assert run_import(base, "synsema", path)["counts"]["plans"]["updated"] == 1
    with recuerdo.open("target", base_dir=base, embedder="none") as memory:
        assert memory.get_progress("sync")["steps"][0]["error"] == "disk full"
    assert run_import(base, "synsema", path)["counts"]["plans"]["unchanged"] == 1


@pytest.mark.parametrize(
    ("status", "result", "error"),
    [("done", "got 100 items", None), ("skipped", None, "no recipients"), ("failed", None, "x")],
)
def test_a_step_whose_text_the_source_dropped_is_moved_again(
    base: Path, tmp_path: Path, status: str, result: str | None, error: str | None
) -> None:
    """A step of an unfinished plan whose result (or error) the source no longer holds keeps
    none once imported again, then is unchanged: marking a step again as it is keeps its text
    (decision 0108), so the import said updated at every run and kept the old text."""
    path = _progress(
        tmp_path / "shop.db", [("fetch", status, result, error), ("load", "pending", None, None)]
    )
    run_import(base, "synsema", path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE progress SET result = NULL, error = NULL WHERE step_name = 'fetch'")
    db.close()
    assert run_import(base, "synsema", path)["counts"]["plans"]["updated"] == 1
    with recuerdo.open("target", base_dir=base, embedder="none") as memory:
        fetch = memory.get_progress("sync")["steps"][0]
    assert (fetch["status"], fetch["result"], fetch["error"]) == (status, None, None)
    before = stored(base)
    assert run_import(base, "synsema", path)["counts"]["plans"]["unchanged"] == 1
    assert stored(base) == before


def _written_by(path: Path, rows: list[tuple[str, str]]) -> Path:
    """A Synsema state file whose entries mem_1.. are (writer, content), oldest first."""
    path.unlink(missing_ok=True)
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE memory (id TEXT PRIMARY KEY, category TEXT, content TEXT, data TEXT,"
            " tags TEXT, source TEXT, confidence REAL, active INTEGER, created_at REAL,"
            " updated_at REAL)"
        )
        for number, (writer, content) in enumerate(rows, 1):
            db.execute(
                "INSERT INTO memory VALUES (?,?,?,?,?,?,?,?,?,?)",
                (f"mem_{number}", "learning", content, "{}", "[]", writer, 1.0, 1, 1e9, 1e9),
            )
    db.close()
    return path


def test_an_import_run_as_an_agent_keeps_every_writer(
    memory: recuerdo.Memory, tmp_path: Path
) -> None:
    """Run as an agent (``recuerdo --agent bob import-from``), the import still writes the
    source's top-level entries as ``main`` (they were skipped: no agent is named main) and
    replaces a changed entry of another writer (refused as not bob's, its old text was kept
    beside the new one)."""
    bob = memory.agent("bob")
    path = tmp_path / "src.db"
    first = recuerdo.import_from(bob, "synsema", _written_by(path, [("main", "a"), ("ann", "b")]))
    assert first["counts"]["entries"]["imported"] == 2 and first["skipped"] == []
    again = recuerdo.import_from(bob, "synsema", _written_by(path, [("main", "A"), ("ann", "B")]))
    assert again["counts"]["entries"]["updated"] == 2 and again["skipped"] == []
    held = sorted((e["source"], e["content"]) for e in memory.recall(from_="*"))
    assert held == [("ann", "B"), ("main", "A")]
    same = recuerdo.import_from(bob, "synsema", path)
    assert same["counts"]["entries"]["unchanged"] == 2


@pytest.mark.parametrize("writer", ["MAIN", "\uff4d\uff41\uff49\uff4e", "\u041cAIN"])
def test_a_source_writer_that_reads_as_main_is_the_owners(
    memory: recuerdo.Memory, tmp_path: Path, writer: str
) -> None:
    """Such a writer's entries went in as an agent of that name (or, as no agent may take it
    since decision 0136, the import failed): they are the top-level ones, as ``MAIN``'s were."""
    path = _written_by(tmp_path / "src.db", [(writer, "top-level fact"), ("ann", "ann's")])
    report = recuerdo.import_from(memory, "synsema", path)
    assert report["counts"]["entries"]["imported"] == 2 and report["skipped"] == []
    held = sorted((e["source"], e["content"]) for e in memory.recall(from_="*"))
    assert held == [("ann", "ann's"), ("main", "top-level fact")]
