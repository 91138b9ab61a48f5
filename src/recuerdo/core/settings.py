"""Per-memory settings kept in the store, so every process of a memory agrees on them."""

from __future__ import annotations

import json
from typing import Any

from ..errors import InvalidInput
from ..store.base import Tx

DEFAULT_REVIEW_MONTHS: dict[str, int] = {
    "preference": 3,
    "decision": 6,
    "policy": 12,
    "architecture": 12,
}
DEFAULT_NOTE_LIMIT_BYTES = 50_000
MAX_NOTE_LIMIT_BYTES = 5_000_000
DEFAULT_AUDIT_RETENTION_DAYS = 90  # core.audit.DEFAULT_RETENTION_DAYS
MAX_AUDIT_RETENTION_DAYS = 36_500


def _read(tx: Tx, tenant: str, name: str) -> Any:
    raw = tx.scalar("SELECT value FROM settings WHERE tenant = ? AND name = ?", (tenant, name))
    return None if raw is None else json.loads(raw)


def _write(tx: Tx, tenant: str, name: str, value: Any) -> None:
    tx.execute(
        "INSERT INTO settings (tenant, name, value) VALUES (?, ?, ?)"
        " ON CONFLICT (tenant, name) DO UPDATE SET value = excluded.value",
        (tenant, name, json.dumps(value)),
    )


def review_months(tx: Tx, tenant: str) -> dict[str, int]:
    stored = _read(tx, tenant, "review_months")
    return dict(DEFAULT_REVIEW_MONTHS) if stored is None else {k: int(v) for k, v in stored.items()}


def note_limit_bytes(tx: Tx, tenant: str) -> int:
    stored = _read(tx, tenant, "note_limit_bytes")
    return DEFAULT_NOTE_LIMIT_BYTES if stored is None else int(stored)


def configure(
    tx: Tx,
    tenant: str,
    *,
    review_months_by_kind: object = None,
    limit_bytes: object = None,
    audit_retention_days: object = None,
) -> dict[str, Any]:
    if review_months_by_kind is not None:
        if not isinstance(review_months_by_kind, dict):
            raise InvalidInput("review_months maps a kind to a number of months (or null)")
        months = review_months(tx, tenant)
        for kind, value in review_months_by_kind.items():
            if value is None or value == 0:
                months.pop(str(kind), None)  # no review date for this kind
            elif isinstance(value, int) and not isinstance(value, bool) and 0 < value <= 1200:
                months[str(kind)] = value
            else:
                raise InvalidInput(f"review_months[{kind!r}] must be 1..1200 months or null")
        _write(tx, tenant, "review_months", months)
    if limit_bytes is not None:
        if (
            isinstance(limit_bytes, bool)
            or not isinstance(limit_bytes, int)
            or not 1024 <= limit_bytes <= MAX_NOTE_LIMIT_BYTES
        ):
            raise InvalidInput(f"note_limit_bytes must be 1024..{MAX_NOTE_LIMIT_BYTES}")
        _write(tx, tenant, "note_limit_bytes", limit_bytes)
    if audit_retention_days is not None:
        if (
            isinstance(audit_retention_days, bool)
            or not isinstance(audit_retention_days, int)
            or not 1 <= audit_retention_days <= MAX_AUDIT_RETENTION_DAYS
        ):
            raise InvalidInput(f"audit_retention_days must be 1..{MAX_AUDIT_RETENTION_DAYS}")
        _write(tx, tenant, "audit_retention_days", audit_retention_days)
    return {
        "review_months": review_months(tx, tenant),
        "note_limit_bytes": note_limit_bytes(tx, tenant),
        "audit_retention_days": audit_retention(tx, tenant),
    }


def audit_retention(tx: Tx, tenant: str) -> int:
    stored = _read(tx, tenant, "audit_retention_days")
    return DEFAULT_AUDIT_RETENTION_DAYS if stored is None else int(stored)
