"""Opening a SQLite file safely: modes, a version check before any write, damage on record.

A new file is created 0600 (SQLite gives its ``-wal`` and ``-shm`` the database file's mode);
a looser mode found on open is tightened, with a warning. A file is checked before anything is
written to it: a newer schema is refused (``store_too_new``), a damage mark left by an earlier
process is honoured, and a small file is checked whole (``PRAGMA quick_check``; large ones are
checked in the background, see :mod:`.health`). A file this call created is removed again when
opening fails (a full disk leaves no empty file behind).
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import stat
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...errors import StorageFull, StoreDamaged, StoreError
from ..unspaced import folded_or_none, indexed_or_none, words_of
from .driver import sqlite3
from .folded_trigrams_schema import folded_extras

log = logging.getLogger("recuerdo.store")

BUSY_TIMEOUT_MS = 30_000
FILE_MODE = 0o600
FOLDER_MODE = 0o700
DAMAGE_SUFFIX = "-damaged"
_SYNC_MODES = {"full": "FULL", "normal": "NORMAL", "extra": "EXTRA"}


def absolute(path: str) -> str:
    return os.path.abspath(path)


def _sync_mode() -> str:
    """``RECUERDO_SYNC`` may relax durability (``normal``) for throwaway stores; FULL otherwise."""
    return _SYNC_MODES.get(os.environ.get("RECUERDO_SYNC", "full").lower(), "FULL")


def _fold(text: str | None) -> str | None:
    return None if text is None else text.casefold()


def add_functions(conn: sqlite3.Connection) -> None:
    """The SQL functions the schema's triggers and queries call, which every connection to a
    store registers (one without them cannot delete a chunk or an item: ``recover``'s too)."""
    # Unicode-aware case folding for substring matches the trigram index cannot answer.
    conn.create_function("recuerdo_fold", 1, _fold, deterministic=True)
    # What the trigram index holds of an entry beside its text (folded_trigrams_schema.py).
    conn.create_function("recuerdo_folded_extras", 1, folded_extras, deterministic=True)
    # A text as the words index is given it (unspaced_words.py), for the delete triggers.
    conn.create_function("recuerdo_words", 1, indexed_or_none, deterministic=True)
    # The same with width forms folded first (width_words.py), for the triggers since m048.
    conn.create_function("recuerdo_folded_words", 1, folded_or_none, deterministic=True)
    # The same with Thai, Lao, Khmer and Myanmar as their letters (unmarked_words.py), since
    # m049.
    conn.create_function("recuerdo_unmarked_words", 1, words_of, deterministic=True)


def raw_connection(path: str, *, read_only: bool = False) -> sqlite3.Connection:
    """A connection with the per-connection settings only (nothing written to the file)."""
    try:
        conn = sqlite3.connect(
            path,
            isolation_level=None,  # we issue BEGIN/COMMIT ourselves
            check_same_thread=False,
            timeout=BUSY_TIMEOUT_MS / 1000,
            uri=path.startswith("file:"),
        )
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open the memory at {path}: {exc}") from exc
    conn.row_factory = sqlite3.Row
    add_functions(conn)
    try:
        _configure(conn, read_only)
    except sqlite3.DatabaseError as exc:
        conn.close()
        if getattr(exc, "sqlite_errorcode", 0) & 0xFF in (
            sqlite3.SQLITE_NOTADB,
            sqlite3.SQLITE_CORRUPT,
        ):
            # The memory's own file, unreadable from its first page (its header lost): damaged,
            # not unavailable (a 503 that says "try again" never helps). Nothing is written.
            from .connection import damaged_detail

            raise StoreDamaged(
                damaged_detail(f"the database file at {path} is damaged ({exc})")
            ) from exc
        raise StoreError(f"cannot open the memory at {path}: {exc}") from exc
    return conn


WRITER_CACHE_KIB = -8192
READER_CACHE_KIB = -8192
"""Negative: KiB (SQLite's convention)."""


def _configure(conn: sqlite3.Connection, read_only: bool) -> None:
    for pragma in (
        f"busy_timeout={BUSY_TIMEOUT_MS}",
        "foreign_keys=ON",
        "secure_delete=ON",
        "temp_store=MEMORY",
        # After a checkpoint, give the WAL's space back beyond 64 MiB (bulk loads grow it).
        "journal_size_limit=67108864",
        f"synchronous={_sync_mode()}",
    ):
        conn.execute(f"PRAGMA {pragma}")
    # Pages kept per connection: a server holds one reader per thread, each caching its own
    # copy of the same pages, and the OS keeps the file cached once besides (a page missed
    # here is a read from memory, not from disk). At 10,000 notes a server's peak went
    # 245 -> 240 MiB with 8 MiB readers. The writer kept 32 MiB for bulk loads, about 20 MiB
    # of a 10,000-note server; at 8 MiB, 30,000 entries written and indexed took the same CPU
    # (5.6 s against 5.8 s, 4 runs each; docs/decisions/0031) (issue 17, item 9).
    conn.execute(f"PRAGMA cache_size={READER_CACHE_KIB if read_only else WRITER_CACHE_KIB}")
    if read_only:
        conn.execute("PRAGMA query_only=ON")


def connect(path: str, *, read_only: bool = False) -> sqlite3.Connection:
    """A connection to a file already checked (or ``:memory:``), in WAL mode."""
    conn = raw_connection(path, read_only=read_only)
    if path != ":memory:":
        try:
            _set_wal(conn)
        except BaseException:
            conn.close()
            raise
    return conn


def _set_wal(conn: sqlite3.Connection) -> None:
    # Switching to WAL needs a moment of exclusive access; another process opening the same
    # new file at the same instant can make it report busy once, so ask again.
    for _ in range(50):
        try:
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        except sqlite3.OperationalError as exc:
            if "full" in str(exc):
                raise StorageFull(f"the disk is full: the memory cannot be opened ({exc})") from exc
            mode = ""
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot open the memory: {exc}") from exc
        if str(mode).lower() == "wal":
            return
        threading.Event().wait(0.05)
    raise StoreError("could not switch the database to WAL mode (is the file on a network share?)")


def _companions(path: str) -> list[Path]:
    return [Path(path + suffix) for suffix in ("", "-wal", "-shm")]


def secure_folder(folder: Path) -> None:
    """Make ``folder`` (and create it) private to its owner; tighten a looser one, saying so."""
    if not folder.exists():
        try:
            folder.mkdir(parents=True, mode=FOLDER_MODE)
        except FileExistsError:
            pass
        except OSError as exc:
            raise _os_error(exc, f"cannot create {folder}") from exc
    _tighten(folder, FOLDER_MODE)


def _tighten(path: Path, mode: int) -> None:
    try:
        current = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return
    if current & ~mode:
        try:
            path.chmod(mode)
        except OSError as exc:  # not ours to change: say so, and go on
            log.warning(
                "recuerdo: %s is mode %o and could not be made %o: %s", path, current, mode, exc
            )
            return
        log.warning(
            "recuerdo: %s was mode %o, readable by others; it is now %o", path, current, mode
        )


def _os_error(exc: OSError, what: str) -> StoreError:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return StorageFull(f"the disk is full: {what} ({exc.strerror})")
    return StoreError(f"{what}: {exc}")


def damage_mark(path: str) -> Path:
    return Path(path + DAMAGE_SUFFIX)


def write_damage_mark(path: str, detail: str) -> None:
    """Record damage beside the file, so every later process refuses it at once."""
    with contextlib.suppress(OSError):  # the mark is a shortcut; each open checks anyway
        mark = damage_mark(path)
        fd = os.open(mark, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
        with os.fdopen(fd, "w") as out:
            json.dump({"detail": detail}, out)


def clear_damage_mark(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        damage_mark(path).unlink()


def recorded_damage(path: str) -> str | None:
    mark = damage_mark(path)
    if not mark.exists():
        return None
    try:
        return str(json.loads(mark.read_text())["detail"])
    except (OSError, ValueError, KeyError):
        return "the database file was found damaged earlier"


def open_checked(
    path: str, schema: Any, image: Callable[[], bytes] | None = None
) -> tuple[sqlite3.Connection, bool]:
    """The writer connection of a file, and whether this call made the file from ``image``
    (a new store's bytes): created 0600 when new; refused when damaged or written by a newer
    recuerdo, before anything is written to it."""
    from . import health
    from .connection import damaged_detail

    folder = Path(path).parent
    if not folder.exists():
        secure_folder(folder)  # a folder made here is private; an existing one is the caller's
    created = _create(path, image)
    try:
        for companion in _companions(path):
            _tighten(companion, FILE_MODE)
        damage = recorded_damage(path)
        if damage is not None:
            raise StoreDamaged(damaged_detail(damage))
        conn = raw_connection(path)
        try:
            health.check_before_use(conn, path, schema)
            _set_wal(conn)
        except BaseException:
            conn.close()
            raise
        return conn, created == WHOLE
    except BaseException:
        # An empty file goes again (a full disk leaves none behind); a whole one is a store,
        # which another process may already be using.
        if created == EMPTY:
            for companion in _companions(path):
                with contextlib.suppress(FileNotFoundError):
                    companion.unlink()
        raise


EMPTY, WHOLE = "empty", "whole"
# Where a file system has no hard links, a new file is made empty and its opening transaction
# writes the schema (store/sqlite/fresh.py).
_NO_LINKS = (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV, errno.EMLINK, errno.ENOSYS)


def _create(path: str, image: Callable[[], bytes] | None = None) -> str | None:
    """Create the file 0600 if it does not exist: ``WHOLE`` when it was made from ``image``,
    ``EMPTY`` when made empty, None when it existed. The image is written beside the file and
    linked to its name, so no other process ever opens it half written; two processes
    creating the same file at once get one file, made by one of them."""
    if image is not None and not os.path.lexists(path):
        made = _create_whole(path, image)
        if made is not None:
            return WHOLE if made else None
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return None
    except OSError as exc:
        raise _os_error(exc, f"cannot create the memory at {path}") from exc
    os.close(fd)
    return EMPTY


def _create_whole(path: str, image: Callable[[], bytes]) -> bool | None:
    """Whether this call linked a new store's bytes to ``path`` (False: the file was there
    first); None where the file system cannot link (the caller makes it empty instead)."""
    data = image()  # before any file is made: its errors are not the memory folder's
    made = _link_unnamed(path, data)
    return _link_draft(path, data) if made is None else made


def _link_unnamed(path: str, data: bytes) -> bool | None:
    """Through an unnamed file in the folder (Linux's O_TMPFILE): a process that dies before
    the link leaves nothing behind. None where that cannot be done."""
    unnamed = getattr(os, "O_TMPFILE", 0)
    if not unnamed:
        return None
    try:
        fd = os.open(os.path.dirname(path) or ".", unnamed | os.O_WRONLY, FILE_MODE)
    except OSError:  # EISDIR, EOPNOTSUPP...: a file system or kernel without it
        return None
    try:
        _write_synced(fd, data, path)
        _link_from_proc(f"/proc/self/fd/{fd}", path)
    except FileExistsError:
        return False
    except OSError as exc:
        if exc.errno in _NO_LINKS or exc.errno == errno.ENOENT:  # ENOENT: no /proc
            return None
        raise _os_error(exc, f"cannot create the memory at {path}") from exc
    finally:
        os.close(fd)
    return True


def _link_draft(path: str, data: bytes) -> bool | None:
    """Through a draft beside the file, with a name of its own, removed after the link."""
    folder, name = os.path.split(path)
    try:
        fd, draft = tempfile.mkstemp(dir=folder or ".", prefix=f".{name}-new-")  # 0600
    except OSError:
        return None
    try:
        try:
            _write_synced(fd, data, path)
        finally:
            os.close(fd)
        os.link(draft, path)
    except FileExistsError:
        return False
    except OSError as exc:
        if exc.errno in _NO_LINKS:
            return None
        raise _os_error(exc, f"cannot create the memory at {path}") from exc
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(draft)
    return True


def _write_synced(fd: int, data: bytes, path: str) -> None:
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)  # the name never points at bytes not yet on disk
    except OSError as exc:
        raise _os_error(exc, f"cannot create the memory at {path}") from exc


def _link_from_proc(source: str, path: str) -> None:
    """``ln source path`` through the symbolic link ``source`` is (a ``/proc/self/fd`` entry):
    only ``linkat`` with a folder's descriptor follows it (``os.link`` alone calls ``link``)."""
    folder = os.open(os.path.dirname(path) or ".", os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.link(source, os.path.basename(path), dst_dir_fd=folder, follow_symlinks=True)
    finally:
        os.close(folder)


def secure_file(path: Path) -> None:
    """A file of ours beside the memories (the token database): private to its owner."""
    _tighten(path, FILE_MODE)
