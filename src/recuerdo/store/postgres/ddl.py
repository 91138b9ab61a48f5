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

from ...errors import StoreError
from ..base import Tx

POLICY = "tenant_rows"
_INSUFFICIENT_PRIVILEGE = "42501"  # SQLSTATE: the role may not do that
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
    available = tx.scalar("SELECT 1 FROM pg_available_extensions WHERE name = ?", (name,))
    may_create = tx.scalar("SELECT has_database_privilege(current_database(), 'CREATE')")
    if not (available and may_create):
        return False
    # Who may install an untrusted extension (pgvector) is the server's to say: a superuser,
    # a managed service's administrator role (rds_superuser, cloudsqlsuperuser), an allow-list.
    # Asked and refused, the memory goes on without it instead of failing the whole open.
    tx.execute("SAVEPOINT recuerdo_extension")
    try:
        tx.execute(f"CREATE EXTENSION IF NOT EXISTS {name} SCHEMA public")
    except StoreError as error:
        if getattr(error.__cause__, "sqlstate", None) != _INSUFFICIENT_PRIVILEGE:
            raise
        tx.execute("ROLLBACK TO SAVEPOINT recuerdo_extension")
        return False
    tx.execute("RELEASE SAVEPOINT recuerdo_extension")
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
