"""Files recuerdo writes for its user (Markdown exports, front matter written back by an
import, backups, a restored memory's name) are on disk before their name points at them, and
the name before the call returns (decision 0164): a rename alone could leave an empty file
after a power cut, in place of the user's own. The calls to ``fsync`` are watched, not
replaced: each still syncs."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import recuerdo


class Syncs:
    """The files and folders synced, and the renames, in the order they came."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def synced_before_named(self, target: Path) -> bool:
        """Whether the file that became ``target`` was synced before it took the name, and its
        folder synced after."""
        renamed = [
            n
            for n, (kind, path) in enumerate(self.events)
            if kind == "rename" and path == str(target)
        ]
        if not renamed:
            return False
        at = renamed[-1]
        source = self.events[at - 1][1] if at else ""
        synced_file = any(kind == "fsync" and path == source for kind, path in self.events[:at])
        synced_folder = ("fsync", str(target.parent)) in self.events[at:]
        return synced_file and synced_folder


@pytest.fixture
def syncs(monkeypatch: pytest.MonkeyPatch) -> Iterator[Syncs]:
    seen = Syncs()
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        seen.events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(
        source: str | os.PathLike[str], target: str | os.PathLike[str], **kw: object
    ) -> None:
        seen.events.append(("source", str(Path(source).resolve())))
        seen.events.append(("rename", str(Path(target).resolve())))
        real_replace(source, target, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    yield seen


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[recuerdo.Memory]:
    opened = recuerdo.open("durable", base_dir=tmp_path / "base", embedder="none")
    yield opened
    opened.close()


def test_each_exported_markdown_file_is_synced_before_it_is_named(
    memory: recuerdo.Memory, tmp_path: Path, syncs: Syncs
) -> None:
    memory.save("Mine", "about me")
    memory.save("Checkout", "use stripe", scope="project:shop")
    folder = (tmp_path / "out").resolve()
    memory.export_markdown(folder)
    files = sorted(folder.rglob("*.md"))
    assert len(files) == 2
    assert all(syncs.synced_before_named(path) for path in files)


def test_front_matter_an_import_writes_back_is_synced_before_it_is_named(
    memory: recuerdo.Memory, tmp_path: Path, syncs: Syncs
) -> None:
    folder = (tmp_path / "notes").resolve()
    folder.mkdir()
    mine = folder / "Ideas.md"
    mine.write_text("# Ideas\n\nA line the user wrote.\n")
    report = memory.import_markdown(folder)
    assert report["created"] == 1
    assert "A line the user wrote." in mine.read_text()
    assert mine.read_text() != "# Ideas\n\nA line the user wrote.\n"  # its id was written back
    assert syncs.synced_before_named(mine)


@pytest.mark.parametrize("raw", [False, True])
def test_a_backup_is_synced_before_it_is_named(
    memory: recuerdo.Memory, tmp_path: Path, syncs: Syncs, raw: bool
) -> None:
    memory.remember("learning", "worth keeping")
    target = (tmp_path / ("copy.db" if raw else "copy.recuerdo.gz")).resolve()
    memory.backup(target, raw=raw)
    assert target.stat().st_size > 0
    assert syncs.synced_before_named(target)


def test_a_failed_group_leaves_no_partial_file_and_no_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from recuerdo.store import durable_files

    staged = durable_files.Replacements()
    staged.stage(tmp_path / "a.md", b"first")
    staged.stage(tmp_path / "b.md", b"second")

    def refused(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", refused)
    with pytest.raises(OSError):
        staged.commit()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_group_whose_block_raises_leaves_no_partial_file_and_no_target(tmp_path: Path) -> None:
    from recuerdo.store import durable_files

    with pytest.raises(ValueError), durable_files.Replacements() as staged:
        staged.stage(tmp_path / "a.md", b"first")
        raise ValueError("the export stopped")
    assert list(tmp_path.iterdir()) == []
