"""The counts of each tenant's forgets, kept in ``index_marks`` (decision 0085), and of each
scope a confined caller's forget reached (0139): another process's audit log compares the
records it buffered with them before it writes them (``core/audit.AuditLog``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..store.base import Tx, groups, marks

_PER_STATEMENT = 500  # names a statement

FORGETS = "audit_forgets:"
"""The ``index_marks`` rows (this, then a tenant) that count each tenant's forgets (0085); a
confined caller's forgets are counted by scope (this, the tenant, a newline, a scope: no label
holds a newline; decision 0139)."""


def forgets(tx: Tx, tenants: Iterable[str] | None = None) -> dict[str, int]:
    """How many unconfined forgets of each of ``tenants`` (None: of every tenant) the memory
    has committed, in any process."""
    if tenants is None:
        counted = _counts(tx, None)
        return {name: count for name, count in counted.items() if "\n" not in name}
    return _counts(tx, sorted({FORGETS + tenant for tenant in tenants}))


def scope_forgets(
    tx: Tx, scopes: Iterable[tuple[str, str]] | None = None
) -> dict[tuple[str, str], int]:
    """How many confined forgets reached each of ``scopes`` (a tenant, a scope; None: every
    one), in any process."""
    names = None if scopes is None else sorted({f"{FORGETS}{t}\n{s}" for t, s in scopes})
    return {
        (tenant, scope): count
        for name, count in _counts(tx, names).items()
        if "\n" in name
        for tenant, scope in [name.split("\n", 1)]
    }


def confined_forgets(tx: Tx, tenants: Iterable[str]) -> dict[tuple[str, str], int]:
    """:func:`scope_forgets` of every scope of ``tenants`` a confined forget ever reached."""
    found: dict[tuple[str, str], int] = {}
    for tenant in sorted(set(tenants)):
        prefix = f"{FORGETS}{tenant}\n"
        for row in tx.all(
            "SELECT name, upto FROM index_marks WHERE substr(name, 1, ?) = ?",
            (len(prefix), prefix),
        ):
            found[(tenant, str(row["name"])[len(prefix) :])] = int(row["upto"])
    return found


def _counts(tx: Tx, names: list[str] | None) -> dict[str, int]:
    """The counts of forgets named ``names`` (None: every one), by name less ``FORGETS``."""
    if names is None:
        rows = tx.all(
            "SELECT name, upto FROM index_marks /* every tenant */"
            f" WHERE substr(name, 1, {len(FORGETS)}) = ?",
            (FORGETS,),
        )
    else:
        rows = [
            row
            for part in groups(names, _PER_STATEMENT)
            for row in tx.all(
                f"SELECT name, upto FROM index_marks WHERE name IN ({marks(part)})", part
            )
        ]
    return {str(row["name"])[len(FORGETS) :]: int(row["upto"]) for row in rows}


def count_forget(tx: Tx, tenant: str, within: Sequence[str] | None = None) -> None:
    """One more forget of ``tenant``, in the forget's own transaction (the scrub's: a forget
    that removed nothing counts none); of each of the scopes ``within``, for a caller confined
    to them (None: not confined)."""
    names = [FORGETS + tenant] if within is None else [f"{FORGETS}{tenant}\n{s}" for s in within]
    tx.executemany(
        "INSERT INTO index_marks (name, upto) VALUES (?, 1) ON CONFLICT (name)"
        " DO UPDATE SET upto = index_marks.upto + 1",
        [(name,) for name in sorted(set(names))],
    )
