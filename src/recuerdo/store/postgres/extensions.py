"""Optional server extensions (pg_trgm, pgvector): used where present, never required."""

from __future__ import annotations

from ..base import Tx


def has_extension(tx: Tx, name: str) -> bool:
    """Whether ``name`` is installed, installing it when the server has it and we may."""
    if tx.scalar("SELECT 1 FROM pg_extension WHERE extname = ?", (name,)):
        return True
    available = tx.scalar("SELECT 1 FROM pg_available_extensions WHERE name = ?", (name,))
    may_create = tx.scalar("SELECT has_database_privilege(current_database(), 'CREATE')")
    if not (available and may_create):
        return False
    tx.execute(f"CREATE EXTENSION IF NOT EXISTS {name} SCHEMA public")
    return True
