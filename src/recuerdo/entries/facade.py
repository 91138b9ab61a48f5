"""Entry verbs: quick facts with categories, tags and writer namespaces."""

from __future__ import annotations

from collections.abc import Sequence

from ..core.text import checked_label
from ..errors import (
    ContentTooLarge,
    EmptyContent,
    InvalidBatch,
    InvalidCategory,
    InvalidTags,
    NotTheWriter,
)
from ..facade import MemoryBase, verb
from ..model import CATEGORIES, EntryIn, EntryList
from . import operations as entry_ops


class EntryVerbs(MemoryBase):
    @verb(
        "write",
        errors=(InvalidCategory, InvalidTags, EmptyContent, ContentTooLarge),
        arguments=("category", "content"),
        cli_names={"tags": "tag"},
        enums={"category": CATEGORIES},
    )
    def remember(
        self, category: str, content: str, tags: Sequence[str] = (), *, scope: str | None = None
    ) -> int:
        """Store one short fact (an entry) under a fixed category, with optional tags. Returns the
        new entry's id. Credentials in the text are stored redacted.

        Args:
            category: One of: preference, rule, learning, decision, context.
            content: The fact to keep, as plain text.
            tags: Labels to find it by later (exact, case-sensitive).
            scope: Optional label grouping related entries, e.g. 'project:shop'.
        """
        prepared = entry_ops.prepare(category, content, tags, scope)
        with self._write() as tx:
            [entry_id] = entry_ops.insert(tx, self.tenant, self.source, [prepared])
        return entry_id

    @verb("write", errors=(InvalidBatch, ContentTooLarge))
    def remember_many(self, entries: Sequence[EntryIn]) -> list[int]:
        """Store several entries in one transaction: all are stored or, if any is refused, none.
        Returns their ids in order.

        Args:
            entries: A list of {category, content, tags, scope} objects.
        """
        prepared = entry_ops.prepare_batch(entries)
        with self._write(len(prepared)) as tx:
            ids = entry_ops.insert(tx, self.tenant, self.source, prepared)
        return ids

    @verb(
        "read",
        errors=(InvalidCategory, InvalidTags),
        cli_names={"tags": "tag", "from_": "from"},
        guarded=("tags",),
    )
    def recall(
        self,
        category: str | None = None,
        tags: Sequence[str] | str | None = None,
        search: str | None = None,
        mode: str | None = None,
        limit: int | str | None = None,
        from_: str | None = None,
        *,
        scope: str | None = None,
    ) -> EntryList:
        """List entries newest first, filtered by category, tags, a case-insensitive text search and
        writer. Every filter is optional; at most `limit` (default 200); `more` says how many more
        match, counted up to 1,000 (past it, at least that many).

        Args:
            category: Only this category (preference, rule, learning, decision, context).
            tags: Only entries with any of these tags (all of them with mode='all').
            search: Only entries whose content contains this text (any case).
            mode: 'all' to require every tag; anything else means any tag.
            limit: How many entries at most; missing, zero, negative or not a number means 200.
            from_: Whose entries: 'main', an agent's name, or '*' for every writer (default:
                an agent reads its own, the owner every writer's).
            scope: Only entries of this scope.
        """
        if from_ is None:
            source = self.source if self.is_agent else None
        elif from_ == entry_ops.ALL_SOURCES:
            source = None
        else:
            source = checked_label(from_, "from", max_chars=100)
        with self._store.read() as tx:
            found, more = entry_ops.recall(
                tx,
                self.tenant,
                category=category,
                tags=tags,
                search=search,
                mode=mode,
                limit=limit,
                source=source,
                scope=scope,
            )
        filters = {
            "category": category,
            "tags": tags,
            "mode": mode,
            "limit": limit,
            "from": from_,
            "scope": scope,
        }
        self._audit.record(
            tenant=self.tenant,
            principal=self.principal,
            verb="recall",
            query=search,
            filters={k: v for k, v in filters.items() if v},
            returned=[entry["id"] for entry in found],
        )
        self._upkeep.poke(0)
        return EntryList(found, more)

    @verb("write", errors=(NotTheWriter,), arguments=("id",), destructive=True, keeps_to_scope=True)
    def forget(self, id: int, *, scope: str | None = None) -> bool:
        """Delete one entry by id. Returns true if it existed. Ids are never reused. An agent (or
        a token holder) forgets only the entries it wrote; the memory's owner forgets any.

        Args:
            id: The entry's id, as returned by remember.
            scope: Only an item kept in this scope (else not found); a token limited to
                scopes names one of them.
        """
        # The owner is the local, tokenless caller acting as itself (not as an agent): every
        # other writer shares the memory's entries but erases only its own.
        writer = None if self.owner and not self.is_agent else self.source
        with self._erasing_write() as tx:
            forgotten = entry_ops.forget(tx, self.tenant, self.principal, id, writer=writer)
        if forgotten:
            self._store.reclaim()  # no copy of the text stays in the write-ahead log
        return forgotten
