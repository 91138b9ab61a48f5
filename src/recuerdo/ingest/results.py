"""The typed result of the ingest verb (see ``document.py`` for what each part means)."""

from __future__ import annotations

from typing import Literal, NotRequired

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict

_EXACT = ConfigDict(extra="forbid")


@with_config(_EXACT)
class Customs(TypedDict):
    """What the upload went through on its way in."""

    kind: str
    bytes: int
    blocks_redacted: int
    read_back: Literal["identical"]
    emptied: bool


@with_config(_EXACT)
class TextBlock(TypedDict):
    """A heading, paragraph or list item: its page (PDF), number, and span in the text (code
    points and UTF-8 bytes)."""

    page: int | None
    paragraph: int
    kind: Literal["heading", "paragraph", "list_item"]
    start: int
    end: int
    byte_start: int
    byte_end: int


@with_config(_EXACT)
class Ingested(TypedDict):
    """``outcome``: ``stored``, or ``already``: the same bytes, name and source were stored in
    this scope before, as this text; ``doc_id`` is that document's and nothing is stored."""

    outcome: Literal["stored", "already"]
    doc_id: int
    name: str
    kind: str
    scope: str
    bytes: int
    text_bytes: int
    text_chars: int
    block_count: int
    passages: int
    ingested_at: str
    customs: Customs
    text: NotRequired[str]
    blocks: NotRequired[list[TextBlock]]
