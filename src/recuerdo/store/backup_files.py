"""Where a backup is written and where a restore lands (decision 0121).

A backup is written beside its target under ``<name>.partial``, created 0600 (it holds every
tenant's data, as the memory's own file does), and moved over the target only once whole. The
target may be new, or an earlier archive: anything else that is there (the memory's own file,
another memory, a document, a directory, a device) is refused before anything is written, since
the move would replace it. A raw copy replaces no file at all: an earlier raw copy cannot be told
from a memory in use.

A restore builds the new memory under a name nobody uses, and gives it its name in one step
(a file moved in place; a PostgreSQL schema renamed), so a memory is never seen half restored
and a restore that fails leaves nothing behind.
"""

from __future__ import annotations

import fcntl
import os
import re
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from ..errors import Conflict, InvalidInput, RecuerdoError, StoreError
from . import archive, durable_files
from .base import Store
from .sqlite import SQLiteStore


def check_target(target: Path, *, raw: bool, memory: str = "") -> None:
    """Refuse a target the backup would replace and must not (nothing is written yet): an
    archive of another memory is that memory's backup, not this one's to replace."""
    if not target.parent.is_dir():
        # Said before anything is read: the open failed with a traceback naming the
        # .partial file (SQLite's copy: "unable to open database file").
        raise InvalidInput(f"no folder {str(target.parent)!r} to write the backup in")
    if not os.path.lexists(target):
        return
    if raw:
        raise Conflict(
            f"{str(target)!r} exists: a raw copy replaces no file (an earlier copy cannot be "
            "told from a memory in use); remove it or name a new file. Nothing was written."
        )
    if target.is_file() and not target.is_symlink():
        try:
            earlier = archive.read_header(target).memory
        except RecuerdoError:
            pass
        else:
            if not earlier or not memory or earlier == memory:
                return  # an earlier archive, replaced whole once the new one is
            raise Conflict(
                f"{str(target)!r} is a backup of the memory {earlier!r}, not of {memory!r}: a "
                "backup replaces only an earlier archive of its own memory; name a new file. "
                "Nothing was written."
            )
    raise Conflict(
        f"{str(target)!r} exists and is not a recuerdo backup archive: a backup replaces only "
        "an earlier archive (never a memory's file or another file); name a new file. Nothing "
        "was written."
    )


def _partial(target: Path) -> Path:
    return target.with_name(target.name + ".partial")


def _private(path: Path) -> int:
    """A new empty file only its owner may read (whatever the umask), open for writing."""
    path.unlink(missing_ok=True)  # an earlier run's leftover: its mode is not ours to trust
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)


@contextmanager
def _replacing(target: Path) -> Iterator[Path]:
    """The partial file to write; moved over ``target`` when the block ends normally, removed
    (with a journal SQLite left beside it) when it raises: a backup is whole or absent."""
    partial = _partial(target)
    try:
        yield partial
        durable_files.replace(partial, target)  # a backup cut by a power cut: decision 0164
    except BaseException:
        for leftover in (partial, partial.with_name(partial.name + "-journal")):
            leftover.unlink(missing_ok=True)
        raise


def write_archive(
    store: Store, target: Path, *, memory: str, progress: archive.Progress | None
) -> dict[str, Any]:
    check_target(target, raw=False, memory=memory)
    with _replacing(target) as partial:
        out: IO[bytes]
        with os.fdopen(_private(partial), "wb") as out, store.read() as tx:
            written = archive.write(
                tx, store.archive, out, schema=store.schema_steps, memory=memory, progress=progress
            )
    return {"path": str(target), "bytes": target.stat().st_size, **written}


def write_raw(store: Store, target: Path) -> dict[str, Any]:
    check_target(target, raw=True)
    with _replacing(target) as partial:
        os.close(_private(partial))  # SQLite writes its copy into the empty file, mode kept
        store.copy_to(str(partial))  # type: ignore[attr-defined]
    return {"path": str(target), "bytes": target.stat().st_size, "raw": True}


def restore_file(
    target: Path, path: str | os.PathLike[str], header: archive.Header, progress: Any
) -> int:
    """Load the archive into a new file, linked at ``target`` once whole. The file is this
    restore's own (two restores of one name at once shared one: the loser's cleanup removed the
    winner's, which then said it restored the memory into an empty file), and the link fails
    rather than replace a memory made meanwhile."""
    sweep_dead_restores(target.parent)
    partial, held = scratch_copy(target)
    try:
        store = SQLiteStore(str(partial), steps=len(header.schema))
        try:
            with store.write() as tx:
                loaded = archive.load(tx, store.archive, path, header, progress=progress)
        except BaseException:
            store.close()
            _remove_copy(partial)
            raise
        store.close()
        try:
            _place(partial, target)
        finally:
            _remove_copy(partial)
    finally:
        os.close(held)
    return loaded


