"""Note verbs: living documents with history, category notes, sessions and the journal."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .. import categories, history, note_lifecycle, notes, passive, sessions, settings
from .. import entries as entry_ops
from ..clock import parse_time
from ..errors import InvalidInput, ItemNotFound
from ..text import checked_label
from .base import MemoryBase, guarded

REVIEW_ACTIONS = ("list", "mark_reviewed")


class NoteVerbs(MemoryBase):
    @guarded
    def save(
        self,
        title: str,
        content: str,
        *,
        kind: str = notes.DEFAULT_KIND,
        scope: str | None = None,
        key: str | None = None,
        session: str | None = None,
        expected_version: int | None = None,
        tags: Sequence[str] = (),
        strict: bool = False,
    ) -> dict[str, Any]:
        """Save a note. With a key, update the scope's current note of that key (the previous
        text stays as a revision); an exact repeat within 15 minutes is counted, not stored."""
        with self._write() as tx:
            reply = notes.save(
                tx,
                tenant=self.tenant,
                principal=self.principal,
                title=title,
                content=content,
                kind=kind,
                scope=scope,
                key=key,
                session=session,
                expected_version=expected_version,
                tags=tags,
                strict=strict,
            )
        if reply.get("conflict"):
            notes.raise_conflict(reply)  # raised after the conflict revision is committed
        return reply

    @guarded
    def get(self, id: int) -> dict[str, Any]:
        """The whole item (note or entry) by id, never truncated."""
        if isinstance(id, bool) or not isinstance(id, int):
            raise InvalidInput(f"an id is an integer, got {id!r}")
        with self._store.read() as tx:
            row = tx.one(
                "SELECT * FROM items WHERE id = ? AND tenant = ? AND status <> 'deleted'",
                (id, self.tenant),
            )
        if row is None:
            raise ItemNotFound(f"no item with id {id}")
        if row["item_type"] == "entry":
            return {**entry_ops.row_to_entry(row), "item_type": "entry"}
        return notes.note_dict(row)

    @guarded
    def history(self, id: int) -> list[dict[str, Any]]:
        """Every revision of a note: version, time, principal, operation, characters added and
        removed, content hash (conflict revisions have no version)."""
        with self._store.read() as tx:
            row = notes.load_note(tx, self.tenant, id)
            return history.history(tx, row["id"])

    @guarded
    def revision(self, id: int, version: int) -> dict[str, Any]:
        """One revision of a note, whole."""
        with self._store.read() as tx:
            row = notes.load_note(tx, self.tenant, id)
            return history.revision(tx, row["id"], version)

    @guarded
    def timeline(self, id: int, before: int = 3, after: int = 3) -> dict[str, Any]:
        """The notes saved just before and after this one in the same session."""
        with self._store.read() as tx:
            return sessions.timeline(tx, self.tenant, id, before, after)

    @guarded
    def edit(
        self,
        id: int,
        operation: str,
        content: str,
        *,
        section: str | None = None,
        find: str | None = None,
        version_token: str | None = None,
    ) -> dict[str, Any]:
        """Edit a note: append, prepend, replace, replace_section or find_replace."""
        with self._write() as tx:
            return note_lifecycle.edit(
                tx,
                tenant=self.tenant,
                principal=self.principal,
                item_id=id,
                operation=operation,
                content=content,
                section=section,
                find=find,
                token=version_token,
            )

    @guarded
    def delete(self, id: int, hard: bool = False) -> dict[str, Any]:
        """Delete a note: soft (hidden everywhere, restorable) or hard (gone with its
        revisions)."""
        with self._write() as tx:
            return note_lifecycle.delete(tx, self.tenant, self.principal, id, hard)

    @guarded
    def restore(self, id: int) -> dict[str, Any]:
        """Bring back a soft-deleted note."""
        with self._write() as tx:
            return note_lifecycle.restore(tx, self.tenant, self.principal, id)

    @guarded
    def remember_about(
        self,
        axis: str,
        observation: str,
        *,
        category: str = "general",
        project: str | None = None,
        summary: str | None = None,
        idempotency_key: str | None = None,
        version_token: str | None = None,
    ) -> dict[str, Any]:
        """Append an observation to the category note of the user axis (the same in every
        project) or of one project."""
        with self._write() as tx:
            return categories.remember_about(
                tx,
                tenant=self.tenant,
                principal=self.principal,
                axis=axis,
                observation=observation,
                category=category,
                project=project,
                summary=summary,
                idempotency_key=idempotency_key,
                version_token=version_token,
            )

    @guarded
    def profile(
        self, axis: str, project: str | None = None, include_muted: bool = False
    ) -> list[dict[str, Any]]:
        """The categories of an axis with their summary or snippet, size and state."""
        with self._store.read() as tx:
            return categories.profile(tx, self.tenant, axis, project, include_muted)

    @guarded
    def mute(
        self, category: str, *, axis: str = "user", project: str | None = None
    ) -> dict[str, Any]:
        """Keep a category out of recall, recent context and the profile (search still
        finds it)."""
        with self._write() as tx:
            return categories.set_muted(
                tx, self.tenant, self.principal, category, axis, project, True
            )

    @guarded
    def unmute(
        self, category: str, *, axis: str = "user", project: str | None = None
    ) -> dict[str, Any]:
        """Bring a muted category back."""
        with self._write() as tx:
            return categories.set_muted(
                tx, self.tenant, self.principal, category, axis, project, False
            )

    @guarded
    def review(
        self,
        action: str = "list",
        *,
        id: int | None = None,
        scope: str | None = None,
        limit: int = 20,
    ) -> list[dict[str, Any]] | dict[str, Any]:
        """List the notes whose review date has passed, or mark one reviewed."""
        if action == "mark_reviewed":
            if id is None:
                raise InvalidInput("mark_reviewed needs the note's id")
            return self.mark_reviewed(id)
        if action != "list":
            raise InvalidInput(f"action must be one of {', '.join(REVIEW_ACTIONS)}")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise InvalidInput("limit must be an integer from 1 to 1000")
        with self._store.read() as tx:
            return note_lifecycle.due_for_review(tx, self.tenant, scope, limit)

    @guarded
    def mark_reviewed(self, id: int) -> dict[str, Any]:
        """Reset a note's review date (only this call ever does)."""
        with self._write() as tx:
            return note_lifecycle.mark_reviewed(tx, self.tenant, self.principal, id)

    @guarded
    def capture_passive(
        self,
        text: str,
        *,
        scope: str | None = None,
        session: str | None = None,
        source: str | None = None,
    ) -> dict[str, Any]:
        """Save the items of the last 'Key Learnings' section of a text as passive notes."""
        principal = self.principal if source is None else checked_label(source, "source")
        with self._write() as tx:
            return passive.capture(
                tx, tenant=self.tenant, principal=principal, text=text, scope=scope, session=session
            )

    @guarded
    def suggest_key(self, kind: str, title: str, content: str = "") -> dict[str, Any]:
        """A stable family/slug topic key for a note."""
        return passive.suggest_key(kind, title, content)

    @guarded
    def session_start(
        self, id: str, project: str | None = None, directory: str | None = None
    ) -> dict[str, Any]:
        """Open (or reopen) a working session."""
        with self._write() as tx:
            return sessions.start(tx, self.tenant, id, project, directory)

    @guarded
    def session_end(self, id: str, summary: str | None = None) -> dict[str, Any]:
        """Close a session; its summary is saved as a note that recent context shows."""
        with self._write() as tx:
            return sessions.end(tx, self.tenant, self.principal, id, summary)

    @guarded
    def recent(
        self, scope: str | None = None, max_bytes: int = sessions.DEFAULT_RECENT_BYTES
    ) -> dict[str, Any]:
        """The latest notes and session summaries as one text, cut on a UTF-8 boundary with
        a truncated flag."""
        with self._store.read() as tx:
            return sessions.recent(tx, self.tenant, scope, max_bytes)

    @guarded
    def journal(
        self,
        scope: str | None = None,
        since: str | None = None,
        principal: str | None = None,
        limit: int = 100,
    ) -> list[dict[str, Any]]:
        """Every change to any item, newest first: operation, principal, characters added and
        removed, time."""
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise InvalidInput("limit must be an integer")
        with self._store.read() as tx:
            return history.read_journal(
                tx,
                self.tenant,
                scope=None if scope is None else checked_label(scope, "scope"),
                since=None if since is None else parse_time(since, "since"),
                principal=None if principal is None else checked_label(principal, "principal"),
                limit=limit,
            )

    @guarded
    def configure(
        self,
        review_months: Mapping[str, int | None] | None = None,
        note_limit_bytes: int | None = None,
    ) -> dict[str, Any]:
        """Read or change this memory's settings: review interval per kind (months; null
        removes it) and the note size limit."""
        with self._write() as tx:
            return settings.configure(
                tx, self.tenant, review_months_by_kind=review_months, limit_bytes=note_limit_bytes
            )
