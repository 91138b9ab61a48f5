"""Note verbs: living documents with history, category notes, sessions and the journal."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

from ..core import settings
from ..core.clock import parse_time
from ..core.exact import shown
from ..core.items import visible
from ..core.text import checked_label
from ..entries import operations as entry_ops
from ..errors import (
    Conflict,
    ContentTooLarge,
    ContextSetNotFound,
    EditRefused,
    EmptyContent,
    EmptyTitle,
    FindAmbiguous,
    FindNotFound,
    InvalidInput,
    InvalidOperation,
    ItemNotFound,
    OperationContentMismatch,
    SectionAmbiguous,
    SectionNotFound,
    TitleTaken,
    VersionConflict,
)
from ..facade import MemoryBase, verb
from . import history, links, passive, scrub, sessions
from . import lifecycle as note_lifecycle
from . import operations as notes
from .results import (
    Captured,
    Deleted,
    Edited,
    EntryItem,
    JournalLine,
    Linked,
    Note,
    Recent,
    Reviewed,
    Revision,
    RevisionSummary,
    Saved,
    Session,
    SessionEnded,
    Settings,
    SuggestedKey,
    Timeline,
)
from .text import OPERATIONS

REVIEW_ACTIONS = ("list", "mark_reviewed")


class NoteVerbs(MemoryBase):
    @verb(
        "write",
        errors=(EmptyTitle, EmptyContent, ContentTooLarge, Conflict, TitleTaken),
        arguments=("title", "content"),
        cli_names={"tags": "tag"},
    )
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
        unique_title: bool = False,
        former_key: str | None = None,
        project: str | None = None,
    ) -> Saved:
        """Save a titled note. With a key, update the current note of that key in the scope (earlier
        text is kept as a revision); an exact repeat within 15 minutes is counted, not stored again.
        Over-long content is cut and reported (truncated), or refused in strict mode.
        Credentials are replaced before storing, and reported (redacted, by argument): a private
        key's BEGIN marker with no END marker takes the rest of the text.

        Args:
            title: A short, specific title.
            content: The whole note (markdown welcome). <private>...</private> is redacted.
            kind: decision, architecture, bugfix, pattern, config, discovery, learning, preference,
                manual, ...
            scope: 'user' or 'project:<name>' (default 'user').
            key: A topic key (see suggest_key): saving the same key again updates that note.
            session: The working session this note belongs to.
            expected_version: The version you last read; if the note has moved on, nothing is
                overwritten and a conflict is reported. 0 when you read none: a note already
                at the key with other text is then a conflict, not replaced.
            tags: Labels for the note.
            strict: Refuse over-long content instead of cutting it.
            unique_title: Refuse a title another note of the scope already has (title_taken);
                category notes (remember_about) are not counted.
            former_key: The key the note had under an earlier naming: with no note at key, the
                note at former_key in the scope is updated and moved to key (reported as
                former_key), so a renamed key does not fork the note.
            project: The project a note of 'user' is about, recorded as its tag
                project:<name> (replacing any project: tag it had): search and recent with
                project leave out the notes of 'user' recorded as another project's. An exact
                repeat is only one of the same project; the same text saved again at a key
                changes nothing, its project neither. Tags given without project replace the
                project: tag too.
        """
        with self._write() as tx:
            sessions.check_reach(tx, self.tenant, session)
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
                unique_title=unique_title,
                former_key=former_key,
                project=project,
            )
        if isinstance(reply, notes.ConflictKept):
            raise reply.error()  # raised after the conflict revision is committed
        return reply

    @verb("read", errors=(ItemNotFound,), arguments=("id",), keeps_to_scope=True)
    def get(self, id: int, *, scope: str | None = None) -> Note | EntryItem:
        """Read one item (note, entry, document or message) whole by id: search results are
        previews, get is the full text.

        Args:
            id: The item's id.
            scope: Only an item kept in this scope (else not found); a token limited to
                scopes names one of them.
        """
        if isinstance(id, bool) or not isinstance(id, int):
            raise InvalidInput(f"an id is an integer, got {shown(id)}")
        members_only, viewer = visible("i", self.principal)
        with self._store.read() as tx:
            row = tx.one(
                "SELECT * FROM items i WHERE i.id = ? AND i.tenant = ? AND i.status <> 'deleted'"
                f" AND {members_only}",
                (id, self.tenant, *viewer),
            )
        if row is None:
            raise ItemNotFound(f"no item with id {id}")
        if row["item_type"] == "entry":
            return {**entry_ops.row_to_entry(row), "item_type": "entry"}
        return notes.note_dict(row)  # a message too: kind is its sender, session its conversation

    @verb("read", errors=(ItemNotFound,), arguments=("id",), keeps_to_scope=True)
    def history(self, id: int, *, scope: str | None = None) -> list[RevisionSummary]:
        """List a note's revisions, oldest first: revision_id, version, time, principal,
        operation, characters added and removed, content hash. Conflicts kept aside, deletions
        and restores have no version: read them by revision_id.

        Args:
            id: The note's id.
            scope: Only an item kept in this scope (else not found); a token limited to
                scopes names one of them.
        """
        with self._store.read() as tx:
            row = notes.load_note(tx, self.tenant, id)
            return history.history(tx, self.tenant, row["id"])

    @verb("read", errors=(ItemNotFound,), arguments=("id", "version"), keeps_to_scope=True)
    def revision(
        self,
        id: int,
        version: int | None = None,
        *,
        revision_id: int | None = None,
        scope: str | None = None,
    ) -> Revision:
        """Read one revision of a note whole: an earlier version, or by its revision_id a
        conflict kept aside (the id a conflict names), a deletion or a restore.

        Args:
            id: The note's id.
            version: The version number (from history).
            revision_id: The revision's id (from history or a conflict), instead of version.
            scope: Only an item kept in this scope (else not found); a token limited to
                scopes names one of them.
        """
        with self._store.read() as tx:
            row = notes.load_note(tx, self.tenant, id)
            return history.revision(tx, self.tenant, row["id"], version, revision_id)

    @verb("read", errors=(ItemNotFound,), arguments=("id",))
    def timeline(self, id: int, before: int = 3, after: int = 3) -> Timeline:
        """The notes saved just before and after a note in the same session.

        Args:
            id: The note's id.
            before: How many earlier notes (0-50).
            after: How many later notes (0-50).
        """
        with self._store.read() as tx:
            return sessions.timeline(tx, self.tenant, id, before, after)

    @verb(
        "write",
        errors=(
            ItemNotFound,
            InvalidOperation,
            OperationContentMismatch,
            EditRefused,
            SectionNotFound,
            SectionAmbiguous,
            FindNotFound,
            FindAmbiguous,
            VersionConflict,
            ContentTooLarge,
        ),
        arguments=("id", "operation", "content"),
        enums={"operation": OPERATIONS},
        keeps_to_scope=True,
        # ``content`` is a fragment of the note: the edit redacts the note's whole text after
        # it, as the guard would the note sent whole. Redacted alone first, it lost what made
        # the whole a credential (an END marker under a key's body lines) or was mangled
        # ("password =") while the value after it stayed in clear (decision 0141).
        raw=("content",),
    )
    def edit(
        self,
        id: int,
        operation: str | None = None,
        content: str | None = None,
        *,
        section: str | None = None,
        find: str | None = None,
        version_token: str | None = None,
        title: str | None = None,
        scope: str | None = None,
    ) -> Edited:
        """Edit a note in place: append, prepend, replace (whole note), replace_section (by heading)
        or find_replace (unique text; empty content deletes it); and/or give it a new title. The
        earlier version stays as a revision; an edit that changes nothing writes no revision.

        Args:
            id: The note's id.
            operation: One of: append, prepend, replace, replace_section, find_replace (with
                content; both may be left out when only the title changes).
            content: The new text (empty only with find_replace, to delete).
            section: The heading whose section replace_section rewrites.
            find: The exact text find_replace replaces; it must occur once.
            version_token: The token you last read; a stale one is refused (version_conflict).
            title: A new title for the note.
            scope: Only an item kept in this scope (else not found); a token limited to
                scopes names one of them.
        """
        # An edit whose redaction takes out a credential the note already held scrubs its
        # earlier versions (0150): a forget of that text, so an erasing write.
        return scrub.retried(
            self._write,
            self._erasing_write,
            self._store.reclaim,
            lambda tx, scrubbing: note_lifecycle.edit(
                tx,
                tenant=self.tenant,
                principal=self.principal,
                item_id=id,
                operation=operation,
                content=content,
                section=section,
                find=find,
                token=version_token,
                title=title,
                scrubbing=scrubbing,
            ),
        )

    @verb("write", errors=(ItemNotFound,), arguments=("id",), destructive=True, keeps_to_scope=True)
    def delete(self, id: int, hard: bool = False, *, scope: str | None = None) -> Deleted:
        """Delete a note: soft by default (hidden from every read, restorable), or hard (removed
        with all its revisions).

        Args:
            id: The note's id.
            hard: Remove for good, with every revision.
            scope: Only an item kept in this scope (else not found); a token limited to
                scopes names one of them.
        """
        with self._erasing_write(1) if hard else self._write() as tx:
            reply = note_lifecycle.delete(tx, self.tenant, self.principal, id, hard)
        if hard:
            self._store.reclaim()  # no copy of the text stays in the write-ahead log
        return reply

    @verb("write", errors=(ItemNotFound, Conflict), arguments=("id",), keeps_to_scope=True)
    def restore(self, id: int, *, scope: str | None = None) -> Note:
        """Bring back a soft-deleted note.

        Args:
            id: The note's id.
            scope: Only an item kept in this scope (else not found); a token limited to
                scopes names one of them.
        """
        with self._write() as tx:
            return note_lifecycle.restore(tx, self.tenant, self.principal, id)

    @verb(
        "write",
        errors=(ItemNotFound,),
        arguments=("action",),
        enums={"action": ("list", "mark_reviewed")},
    )
    def review(
        self,
        action: str = "list",
        *,
        id: int | None = None,
        scope: str | None = None,
        limit: int = 20,
    ) -> list[Note] | Reviewed:
        """List notes past their review date (stale context to re-check, not trusted facts), or mark
        one reviewed.

        Args:
            action: 'list' or 'mark_reviewed'.
            id: The note, for mark_reviewed.
            scope: Only this scope.
            limit: At most this many (1-1000).
        """
        if action == "mark_reviewed":
            if id is None:
                raise InvalidInput("mark_reviewed needs the note's id")
            with self._write() as tx:
                # The scope is the note's: a call naming one scope reviewed a note of any
                # (a token limited to that scope moved another's review date: a hunt over
                # the doors).
                return note_lifecycle.mark_reviewed(tx, self.tenant, self.principal, id, scope)
        if action != "list":
            raise InvalidInput(f"action must be one of {', '.join(REVIEW_ACTIONS)}")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise InvalidInput("limit must be an integer from 1 to 1000")
        with self._store.read() as tx:
            return note_lifecycle.due_for_review(tx, self.tenant, scope, limit)

    @verb("write", errors=(ItemNotFound,), arguments=("id",), keeps_to_scope=True)
    def mark_reviewed(self, id: int, *, scope: str | None = None) -> Reviewed:
        """Confirm a note is still true: its review date moves forward by its kind's interval.
        Nothing else ever moves it.

        Args:
            id: The note's id.
            scope: Only an item kept in this scope (else not found); a token limited to
                scopes names one of them.
        """
        with self._write() as tx:
            return note_lifecycle.mark_reviewed(tx, self.tenant, self.principal, id)

    @verb("write", arguments=("text",))
    def capture_passive(
        self,
        text: str,
        *,
        scope: str | None = None,
        session: str | None = None,
        source: str | None = None,
    ) -> Captured:
        """Save the items of the last 'Key Learnings' section of a text (numbered, else bulleted; at
        least 20 characters and 4 words) as passive notes, skipping ones already known. At most
        100 a call (the reply's left_out counts the rest); each is cut to the note size limit
        (truncated counts them).

        Args:
            text: The text to read (an agent's final answer, say).
            scope: 'user' or 'project:<name>' (default: the session's scope, else 'user').
            session: The session to file them under.
            source: Who wrote the text.
        """
        principal = self.principal if source is None else checked_label(source, "source")
        with self._write() as tx:
            sessions.check_reach(tx, self.tenant, session)
            return passive.capture(
                tx, tenant=self.tenant, principal=principal, text=text, scope=scope, session=session
            )

    @verb("read", arguments=("kind", "title"))
    def suggest_key(self, kind: str, title: str, content: str = "") -> SuggestedKey:
        """Suggest a stable family/slug topic key for a note, to update it later.

        Args:
            kind: The note's kind.
            title: The note's title.
            content: The note's content (used when the title gives no words).
        """
        return passive.suggest_key(kind, title, content)

    @verb("write", arguments=("id",))
    def session_start(
        self, id: str, project: str | None = None, directory: str | None = None
    ) -> Session:
        """Open a working session (notes saved with it form its timeline).

        Args:
            id: The session id.
            project: The project it works on.
            directory: The working directory.
        """
        with self._write() as tx:
            return sessions.start(tx, self.tenant, id, project, directory)

    @verb("write", errors=(ItemNotFound,), arguments=("id",))
    def session_end(self, id: str, summary: str | None = None) -> SessionEnded:
        """Close a session; its summary is saved as a note that recent context shows (cut to the
        note size limit like any note, and flagged truncated). Ending it again keeps its first
        end; a summary given then replaces the summary.

        Args:
            id: The session id.
            summary: What happened in the session.
        """
        with self._write() as tx:
            return sessions.end(tx, self.tenant, self.principal, id, summary)

    @verb("read", errors=(ContextSetNotFound,), cli_names={"context_set_name": "context-set"})
    def recent(
        self,
        scope: str | list[str] | None = None,
        max_bytes: int = sessions.DEFAULT_RECENT_BYTES,
        context_set_name: str | None = None,
        project: str | None = None,
    ) -> Recent:
        """The context for a session start as one text, at most max_bytes of UTF-8 (flagged
        truncated when cut): pinned items first (flagged pinned), then the items of the named
        context set, then the latest notes and session summaries.

        Args:
            scope: Only this scope, or these (at most 20), their latest notes merged newest
                first.
            max_bytes: Size limit (default 16384, cap 65536).
            context_set_name: Also load this named context set (see context_set), after the pins.
            project: Leave out the notes of 'user' recorded as another project's (see save's
                project); those recording none are kept.
        """
        with self._store.read() as tx:
            return sessions.recent(
                tx,
                self.tenant,
                scope,
                max_bytes,
                context_set_name,
                viewer=self.principal,
                project=project,
            )

    @verb("read")
    def journal(
        self,
        scope: str | None = None,
        since: str | None = None,
        principal: str | None = None,
        limit: int = 100,
    ) -> list[JournalLine]:
        """The revision journal: every change to any item, newest first, with its operation
        (write, edit, external, restore, delete, merge, import, review, conflict, move: a note
        saved with former_key now answers to its new key, from_key and to_key naming both, null
        when unknown; scrub: an edit redacted a credential the note held from its
        earlier versions too), principal and characters added and removed.

        Args:
            scope: Only this scope.
            since: Only changes at or after this ISO 8601 time.
            principal: Only changes by this writer.
            limit: At most this many (1-1000).
        """
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise InvalidInput("limit must be an integer")
        with self._store.read() as tx:
            return history.read_journal(
                tx,
                self.tenant,
                viewer=self.principal,
                scope=None if scope is None else checked_label(scope, "scope"),
                since=None if since is None else parse_time(since, "since"),
                principal=None if principal is None else checked_label(principal, "principal"),
                limit=limit,
            )

    @verb("write")
    def configure(
        self,
        review_months: Mapping[str, int | None] | None = None,
        note_limit_bytes: int | None = None,
        audit_retention_days: int | None = None,
        mail_domains: Sequence[str] | None = None,
    ) -> Settings:
        """Read or change this memory's settings: the review interval per note kind, the note
        size limit, how long the retrieval audit keeps its records, and the domains addresses
        may be bound in.

        Args:
            review_months: Months per kind, e.g. {"decision": 6}; null removes a kind's review date.
            note_limit_bytes: The note size limit in bytes.
            audit_retention_days: Days the retrieval audit keeps a record (1-36500, default 90).
            mail_domains: The domains of this tenant's addresses, e.g. ["example.com"] (at most
                64); [] goes back to the server's (serve --mail-domain), else 'local'.
                Addresses already bound stay bound.
        """
        with self._write(0) as tx:
            return cast(
                Settings,
                settings.configure(
                    tx,
                    self.tenant,
                    review_months_by_kind=review_months,
                    limit_bytes=note_limit_bytes,
                    audit_retention_days=audit_retention_days,
                    domains=None if mail_domains is None else list(mail_domains),
                ),
            )

    @verb("write", errors=(ItemNotFound,), arguments=("from_id", "to_id"))
    def link(self, from_id: int, to_id: int, type: str = "related") -> Linked:
        """Link two items (context follows links both ways). Notes also link by writing [[Title]] in
        their text.

        Args:
            from_id: The item the link starts from.
            to_id: The item it points to.
            type: The kind of link (default 'related').
        """
        with self._write(0) as tx:
            return links.link(tx, self.tenant, from_id, to_id, type, viewer=self.principal)
