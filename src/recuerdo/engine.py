"""The :class:`Memory` facade: the only object the doors (CLI, MCP, HTTP, profiles) use.

A memory is opened by name with :func:`open_memory` (``recuerdo.open``). Its methods are the
verbs of :mod:`recuerdo.verbs`, defined once in each family's facade mixin; each call is one
transaction, committed durably before it returns. ``memory.agent(name)`` is a view that writes
under the agent's name and reads its own entries by default, as agents sharing one memory expect.

An open memory owns its state: the store, the background upkeep, the retrieval audit buffer,
the meaning stage (embedder, vectors in memory, query cache), the code sources and the mail
domains it serves. Views share their memory's state; two memories never share any (a model's
read-only weights aside).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .code.facade import CodeSources, CodeVerbs
from .comms.facade import CommsVerbs, MailDomains
from .core.audit import AuditLog
from .core.declare import (
    NAME_PATTERN,
    prepare_state_dir,
    sanitize_name,
    state_path,
    state_root,
    validate_name,
)
from .core.items import check_reach, check_whole
from .core.secrets import redact_text
from .core.text import checked_label
from .core.upkeep import Claimed, Upkeep
from .entries.facade import EntryVerbs
from .entries.writers import MAIN_SOURCE, check_agent_name, owners_writer
from .errors import InvalidInput, MemoryNotFound, ReservedWriterName
from .graph.facade import KnowledgeVerbs
from .index import chunks, vectors
from .index.meaning import EmbedderChoice, Meaning
from .ingest.facade import IngestVerbs
from .mirror.facade import MirrorVerbs
from .notes.browsing import NoteBrowsingVerbs
from .notes.category_verbs import CategoryVerbs
from .notes.facade import NoteVerbs
from .notes.files import NoteFiles
from .notes.pins import PinVerbs
from .notes.text import redact_private
from .retrieval.facade import RetrievalVerbs
from .security import caps
from .store import archive, backup_files
from .store.base import Store, Tx
from .store.sqlite import SQLiteStore
from .work.facade import WorkVerbs

__all__ = [
    "LOCAL_TENANT",
    "MAIN_SOURCE",
    "Memory",
    "check_agent_name",
    "check_memory",
    "memory_exists",
    "memory_names",
    "missing_memory",
    "open_memory",
    "owners_writer",
    "prepare_state_dir",
    "recover_memory",
    "restore_memory",
    "sanitize_name",
    "state_root",
    "state_size",
    "stored_text",
    "validate_name",
]

LOCAL_TENANT = "local"
SIMILAR = 60  # rapidfuzz ratio (0-100) from which a memory name is offered for a typo
DATABASE_URL_ENV = "RECUERDO_DATABASE_URL"
"""A PostgreSQL URL: memories live in that database (one schema each) instead of files."""


@dataclass
class _Owned:
    """What one open memory owns, shared by every view of it."""

    store: Store
    audit: AuditLog
    meaning: Meaning
    upkeep: Upkeep
    owner_closes_store: bool
    code: CodeSources
    mail: MailDomains


def _in_write(store: Store, step: Callable[[Tx], int], durable: bool = True) -> Callable[[], int]:
    def run() -> int:
        with store.write(durable=durable) as tx:
            return step(tx)

    return run


def _upkeep(store: Store, audit: AuditLog, meaning: Meaning) -> Upkeep:
    """Trigram and chunk indexes, vectors (when a model is installed), orphaned vectors and
    the audit buffer. On close, everything but the model is finished in place."""

    def embed() -> int:
        embedder = meaning.embedder
        if embedder is None:
            return 0
        # Held while the batch is embedded: two servers never embed the same chunks.
        with store.claim(vectors.mark_name(embedder.name)) as mine:
            if not mine:
                raise Claimed("embedding")
            return meaning.paced(lambda: vectors.embed_backlog(store, embedder))

    def backlog() -> int:
        with store.read() as tx:
            return tx.substrings.waiting() + chunks.unchunked(tx)

    def collect_orphans() -> int:
        with meaning.erasing():  # the vectors also leave the saved index once this commits
            return _in_write(store, vectors.collect_orphans)()

    # Indexes are made again from the items they cover, so their transactions need not wait
    # for the disk (a machine crash may undo one; its work is redone): an update's re-cut then
    # costs no second sync. Collecting orphaned vectors erases, and stays durable.
    cutting = [
        _in_write(store, chunks.chunk_backlog, durable=False),
        _in_write(store, chunks.rechunk_backlog, durable=False),
    ]
    indexing = [
        _in_write(store, lambda tx: tx.substrings.catch_up(), durable=False),
        *cutting,
        collect_orphans,
    ]

    def claimed(steps: list[Callable[[], int]]) -> Callable[[], int]:
        # Processes sharing a store (servers on one database) take turns through the
        # database: the one holding the claim indexes, the others go on serving.
        def run() -> int:
            with store.claim("index") as mine:
                if not mine:
                    raise Claimed("indexing")
                return sum(step() for step in steps)

        return run

    index = claimed(indexing)
    cut = claimed(cutting)  # what a vector waits for: the newest items cut into chunks
    # The audit's records, which reads add too, are none of the rows the writes poked.
    audit_work = [lambda: audit.flush(store), lambda: audit.sweep(store)]
    # The words replaced chunks left in the index, which no search finds, are erased after a
    # pause of the writes (or in a share of the time when none comes, and at the close of a
    # process that wrote: decision 0073): each costs a rewrite of the index pages that hold it
    # (decision 0072).
    return Upkeep(
        [index],
        backlog,
        side_tasks=audit_work,
        idle_tasks=[embed],
        settle_tasks=[cut, embed],
        late_tasks=[store.erase_stale_words],
        rest_tasks=[store.rest],
    )


class Memory(
    EntryVerbs,
    WorkVerbs,
    NoteVerbs,
    CategoryVerbs,
    NoteBrowsingVerbs,
    NoteFiles,
    PinVerbs,
    RetrievalVerbs,
    CommsVerbs,
    KnowledgeVerbs,
    IngestVerbs,
    CodeVerbs,
    MirrorVerbs,
):
    """One declared memory, as seen by one writer (``main`` or an agent)."""

    def __init__(
        self,
        store: Store,
        *,
        name: str,
        embedder: EmbedderChoice = None,
        tenant: str = LOCAL_TENANT,
        source: str = MAIN_SOURCE,
        is_agent: bool = False,
        closes_store: bool = True,
        owner: bool = True,
        scopes: Sequence[str] | None = None,
        _owned: _Owned | None = None,
    ) -> None:
        self._is_view = _owned is not None
        if _owned is None:
            audit = AuditLog()
            audit.start(store)
            meaning = Meaning(embedder, store)
            _owned = _Owned(
                store,
                audit,
                meaning,
                _upkeep(store, audit, meaning),
                closes_store,
                CodeSources(),
                MailDomains(),
            )
        self._owned = _owned
        self._store = _owned.store
        self._audit = _owned.audit
        self._meaning = _owned.meaning
        self._upkeep = _owned.upkeep
        self._code = _owned.code
        self._mail = _owned.mail
        self.name = name
        self.tenant = tenant
        self.source = source
        self.is_agent = is_agent
        self.owner = owner
        self.scopes = None if scopes is None else tuple(scopes)

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def location(self) -> str:
        """Where the state lives: the database file, or ``:memory:``."""
        return self._store.location

    def _view(
        self,
        *,
        tenant: str,
        source: str,
        is_agent: bool,
        owner: bool = True,
        scopes: Sequence[str] | None = None,
    ) -> Memory:
        if self.scopes is not None and scopes is not None:
            # A view of a confined view is confined as much: for_principal(scopes=[another])
            # on a token's view reached that other scope in process.
            check_reach(self.scopes, True, list(scopes))
        return Memory(
            self._store,
            name=self.name,
            tenant=tenant,
            source=source,
            is_agent=is_agent,
            owner=self.owner and owner,
            scopes=self.scopes if scopes is None else scopes,
            _owned=self._owned,
        )

    def agent(self, name: str) -> Memory:
        """A view of this memory for agent ``name``: it writes entries with ``source=name``
        and its ``recall`` reads the agent's own entries unless ``from_`` says otherwise."""
        return self._view(tenant=self.tenant, source=check_agent_name(name), is_agent=True)

    def for_tenant(self, tenant: str) -> Memory:
        """A view of this memory for another tenant (the doors use it for token holders)."""
        return self._view(
            tenant=checked_label(tenant, "tenant", max_chars=200),
            source=self.source,
            is_agent=self.is_agent,
        )

    def for_principal(
        self,
        principal: str,
        tenant: str,
        *,
        owner: bool = False,
        scopes: Sequence[str] | None = None,
    ) -> Memory:
        """A view for a caller of the network doors: it writes as ``principal`` and reads and
        writes only ``tenant``'s memory (reads are not limited to its own entries). ``owner``:
        the caller is the memory's owner (a door's local, tokenless caller), not a token
        holder. ``scopes``: the only scopes it reaches (a token limited to them): it runs a verb
        only when the call names one of them, as the doors do, and reads their items only."""
        writer = checked_label(principal, "principal", max_chars=200)
        if not owner and owners_writer(writer):
            raise ReservedWriterName(
                f"a token's principal cannot be named {writer!r}: it is the owner's own writer"
            )
        return self._view(
            tenant=checked_label(tenant, "tenant", max_chars=600),
            source=writer,
            is_agent=False,
            owner=owner,
            scopes=None if scopes is None else [checked_label(s, "scope") for s in scopes],
        )

    def close(self) -> None:
        """Finish pending index upkeep and release the store (views leave it open)."""
        if self._is_view:
            return
        try:
            self._upkeep.stop(drain=True)
            self._meaning.close()
        finally:
            if self._owned.owner_closes_store:
                self._store.close()

    def compact(self) -> dict[str, Any]:
        """The owner's maintenance after deletions (on PostgreSQL 17 and later, also that of a
        role granted MAINTAIN on the memory's tables). On SQLite each full-text index is merged
        into one segment (later forgets then read less of it), and the file is written again
        without the pages deletions freed (VACUUM: other writers wait, and it needs memory
        about the file's size and free disk about twice it, for the write-ahead log). On
        PostgreSQL every GIN index of the memory is built again while reads and writes go on
        (a forgotten word stays a key of the words index until then: ``index_status`` says
        when a rebuild is owed, as ``backend.rebuild_owed``), and the planner's statistics,
        whose samples quote forgotten rows, are taken again, or cleared for an empty table
        (``statistics_cleared``; ``statistics_owed`` names those in use or that failed, and
        before PostgreSQL 18 those a role that does not own them leaves to the owner)."""
        return {"memory": self.name, **self._store.compact()}

    def backup(
        self,
        path: str | os.PathLike[str],
        *,
        raw: bool = False,
        progress: archive.Progress | None = None,
    ) -> dict[str, Any]:
        """Write the whole memory to ``path``: a portable archive (gzip JSON Lines of every
        table, whichever backend holds the memory; :func:`restore_memory` makes a new SQLite
        memory of it), or with ``raw`` a copy of the live store file (SQLite's online backup).
        Every tenant's data is in it: it is the owner's backup, not a door's. It is created
        0600, and replaces at ``path`` only an earlier archive (anything else there, such as a
        memory's own file, is :class:`Conflict`: nothing is written). Refused to a view confined
        to scopes."""
        check_whole(self.scopes, "backup")
        if raw:
            return backup_files.write_raw(self._store, Path(path))
        self._audit.flush(self._store)
        return backup_files.write_archive(
            self._store, Path(path), memory=self.name, progress=progress
        )

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        who = f" agent={self.source!r}" if self.is_agent else ""
        return f"<recuerdo.Memory {self.name!r}{who} at {self.location}>"


