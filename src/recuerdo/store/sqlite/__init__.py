"""The embedded backend: one SQLite file per memory (FTS5, trigram index, vectors in memory)."""

from .connection import SQLiteStore, SQLiteTx
from .driver import FTS5_SECURE_DELETE, sqlite3

__all__ = ["FTS5_SECURE_DELETE", "SQLiteStore", "SQLiteTx", "sqlite3"]
