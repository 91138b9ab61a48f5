"""What every kind of item shares, whichever family wrote it."""

from __future__ import annotations

from ..store.base import Row


def status_of(row: Row, at: str) -> str:
    """A note past its review date reads as ``needs_review`` wherever it appears."""
    if row["status"] == "active" and row["review_at"] is not None and row["review_at"] <= at:
        return "needs_review"
    return str(row["status"])
