"""The one exception tree of recuerdo.

Every refusal is raised as a subclass of :class:`RecuerdoError`. Each class has a stable
machine-readable ``code`` (what scripts and agents branch on) and the HTTP ``status`` the
doors answer with. A refusal never leaves partial state behind: the store is unchanged.

::

    RecuerdoError                      internal            500
    ├── InvalidInput                   invalid_input       400
    │   ├── InvalidMemoryName          invalid_memory_name 400
    │   ├── InvalidCategory            invalid_category    400
    │   ├── InvalidRuleLevel           invalid_rule_level  400
    │   ├── InvalidTags                invalid_tags        400
    │   ├── EmptyContent               empty_content       400
    │   ├── EmptyTitle                 empty_title         400
    │   ├── InvalidBatch               invalid_batch       400
    │   ├── InvalidLabel               invalid_label       400
    │   ├── InvalidOperation           invalid_operation   400
    │   ├── OperationContentMismatch   operation_content_mismatch 400
    │   ├── UnknownArgument            unknown_argument    400
    │   ├── InvalidJSON                invalid_json        400
    │   ├── InvalidHeader              invalid_header      400
    │   ├── AddressInvalid             address_invalid     400
    │   ├── KindInvalid                kind_invalid        400
    │   ├── PageCursorInvalid          page_cursor_invalid 400
    │   ├── UnknownImportKind          unknown_import_kind 400
    │   ├── InvalidCondition           invalid_condition   400
    │   └── ReservedWriterName         reserved_writer_name 400
    ├── EditRefused                    edit_refused        422
    │   ├── SectionNotFound            section_not_found   422
    │   ├── SectionAmbiguous           section_ambiguous   422
    │   ├── FindNotFound               find_not_found      422
    │   └── FindAmbiguous              find_ambiguous      422
    ├── ContentTooLarge                content_too_large   413
    │   ├── LimitExceeded              limit_exceeded      413
    │   │   ├── RecipientsTooMany      recipients_too_many 413
    │   │   ├── SubjectTooLong         subject_too_long    413
    │   │   └── BodyTooLarge           body_too_large      413
    │   └── PayloadTooLarge            payload_too_large   413
    ├── UnsupportedMediaType           unsupported_media_type 415
    ├── Unprocessable                  unprocessable       422
    │   ├── FactsShape                 facts_shape         422
    │   ├── MentionNotInPassage        mention_not_in_passage 422
    │   ├── DocumentCorrupt            document_corrupt    422
    │   ├── DocumentNotReadable        document_not_readable 422
    │   ├── LineBlameNotBuilt          line_blame_not_built 422
    │   ├── DiffTooLarge               diff_too_large      422
    │   ├── DiffBinary                 diff_binary         422
    │   ├── RangeTooLarge              range_too_large     422
    │   ├── GitUnreadable              git_unreadable      422
    │   ├── DomainNotOurs              domain_not_ours     422
    │   └── ImportSourceInvalid        import_source_invalid 422
    ├── NotFound                       not_found           404
    │   ├── ItemNotFound               item_not_found      404
    │   ├── TaskNotFound               task_not_found      404
    │   ├── StepNotFound               step_not_found      404
    │   ├── UnknownName                unknown_name        404
    │   ├── RepoNotIngested            repo_not_ingested   404
    │   ├── RepoNotServed              repo_not_served     404
    │   ├── RevisionNotFound           revision_not_found  404
    │   ├── MemoryNotFound             memory_not_found    404
    │   ├── UnknownTool                unknown_tool        404
    │   ├── UnknownRoute               unknown_route       404
    │   ├── AddressUnknown             address_unknown     404
    │   ├── ConversationNotFound       conversation_not_found 404
    │   ├── MessageNotFound            message_not_found   404
    │   ├── ContextSetNotFound         context_set_not_found 404
    │   └── ImportSourceNotFound       import_source_not_found 404
    ├── MethodNotAllowed               method_not_allowed  405
    ├── Conflict                       conflict            409
    │   ├── VersionConflict            version_conflict    409
    │   ├── AddressTaken               address_taken       409
    │   ├── IdempotencyKeyReused       idempotency_key_reused 409
    │   └── TitleTaken                 title_taken         409
    ├── Unauthorized                   unauthorized        401
    ├── CapabilityNotGranted           capability_not_granted       403
    │   ├── PathNotAllowed             path_not_allowed    403
    │   ├── OriginNotAllowed           origin_not_allowed  403
    │   └── CsrfRefused                csrf_refused        403
    ├── HostNotAllowed                 host_not_allowed    421
    ├── NotAMember                     not_a_member        403
    ├── AddressNotBound                address_not_bound   403
    ├── NotTheWriter                   not_the_writer      403
    ├── MultipleMemoryDeclarations     multiple_memory_declarations 409
    ├── MemoryNotNamed                 memory_not_named    400
    ├── BlobCorrupt                    blob_corrupt        500
    ├── StoreError                     store_unavailable   503
    │   ├── StoreDamaged               store_damaged       503
    │   ├── StoreTooNew                store_too_new       503
    │   └── StorageFull                storage_full        507
    └── Timeout                        timeout             504

The JSON shape of an error, used by every door, is ``error.to_dict()``:
``{"ok": false, "error": <code>, "detail": <message>}``.
"""

