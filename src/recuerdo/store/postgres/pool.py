"""Reaching a memory's schema on PostgreSQL: the first connection, which makes the schema of
a new memory or checks that the role may use an existing one, then the pool of connections
every transaction takes one from."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ...errors import MemoryNotFound, StoreError
from . import planner
from .rows import register_types, row_factory

POOL_SIZE = 8


def redact(url: str) -> str:
    """The URL without its password (what ``location`` and messages show)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


# A memory is a schema holding its migration record: an empty schema (left by a creation that
# failed half way) is no memory, and a read does not open it.
_MEMORY_SCHEMAS = (
    "SELECT schemaname FROM pg_tables WHERE tablename = '_migrations'"
    " AND starts_with(schemaname, %s)"
)


def lock_key(schema: str) -> str:
    """The advisory lock that serializes a memory's writers (and its creation)."""
    return f"recuerdo:{schema}"


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def _open_pool(url: str, schema: str, create: bool) -> Any:
    import psycopg
    from psycopg_pool import ConnectionPool

    try:
        with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
            # Two servers opening a new memory at once: IF NOT EXISTS alone can still collide
            # in the catalog, so the memory's write lock orders them.
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [lock_key(schema)]
            )
            # An existing memory is opened without CREATE: a role granted its tables need not
            # make schemas (decision 0166).
            found = conn.execute(_MEMORY_SCHEMAS + " AND schemaname = %s", [schema, schema])
            if found.fetchone() is None:
                if not create:
                    raise MemoryNotFound(f"no memory {schema!r} in the database at {redact(url)}")
                conn.execute(f"CREATE SCHEMA IF NOT EXISTS {_quote(schema)}")
            # A schema the role may not use is left out of its search path without a word: its
            # statements would reach a memory of the same tables made in ``public`` instead,
            # empty (reads "nothing stored", writes kept apart from the memory).
            usable = "SELECT has_schema_privilege(%s, 'USAGE'), current_user"
            allowed, role = conn.execute(usable, [schema]).fetchone() or (False, "?")
            if not allowed:
                raise StoreError(
                    f"the role {role!r} may not use the schema {schema!r} at {redact(url)}:"
                    " connect as the memory's owner, or grant it USAGE on the schema and"
                    " privileges on its tables"
                )
    except psycopg.Error as exc:
        raise StoreError(f"cannot reach the database at {redact(url)}: {exc}") from exc

    def configure(conn: Any) -> None:
        conn.row_factory = row_factory
        register_types(conn)
        conn.execute(f"SET search_path TO {_quote(schema)}, public")
        planner.configure(conn)

    pool = ConnectionPool(
        url,
        min_size=1,
        max_size=POOL_SIZE,
        kwargs={"autocommit": True},
        configure=configure,
        name=f"recuerdo:{schema}",
        open=False,
    )
    try:
        pool.open(wait=True, timeout=30)
    except Exception as exc:
        pool.close()
        raise StoreError(f"cannot reach the database at {redact(url)}: {exc}") from exc
    return pool