def stored_text(text: str, *, body: bool = True) -> str:
    """``text`` as a write stores it: credentials redacted and, in a note's ``body``,
    ``<private>`` spans replaced and ends trimmed (other text, such as a step's result, keeps
    them). Whoever compares text it wrote with what is stored (an import run again) compares
    this: the stored text never equals a source that held a credential or a private span."""
    if not body:
        return redact_text(text)
    return redact_private(redact_text(text)).strip()


def open_memory(
    name: str,
    *,
    base_dir: str | os.PathLike[str] | None = None,
    in_memory: bool = False,
    store: Store | None = None,
    embedder: EmbedderChoice = None,
    url: str | None = None,
    create: bool = True,
) -> Memory:
    """Open (creating on first use) the memory declared as ``name``.

    State lives at ``<base>/.recuerdo/state/<name>.db`` where ``<base>`` is ``base_dir``, else
    ``$RECUERDO_STATE_DIR``, else the current directory. ``url`` (else
    ``$RECUERDO_DATABASE_URL``), a ``postgresql://`` URL, keeps it in that database instead, as
    the schema ``recuerdo_<name>``, shared by every process given the same URL (the
    ``postgres`` extra). ``in_memory=True`` keeps it in RAM for this process only. ``store``
    runs it on a store you opened (any :class:`Store`; it is not closed with the memory).
    ``embedder`` is an object with every part of ``recuerdo.index.embed.Embedder``, or the name
    of a configured one (``none``, ``static``, ``minilm``, ``e5``, ``http``, ``auto``); by
    default ``RECUERDO_EMBEDDER`` decides.
    The name and the host ceiling (``RECUERDO_CAPS``) are checked before anything is created.
    With ``create=False`` (what the doors pass for a read) a memory that does not exist is
    :class:`MemoryNotFound`, naming the close names that do, and nothing is created.
    """
    validate_name(name)
    caps.check_memory_allowed(name)
    meaning = Meaning(embedder)  # a bad embedder name is refused before anything is created
    database = database_url(url) if store is None and not in_memory else None
    if store is not None:
        memory = Memory(store, name=name, embedder=meaning.choice, closes_store=False)
    elif database is not None:
        try:
            opened = _postgres(database, name, create=create)
        except MemoryNotFound:
            raise missing_memory(name, url=database) from None
        memory = Memory(opened, name=name, embedder=meaning.choice)
    elif in_memory:
        memory = Memory(SQLiteStore(None), name=name, embedder=meaning.choice)
    else:
        path = state_path(name, base_dir)
        if not create and not path.exists():
            raise missing_memory(name, base_dir)
        prepare_state_dir(path)
        # A restore that died left every tenant's data beside the memories, out of reach of
        # any forget; its lock is free once it is gone (decision 0135).
        backup_files.sweep_dead_restores(path.parent)
        memory = Memory(SQLiteStore(str(path)), name=name, embedder=meaning.choice)
    if memory._upkeep.backlog():
        memory._upkeep.poke(left=True)  # a process that ended early left rows to index
    return memory


