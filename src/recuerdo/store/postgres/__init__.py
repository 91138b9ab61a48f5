"""The shared backend: PostgreSQL (tsvector, pg_trgm where present), one schema per memory.

Needs the ``postgres`` extra (psycopg 3 and its pool)."""

from .connection import PostgresStore, PostgresTx, memory_names
from .pool import redact
from .schemas import schema_name

__all__ = ["PostgresStore", "PostgresTx", "memory_names", "redact", "schema_name"]
