"""Whose rows a thread's transactions are for: the tenant of the verb being run, or every
tenant (background indexing, backups, restores, anything outside a verb).

The families filter every statement by tenant themselves; a backend with row-level security
(PostgreSQL, ``docs/tenancy.md``) also hands the scope to the database, which then refuses to
show or write another tenant's rows even to a statement that forgot its filter."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

EVERY_TENANT = "*"
"""The scope of memory-wide work (and the marker value the database policies accept)."""

EVERY_TENANT_STATEMENT = "/* every tenant */"
"""The comment that marks a statement reading every tenant's rows on purpose (the tenancy test
reads each one); it runs in the memory-wide scope whatever the call's tenant."""

_scope: ContextVar[str] = ContextVar("recuerdo_tenant_scope", default=EVERY_TENANT)


def current() -> str:
    """The tenant this thread's transactions are for, or :data:`EVERY_TENANT`."""
    return _scope.get()


@contextlib.contextmanager
def scoped(tenant: str) -> Iterator[None]:
    """Run the block for ``tenant`` (or :data:`EVERY_TENANT`)."""
    token = _scope.set(tenant)
    try:
        yield
    finally:
        _scope.reset(token)
