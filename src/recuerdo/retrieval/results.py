"""The typed result of ``ask`` (a question's graph answer); see ``ask.py``."""

from __future__ import annotations

from typing import Literal, NotRequired

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict

from ..graph.results import AnyFact, Citation, CompactItem, MeaningState, Seeding

_EXACT = ConfigDict(extra="forbid")

GroundingState = Literal[
    "grounded", "grounded_by_meaning", "related", "uncited", "nothing_stored", "could_not_judge"
]


@with_config(_EXACT)
class Grounding(TypedDict):
    """How well the answer covers the question's words; ``uncovered`` lists the others."""

    state: GroundingState
    uncovered: NotRequired[list[str]]


@with_config(_EXACT)
class FoundPassage(TypedDict):
    """A passage the question's words, meaning or entities found (``found_by``: the stages)."""

    kind: Literal["passage"]
    id: int | None
    doc_id: int
    text: str
    score: float
    found_by: list[str]
    citation: Citation


@with_config(_EXACT)
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
