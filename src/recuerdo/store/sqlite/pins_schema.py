"""The tables of pins and named context sets (migration ``m015_pins_and_context_sets``).

A pin puts an item first in the context a session starts with; a context set is a named,
ordered list of items loaded on request. Both point at items with ``ON DELETE CASCADE``, so
forgetting an item (or deleting a note for good) takes its pins and set places with it.
Portable SQL, tenant-first: every key and index leads with ``tenant`` (the distribution key on
PostgreSQL, whose step writes the foreign keys with ``tenant`` too).
"""

PINS = """
        CREATE TABLE pins (
            tenant TEXT NOT NULL,
            item_id INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE,
            pinned_at TEXT NOT NULL,
            PRIMARY KEY (tenant, item_id)
        ) WITHOUT ROWID;

        CREATE TABLE context_sets (
            tenant TEXT NOT NULL,
            name TEXT NOT NULL,
            position INTEGER NOT NULL,
            item_id INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (tenant, name, position)
        ) WITHOUT ROWID;

        CREATE INDEX context_sets_by_item ON context_sets (tenant, item_id);
        """

PINS_POSTGRES = """
        CREATE TABLE pins (
            tenant TEXT NOT NULL,
            item_id BIGINT NOT NULL,
            pinned_at TEXT NOT NULL,
            PRIMARY KEY (tenant, item_id),
            FOREIGN KEY (tenant, item_id) REFERENCES items (tenant, id) ON DELETE CASCADE
        )

        CREATE TABLE context_sets (
            tenant TEXT NOT NULL,
            name TEXT NOT NULL,
            position BIGINT NOT NULL,
            item_id BIGINT NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (tenant, name, position),
            FOREIGN KEY (tenant, item_id) REFERENCES items (tenant, id) ON DELETE CASCADE
        )

        CREATE INDEX context_sets_by_item ON context_sets (tenant, item_id)
        """
