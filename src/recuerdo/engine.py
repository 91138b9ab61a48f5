"""The :class:`Memory` facade: the only object the doors (CLI, MCP, HTTP, profiles) use.

A memory is opened by name with :func:`open_memory` (``recuerdo.open``). Its methods are the
verbs of :mod:`recuerdo.verbs`; each call is one transaction, committed durably before it
returns. ``memory.agent(name)`` is a view that writes under the agent's name and reads its own
entries by default, as agents sharing one memory expect.
"""

from __future__ import annotations

import os

from . import entries as entry_ops
from .api.code import CodeSources, CodeVerbs
from .api.entries import EntryVerbs
from .api.knowledge import KnowledgeVerbs
from .api.notes import NoteVerbs
from .api.retrieval import RetrievalVerbs
from .api.work import WorkVerbs
from .declare import prepare_state_dir, state_path, validate_name
from .errors import InvalidInput
from .maintenance import upkeep_for
from .retrieval.audit import AuditLog
from .security import caps
from .store.base import Store
from .store.sqlite import SQLiteStore
from .text import checked_label
from .upkeep import Upkeep

LOCAL_TENANT = "local"
MAIN_SOURCE = "main"


class Memory(EntryVerbs, NoteVerbs, RetrievalVerbs, KnowledgeVerbs, WorkVerbs, CodeVerbs):
    """One declared memory, as seen by one writer (``main`` or an agent)."""

    def __init__(
        self,
        store: Store,
        *,
        name: str,
        tenant: str = LOCAL_TENANT,
        source: str = MAIN_SOURCE,
        is_agent: bool = False,
        owns_store: bool = True,
        upkeep: Upkeep | None = None,
        audit: AuditLog | None = None,
        code: CodeSources | None = None,
    ) -> None:
        self._store = store
        self._audit = audit if audit is not None else AuditLog()
        self._upkeep = upkeep if upkeep is not None else upkeep_for(store, self._audit)
        self._code = code if code is not None else CodeSources()
        self.name = name
        self.tenant = tenant
        self.source = source
        self.is_agent = is_agent
        self._owns_store = owns_store

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def location(self) -> str:
        """Where the state lives: the database file, or ``:memory:``."""
        return self._store.location

    def agent(self, name: str) -> Memory:
        """A view of this memory for agent ``name``: it writes entries with ``source=name``
        and its ``recall`` reads the agent's own entries unless ``from_`` says otherwise."""
        agent_name = checked_label(name, "agent name", max_chars=100)
        if agent_name == entry_ops.ALL_SOURCES:
            raise InvalidInput("'*' means every writer and cannot name an agent")
        return Memory(
            self._store,
            name=self.name,
            tenant=self.tenant,
            source=agent_name,
            is_agent=True,
            owns_store=False,
            upkeep=self._upkeep,
            audit=self._audit,
            code=self._code,
        )

    def for_tenant(self, tenant: str) -> Memory:
        """A view of this memory for another tenant (the doors use it for token holders)."""
        return Memory(
            self._store,
            name=self.name,
            tenant=checked_label(tenant, "tenant", max_chars=200),
            source=self.source,
            is_agent=self.is_agent,
            owns_store=False,
            upkeep=self._upkeep,
            audit=self._audit,
            code=self._code,
        )

    def for_principal(self, principal: str, tenant: str) -> Memory:
        """A view for a caller of the network doors: it writes as ``principal`` and reads and
        writes only ``tenant``'s memory (reads are not limited to its own entries)."""
        return Memory(
            self._store,
            name=self.name,
            tenant=checked_label(tenant, "tenant", max_chars=600),
            source=checked_label(principal, "principal", max_chars=200),
            owns_store=False,
            upkeep=self._upkeep,
            audit=self._audit,
            code=self._code,
        )

    def close(self) -> None:
        """Finish pending index upkeep and release the store (views leave it open)."""
        if self._owns_store:
            try:
                self._upkeep.stop(drain=True)
            finally:
                self._store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        who = f" agent={self.source!r}" if self.is_agent else ""
        return f"<recuerdo.Memory {self.name!r}{who} at {self.location}>"


def open_memory(
    name: str,
    *,
    base_dir: str | os.PathLike[str] | None = None,
    in_memory: bool = False,
) -> Memory:
    """Open (creating on first use) the memory declared as ``name``.

    State lives at ``<base>/.recuerdo/state/<name>.db`` where ``<base>`` is ``base_dir``, else
    ``$RECUERDO_STATE_DIR``, else the current directory. ``in_memory=True`` keeps it in RAM for
    this process only. The name and the host ceiling (``RECUERDO_CAPS``) are checked before
    anything is created.
    """
    validate_name(name)
    caps.check_memory_allowed(name)
    if in_memory:
        return Memory(SQLiteStore(None), name=name)
    path = state_path(name, base_dir)
    prepare_state_dir(path)
    memory = Memory(SQLiteStore(str(path)), name=name)
    if memory._upkeep.backlog():
        memory._upkeep.poke()  # a process that ended early left rows to index
    return memory
