"""The tenant-first step (migration ``m014_tenant_children``): every child table gains the
``tenant`` of its parent row, so that every table holding tenants' rows is filtered, keyed and
indexed by tenant first, as on PostgreSQL (``docs/tenancy.md``).

Tables keyed by more than a rowid are rebuilt with their key led by ``tenant`` (an ``ON
CONFLICT`` target names the same columns on both backends); the three whose key is the rowid
(``chunks``, ``revisions``, ``attributes``: the full-text index and the history address rows by
it) gain the column in place and have their indexes rebuilt tenant-first. Every existing row
takes its parent's tenant.
"""

from __future__ import annotations

from ..base import Tx

# (table, definition of the rebuilt table, the columns copied, the parent join, new indexes)
_REBUILT: tuple[tuple[str, str, str, str, tuple[str, ...]], ...] = (
    (
        "item_tags",
        """(
            tenant TEXT NOT NULL,
            item_id INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE,
            tag TEXT NOT NULL,
            PRIMARY KEY (tenant, item_id, tag)
        ) WITHOUT ROWID""",
        "item_id, tag",
        "JOIN items p ON p.id = o.item_id",
        ("CREATE INDEX item_tags_by_tag ON item_tags (tenant, tag, item_id)",),
    ),
    (
        "plan_steps",
        """(
            tenant TEXT NOT NULL,
            plan_id INTEGER NOT NULL REFERENCES plans (id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            name TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'pending',
            result TEXT,
            error TEXT,
            started_at TEXT,
            finished_at TEXT,
            duration_ms INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (tenant, plan_id, position),
            UNIQUE (tenant, plan_id, name)
        )""",
        "plan_id, position, name, status, result, error, started_at, finished_at, duration_ms",
        "JOIN plans p ON p.id = o.plan_id",
        (),
    ),
    (
        "links",
        """(
            tenant TEXT NOT NULL,
            from_id INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE,
            to_id INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE,
            type TEXT NOT NULL,
            origin TEXT NOT NULL DEFAULT 'explicit',
            created_at TEXT NOT NULL,
            PRIMARY KEY (tenant, from_id, to_id, type)
        ) WITHOUT ROWID""",
        "from_id, to_id, type, origin, created_at",
        "JOIN items p ON p.id = o.from_id",
        ("CREATE INDEX links_to ON links (tenant, to_id)",),
    ),
    (
        "entity_types",
        """(
            tenant TEXT NOT NULL,
            entity_id INTEGER NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
            type TEXT NOT NULL,
            PRIMARY KEY (tenant, entity_id, type)
        ) WITHOUT ROWID""",
        "entity_id, type",
        "JOIN entities p ON p.id = o.entity_id",
        ("CREATE INDEX entity_types_by_type ON entity_types (tenant, type, entity_id)",),
    ),
    (
        "entity_words",
        """(
            tenant TEXT NOT NULL,
            word TEXT NOT NULL,
            entity_id INTEGER NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
            PRIMARY KEY (tenant, word, entity_id)
        ) WITHOUT ROWID""",
        "word, entity_id",
        "JOIN entities p ON p.id = o.entity_id",
        (),
    ),
    (
        "fact_sources",
        """(
            tenant TEXT NOT NULL,
            fact_id INTEGER NOT NULL REFERENCES facts (id) ON DELETE CASCADE,
            item_id INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE,
            start INTEGER NOT NULL,
            stop INTEGER NOT NULL,
            quote_hash TEXT NOT NULL,
            PRIMARY KEY (tenant, fact_id, item_id)
        ) WITHOUT ROWID""",
        "fact_id, item_id, start, stop, quote_hash",
        "JOIN facts p ON p.id = o.fact_id",
        ("CREATE INDEX fact_sources_by_item ON fact_sources (tenant, item_id)",),
    ),
    (
        "mentions",
        """(
            tenant TEXT NOT NULL,
            chunk_id INTEGER NOT NULL REFERENCES chunks (id) ON DELETE CASCADE,
            entity_id INTEGER NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
            PRIMARY KEY (tenant, chunk_id, entity_id)
        ) WITHOUT ROWID""",
        "chunk_id, entity_id",
        "JOIN entities p ON p.id = o.entity_id",
        ("CREATE INDEX mentions_by_entity ON mentions (tenant, entity_id)",),
    ),
    (
        "rechunk_queue",
        """(
            tenant TEXT NOT NULL,
            item_id INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE,
            PRIMARY KEY (tenant, item_id)
        ) WITHOUT ROWID""",
        "item_id",
        "JOIN items p ON p.id = o.item_id",
        (),
    ),
)

# (table, its parent and the joining column, the indexes made again tenant-first)
_WIDENED: tuple[tuple[str, str, str, tuple[tuple[str, str], ...]], ...] = (
    (
        "revisions",
        "items",
        "item_id",
        (
            (
                "revisions_by_version",
                "UNIQUE INDEX revisions_by_version ON revisions (tenant, item_id, version)",
            ),
        ),
    ),
    (
        "chunks",
        "items",
        "item_id",
        (
            ("chunks_by_item", "INDEX chunks_by_item ON chunks (tenant, item_id, ordinal)"),
            ("chunks_by_hash", "INDEX chunks_by_hash ON chunks (tenant, hash)"),
        ),
    ),
    (
        "attributes",
        "entities",
        "entity_id",
        (
            (
                "attributes_by_entity",
                "INDEX attributes_by_entity ON attributes (tenant, entity_id, key)",
            ),
        ),
    ),
)

# Indexes of tables that had a tenant already, led by it now.
_REINDEXED = (
    ("facts_by_subject", "INDEX facts_by_subject ON facts (tenant, subject_id, relation)"),
    ("facts_by_object", "INDEX facts_by_object ON facts (tenant, object_id, relation)"),
    (
        "retrieval_audit_items_by_audit",
        "INDEX retrieval_audit_items_by_audit ON retrieval_audit_items (tenant, audit_id)",
    ),
    (
        "wikilinks_pending_from",
        "INDEX wikilinks_pending_from ON wikilinks_pending (tenant, from_id)",
    ),
)


def tenant_children(tx: Tx) -> None:
    """The body of ``m014_tenant_children``."""
    for table, definition, columns, parent, indexes in _REBUILT:
        copied = ", ".join(f"o.{column.strip()}" for column in columns.split(","))
        tx.execute(f"CREATE TABLE {table}_tenanted {definition}")
        tx.execute(
            f"INSERT INTO {table}_tenanted (tenant, {columns})"
            f" SELECT p.tenant, {copied} FROM {table} o {parent}"
        )
        tx.execute(f"DROP TABLE {table}")
        tx.execute(f"ALTER TABLE {table}_tenanted RENAME TO {table}")
        for index in indexes:
            tx.execute(index)
    for table, parent, column, widened_indexes in _WIDENED:
        # A column added to a table must have a default; every writer names the tenant.
        tx.execute(f"ALTER TABLE {table} ADD COLUMN tenant TEXT NOT NULL DEFAULT ''")
        tx.execute(
            f"UPDATE {table} SET tenant = (SELECT p.tenant FROM {parent} p"
            f" WHERE p.id = {table}.{column})"
        )
        _reindex(tx, widened_indexes)
    _reindex(tx, _REINDEXED)


def _reindex(tx: Tx, indexes: tuple[tuple[str, str], ...]) -> None:
    for name, definition in indexes:
        tx.execute(f"DROP INDEX IF EXISTS {name}")
        tx.execute(f"CREATE {definition}")
