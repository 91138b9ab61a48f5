"""The replies of the note verbs, as types: the doors publish them (OpenAPI 200 responses, MCP
``outputSchema``) and the contract tests check every reply against them.

Each class forbids keys it does not declare, so a published schema lists every key a reply
may carry: a reply and its type cannot drift apart unnoticed.
"""

from __future__ import annotations

from typing import Literal, NotRequired

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict

from ..core.results import Redactions

FORBID = ConfigDict(extra="forbid")

JournalOperation = Literal[
    "write",
    "edit",
    "external",
    "restore",
    "delete",
    "merge",
    "import",
    "review",
    "conflict",
    "move",
    "scrub",
]
"""What a revision or journal line records: ``write`` (saved or appended by a tool), ``edit``
(changed in place), ``external`` (changed outside the tools, e.g. a mirrored file edited by
hand), ``restore``, ``delete``, ``merge`` (two versions reconciled into one), ``import`` (read in
from an export), ``review`` (marked reviewed), ``conflict`` (a stale write kept aside) and
``move`` (a journal line only: the note was found under its former key and now answers to
its new one, decision 0138), ``scrub`` (a journal line only: an edit's redaction took out a
credential the note held, and its earlier versions were redacted alike, decision 0150)."""

SaveOutcome = Literal["created", "updated", "duplicate"]


@with_config(FORBID)
class Saved(TypedDict):
    id: int
    version: int
    outcome: SaveOutcome
    duplicates: int
    version_token: str
    key: str | None
    scope: str
    kind: str
    truncated: bool
    original_bytes: int
    stored_bytes: int
    limit_bytes: int
    chars_added: NotRequired[int]
    chars_removed: NotRequired[int]
    redacted: NotRequired[Redactions]
    former_key: NotRequired[str]
    """The key the note was found under, and moved from (the save named it as former_key)."""


@with_config(FORBID)
class Note(TypedDict):
    """A note (or a document, message or stored code item) read whole."""

    id: int
    item_type: str
    title: str | None
    content: str
    kind: str | None
    scope: str
    key: str | None
    tags: list[str]
    source: str
    status: str
    version: int
    version_token: str
    session: str | None
    summary: str | None
    muted: bool
    duplicates: int
    review_at: str | None
    created_at: str
    updated_at: str
    bytes: int


@with_config(FORBID)
class EntryItem(TypedDict):
    """An entry read by id (``get``)."""

    id: int
    item_type: Literal["entry"]
    category: str
    content: str
    source: str
    tags: list[str]
    scope: str
    created_at: str
    updated_at: str


@with_config(FORBID)
class RevisionSummary(TypedDict):
    """One line of a note's history. ``version`` is null for a revision that never became
    current (a conflict kept aside, a delete or a restore): ``revision_id`` names it."""

    revision_id: int
    version: int | None
    operation: JournalOperation
    principal: str
    created_at: str
    chars_added: int
    chars_removed: int
    content_hash: str
    based_on: int | None


@with_config(FORBID)
class Revision(RevisionSummary):
    title: str | None
    kind: str | None
    content: str


@with_config(FORBID)
class Brief(TypedDict):
    id: int
    title: str | None
    kind: str | None
    created_at: str
    status: str


@with_config(FORBID)
class Timeline(TypedDict):
    id: int
    session: str | None
    before: list[Brief]
    item: Brief
    after: list[Brief]


@with_config(FORBID)
class Edited(TypedDict):
    id: int
    operation: str | None
    outcome: Literal["edited", "unchanged"]
    version: int
    version_token: str
    chars_added: int
    chars_removed: int
    bytes: int
    title: str | None
    redacted: NotRequired[Redactions]


@with_config(FORBID)
class Deleted(TypedDict):
    id: int
    deleted: Literal["soft", "hard"]


@with_config(FORBID)
class Remembered(TypedDict):
    note_id: int
    version_token: str
    outcome: Literal["created", "appended", "skipped"]
    body_bytes: int
    body_hash: str
    summary_updated: bool
    category: str
    scope: str
    redacted: NotRequired[Redactions]


@with_config(FORBID)
class ProfileEntry(TypedDict):
    category: str
    note_id: int
    summary: str
    from_summary: bool
    tokens: int
    muted: bool
    modified: str


@with_config(FORBID)
class Muted(TypedDict):
    category: str
    note_id: int
    scope: str
    muted: bool


@with_config(FORBID)
class Reviewed(TypedDict):
    id: int
    review_at: str | None
    status: Literal["active"]


@with_config(FORBID)
class Captured(TypedDict):
    extracted: int
    saved: int
    duplicates: int
    ids: list[int]
    scope: str
    left_out: NotRequired[int]
    """Learnings past the first 100 of one capture: not captured (send them in a text of
    their own: the same text again captures the same first 100)."""
    truncated: NotRequired[int]
    """Learnings cut to the note size limit (their notes hold the start)."""
    redacted: NotRequired[Redactions]


