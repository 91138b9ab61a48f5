"""Helpers of the PostgreSQL migration steps, and the row-level security of ``m016``.

Row-level security is defence in depth under the families' own tenant filters
(``docs/tenancy.md``): every table holding a tenant's rows gets a policy that shows and accepts
only the rows of the transaction's tenant (``recuerdo.tenant``, set by the store at BEGIN from
the call's scope), or every row for memory-wide work (``*``: indexing, backups). A session that
sets nothing sees nothing. ``FORCE`` applies the policies to the tables' owner too (the role
recuerdo connects as, which creates them); a superuser or a ``BYPASSRLS`` role is never
subject to them, so a deployment that wants the defence connects as an ordinary role.
"""

from __future__ import annotations

from ..base import Tx

POLICY = "tenant_rows"
SETTING = "recuerdo.tenant"
_MINE = f"tenant = current_setting('{SETTING}', true) OR current_setting('{SETTING}', true) = '*'"


def run_script(tx: Tx, script: str) -> None:
    # Statements are separated by a blank line (function bodies hold semicolons of their own).
    for statement in script.split("\n\n"):
        if statement.strip():
            tx.execute(statement)


def has_extension(tx: Tx, name: str) -> bool:
    """Whether ``name`` is installed, installing it when the server has it and we may."""
    if tx.scalar("SELECT 1 FROM pg_extension WHERE extname = ?", (name,)):
        return True
    # A trusted extension (pg_trgm) needs the right to create in the database; any other
    # (pgvector) a superuser: an ordinary role that tried would fail the whole open.
    # (No version on the server: no row, and bool_or gives NULL.)
    may_create = tx.scalar(
        "SELECT has_database_privilege(current_database(), 'CREATE')"
        " AND bool_or(v.trusted OR r.rolsuper)"
        " FROM pg_available_extension_versions v, pg_roles r"
        " WHERE v.name = ? AND r.rolname = current_user",
        (name,),
    )
    if not may_create:
        return False
    tx.execute(f"CREATE EXTENSION IF NOT EXISTS {name} SCHEMA public")
    return True


def tenant_tables(tx: Tx) -> list[str]:
    """The memory's tables with a ``tenant`` column (every table but the bookkeeping ones)."""
    return [
        str(row["name"])
        for row in tx.all(
            "SELECT c.relname AS name FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid"
            " WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'"
            " AND a.attname = 'tenant' AND NOT a.attisdropped ORDER BY c.relname"
        )
    ]


def tenant_policies(tx: Tx) -> None:
    """Enable, force and write the tenant policy on every tenant table. A later step that adds
    a tenant table calls this again (``tests/test_postgres_rls.py`` checks every one has it)."""
    for name in tenant_tables(tx):
        table = '"' + name.replace('"', '""') + '"'
        tx.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        tx.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
        tx.execute(f"DROP POLICY IF EXISTS {POLICY} ON {table}")
        tx.execute(f"CREATE POLICY {POLICY} ON {table} USING ({_MINE}) WITH CHECK ({_MINE})")
