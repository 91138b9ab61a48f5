"""Markdown imports keep every record and write nothing twice (decision 0102): Notarium blocks
stored redacted, a byte order mark, one permalink in two files, symbolic links."""

from __future__ import annotations

from pathlib import Path

import recuerdo

from .importing import folder_of, run_import, stored, totals

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
    folder = folder_of(
        tmp_path / "notes",
        {
            "infra.md": "---\nclass: agent-memory\ncategory: infra\naxis: user\n---\n"
            f"Staging deploys use the key {KEY} for the API.\n\n"
            "Production deploys only on Tuesdays.\n\n"
            "use <private>my home address</private> never\n\n"
            "line one   \nline two\n",
        },
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


def test_a_byte_order_mark_does_not_hide_the_front_matter(base: Path, tmp_path: Path) -> None:
    folder = folder_of(
        tmp_path / "a",
        {
            "bom.md": (
                "\ufeff---\ntitle: Coffee brewing\ntags: [coffee, brewing]\n"
                "permalink: coffee-brewing\n---\nUse 15 g per 250 ml.\n"
            ).encode(),
        },
    )
    run_import(base, "markdown", folder)
    with recuerdo.open("target", base_dir=base, embedder="none") as memory:
        found = memory.mirror_get("coffee-brewing", scope="user")
        assert found["state"] == "answered"
        note = memory.get(found["id"])
        assert note["title"] == "Coffee brewing" and note["content"] == "Use 15 g per 250 ml."
        assert {"coffee", "brewing"} <= set(note["tags"])
        assert memory.mirror_get("a/bom", scope="user")["state"] == "nothing_stored"
    before = stored(base)
    run_import(base, "markdown", folder)
    assert stored(base) == before


def test_a_permalink_in_two_files_is_kept_by_the_first(base: Path, tmp_path: Path) -> None:
    """Two files naming one permalink would replace each other on every import: the first in
    path order keeps the note, the second is skipped naming it, every time."""
    folder = folder_of(
        tmp_path / "b",
        {
            "two.md": "---\ntitle: Checkout\npermalink: checkout\n---\nSecond.\n",
            "one.md": "---\ntitle: Checkout\npermalink: checkout\n---\nFirst.\n",
        },
    )
    first = run_import(base, "markdown", folder)
    assert first["counts"]["notes"]["imported"] == 1
    [skip] = first["skipped"]
    assert skip["ref"] == "two.md" and "'checkout'" in skip["reason"] and "one.md" in skip["reason"]
    before = stored(base)
    again = run_import(base, "markdown", folder)
    assert stored(base) == before and again["skipped"] == first["skipped"]
    assert again["counts"]["notes"]["unchanged"] == 1
    with recuerdo.open("target", base_dir=base, embedder="none") as memory:
        found = memory.mirror_get("checkout", scope="user")
        assert found["version"] == 1 and memory.get(found["id"])["content"] == "First."


def test_symbolic_links_are_listed_and_never_read_outside(base: Path, tmp_path: Path) -> None:
    """A link to a file or folder outside the imported folder is not read; a link inside it
    is not followed (its target is imported where it is); a broken link is named too."""
    folder = tmp_path / "notes"
    (folder / "real").mkdir(parents=True)
    (folder / "index.md").write_text("# Index\n\nTop note.\n")
    (folder / "real" / "design.md").write_text("# Design\n\nThe design notes.\n")
    outside = tmp_path / "private"
    outside.mkdir()
    (outside / "diary.md").write_text("# Diary\n\nSomething private, outside the folder.\n")
    (folder / "diary.md").symlink_to(outside / "diary.md")
    (folder / "elsewhere").symlink_to(outside)
    (folder / "again").symlink_to(folder / "real")
    (folder / "design-link.md").symlink_to(folder / "real" / "design.md")
    (folder / "gone.md").symlink_to(tmp_path / "missing.md")
    report = run_import(base, "markdown", folder)
    assert report["counts"]["notes"]["imported"] == 2  # index.md and real/design.md
    reasons = {s["ref"]: s["reason"] for s in report["skipped"]}
    assert set(reasons) == {"diary.md", "elsewhere", "again", "design-link.md", "gone.md"}
    assert "outside" in reasons["diary.md"] and "outside" in reasons["elsewhere"]
    assert "real" in reasons["again"] and "real/design.md" in reasons["design-link.md"]
    assert "broken" in reasons["gone.md"]
    assert not any("private" in line for line in stored(base))
    before = stored(base)
    run_import(base, "markdown", folder)
    assert stored(base) == before


def test_a_file_that_stores_nothing_leaves_its_permalink_free(base: Path, tmp_path: Path) -> None:
    """The first file claimed the key before it was found empty, and the file with the text
    was skipped for it (the review of 0102)."""
    folder = folder_of(
        tmp_path / "notes",
        {
            "a-draft.md": "---\npermalink: auth-design\n---\n",
            "b-auth.md": "---\npermalink: auth-design\n---\nThe auth design.\n",
        },
    )
    report = run_import(base, "markdown", folder)
    assert report["counts"]["notes"]["imported"] == 1
    assert [s["ref"] for s in report["skipped"]] == ["a-draft.md"]


def test_front_matter_nested_too_deep_skips_that_file_only(base: Path, tmp_path: Path) -> None:
    """YAML nested past Python's depth raised RecursionError out of the import, after some
    files were written and before the others were read (the review of 0102)."""
    folder = folder_of(
        tmp_path / "notes",
        {
            "a.md": "First note.\n",
            "b.md": "---\ndeep: " + "[" * 5_000 + "]" * 5_000 + "\n---\nBody.\n",
            "c.md": "Third note.\n",
        },
    )
    report = run_import(base, "markdown", folder)
    assert report["counts"]["notes"]["imported"] == 2
    assert [s["ref"] for s in report["skipped"]] == ["b.md"]


def test_a_private_span_across_a_blank_line_is_never_stored(base: Path, tmp_path: Path) -> None:
    """The body was cut into blocks first: neither half held the span whole, and the note
    joined them back readable (the review of 0102)."""
    folder = folder_of(
        tmp_path / "notes",
        {
            "infra.md": "---\nclass: agent-memory\ncategory: infra\naxis: user\n---\n"
            "Deploys go through staging. <private>the root password is hunter2-Orchid\n\n"
            "and the backup box takes the same one</private> done.\n",
        },
    )
    run_import(base, "markdown", folder)
    content = _category(base, "infra")
    assert "hunter2" not in content and "backup box" not in content
    assert "[private]" in content