@with_config(FORBID)
class SuggestedKey(TypedDict):
    key: str
    family: str


@with_config(FORBID)
class Session(TypedDict):
    session: str
    scope: str
    directory: str | None
    started_at: str
    ended_at: str | None
    summary: str | None


@with_config(FORBID)
class SessionEnded(Session):
    summary_note_id: int | None
    truncated: bool
    """Whether the summary given was cut to the note size limit (the session keeps what its
    note holds)."""
    redacted: NotRequired[Redactions]


@with_config(FORBID)
class Recent(TypedDict):
    text: str
    truncated: bool
    returned_bytes: int
    limit_bytes: int
    requested_bytes: int
    ids: list[int]
    pinned: list[int]
    """The ids shown first because they are pinned (flagged ``pinned`` in the text)."""
    state: Literal["answered", "nothing_stored"]
    context_set: NotRequired[str]
    from_set: NotRequired[list[int]]
    """The ids shown next because they are in the named context set."""
    scopes_out_of_reach: NotRequired[list[str]]
    """A door's only: the scopes its tool reads for a call naming none (Engram's project named
    alone) that the caller's token does not reach, left out of this answer (decision 0173)."""


@with_config(FORBID)
class JournalLine(TypedDict):
    id: int
    scope: str
    item_id: int
    item_type: str
    operation: JournalOperation
    principal: str
    version: int | None
    chars_added: int
    chars_removed: int
    created_at: str
    from_key: NotRequired[str | None]
    """A ``move``: the key the note answered to before (null when unknown: the line was written
    before the keys were kept, or the note was erased since)."""
    to_key: NotRequired[str | None]
    """A ``move``: the key it answers to since (null when unknown, as ``from_key``)."""


@with_config(FORBID)
class Settings(TypedDict):
    review_months: dict[str, int]
    note_limit_bytes: int
    audit_retention_days: int
    mail_domains: list[str]


@with_config(FORBID)
class Linked(TypedDict):
    from_id: int
    to_id: int
    type: str
    outcome: Literal["created", "exists"]


@with_config(ConfigDict(extra="forbid"))
class NoteListing(TypedDict):
    id: int
    title: str
    kind: str
    scope: str
    key: str | None
    source: str
    status: str
    muted: bool
    version: int
    chars: int
    review_at: str | None
    created_at: str
    updated_at: str


@with_config(ConfigDict(extra="forbid"))
class NoteList(TypedDict):
    notes: list[NoteListing]
    count: int
    more: bool


@with_config(ConfigDict(extra="forbid"))
class LinkedItem(TypedDict):
    id: int
    title: str | None
    item_type: str
    type: str
    origin: str


@with_config(ConfigDict(extra="forbid"))
class NoteLinks(TypedDict):
    id: int
    outgoing: list[LinkedItem]
    incoming: list[LinkedItem]


@with_config(ConfigDict(extra="forbid"))
class ConflictRevision(TypedDict):
    revision_id: int
    based_on: int | None
    principal: str
    created_at: str
    title: str | None
    kind: str | None
    content: str


MarkdownOutcome = Literal["created", "updated", "unchanged", "conflict", "behind", "skipped"]
"""What reading one Markdown file did: ``created`` or ``updated`` a note (a revision by
principal ``markdown``), left it ``unchanged``, kept the file's text as a ``conflict`` revision
(the file was edited from an older version), found the file ``behind`` the note (an old export,
not edited: nothing to do), or ``skipped`` the file (the reason is in ``detail``)."""


@with_config(FORBID)
class MarkdownFile(TypedDict):
    path: str
    outcome: MarkdownOutcome
    id: int | None
    version: int | None
    detail: NotRequired[str]
    conflict_revision_id: NotRequired[int]


@with_config(FORBID)
class MarkdownExport(TypedDict):
    directory: str
    notes: int
    written: int
    unchanged: int


@with_config(FORBID)
class MarkdownImport(TypedDict):
    directory: str
    files: int
    created: int
    updated: int
    unchanged: int
    conflicts: int
    behind: int
    skipped: int
    links_added: int
    changes: list[MarkdownFile]
    """Every file that was not unchanged, with what happened to it."""


@with_config(FORBID)
class Pinned(TypedDict):
    id: int
    outcome: Literal["pinned", "already_pinned"]
    pinned_at: str


@with_config(FORBID)
class Unpinned(TypedDict):
    id: int
    outcome: Literal["unpinned", "not_pinned"]


@with_config(FORBID)
class PinnedItem(TypedDict):
    id: int
    item_type: str
    title: str
    kind: str
    scope: str
    pinned_at: str


@with_config(FORBID)
class ContextSet(TypedDict):
    name: str
    ids: list[int]
    outcome: Literal["created", "replaced", "deleted", "absent"]


@with_config(FORBID)
class ContextSetInfo(TypedDict):
    name: str
    ids: list[int]
    updated_at: str
