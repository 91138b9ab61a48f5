"""Verbs of knowledge: facts, documents, graph recall, forgetting, export and import."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import (
    DocumentCorrupt,
    DocumentNotReadable,
    FactsShape,
    LimitExceeded,
    MentionNotInPassage,
    PayloadTooLarge,
    UnknownName,
    UnsupportedMediaType,
)

if TYPE_CHECKING:
    from ..verbs import VerbTable

_SCOPE = "The scope (default 'user'); another scope never sees this one."


def register(table: VerbTable) -> None:
    table.add(
        "remember_knowledge",
        family="knowledge",
        mode="write",
        description="Store what you know without any model: text (content, or messages, or "
        "passages with the names they mention) and/or facts you extracted "
        "({entities: [{name, type, attributes}], relations: [{source, target, type, "
        "replaces}]}). The same call with the same date answers already.",
        docs={
            "content": "Raw text; cut into passages at sentence ends.",
            "messages": "[{role, content}]: one passage per turn.",
            "passages": "[{text, mentions, key}]: each mention must appear in its text.",
            "facts": "{entities, relations} you already know.",
            "date": "When it was said or became true (ISO 8601).",
            "source": "A provenance label returned in citations.",
            "scope": _SCOPE,
        },
        errors=(FactsShape, MentionNotInPassage, LimitExceeded),
    )
    table.add(
        "relate",
        family="knowledge",
        mode="write",
        description="Add one typed fact between two entities (created if new); replaces=true "
        "ends the subject's other targets of that type (kept in history).",
        docs={
            "from_": "The subject entity's name.",
            "to": "The object entity's name.",
            "type": "The relation, e.g. works_at.",
            "attributes": "Properties of the fact.",
            "replaces": "End the subject's other facts of this type.",
            "date": "When it became true (ISO 8601).",
            "scope": _SCOPE,
        },
        errors=(FactsShape,),
        arguments=("from_", "to", "type"),
    )
    table.add(
        "about",
        family="knowledge",
        mode="read",
        description="What memory holds about an entity (names match by spelling, case, a "
        "word or a prefix): its facts both ways up to `hops` away, derived facts with the "
        "rule and facts they rest on, and the passages that mention it, each with a verified "
        "citation. as_of = what was known then; valid_at = what was true then.",
        docs={
            "subject": "The entity's name.",
            "hops": "Graph steps to walk (0-3).",
            "k": "At most this many facts and passages.",
            "as_of": "Read what was known at this ISO 8601 instant.",
            "valid_at": "Read what was true at this ISO 8601 instant.",
            "compact": "Each item once, without diagnostics.",
            "scope": _SCOPE,
        },
        arguments=("subject",),
    )
    table.add(
        "forget_knowledge",
        family="knowledge",
        mode="write",
        description="Forget exactly one thing, for real (erased from the database file): a "
        "subject, a fact {from, to, type}, a stored document (passage: its doc id), every "
        "document of a source label, a whole scope (all), or an attribute {subject, key}. "
        "An unknown name is refused with close names, never guessed.",
        docs={
            "scope": _SCOPE,
            "subject": "An entity's exact name.",
            "fact": "{from, to, type}.",
            "passage": "A document id.",
            "source": "A source label.",
            "all": "true: the whole scope.",
            "attribute": "{subject, key}.",
        },
        errors=(UnknownName,),
        destructive=True,
    )
    table.add(
        "ingest",
        family="knowledge",
        mode="write",
        description="Store a document (PDF, Word .docx, HTML, Markdown or UTF-8 text, at most "
        "5,000,000 bytes; the kind is read from the bytes) as citable passages.",
        docs={
            "content_base64": "The document's bytes, base64.",
            "path": "A file to read instead (local use).",
            "name": "The document's name in citations.",
            "source": "A provenance label (forget by source removes it).",
            "scope": _SCOPE,
        },
        errors=(PayloadTooLarge, UnsupportedMediaType, DocumentCorrupt, DocumentNotReadable),
        cli_batch="path",
    )
    table.add(
        "export",
        family="knowledge",
        mode="read",
        description="Export one page of a scope's records; pass `next` back as `cursor`.",
        docs={
            "scope": _SCOPE,
            "cursor": "From the previous page's `next`.",
            "limit": "Records per page (1-1024, default 256).",
        },
    )
    table.add(
        "import",
        family="knowledge",
        mode="write",
        description="Import exported records into a scope; records already imported are "
        "skipped, so a page sent twice stores nothing twice.",
        docs={"records": "Records from export (at most 4096).", "scope": _SCOPE},
        method="import_records",
    )
    table.add(
        "status",
        family="knowledge",
        mode="read",
        description="Which scopes hold data; for one scope its ontology: entity types and "
        "relations in use, the biggest classes with exact member counts.",
        docs={"scope": "The scope to describe."},
    )
