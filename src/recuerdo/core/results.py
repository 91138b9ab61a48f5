"""Typed results of what core keeps for the verbs (the retrieval audit)."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict

from .secrets import SecretKind

Redactions = dict[str, list[SecretKind]]
"""What the secret guard replaced in a write's arguments: each argument (by its parameter name)
that held a credential, with the kinds replaced. A private key's BEGIN marker with no END
marker takes the rest of its text (decision 0080): the reply says so."""


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