def database_url(url: str | None = None) -> str | None:
    """The database memories live in: ``url``, else ``$RECUERDO_DATABASE_URL``; None for files.
    Only PostgreSQL URLs are understood."""
    chosen = url if url is not None else os.environ.get(DATABASE_URL_ENV) or None
    if chosen is None:
        return None
    if not chosen.startswith(("postgresql://", "postgres://")):
        raise InvalidInput(
            "a database URL starts with postgresql:// (PostgreSQL is the shared backend); "
            "leave it unset to keep memories in files"
        )
    return chosen


def _postgres_backend() -> Any:
    try:
        from .store import postgres
    except ImportError as exc:  # pragma: no cover - the extra is in every test install
        raise InvalidInput(
            "PostgreSQL needs the postgres extra: pip install 'recuerdo[postgres]'"
        ) from exc
    return postgres


def _postgres(url: str, name: str, *, create: bool = True) -> Store:
    store: Store = _postgres_backend().PostgresStore(url, name, create=create)
    return store


def restore_memory(
    name: str,
    path: str | os.PathLike[str],
    *,
    base_dir: str | os.PathLike[str] | None = None,
    url: str | None = None,
    progress: archive.Progress | None = None,
) -> dict[str, Any]:
    """Rebuild a new memory ``name`` from a backup archive: a store made at the archive's
    schema, every row loaded, the id sequences carried over, then the newer steps applied. The
    name must be new (nothing is overwritten). Given a PostgreSQL ``url`` (else
    ``$RECUERDO_DATABASE_URL``) the memory is made in that database, else as a file."""
    validate_name(name)
    caps.check_memory_allowed(name)
    header = archive.read_header(path)
    database = database_url(url)
    if database is None and state_path(name, base_dir).exists():
        raise backup_files.exists(name)
    archive.check_schema(header, SQLiteStore(None).schema_steps)
    if database is not None:
        loaded = backup_files.restore_postgres(database, name, path, header, progress)
    else:
        target = state_path(name, base_dir)
        prepare_state_dir(target)
        loaded = backup_files.restore_file(target, path, header, progress)
    with open_memory(name, base_dir=base_dir, url=database) as memory:  # the newer steps
        memory._upkeep.drain(tasks=[])
    return {"memory": name, "rows": loaded, "tables": header.tables, "from": header.memory}


