"""Files replaced whole and durably: a file's bytes reach the disk before its name points at
them, and the new name reaches it before the call returns. A rename alone is atomic but not
durable: after a power cut the name may point at a file the disk never received, empty or
cut (decision 0164), and the old file is gone with it.

A group of files (``Replacements``) is synced together: written first, then each synced (the
first sync writes out the others' pages with it on a journalling file system), then renamed,
and each folder synced once."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def sync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sync_folder(folder: Path) -> None:
    """Make the names in ``folder`` durable. Some platforms cannot open a folder, and some file
    systems cannot sync one (EINVAL): their renames are as durable as they get."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def replace(partial: Path, target: Path) -> None:
    """``partial``, written whole, becomes ``target`` durably."""
    sync_file(partial)
    os.replace(partial, target)
    sync_folder(target.parent)


class Replacements:
    """Files staged beside their targets and put in place together by ``commit``: each is whole
    or absent, and none is in place before every one is on disk. Partial files are named
    ``.<name>.partial`` (hidden: a reader of the folder passes them by). As a context, what is
    staged is committed when the block ends, and discarded when it raises."""

    def __init__(self) -> None:
        self._staged: list[tuple[Path, Path]] = []

    def __enter__(self) -> Replacements:
        return self

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        if kind is None:
            self.commit()
        else:
            self.discard()

    def __len__(self) -> int:
        return len(self._staged)

    def stage(self, target: Path, data: bytes) -> None:
        partial = target.with_name(f".{target.name}.partial")
        partial.write_bytes(data)
        self._staged.append((partial, target))

    def commit(self) -> None:
        staged, self._staged = self._staged, []
        try:
            for partial, _ in staged:
                sync_file(partial)
            for partial, target in staged:
                os.replace(partial, target)
        except BaseException:
            for partial, _ in staged:
                partial.unlink(missing_ok=True)
            raise
        for folder in sorted({target.parent for _, target in staged}):
            sync_folder(folder)

    def discard(self) -> None:
        for partial, _ in self._staged:
            partial.unlink(missing_ok=True)
        self._staged = []
