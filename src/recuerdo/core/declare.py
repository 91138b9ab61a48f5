"""Memory names and where their state lives.

The declared name is the identity of a memory: ``<base>/.recuerdo/state/<name>.db``. Names are
checked before anything touches the disk, so a refused name never leaves a file or folder.
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

from ..errors import InvalidMemoryName, StorageFull, StoreError

NAME_PATTERN = re.compile(r"[A-Za-z0-9_-]+")
MAX_NAME_LENGTH = 128
STATE_DIR_ENV = "RECUERDO_STATE_DIR"


def validate_name(name: object) -> str:
    """Return ``name`` if it is a valid memory name, else raise :class:`InvalidMemoryName`."""
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise InvalidMemoryName(
            f"Invalid memory name: {name!r}. A memory name is one or more letters, digits, "
            "'_' or '-' (no paths, dots or spaces), e.g. 'support-agent'."
        )
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidMemoryName(
            f"Invalid memory name: {name[:20]!r}... is longer than {MAX_NAME_LENGTH} characters."
        )
    return name


def state_root(base_dir: str | os.PathLike[str] | None = None) -> Path:
    """``<base>/.recuerdo/state``: base_dir, else ``RECUERDO_STATE_DIR``, else the cwd."""
    base = base_dir if base_dir is not None else os.environ.get(STATE_DIR_ENV) or os.getcwd()
    return Path(base) / ".recuerdo" / "state"


def state_path(name: str, base_dir: str | os.PathLike[str] | None = None) -> Path:
    return state_root(base_dir) / f"{validate_name(name)}.db"


def prepare_state_dir(path: Path) -> None:
    """Create the state folders (``.recuerdo`` and its ``state``, private to their owner), with
    a ``.gitignore`` so memories are not committed by mistake."""
    from ..store.sqlite.files import secure_folder

    root = path.parent.parent
    secure_folder(root)
    secure_folder(path.parent)
    ignore = root / ".gitignore"
    if not ignore.exists():
        try:
            ignore.write_text("# recuerdo state: memories are data, not source\n*\n")
        except OSError as exc:
            ignore.unlink(missing_ok=True)
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise StorageFull(f"the disk is full: cannot write {ignore}") from exc
            raise StoreError(f"cannot write {ignore}: {exc}") from exc


def sanitize_name(text: str, fallback: str = "memory") -> str:
    """Turn any text (a script's file stem, say) into a valid memory name."""
    cleaned = re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-")[:MAX_NAME_LENGTH]
    return cleaned or fallback