def memory_names(
    base_dir: str | os.PathLike[str] | None = None, *, url: str | None = None
) -> list[str]:
    """The memories of a state dir (each ``<name>.db``), sorted; none when it does not exist.
    Given a PostgreSQL ``url``, those of that database instead (each a schema)."""
    if url is not None:
        names: list[str] = _postgres_backend().memory_names(url)
        return sorted(name for name in names if NAME_PATTERN.fullmatch(name))
    root = state_root(base_dir)
    if not root.is_dir():
        return []
    return sorted(
        path.stem
        for path in root.glob("*.db")
        if path.is_file() and NAME_PATTERN.fullmatch(path.stem)
    )


def memory_exists(
    name: str, base_dir: str | os.PathLike[str] | None = None, *, url: str | None = None
) -> bool:
    """Whether the memory ``name`` has a file in the state dir (or, given a PostgreSQL
    ``url``, a schema in that database)."""
    if url is not None:
        return name in memory_names(url=url)
    return state_path(name, base_dir).exists()


def missing_memory(
    name: str,
    base_dir: str | os.PathLike[str] | None = None,
    *,
    url: str | None = None,
    reachable: Callable[[str], bool] | None = None,
) -> MemoryNotFound:
    """The refusal of a read on a memory that does not exist: it names the existing memories
    closest to ``name`` (a typo is the usual cause), only among those the caller may reach."""
    from rapidfuzz import fuzz, process

    names = [n for n in memory_names(base_dir, url=url) if reachable is None or reachable(n)]
    close = [
        found
        for found, _, _ in process.extract(
            name, names, scorer=fuzz.ratio, limit=3, score_cutoff=SIMILAR
        )
    ]
    hint = f" Did you mean {' or '.join(repr(n) for n in close)}?" if close else ""
    return MemoryNotFound(
        f"no memory named {name!r}: a read never creates one (a write does).{hint}",
        suggestions=close,
    )


