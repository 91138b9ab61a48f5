"""The layering rules of DESIGN.md, read from the code's own imports.

Packages stand in layers: the doors use only the engine's public faces; the families use the
shared layers below them (core, index, store) and each other without cycles; the store imports
no family and no door; core imports only the store's protocol and the errors.
"""

from __future__ import annotations

import ast
import functools
import re
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "recuerdo"
DOORS = {"doors", "profiles", "importers"}
DOOR_ALLOWED = {"engine", "verbs", "model", "errors", "security", "__version__"} | DOORS
FAMILIES = {"entries", "notes", "work", "comms", "graph", "ingest", "retrieval", "code", "mirror"}


@functools.cache
def _parsed(path: Path) -> ast.Module:
    """Each source file parsed once for all the tests here (the sources do not change)."""
    return ast.parse(path.read_text())


def _imports(path: Path) -> frozenset[str]:
    """Top-level recuerdo modules or packages imported by a file (relative imports resolved)."""
    parts = path.relative_to(PACKAGE).parts
    found = set()
    for node in ast.walk(_parsed(path)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(parts[: len(parts) - node.level])
                target = base + (node.module.split(".") if node.module else [])
                if target:
                    found.add(target[0].removesuffix(".py"))
                else:
                    found.update(alias.name for alias in node.names)
            elif node.module and node.module.startswith("recuerdo."):
                found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("recuerdo."):
                    found.add(alias.name.split(".")[1])
    return frozenset(found)


def _top(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def _package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        top = _top(path)
        graph.setdefault(top, set()).update(_imports(path) - {top})
    return graph


def test_no_import_cycles_between_packages() -> None:
    try:
        list(TopologicalSorter(_package_graph()).static_order())
    except CycleError as cycle:  # pragma: no cover - the message is the point
        pytest.fail(f"import cycle between packages: {' -> '.join(cycle.args[1])}")


def test_doors_and_profiles_use_only_public_faces() -> None:
    for folder in DOORS:
        for path in (PACKAGE / folder).rglob("*.py"):
            bad = _imports(path) - DOOR_ALLOWED
            assert not bad, f"{path.relative_to(PACKAGE)} imports {bad}"


@pytest.mark.parametrize(
    ("package", "allowed"),
    [
        ("store", {"errors"}),
        ("core", {"errors", "store"}),
        ("security", {"errors", "store", "core"}),
        ("index", {"errors", "store", "core"}),
        ("facade", {"errors", "store", "core", "security", "index"}),
    ],
)
def test_lower_layers_import_only_what_is_below_them(package: str, allowed: set[str]) -> None:
    for path in PACKAGE.rglob("*.py"):
        if _top(path) == package:
            bad = _imports(path) - allowed - {package}
            assert not bad, f"{path.relative_to(PACKAGE)} imports {bad}"


def test_families_import_no_engine_verbs_or_doors() -> None:
    for path in PACKAGE.rglob("*.py"):
        if _top(path) in FAMILIES:
            bad = _imports(path) & ({"engine", "verbs"} | DOORS)
            assert not bad, f"{path.relative_to(PACKAGE)} imports {bad}"


def test_modules_stay_small() -> None:
    for path in PACKAGE.rglob("*.py"):
        assert len(path.read_text().splitlines()) <= 600, path


# SQL only SQLite understands: what the families must leave to the backend (store/sqlite/).
SQLITE_ONLY = [
    r"\bMATCH\b",
    r"\bbm25\(",
    r"\browid\b",
    r"\brecuerdo_fold\(",
    r"\bOR\s+(IGNORE|REPLACE)\b",
    r"\bjson_(extract|each|group_array)\(",
    r"\binstr\(",
    r"\bPRAGMA\b",
    r"\bsqlite_(master|sequence|schema)\b",
    r"\bAUTOINCREMENT\b",
    r"\bWITHOUT\s+ROWID\b",
    r"\bfts5\b",
    r"'rebuild'",
    r"\bstrftime\(",
    r"\bGLOB\b",
    r"\blast_insert_rowid\(",
    r"\bmax\(\s*\w+\s*,",  # the two-argument max() is SQLite's scalar function
]
# Files that read another program's SQLite file (not a recuerdo store), as it is.
FOREIGN_SQLITE = {"importers/synsema_db.py"}
SQL_START = re.compile(
    r"^\s*(SELECT|INSERT|UPDATE|DELETE|WITH|CREATE|ALTER|DROP)\b|\b(FROM|WHERE|VALUES|SET)\b"
)


def _sql_strings(path: Path) -> list[tuple[int, str]]:
    """The string literals of a file that look like SQL (f-strings' literal parts included)."""
    found = []
    for node in ast.walk(_parsed(path)):
        text = node.value if isinstance(node, ast.Constant) else None
        if isinstance(text, str) and SQL_START.search(text):
            found.append((node.lineno, text))
    return found


def test_sqlite_only_sql_stays_in_the_sqlite_backend() -> None:
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative.startswith("store/sqlite/") or relative in FOREIGN_SQLITE:
            continue
        for line, text in _sql_strings(path):
            for pattern in SQLITE_ONLY:
                if re.search(pattern, text, re.IGNORECASE):
                    offenders.append(f"{relative}:{line}: {pattern} in {text.strip()[:80]!r}")
    assert not offenders, "\n".join(offenders)
