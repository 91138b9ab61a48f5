"""Typed results of the mirror verbs."""

from __future__ import annotations

from typing import Literal, NotRequired

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict

from ..core.results import Redactions


@with_config(ConfigDict(extra="forbid"))
class MirrorPush(TypedDict):
    """What a push did, with the evidence: both hashes, and whether the copies are alike."""

    key: str
    scope: str
    id: int
    version: int
    outcome: Literal["created", "updated", "duplicate"]
    local_sha256: str
    memory_sha256: str
    in_sync: bool
    bytes: int
    detail: str
    redacted: NotRequired[Redactions]
    """What the guard replaced before storing, by argument (``{}`` when nothing was)."""


@with_config(ConfigDict(extra="forbid"))
class MirrorCopy(TypedDict):
    """The memory's copy of a mirrored document, whole."""

    state: Literal["answered", "nothing_stored"]
    key: str
    scope: str
    id: NotRequired[int]
    version: NotRequired[int]
    locator: NotRequired[str]
    content: NotRequired[str]
    sha256: NotRequired[str]
    updated_at: NotRequired[str]