def state_size(name: str, base_dir: str | os.PathLike[str] | None = None) -> int:
    """Bytes a memory takes on disk: its file, its write-ahead log and the saved index of its
    vectors (``<file>-vectors/``, which can outweigh the file)."""
    path = state_path(name, base_dir)
    parts = [path, path.with_name(path.name + "-wal")]
    with contextlib.suppress(OSError):
        parts += [p for p in path.with_name(path.name + "-vectors").iterdir() if p.is_file()]
    total = 0
    for part in parts:
        with contextlib.suppress(FileNotFoundError):
            total += part.stat().st_size
    return total


def check_memory(
    name: str, *, base_dir: str | os.PathLike[str] | None = None, url: str | None = None
) -> dict[str, Any]:
    """The health of a memory's file, read without opening it as a memory (so a damaged one can
    be examined): integrity, the full-text indexes against their tables, chunks, vectors and
    index marks. A damage mark left by an earlier process is cleared when the file is whole, and
    set when it is not. Given a PostgreSQL ``url`` (else ``$RECUERDO_DATABASE_URL``), the
    memory of that database: its tallies, chunks, vectors and folded copies. ``dead_restores``
    names the scratch copies restores that died left beside it (every tenant's data): the next
    open of a memory file there, or the next restore, removes them (decision 0135)."""
    from .store.sqlite.health import examine

    validate_name(name)
    database = database_url(url)
    if database is not None:
        try:
            store = _postgres(database, name, create=False)
        except MemoryNotFound:
            raise missing_memory(name, url=database) from None
        try:
            report = {"path": store.location, **store.check()}
        finally:
            store.close()
        return {**report, "dead_restores": backup_files.dead_restore_schemas(database)}
    path = state_path(name, base_dir)
    if not path.exists():
        raise MemoryNotFound(f"no memory named {name!r} at {path}")
    return {**examine(str(path)), "dead_restores": backup_files.dead_restores(path.parent)}


def recover_memory(
    name: str,
    target: str | os.PathLike[str],
    *,
    base_dir: str | os.PathLike[str] | None = None,
    url: str | None = None,
) -> dict[str, Any]:
    """Copy what is readable of a (damaged) memory into a new store at ``target``, reporting
    per table what was recovered and what was lost. A memory file's: a PostgreSQL memory
    (``url``, else ``$RECUERDO_DATABASE_URL``) is refused, its pages are the server's."""
    from .store.sqlite.recover import recover_file

    validate_name(name)
    if database_url(url) is not None:
        raise InvalidInput(
            "recover salvages a damaged memory file; a PostgreSQL memory's pages are the "
            "server's to repair (its own tools), and `backup` copies what it holds. Nothing "
            "was written."
        )
    path = state_path(name, base_dir)
    if not path.exists():
        raise MemoryNotFound(f"no memory named {name!r} at {path}")
    return recover_file(path, os.fspath(target))
