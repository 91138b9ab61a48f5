"""The replies of the retrieval verbs, as types (published by the doors, checked by the contract
tests). Each class forbids keys it does not declare."""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict

from ..graph.results import AnyFact, Citation, CompactItem, Seeding

FORBID = ConfigDict(extra="forbid")

MeaningState = Literal["not_armed", "queued", "armed", "failed"]
AnswerState = Literal["answered", "nothing_stored", "could_not_judge"]


@with_config(FORBID)
class HitSpan(TypedDict):
    """Where a search hit lies in its item (not graph/results.Span: one name, one shape in the
    published schemas)."""

    start: int
    end: int
    chunk_id: int | None


@with_config(FORBID)
class Lines(TypedDict):
    start: int
    end: int


@with_config(FORBID)
class Hit(TypedDict):
    """One ranked fragment. Messages add where they were said, entries their tags, stored code
    its repository, path, lines and commit (a profile that addresses notes by a path, as
    Notarium's ``/m/<id>``, sets ``path`` on every hit)."""

    id: int
    item_type: str
    title: str | None
    kind: str | None
    scope: str
    source: str
    status: str
    score: float
    found_by: list[str]
    ranks: dict[str, int]
    preview: str
    truncated: bool
    item_chars: int
    item_bytes: int
    span: HitSpan
    updated_at: str
    conversation: NotRequired[str | None]
    speaker: NotRequired[str | None]
    date: NotRequired[str | None]
    ref: NotRequired[Any]
    tags: NotRequired[list[str]]
    repo: NotRequired[str | None]
    path: NotRequired[str | None]
    lines: NotRequired[Lines]
    commit: NotRequired[str | None]
    ordinal: NotRequired[int | None]


@with_config(FORBID)
class Found(TypedDict):
    query: str
    state: AnswerState
    meaning: MeaningState
    results: list[Hit]
    count: int
    failed_stages: NotRequired[list[str]]
    query_truncated: NotRequired[bool]
    """Present (true) when less than the query was searched: its first 2,000 characters (the
    ``query`` field holds them), or its first 32 distinct words (stop words aside)."""
    scopes_out_of_reach: NotRequired[list[str]]
    """A door's only: the scopes its tool reads for a call naming none (Engram's project named
    alone) that the caller's token does not reach, left out of this answer (decision 0173)."""


@with_config(FORBID)
class PackSpan(TypedDict):
    start: int
    end: int


@with_config(FORBID)
class Cited(TypedDict):
    """The item a block of a context pack cites, and how it was reached."""

    id: int
    title: str
    item_type: str
    scope: str
    writer: str
    updated_at: str
    span: PackSpan | None
    hop: int
    score: float
    pinned: NotRequired[bool]
    """In the context set the caller named (``context_set_name``): shown first."""


@with_config(FORBID)
class Source(Cited):
    """One block of a context pack: what it cites, whether it was cut and what it cost."""

    cut: bool
    tokens: int


@with_config(FORBID)
class Grounding(TypedDict):
    state: Literal[
        "grounded",
        "grounded_by_meaning",
        "related",
        "uncited",
        "nothing_stored",
        "could_not_judge",
    ]
    uncovered: NotRequired[list[str]]


@with_config(FORBID)
class Pack(TypedDict):
    query: str
    state: AnswerState
    meaning: MeaningState
    context: str
    sources: list[Source]
    truncated: bool
    grounding: Grounding
    budget_tokens: int
    used_tokens: int
    query_truncated: NotRequired[bool]
    """The query was longer than is read (2,000 characters or 32 distinct words): the pack is
    of what was kept."""
    links_cut: NotRequired[bool]
    """A hop of the walk reached more items than the budget could hold (a hub note): those of
    the lowest ids were ranked, and the walk went no further. The pack is truncated."""
    scopes_out_of_reach: NotRequired[list[str]]
    """A door's only: the scopes its tool reads for a call naming none (Notarium's recall of a
    project) that the caller's token does not reach, left out of this pack (decision 0173)."""


@with_config(FORBID)
class IndexStatus(TypedDict):
    chunks: int
    items_waiting: int
    items_waiting_for_substring_index: int
    model: str | None
    meaning: MeaningState
    meaning_reason: NotRequired[str]
    """Why meaning is ``not_armed``: the model asked for, and the package that brings it."""
    chunks_waiting_for_vectors: NotRequired[int]
    embedded_percent: NotRequired[float]
    backend: NotRequired[dict[str, Any]]


@with_config(ConfigDict(extra="forbid"))
class EntryCount(TypedDict):
    category: str
    source: str
    count: int


@with_config(ConfigDict(extra="forbid"))
class NoteCount(TypedDict):
    axis: Literal["user", "project"] | None
    scope: str
    kind: str
    count: int
    needs_review: int
    muted: int


@with_config(ConfigDict(extra="forbid"))
class Overview(TypedDict):
    items: dict[str, int]
    chars: int
    deleted_notes: int
    entries: list[EntryCount]
    notes: list[NoteCount]
    plans: int
    rules: int


@with_config(FORBID)
class FoundPassage(TypedDict):
    """A passage the question's words, meaning or entities found (``found_by``: the stages)."""

    kind: Literal["passage"]
    id: int | None
    doc_id: int
    text: str
    score: float
    found_by: list[str]
    citation: Citation


@with_config(FORBID)
class Answer(TypedDict):
    query: str
    scope: str
    state: Literal["answered", "nothing_stored", "could_not_judge"]
    meaning: MeaningState
    facts: list[AnyFact]
    seeds: list[Seeding]
    passages: list[FoundPassage | CompactItem]
    grounding: Grounding
    k: int
    hops: int
    as_of: str | None
    valid_at: str | None
    compact: bool
    failed_stages: NotRequired[list[str]]
    earlier_texts_unread: NotRequired[int]
    """With as_of or valid_at: notes changed since, too many to be searched in their text of
    then (found, if at all, by their words of now; still answered with their text of then)."""
    earlier_texts_withheld: NotRequired[int]
    """With as_of or valid_at: notes the answer would have given whose text then holds what
    the secret guard now replaces (an older guard let it through, a later edit replaced it in
    the note): left out rather than give it back."""
    query_truncated: NotRequired[bool]
    """The question was longer than is read (2,000 characters or 32 distinct words)."""


@with_config(ConfigDict(extra="forbid"))
class Summary(TypedDict):
    """A memory in brief: ``text`` for a person (it starts ``Agent Memory: N entries, M
    rules``, as Synsema's did), and the same counts for a program."""

    text: str
    entries: int
    entries_by_category: dict[str, int]
    rules: int
    recent_violations: list[str]
    notes: int
    notes_needing_review: int
    conversations: int
    messages: int
    entities: int
    facts: int
    documents: int
    plans: int
    plans_finished: int
