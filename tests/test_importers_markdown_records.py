"""Markdown imports keep every record and write nothing twice (decision 0102): Notarium blocks
stored redacted, a byte order mark, one permalink in two files, symbolic links."""

from __future__ import annotations

from pathlib import Path

import recuerdo

from .importing import run_import, stored, totals

KEY = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD"


def _category(base: Path, category: str) -> str:
    with recuerdo.open("target", base_dir=base, embedder="none") as memory:
        [entry] = [
            e for e in memory.profile("user", include_muted=True) if e["category"] == category
        ]
        return str(memory.get(entry["note_id"])["content"])


def test_a_notarium_block_stored_redacted_is_not_appended_again(base: Path, tmp_path: Path) -> None:
    """A block with a credential or a <private> span is stored redacted, so the note never
    holds it as written: a re-import still recognises it and writes nothing."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "infra.md").write_text(
        "---\nclass: agent-memory\ncategory: infra\naxis: user\n---\n"
        f"Staging deploys use the key {KEY} for the API.\n\n"
        "Production deploys only on Tuesdays.\n\n"
        "use <private>my home address</private> never\n\n"
        "line one   \nline two\n"
    )
    first = run_import(base, "markdown", folder)
    assert first["counts"]["category_observations"]["imported"] == 4
    content = _category(base, "infra")
    assert KEY not in content and "home address" not in content
    assert content.count("Staging deploys") == 1 and content.count("use [private] never") == 1
    before = stored(base)
    for _ in range(2):
        again = run_import(base, "markdown", folder)
        assert stored(base) == before
        assert again["counts"]["category_observations"]["unchanged"] == 4
        assert again["counts"]["categories"]["unchanged"] == 1
        assert totals(again)["imported"] == totals(again)["updated"] == 0
    assert _category(base, "infra") == content
