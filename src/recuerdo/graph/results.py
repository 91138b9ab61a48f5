"""The typed results of the knowledge verbs (remember, relate, about, forget, export, import,
status): plain dicts, named here so that the doors publish their exact shape (OpenAPI 200
responses, MCP ``outputSchema``) and type checkers hold the code to it.

Every model forbids keys it does not list: a reply with a key its type does not declare fails
the contract tests, so a reply and its type cannot drift apart.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict

from ..comms.model import AddressRecord, ConversationRecord, CursorRecord, MailRecord
from ..core.results import Redactions

_EXACT = ConfigDict(extra="forbid")

MeaningState = Literal["armed", "not_armed", "queued", "failed"]
"""``armed`` (a model answers by meaning), ``not_armed`` (no model installed), ``queued``
(text waits for its vectors), ``failed`` (the model broke on this question)."""


@with_config(_EXACT)
class TypedValue(TypedDict):
    """An attribute value with its type: string, integer, decimal (exact digits, as text),
    boolean, date, datetime, or list (a set of typed values)."""

    type: str
    value: Any


@with_config(_EXACT)
class Seeding(TypedDict):
    """An entity the question or name was found to be about, and how it matched."""

    name: str
    how: str
    matched: str


@with_config(_EXACT)
class CitationSource(TypedDict):
    kind: Literal["document", "asserted", "derived"]
    doc_id: NotRequired[int | None]
    name: NotRequired[str | None]
    ingested_at: NotRequired[str | None]
    version: NotRequired[int]
    """The note's version the span is of, when an answer at an instant read an earlier one
    than its current text (``revision`` gives it whole)."""


@with_config(_EXACT)
class Span(TypedDict):
    """Code points ``[start, end)`` of the document's full text, and the text they hold."""

    text: str
    start: int
    end: int


SpanState = Literal["verified", "mismatch", "source_missing", "not_in_text", "asserted", "derived"]
"""A citation's ``span_state``: ``verified`` (the stored text still says the span), and why
``span`` is null otherwise: ``mismatch`` (the text changed), ``source_missing`` (the document
is gone), ``not_in_text`` (the fact came with a text that names no passage with both ends),
``asserted`` (the fact came with no text), ``derived`` (a rule gives it; see ``found_by``)."""


@with_config(_EXACT)
class SourceCitation(TypedDict):
    source: CitationSource
    span: Span | None
    span_state: SpanState


@with_config(_EXACT)
class FactRef(TypedDict):
    id: int
    subject: str | None
    relation: str
    object: str | None


@with_config(_EXACT)
class Reasoning(TypedDict):
    """Why a derived fact holds: the rule, the stored facts it rests on, in a sentence."""

    rule: str
    rests_on: list[FactRef]
    says: str


@with_config(_EXACT)
class FoundBy(TypedDict):
    stage: str
    seed: NotRequired[str | None]
    hop: NotRequired[int]
    mention: NotRequired[bool]
    stages: NotRequired[list[str]]
    rule: NotRequired[str]
    rests_on: NotRequired[list[SourceCitation]]
    reasoning: NotRequired[Reasoning]


@with_config(_EXACT)
class Citation(TypedDict):
    source: CitationSource
    span: Span | None
    span_state: SpanState
    found_by: FoundBy


@with_config(_EXACT)
class EntityItem(TypedDict):
    kind: Literal["entity"]
    id: int
    name: str
    types: list[str]
    attributes: dict[str, TypedValue]
    seed: str


@with_config(_EXACT)
class FactItem(TypedDict):
    """A stored fact, found from the seed in one direction."""

    kind: Literal["fact"]
    id: int
    subject: str | None
    relation: str
    object: str | None
    attributes: dict[str, Any]
    direction: Literal["outbound", "inbound"]
    derived: Literal[False]
    hop: int
    seed: str
    valid_from: str | None
    valid_to: str | None
    recorded_at: str
    ended_at: str | None
    replaced_by: int | None
    state: Literal["current", "ended"]
    citation: Citation


@with_config(_EXACT)
class DerivedFactItem(TypedDict):
    """A fact that follows from stored ones by a rule; never stored itself."""

    kind: Literal["fact"]
    id: None
    subject: str | None
    relation: str
    object: str | None
    direction: Literal["derived"]
    derived: Literal[True]
    rule: str
    rests_on: list[int]
    hop: int
    seed: str
    citation: Citation


@with_config(_EXACT)
class PassageItem(TypedDict):
    kind: Literal["passage"]
    id: int
    doc_id: int
    text: str
    direction: Literal["mentions"]
    derived: Literal[False]
    seed: str
    citation: Citation


@with_config(_EXACT)
class CompactCite(TypedDict):
    doc_id: int | None
    start: int
    end: int
    version: NotRequired[int]


@with_config(_EXACT)
class CompactItem(TypedDict):
    """An item once, without diagnostics (``compact: true``)."""

    kind: Literal["entity", "fact", "passage"]
    id: int | None
    fact: NotRequired[str]
    derived: NotRequired[bool]
    name: NotRequired[str]
    types: NotRequired[list[str]]
    text: NotRequired[str]
    cite: NotRequired[CompactCite]


AboutItem = EntityItem | FactItem | DerivedFactItem | PassageItem | CompactItem
AnyFact = FactItem | DerivedFactItem | CompactItem


@with_config(_EXACT)
class About(TypedDict):
    """``as_of``: the instant read, when one was asked (now, for one a caller's clock put a
    little ahead: decision 0165)."""

    state: Literal["answered", "nothing_stored"]
    items: list[AboutItem]
    seeding: list[Seeding]
    meaning: MeaningState
    as_of: NotRequired[str]


