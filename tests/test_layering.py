"""The layering rule: doors and profiles use only the engine's public faces; the store and the
families never import a door."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "recuerdo"
DOOR_ALLOWED = {
    "engine",
    "verbs",
    "model",
    "errors",
    "declare",
    "security",
    "doors",
    "__version__",
    "profiles",
}


def _imports(path: Path) -> set[str]:
    """Top-level recuerdo modules imported by a file (relative imports resolved)."""
    parts = path.relative_to(PACKAGE).parts
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(parts[: len(parts) - node.level])
                target = base + (node.module.split(".") if node.module else [])
                if target:
                    found.add(target[0])
                else:
                    found.update(alias.name for alias in node.names)
            elif node.module and node.module.startswith("recuerdo."):
                found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("recuerdo."):
                    found.add(alias.name.split(".")[1])
    return found


def test_doors_and_profiles_use_only_public_faces() -> None:
    for folder in ("doors", "profiles"):
        for path in (PACKAGE / folder).rglob("*.py"):
            bad = _imports(path) - DOOR_ALLOWED
            assert not bad, f"{path.name} imports {bad}"


def test_store_and_families_import_no_door() -> None:
    for path in PACKAGE.rglob("*.py"):
        top = path.relative_to(PACKAGE).parts[0]
        if top in ("doors", "profiles", "__init__.py", "__main__.py", "docs_gen.py"):
            continue
        assert not _imports(path) & {"doors", "profiles"}, path


def test_modules_stay_small() -> None:
    for path in PACKAGE.rglob("*.py"):
        assert len(path.read_text().splitlines()) <= 600, path
