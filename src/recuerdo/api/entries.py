"""Entry verbs: quick facts with categories, tags and writer namespaces."""

from __future__ import annotations

from collections.abc import Sequence

from .. import entries as entry_ops
from .. import rules as rule_ops
from ..model import Entry, EntryIn
from ..text import checked_label
from .base import MemoryBase, guarded


class EntryVerbs(MemoryBase):
    @guarded
    def remember(
        self, category: str, content: str, tags: Sequence[str] = (), *, scope: str | None = None
    ) -> int:
        """Store one entry; return its id (never reused)."""
        prepared = entry_ops.prepare(category, content, tags, scope)
        with self._write() as tx:
            [entry_id] = entry_ops.insert(tx, self.tenant, self.source, [prepared])
        return entry_id

    @guarded
    def remember_many(self, entries: Sequence[EntryIn]) -> list[int]:
        """Store a batch of entries in one transaction: all of them, or none."""
        prepared = entry_ops.prepare_batch(entries)
        with self._write(len(prepared)) as tx:
            ids = entry_ops.insert(tx, self.tenant, self.source, prepared)
        return ids

    @guarded
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
    ) -> list[Entry]:
        """Entries newest first, filtered by category, tags (any, or all with ``mode="all"``),
        a case-insensitive substring ``search``, writer (``from_``: ``"main"``, an agent's name
        or ``"*"``) and scope. At most ``limit`` (default 200) are returned."""
        if from_ is None:
            source = self.source if self.is_agent else None
        elif from_ == entry_ops.ALL_SOURCES:
            source = None
        else:
            source = checked_label(from_, "from", max_chars=100)
        with self._store.read() as tx:
            found = entry_ops.recall(
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
        return found

    @guarded
    def forget(self, id: int) -> bool:
        """Remove an entry; ``True`` if it existed. Its id is never given out again."""
        with self._store.write() as tx:
            return entry_ops.forget(tx, self.tenant, self.principal, id)

    @guarded
    def summary(self) -> str:
        """A human summary: entries by category, the rules, and recent rule violations."""
        with self._store.read() as tx:
            counts = entry_ops.counts_by_category(tx, self.tenant)
            rule_list = rule_ops.get(tx, self.tenant)
            violations = rule_ops.recent_violations(tx, self.tenant)
        lines = [f"Agent Memory: {sum(counts.values())} entries, {len(rule_list)} rules"]
        lines += [f"  {category}: {count}" for category, count in counts.items()]
        if rule_list:
            lines.append("Rules:")
            lines += [
                f"  [{rule['level']:<6}] {rule['name']}: {rule['description']}"
                for rule in rule_list
            ]
        if violations:
            lines.append("Recent violations:")
            lines += [f"  {message}" for message in violations]
        return "\n".join(lines)
