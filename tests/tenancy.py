"""Reading a statement for the tenant-first rule: every table that holds tenants' rows is
filtered by tenant wherever the statement reads or changes it.

A table reference counts as filtered when, in the statement:

* its ``tenant`` column is compared with a value (``t.tenant = ?``, ``tenant IN (...)``), or
* it is joined on ``tenant`` to a reference that is filtered (``c.tenant = i.tenant``), or
* it is the target of an ``INSERT`` whose column list holds ``tenant``.

Statements that work across every tenant on purpose (the upkeep's indexing by id, a memory's
backup) say so with the comment ``/* every tenant */``. The parser is ``sqlglot`` (a test
dependency); a statement it cannot read is reported, never passed.
"""

from __future__ import annotations

from collections.abc import Iterable

import sqlglot
from sqlglot import exp

EVERY_TENANT = "/* every tenant */"

# Memory-wide bookkeeping: no tenant's rows (distributed, these would be reference tables).
SHARED_TABLES = frozenset({"index_marks", "embeddings", "released_hashes", "_migrations"})


def problems(sql: str, tenant_tables: Iterable[str]) -> list[str]:
    """What in ``sql`` breaks the rule (empty when it holds)."""
    if EVERY_TENANT in sql:
        return []
    holding = set(tenant_tables) - SHARED_TABLES
    try:
        statements = sqlglot.parse(sql, read="sqlite")
    except sqlglot.errors.ParseError:
        try:  # PostgreSQL's own operators (the words index's @@)
            statements = sqlglot.parse(sql, read="postgres")
        except sqlglot.errors.ParseError as exc:
            described = exc.errors[0]["description"] if exc.errors else exc
            return [f"unreadable statement ({described})"]
    found: list[str] = []
    for statement in statements:
        if statement is not None:
            found += _check(statement, holding)
    return found


def _check(statement: exp.Expression, holding: set[str]) -> list[str]:
    references = [t for t in statement.find_all(exp.Table) if t.name in holding]
    if not references:
        return []
    filtered: set[int] = set()
    by_alias: dict[str, list[exp.Table]] = {}
    for table in references:
        by_alias.setdefault(table.alias_or_name, []).append(table)

    if isinstance(statement, exp.Insert):
        target = statement.this
        table = target.this if isinstance(target, exp.Schema) else target
        columns = [c.name for c in target.expressions] if isinstance(target, exp.Schema) else []
        if isinstance(table, exp.Table) and "tenant" in columns:
            filtered.add(id(table))

    def owners(column: exp.Column) -> list[exp.Table]:
        if column.table:
            candidates = by_alias.get(column.table, [])
            # The nearest enclosing reference with that alias.
            scope = column.parent_select
            near = [t for t in candidates if t.parent_select is scope]
            return near or candidates
        scope = column.parent_select
        own = [t for t in references if t.parent_select is scope]
        if not own and isinstance(statement, exp.Update | exp.Delete):
            own = [t for t in references if t.parent_select is None]
        return own if len(own) == 1 else []

    joins: list[tuple[list[exp.Table], list[exp.Table]]] = []
    for condition in statement.find_all(exp.EQ, exp.In, exp.Is):
        left = condition.this
        if isinstance(condition, exp.In):
            right: exp.Expression | None = None
        else:
            right = condition.expression
        sides = [s for s in (left, right) if isinstance(s, exp.Column) and s.name == "tenant"]
        if not sides:
            continue
        if len(sides) == 2 and isinstance(right, exp.Column) and isinstance(left, exp.Column):
            joins.append((owners(left), owners(right)))
            continue
        for side in sides:
            for table in owners(side):
                filtered.add(id(table))
    changed = True
    while changed:
        changed = False
        for left_tables, right_tables in joins:
            left_in = any(id(t) in filtered for t in left_tables)
            right_in = any(id(t) in filtered for t in right_tables)
            if left_in != right_in:
                for table in left_tables + right_tables:
                    if id(table) not in filtered:
                        filtered.add(id(table))
                        changed = True
    return [
        f"{table.name} (as {table.alias_or_name}) is not filtered by tenant"
        for table in references
        if id(table) not in filtered
    ]
