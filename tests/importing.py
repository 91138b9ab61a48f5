"""Helpers of the importer tests: the fixtures, one import in a fresh process-local memory, and
what a store holds (to show that a re-import or a refusal wrote nothing)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import recuerdo
from recuerdo.importers import ImportReport

from .conftest import db_dump

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "importers"
SOURCES = {
    "engram": FIXTURES / "engram" / "export.json",
    "mcp-memory": FIXTURES / "mcp_memory" / "memory.jsonl",
    "basic-memory": FIXTURES / "basic_memory",
    "notarium": FIXTURES / "notarium",
    "synsema": FIXTURES / "synsema" / "doc-memory.db",
}
KIND_OF = {"basic-memory": "markdown", "notarium": "markdown"}
# What changes when nothing is written: reads are audited, and the upkeep keeps its marks.
NOT_DATA = ("retrieval_audit", "index_marks")


def kind_of(fixture: str) -> str:
    return KIND_OF.get(fixture, fixture)


def copy_of(fixture: str, folder: Path) -> Path:
    """A copy of a fixture to change in a test (fixtures are never written)."""
    source = SOURCES[fixture]
    target = folder / source.name
    if source.is_dir():
        shutil.copytree(source, target)
    else:
        shutil.copyfile(source, target)
    return target


def folder_of(where: Path, files: dict[str, str | bytes]) -> Path:
    """A folder at ``where`` holding ``files`` (name -> text, or bytes written as they are)."""
    where.mkdir(parents=True)
    for name, content in files.items():
        if isinstance(content, bytes):
            (where / name).write_bytes(content)
        else:
            (where / name).write_text(content)
    return where


def run_import(
    base: Path, kind: str, source: Path, name: str = "target", **options: Any
) -> ImportReport:
    with recuerdo.open(name, base_dir=base, embedder="none") as memory:
        return recuerdo.import_from(memory, kind, source, **options)


def stored(base: Path, name: str = "target") -> list[str]:
    """Every data row of the memory's file (after its memory was closed)."""
    path = base / ".recuerdo" / "state" / f"{name}.db"
    return [line for line in db_dump(path) if not line.startswith(NOT_DATA)]


def totals(report: ImportReport) -> dict[str, int]:
    """Outcomes summed over every kind of record."""
    summed = {"read": 0, "imported": 0, "updated": 0, "unchanged": 0, "skipped": 0}
    for counts in report["counts"].values():
        for name in summed:
            summed[name] += counts[name]  # type: ignore[literal-required]
    return summed
