"""Timestamps: UTC, ISO 8601 with microseconds, so text order is time order."""

from __future__ import annotations

from datetime import UTC, datetime

_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def now_iso() -> str:
    return datetime.now(UTC).strftime(_FORMAT)


def parse_iso(value: str) -> datetime:
    return datetime.strptime(value, _FORMAT).replace(tzinfo=UTC)
