"""Typed results of what core keeps for the verbs (the retrieval audit)."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict


@with_config(ConfigDict(extra="forbid"))
class AuditRecord(TypedDict):
    """One retrieval: who asked, what, with which filters, and what came back."""

    id: int
    principal: str
    verb: str
    scope: str | None
    query: str | None
    filters: dict[str, Any]
    returned: list[int]
    found: bool
    created_at: str