@with_config(_EXACT)
class KnowledgeRemembered(TypedDict):
    """What a remember (or relate) call stored; ``already``: the same call was stored before,
    and this one created nothing."""

    outcome: Literal["stored", "already"]
    scope: str
    doc_id: int | None
    passages: int
    entities_created: int
    facts_created: int
    facts_existing: int
    facts_replaced: int
    attributes_changed: int
    extraction: Literal["agent_facts", "known_names_only"]
    model_extraction: str
    unlinked_passages: int
    date: str | None
    meaning: MeaningState
    redacted: NotRequired[Redactions]


@with_config(_EXACT)
class Forgot(TypedDict):
    """What one forget removed (the counts of its form), or ``already_forgotten``."""

    scope: str
    form: Literal["subject", "fact", "passage", "source", "all", "attribute"]
    already_forgotten: bool
    passages_hidden: NotRequired[int]
    documents_emptied: NotRequired[list[int]]
    facts_removed: NotRequired[int]
    passages_retained: NotRequired[int]
    documents_retained: NotRequired[list[int]]
    documents_removed: NotRequired[int]
    messages_removed: NotRequired[int]
    conversations_removed: NotRequired[int]
    facts_kept: NotRequired[int]
    items_removed: NotRequired[int]
    entities_removed: NotRequired[int]
    attribute_values_removed: NotRequired[int]
    code_repos_removed: NotRequired[int]


@with_config(_EXACT)
class ExportHeader(TypedDict):
    record: Literal["export"]
    version: int
    scope: str
    exported_at: str


@with_config(_EXACT)
class ExportedPassage(TypedDict):
    start: int
    end: int
    mentions: list[str]


@with_config(_EXACT)
class DocumentRecord(TypedDict):
    record: Literal["document"]
    key: str
    name: str | None
    text: str
    passages: list[ExportedPassage]
    source: str | None
    kind: str
    date: str | None
    ingested_at: str


@with_config(_EXACT)
class AttributeValue(TypedDict):
    key: str
    value: TypedValue
    valid_from: str | None
    recorded_at: str
    ended_at: str | None


@with_config(_EXACT)
class EntityRecord(TypedDict):
    record: Literal["entity"]
    key: str
    name: str
    types: list[str]
    attributes: list[AttributeValue]
    recorded_at: str


@with_config(_EXACT)
class FactSource(TypedDict):
    document_key: str
    start: int
    end: int
    date: str | None


@with_config(_EXACT)
class FactRecord(TypedDict):
    record: Literal["fact"]
    key: str
    subject: str
    subject_types: list[str]
    relation: str
    object: str
    object_types: list[str]
    attributes: dict[str, Any]
    state: Literal["current", "ended"]
    valid_from: str | None
    valid_to: str | None
    recorded_at: str
    ended_at: str | None
    replaced_by: str | None
    source: str | None
    sources: list[FactSource]


@with_config(_EXACT)
class NoteRevision(TypedDict):
    version: int
    title: str | None
    kind: str | None
    content: str
    operation: str
    principal: str
    created_at: str


@with_config(_EXACT)
class NoteRecord(TypedDict):
    record: Literal["note"]
    key: str
    title: str | None
    kind: str | None
    note_key: str | None
    tags: list[str]
    created_at: str
    review_at: str | None
    """When the note is next due for review (kept by an import, decision 0116)."""
    revisions: list[NoteRevision]
    conflicts: list[NoteConflict]
    """Text that came with a stale version and was kept beside the note (decision 0083)."""


@with_config(_EXACT)
class NoteConflict(TypedDict):
    based_on: int | None
    title: str | None
    kind: str | None
    content: str
    principal: str
    created_at: str


@with_config(_EXACT)
class EntryRecord(TypedDict):
    record: Literal["entry"]
    key: str
    category: str | None
    content: str
    tags: list[str]
    source: str
    created_at: str


ExportRecord = (
    ExportHeader
    | DocumentRecord
    | EntityRecord
    | FactRecord
    | NoteRecord
    | EntryRecord
    | AddressRecord
    | ConversationRecord
    | MailRecord
    | CursorRecord
)


@with_config(_EXACT)
class Exported(TypedDict):
    records: list[ExportRecord]
    next: str | None
    count: int


@with_config(_EXACT)
class Skipped(TypedDict):
    index: int
    why: str


@with_config(_EXACT)
class Imported(TypedDict):
    imported: int
    skipped: list[Skipped]
    not_reproduced: list[str]


@with_config(_EXACT)
class ScopeCount(TypedDict):
    """A scope that holds data: its live items, and the entities of its knowledge graph."""

    scope: str
    items: int
    entities: int


@with_config(_EXACT)
class TypeCount(TypedDict):
    """A class (entity type) and its live members, counted exactly (``members_bound``)."""

    type: str
    members: int
    members_bound: Literal["exact"]


@with_config(_EXACT)
class RelationCount(TypedDict):
    relation: str
    facts: int


@with_config(_EXACT)
class Ontology(TypedDict):
    scope: str
    entities: int
    facts: int
    documents: int
    entity_types: list[TypeCount]
    biggest_classes: list[TypeCount]
    relations: list[RelationCount]
    relation_spellings: list[str]


@with_config(_EXACT)
class RulesInUse(TypedDict):
    symmetric: list[str]
    inverse: dict[str, str]
    transitive: list[str]


@with_config(_EXACT)
class Status(TypedDict):
    memory: Literal["on"]
    scopes: list[ScopeCount]
    ontology: NotRequired[Ontology]
    meaning: MeaningState
    relations_derived: RulesInUse
