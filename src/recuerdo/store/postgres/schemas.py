"""Where a memory lives in a PostgreSQL database: one schema per memory, named after it."""

from __future__ import annotations

from ...errors import InvalidInput

SCHEMA_PREFIX = "recuerdo_"
IDENTIFIER_BYTES = 63
"""PostgreSQL cuts a longer identifier (NAMEDATALEN - 1) with a notice, not an error."""


def schema_name(memory: str) -> str:
    """The database schema holding a memory (names are already checked: ``[a-z0-9_-]``). A
    name whose schema PostgreSQL would cut is refused: its open failed as "the database is
    unreachable", and two names alike in their first 54 characters were one schema."""
    schema = f"{SCHEMA_PREFIX}{memory}"
    if len(schema.encode()) > IDENTIFIER_BYTES:
        raise InvalidInput(
            f"a memory kept in PostgreSQL has a name of at most"
            f" {IDENTIFIER_BYTES - len(SCHEMA_PREFIX)} bytes; {memory!r} has"
            f" {len(memory.encode())}"
        )
    return schema