from __future__ import annotations

from typing import Any, ClassVar


class RecuerdoError(Exception):
    """Base of every error recuerdo raises on purpose."""

    code: ClassVar[str] = "internal"
    status: ClassVar[int] = 500

    def __init__(self, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.detail = detail
        self.extra = extra

    def to_dict(self) -> dict[str, Any]:
        """The one JSON error shape of every door."""
        shape: dict[str, Any] = {"ok": False, "error": self.code, "detail": self.detail}
        shape.update(self.extra)
        return shape


class InvalidInput(RecuerdoError):
    code = "invalid_input"
    status = 400


class InvalidMemoryName(InvalidInput):
    code = "invalid_memory_name"


class InvalidCategory(InvalidInput):
    code = "invalid_category"


class InvalidRuleLevel(InvalidInput):
    code = "invalid_rule_level"


class InvalidTags(InvalidInput):
    code = "invalid_tags"


class EmptyContent(InvalidInput):
    code = "empty_content"


class InvalidBatch(InvalidInput):
    """A batch was refused as a whole; ``index`` names the first bad element."""

    code = "invalid_batch"


class EmptyTitle(InvalidInput):
    code = "empty_title"


class InvalidLabel(InvalidInput):
    """A category label that is blank or holds characters that would make it a path or link."""

    code = "invalid_label"


class InvalidOperation(InvalidInput):
    code = "invalid_operation"


class OperationContentMismatch(InvalidInput):
    """An edit's operation and its content/section/find arguments do not go together."""

    code = "operation_content_mismatch"


class UnknownArgument(InvalidInput):
    """An argument the verb (or the profile's tool) does not take; ``argument`` names it.
    Nothing is dropped silently."""

    code = "unknown_argument"


class InvalidJSON(InvalidInput):
    """The request body is not JSON this server can read (not UTF-8, nested too deep, a
    number too long)."""

    code = "invalid_json"


class InvalidHeader(InvalidInput):
    """A request header holds bytes that are not UTF-8 text."""

    code = "invalid_header"


class AddressInvalid(InvalidInput):
    """Not ``name@domain`` of ASCII letters, digits and ``. - _ +`` with exactly one ``@``."""

    code = "address_invalid"


class KindInvalid(InvalidInput):
    code = "kind_invalid"


class PageCursorInvalid(InvalidInput):
    """A page cursor (``after``) that no inbox or thread page gave out."""

    code = "page_cursor_invalid"


class UnknownImportKind(InvalidInput):
    """import-from names a kind of source no importer reads."""

    code = "unknown_import_kind"


class InvalidCondition(InvalidInput):
    """A rule's condition states a bound no comparison would read as written (``1,000``,
    ``20%``, past the range of a float): refused rather than read as another number."""

    code = "invalid_condition"


class ReservedWriterName(InvalidInput):
    """An agent or principal named like the owner's own writer (``main``): its entries would
    mix with the owner's and it could forget them."""

    code = "reserved_writer_name"


class EditRefused(RecuerdoError):
    """An edit that cannot be applied to the note as it is now."""

    code = "edit_refused"
    status = 422


class SectionNotFound(EditRefused):
    code = "section_not_found"


class SectionAmbiguous(EditRefused):
    code = "section_ambiguous"


class FindNotFound(EditRefused):
    code = "find_not_found"


class FindAmbiguous(EditRefused):
    code = "find_ambiguous"


class Conflict(RecuerdoError):
    """A write based on a version that is no longer current; nothing was overwritten."""

    code = "conflict"
    status = 409


class VersionConflict(Conflict):
    code = "version_conflict"


class AddressTaken(Conflict):
    """The address is bound to another principal (an address has one owner)."""

    code = "address_taken"


class IdempotencyKeyReused(Conflict):
    """The idempotency key was given before with another request: nothing was done (a retry
    repeats the request it retries; a new request takes a new key)."""

    code = "idempotency_key_reused"


class TitleTaken(Conflict):
    """A document's title is already used in its scope (a name, like a file's in a folder)."""

    code = "title_taken"


class ContentTooLarge(RecuerdoError):
    code = "content_too_large"
    status = 413


class LimitExceeded(ContentTooLarge):
    """A per-call limit (entities, relations, passages, bytes) was passed; ``limit`` names it."""

    code = "limit_exceeded"


class PayloadTooLarge(ContentTooLarge):
    code = "payload_too_large"


class RecipientsTooMany(LimitExceeded):
    code = "recipients_too_many"


class SubjectTooLong(LimitExceeded):
    code = "subject_too_long"


class BodyTooLarge(LimitExceeded):
    code = "body_too_large"


class UnsupportedMediaType(RecuerdoError):
    """The bytes are not a document kind recuerdo reads (read from the bytes, not the name)."""

    code = "unsupported_media_type"
    status = 415


class Unprocessable(RecuerdoError):
    code = "unprocessable"
    status = 422


class FactsShape(Unprocessable):
    code = "facts_shape"


class MentionNotInPassage(Unprocessable):
    code = "mention_not_in_passage"


class DocumentCorrupt(Unprocessable):
    code = "document_corrupt"


class DocumentNotReadable(Unprocessable):
    """Encrypted, or only images: no text to read."""

    code = "document_not_readable"


class LineBlameNotBuilt(Unprocessable):
    """Blame is kept per file (the commit that produced it and those before); a line-level
    blame is not built."""

    code = "line_blame_not_built"


class DiffTooLarge(Unprocessable):
    """A patch side is over 256 KiB or 5,000 lines; ask for the paths, or read with code_at."""

    code = "diff_too_large"


class DiffBinary(Unprocessable):
    code = "diff_binary"


class RangeTooLarge(Unprocessable):
    """More than 2,000 commits between the two revisions of a diff."""

    code = "range_too_large"


class GitUnreadable(Unprocessable):
    """The path is not a git repository git can read (or git is not installed)."""

    code = "git_unreadable"


class DomainNotOurs(Unprocessable):
    """An address in a domain not served here (see ``configure`` and ``serve``)."""

    code = "domain_not_ours"


class ImportSourceInvalid(Unprocessable):
    """An import source is not what its kind expects (not an Engram export, not a Synsema
    state file, ...); nothing was imported."""

    code = "import_source_invalid"


class NotFound(RecuerdoError):
    code = "not_found"
    status = 404


class ItemNotFound(NotFound):
    code = "item_not_found"


class TaskNotFound(NotFound):
    code = "task_not_found"


class StepNotFound(NotFound):
    code = "step_not_found"


class UnknownName(NotFound):
    """No entity of that name; ``suggestions`` lists up to three close names (never a guess)."""

    code = "unknown_name"


class RepoNotIngested(NotFound):
    """No repository of that name has been ingested into this memory (nothing was created)."""

    code = "repo_not_ingested"


class RepoNotServed(NotFound):
    """``code_ingest`` named a repository this server was not started with (--code-repo)."""

    code = "repo_not_served"


class RevisionNotFound(NotFound):
    """A revision that names no commit of the ingested branch (or one the branch dropped)."""

    code = "revision_not_found"


class MemoryNotFound(NotFound):
    """A read named a memory that does not exist (reads never create one);
    ``suggestions`` lists close existing names."""

    code = "memory_not_found"


class UnknownTool(NotFound):
    code = "unknown_tool"


class UnknownRoute(NotFound):
    code = "unknown_route"


class ContextSetNotFound(NotFound):
    """``context_set_name`` named no context set of this memory (see ``context_set``)."""

    code = "context_set_not_found"


class ImportSourceNotFound(NotFound):
    """The file or folder an import reads does not exist."""

    code = "import_source_not_found"


class MethodNotAllowed(RecuerdoError):
    code = "method_not_allowed"
    status = 405


class AddressUnknown(NotFound):
    """Recipients no one has bound; ``unknown`` names every one of them (nothing was sent)."""

    code = "address_unknown"


class ConversationNotFound(NotFound):
    code = "conversation_not_found"


class MessageNotFound(NotFound):
    code = "message_not_found"


class BlobCorrupt(RecuerdoError):
    """A stored blob no longer hashes to its sha256: it is never served. The request was
    fine and retrying cannot help; the store itself is damaged (run ``code verify``), so this
    is a server-side failure (500), not a refusal of the caller's input."""

    code = "blob_corrupt"
    status = 500


class Unauthorized(RecuerdoError):
    """No valid bearer token (a missing and a wrong token answer alike)."""

    code = "unauthorized"
    status = 401


class CapabilityNotGranted(RecuerdoError):
    code = "capability_not_granted"
    status = 403


class PathNotAllowed(CapabilityNotGranted):
    """A remote caller named a file on the server (remote doors take bytes, not paths), or a
    path outside the server's ``--ingest-root``."""

    code = "path_not_allowed"


class OriginNotAllowed(CapabilityNotGranted):
    """A request from a web page of another origin (cross-site requests are refused)."""

    code = "origin_not_allowed"


class CsrfRefused(CapabilityNotGranted):
    """A form of the memory lens posted without its session's CSRF token (or with another
    session's): nothing is changed."""

    code = "csrf_refused"


class HostNotAllowed(RecuerdoError):
    """A request whose Host header does not name this server (DNS rebinding is refused)."""

    code = "host_not_allowed"
    status = 421


class NotAMember(RecuerdoError):
    """The caller is not a member of the conversation: only its members read it."""

    code = "not_a_member"
    status = 403


class AddressNotBound(RecuerdoError):
    """The caller has no address to send from (bind one first), or named another's."""

    code = "address_not_bound"
    status = 403


class NotTheWriter(RecuerdoError):
    """An agent (or a token holder) asked to forget an entry another writer wrote: only its
    writer and the memory's owner may."""

    code = "not_the_writer"
    status = 403


class MultipleMemoryDeclarations(RecuerdoError):
    code = "multiple_memory_declarations"
    status = 409


class MemoryNotNamed(RecuerdoError):
    code = "memory_not_named"
    status = 400


class StoreError(RecuerdoError):
    """The database could not be reached or answered with an engine error."""

    code = "store_unavailable"
    status = 503


class StoreDamaged(StoreError):
    """The database file is damaged: nothing is read from it or written to it until it is
    recovered (``recuerdo check`` reports, ``recuerdo recover`` salvages)."""

    code = "store_damaged"


class StoreTooNew(StoreError):
    """The store was written by a newer recuerdo (its schema has steps this one does not
    know); it is never written by this one."""

    code = "store_too_new"


class StorageFull(StoreError):
    """The disk is full: nothing was written, the store is as it was."""

    code = "storage_full"
    status = 507


class Timeout(RecuerdoError):
    """No answer in time; a write may still complete, so read before retrying."""

    code = "timeout"
    status = 504


def all_error_classes() -> list[type[RecuerdoError]]:
    """Every error class, root first, in definition order (for docs and schema)."""
    found: list[type[RecuerdoError]] = []
    pending: list[type[RecuerdoError]] = [RecuerdoError]
    while pending:
        cls = pending.pop(0)
        if not getattr(cls, "carries_remote_code", False):
            found.append(cls)
        pending.extend(cls.__subclasses__())
    return found


# Every class of the tree (and the function above) is public; listed from the tree itself, so
# that a new error cannot be left out.
__all__ = [*(cls.__name__ for cls in all_error_classes()), "all_error_classes"]