_SCRATCH_FILE = re.compile(r"\..+\.db\.restoring-[0-9a-f]{12}")


CLAIMS = 5


def scratch_copy(target: Path) -> tuple[Path, int]:
    """A new scratch file for a restore into ``target``, created and locked (decision 0128):
    its path and the descriptor holding the lock for the restore's life. Created and locked
    before SQLite opens it, so a sweep never finds it unlocked while the restore runs
    (``flock`` is apart from SQLite's own ``fcntl`` locks on Linux and macOS). A sweep (an
    open's, another restore's) may take the lock in the moment between the create and the
    lock and remove the file: the restore then went on with a path naming no file, where
    SQLite made a copy of its own, unlocked. Such a claim is let go and another name taken
    (0135)."""
    for _ in range(CLAIMS):
        partial = target.with_name(f".{target.name}.restoring-{secrets.token_hex(6)}")
        held = _claimed(partial)
        if held is not None:
            return partial, held
    raise Conflict(
        f"sweeps of dead restores removed this restore's copy {CLAIMS} times as it began: "
        "run the restore again. Nothing was written."
    )


def _claimed(partial: Path) -> int | None:
    """The descriptor locking ``partial``, created here; None when a sweep took it first."""
    fd = os.open(partial, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            ours = _names(partial, fd)
        except BlockingIOError:
            ours = False  # a sweep holds it, and is about to remove it
    except BaseException:
        ours = False
        raise
    finally:
        if not ours:
            if _names(partial, fd):
                partial.unlink(missing_ok=True)
            os.close(fd)
    return fd if ours else None


def _names(path: Path, fd: int) -> bool:
    """Whether ``path`` still names the file open at ``fd``."""
    try:
        found = os.stat(path)
    except OSError:
        return False
    held = os.fstat(fd)
    return (found.st_dev, found.st_ino) == (held.st_dev, held.st_ino)


def sweep_dead_restores(folder: Path) -> list[str]:
    """Remove the scratch copies of restores that died (killed mid-load): each holds every
    tenant's data, out of reach of any forget. A copy whose lock is held is a live restore's.
    A restore of an older release held no lock: its copy is swept too, as it was left anyway
    when that restore ended (its copy is linked at the memory's name first). The names of the
    copies removed."""
    return [scratch.name for scratch in _dead_copies(folder, remove=True)]


def dead_restores(folder: Path) -> list[str]:
    """The scratch copies of restores that died, left where they are (``check`` names them)."""
    return [scratch.name for scratch in _dead_copies(folder, remove=False)]


# Never through a link, never waiting: a pipe under a scratch name hung every open of a
# memory beside it, as no writer came (0135 opens sweep; a restore's copy is a plain file).
_UNFOLLOWED = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK


def _dead_copies(folder: Path, *, remove: bool) -> Iterator[Path]:
    """The scratch copies of ``folder`` whose lock is free, removed first when ``remove``. Only
    plain files a restore could have made are looked at: a directory, a link or a pipe under
    such a name is someone else's, and a copy that cannot be removed is left (an open never
    fails for a sweep)."""
    try:
        names = sorted(
            entry.name
            for entry in os.scandir(folder)
            if _SCRATCH_FILE.fullmatch(entry.name) and entry.is_file(follow_symlinks=False)
        )
    except OSError:
        return
    for name in names:
        scratch = folder / name
        try:
            fd = os.open(scratch, _UNFOLLOWED)
        except OSError:
            continue  # gone meanwhile, a link, or not ours to open
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue  # replaced by something else since it was listed
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if remove:
                _remove_copy(scratch)
        except OSError:
            continue  # a restore still loading (its lock is held), or not ours to remove
        finally:
            os.close(fd)
        yield scratch


def _remove_copy(partial: Path) -> None:
    # Its name last: a removal stopped partway leaves it, for the next sweep to find the rest
    # (a companion is never looked for by itself).
    for suffix in ("-wal", "-shm", "-journal", ""):
        Path(f"{partial}{suffix}").unlink(missing_ok=True)


def _place(partial: Path, target: Path) -> None:
    """``partial`` becomes ``target`` unless a memory is there (made meanwhile: it stays)."""
    try:
        os.link(partial, target)  # atomic, and never replaces
    except FileExistsError:
        raise exists(target.stem) from None
    except OSError:  # a file system without hard links: checked, then moved
        if target.exists():
            raise exists(target.stem) from None
        os.replace(partial, target)
    durable_files.sync_folder(target.parent)  # the restored memory's name too (decision 0164)


def exists(name: str) -> Conflict:
    return Conflict(
        f"a memory named {name!r} exists already: restore makes a new memory (choose "
        "another name, or move the existing one away first)"
    )


# A scratch schema's name is no memory's (a memory's has no '$'; an identifier may hold one
# unquoted, as `regnamespace` reads it): it is never listed or opened as a memory, neither while
# it loads nor when a restore that died left it behind.
SCRATCH = "restoring$"


def restore_postgres(
    url: str, name: str, path: str | os.PathLike[str], header: archive.Header, progress: Any
) -> int:
    """Load the archive into a new schema of the database at ``url``, renamed to the memory's
    once whole (a schema's objects keep their identity through a rename)."""
    import psycopg

    from .postgres import PostgresStore, memory_names
    from .postgres.schemas import schema_name

    schema = schema_name(name)  # a name too long for PostgreSQL is refused before the load
    if name in memory_names(url):
        raise exists(name)
    scratch_name = f"{SCRATCH}{secrets.token_hex(6)}"  # short: a schema's name has 63 bytes
    scratch = schema_name(scratch_name)
    with psycopg.connect(url, autocommit=True) as guard:
        # Held while this restore runs (the server lets it go if the process dies): a scratch
        # schema whose lock is free was left by a restore that died, and is dropped here.
        guard.execute(_HOLD, [_scratch_key(scratch)])
        _drop_abandoned(guard)
        store = PostgresStore(url, scratch_name, steps=len(header.schema))
        try:
            with store.write() as tx:
                loaded = archive.load(tx, store.archive, path, header, progress=progress)
        except BaseException:
            store.drop()
            raise
        store.close()
        renamed = False
        try:
            renamed = _rename_schema(guard, scratch, schema)
        finally:
            if not renamed:  # refused or failed: the scratch copy goes, whole
                _drop_schema(guard, scratch)
    if not renamed:
        raise exists(name)
    return loaded


_HOLD = "SELECT pg_advisory_lock(hashtextextended(%s, 0))"


def _scratch_key(schema: str) -> str:
    return f"recuerdo-restoring:{schema}"  # not the memory's write lock, which the load takes


def _drop_abandoned(conn: Any) -> None:
    """Drop the scratch schemas of restores that died (every tenant's data, out of reach of
    any forget); those of restores under way hold their lock and are kept."""
    _abandoned_schemas(conn, drop=True)


def dead_restore_schemas(url: str) -> list[str]:
    """The scratch schemas of restores that died in the database at ``url``, left where they
    are (``check`` names them; the next restore into the database drops them)."""
    import psycopg

    from .postgres.pool import redact

    try:
        with psycopg.connect(url, autocommit=True) as conn:
            return _abandoned_schemas(conn, drop=False)
    except psycopg.Error as exc:
        raise StoreError(f"cannot reach the database at {redact(url)}: {exc}") from exc


def _abandoned_schemas(conn: Any, *, drop: bool) -> list[str]:
    import psycopg

    from .postgres.connection import _END_CLAIM, _TRY_CLAIM
    from .postgres.pool import _quote
    from .postgres.schemas import SCHEMA_PREFIX

    found = conn.execute(
        "SELECT nspname FROM pg_namespace WHERE starts_with(nspname, %s) ORDER BY nspname",
        [SCHEMA_PREFIX + SCRATCH],
    ).fetchall()
    dead = []
    for (schema,) in found:
        if not conn.execute(_TRY_CLAIM, [_scratch_key(schema)]).fetchone()[0]:
            continue
        dead.append(schema)
        try:
            if drop:
                conn.execute(f"DROP SCHEMA IF EXISTS {_quote(schema)} CASCADE")
        except psycopg.Error:
            pass  # another role's: its owner's to drop
        finally:
            conn.execute(_END_CLAIM, [_scratch_key(schema)])
    return dead


def _rename_schema(conn: Any, scratch: str, schema: str) -> bool:
    """Give the restored schema its memory's name, unless a memory took it meanwhile: under
    the memory's lock, which its creation takes too (on the restore's own connection)."""
    from .postgres.pool import _quote, lock_key

    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [lock_key(schema)])
        if conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", [schema]).fetchone():
            return False
        conn.execute(f"ALTER SCHEMA {_quote(scratch)} RENAME TO {_quote(schema)}")
    return True


def _drop_schema(conn: Any, schema: str) -> None:
    from .postgres.pool import _quote

    conn.execute(f"DROP SCHEMA IF EXISTS {_quote(schema)} CASCADE")
