"""Per-memory settings kept in the store, so every process of a memory agrees on them."""

from __future__ import annotations

import json
import re
from typing import Any

from ..errors import InvalidInput
from ..store.base import Tx
from .exact import shown

DEFAULT_REVIEW_MONTHS: dict[str, int] = {
    "preference": 3,
    "decision": 6,
    "policy": 12,
    "architecture": 12,
}
DEFAULT_NOTE_LIMIT_BYTES = 50_000
MAX_NOTE_LIMIT_BYTES = 5_000_000
MAX_MAIL_DOMAINS = 64
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_DOMAIN = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")
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


def check_mail_domain(value: object) -> str:
    """A mail domain as a server or a tenant names it: letters, digits, dots and hyphens."""
    domain = value.strip().lower() if isinstance(value, str) else ""
    if len(domain) > 253 or not _DOMAIN.fullmatch(domain):
        raise InvalidInput(
            f"a mail domain is letters, digits, '-' and '.' (e.g. example.com), got {shown(value)}"
        )
    return domain


def mail_domains(tx: Tx, tenant: str) -> list[str]:
    """The domains this tenant set for its addresses (empty: the server's, else ``local``)."""
    stored = _read(tx, tenant, "mail_domains")
    return [] if stored is None else [str(d) for d in stored]


def configure(
    tx: Tx,
    tenant: str,
    *,
    review_months_by_kind: object = None,
    limit_bytes: object = None,
    domains: object = None,
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
    if domains is not None:
        if isinstance(domains, str) or not isinstance(domains, list | tuple):
            raise InvalidInput("mail_domains is a list of domains, e.g. ['example.com']")
        if len(domains) > MAX_MAIL_DOMAINS:
            raise InvalidInput(f"at most {MAX_MAIL_DOMAINS} mail domains")
        chosen = list(dict.fromkeys(check_mail_domain(d) for d in domains))
        _write(tx, tenant, "mail_domains", chosen)
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
        "mail_domains": mail_domains(tx, tenant),
        "audit_retention_days": audit_retention(tx, tenant),
    }


def audit_retention(tx: Tx, tenant: str) -> int:
    stored = _read(tx, tenant, "audit_retention_days")
    return DEFAULT_AUDIT_RETENTION_DAYS if stored is None else int(stored)
