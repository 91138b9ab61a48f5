"""The SQLite schema: the migration steps, in SQLite's SQL (FTS5 tables and their triggers).
A step never changes once shipped (:mod:`recuerdo.store.migrations`): a change is a new step.
"""

from __future__ import annotations

from ..base import Tx
from ..migrations import Schema
from .code_schema import CODE_STORE
from .comms_schema import COMMS
from .later_steps import LATER_STEPS
from .pins_schema import PINS
from .tenant_schema import tenant_children
from .wikilinks_schema import pending_wikilinks

SCHEMA = Schema()
migration = SCHEMA.step


def _run_script(tx: Tx, script: str) -> None:
    # Statements are separated by a blank line (trigger bodies hold semicolons of their own).
    for statement in script.split("\n\n"):
        if statement.strip():
            tx.execute(statement)


@migration
def m001_items(tx: Tx) -> None:
    # One table holds every text record (entries now; notes, documents and messages later) so
    # that search, citation and history work the same for all of them. AUTOINCREMENT keeps ids
    # from ever being reused, even after the newest row is deleted. Every index ends in the
    # rowid, so "newest first" within a filter is an index walk, not a sort; indexes are partial
    # per item type so that a write only touches the indexes its kind of item is read by.
    _run_script(
        tx,
        """
        CREATE TABLE items (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            tenant TEXT NOT NULL,
            scope TEXT NOT NULL,
            item_type TEXT NOT NULL,
            category TEXT,
            title TEXT,
            key TEXT,
            content TEXT NOT NULL,
            tags TEXT NOT NULL DEFAULT '[]',
            source TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'active',
            version INTEGER NOT NULL DEFAULT 1,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            meta TEXT NOT NULL DEFAULT '{}'
        );

        CREATE INDEX items_entries ON items (tenant) WHERE item_type = 'entry';

        CREATE INDEX items_by_category ON items (tenant, category) WHERE item_type = 'entry';

        CREATE INDEX items_by_source ON items (tenant, source) WHERE item_type = 'entry';

        CREATE TABLE item_tags (
            item_id INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE,
            tag TEXT NOT NULL,
            PRIMARY KEY (item_id, tag)
        ) WITHOUT ROWID;

        CREATE INDEX item_tags_by_tag ON item_tags (tag, item_id);
        """,
    )


@migration
def m002_entry_substring_index(tx: Tx) -> None:
    # A trigram index answers "any substring, any case" without scanning every entry: a query
    # of three or more characters is a phrase of trigrams. Building it costs more than the
    # write itself (docs/decisions/0002-entry-search.md), so it is filled off the write path:
    # rows up to `index_marks.upto` are indexed; searches scan the few rows above it.
    _run_script(
        tx,
        """
        CREATE VIRTUAL TABLE entry_trigrams USING fts5 (
            content, content='items', content_rowid='id', tokenize='trigram'
        );

        CREATE TABLE index_marks (name TEXT PRIMARY KEY, upto INTEGER NOT NULL);

        INSERT INTO index_marks (name, upto) VALUES ('entry_trigrams', 0);

        CREATE TRIGGER entry_trigrams_delete AFTER DELETE ON items
        WHEN old.item_type = 'entry'
            AND old.id <= (SELECT upto FROM index_marks WHERE name = 'entry_trigrams')
        BEGIN
            INSERT INTO entry_trigrams (entry_trigrams, rowid, content)
            VALUES ('delete', old.id, old.content);
        END;

        CREATE TRIGGER entry_trigrams_update AFTER UPDATE OF content ON items
        WHEN old.item_type = 'entry'
            AND old.id <= (SELECT upto FROM index_marks WHERE name = 'entry_trigrams')
        BEGIN
            INSERT INTO entry_trigrams (entry_trigrams, rowid, content)
            VALUES ('delete', old.id, old.content);
            INSERT INTO entry_trigrams (rowid, content) VALUES (new.id, new.content);
        END;
        """,
    )


@migration
def m003_plans_and_rules(tx: Tx) -> None:
    # Plans and rules belong to the memory, not to a writer: one plan board, one rulebook.
    _run_script(
        tx,
        """
        CREATE TABLE plans (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            tenant TEXT NOT NULL,
            task TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            UNIQUE (tenant, task)
        );

        CREATE TABLE plan_steps (
            plan_id INTEGER NOT NULL REFERENCES plans (id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            name TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'pending',
            result TEXT,
            error TEXT,
            started_at TEXT,
            finished_at TEXT,
            duration_ms INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (plan_id, position),
            UNIQUE (plan_id, name)
        );

        CREATE TABLE rules (
            tenant TEXT NOT NULL,
            name TEXT NOT NULL,
            level TEXT NOT NULL,
            description TEXT NOT NULL,
            category TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (tenant, name)
        );

        CREATE TABLE rule_violations (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            tenant TEXT NOT NULL,
            rule TEXT NOT NULL,
            level TEXT NOT NULL,
            message TEXT NOT NULL,
            created_at TEXT NOT NULL
        );

        CREATE INDEX rule_violations_recent ON rule_violations (tenant, id);
        """,
    )


@migration
def m004_notes_history_journal(tx: Tx) -> None:
    # Notes are items too. `revisions` keeps every version of a note whole (history is read far
    # less often than the current text, so the current text stays on the item row); a conflict
    # revision has no version number because it never became current (NULLs do not collide in
    # the unique index). `journal` records every change to any item without its text, so
    # erasing an item erases its words everywhere. Each index here is one more page written by
    # every note update (17 pages per update before trimming, 9 after): keep them few.
    _run_script(
        tx,
        """
        ALTER TABLE items ADD COLUMN session TEXT;

        ALTER TABLE items ADD COLUMN content_hash TEXT;

        ALTER TABLE items ADD COLUMN duplicates INTEGER NOT NULL DEFAULT 0;

        ALTER TABLE items ADD COLUMN review_at TEXT;

        ALTER TABLE items ADD COLUMN summary TEXT;

        ALTER TABLE items ADD COLUMN muted INTEGER NOT NULL DEFAULT 0;

        CREATE UNIQUE INDEX items_current_key ON items (tenant, scope, key)
        WHERE key IS NOT NULL AND status <> 'deleted';

        CREATE INDEX items_by_hash ON items (tenant, scope, content_hash)
        WHERE content_hash IS NOT NULL;

        CREATE INDEX items_by_session ON items (tenant, session, created_at)
        WHERE session IS NOT NULL;

        CREATE INDEX items_due_review ON items (tenant, review_at) WHERE review_at IS NOT NULL;

        CREATE INDEX items_recent ON items (tenant, updated_at) WHERE item_type = 'note';

        CREATE INDEX items_scope_recent ON items (tenant, scope, updated_at)
        WHERE item_type = 'note';

        CREATE TABLE revisions (
            id INTEGER PRIMARY KEY,
            item_id INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE,
            version INTEGER,
            based_on INTEGER,
            operation TEXT NOT NULL,
            principal TEXT NOT NULL,
            title TEXT,
            kind TEXT,
            content TEXT NOT NULL,
            chars_added INTEGER NOT NULL,
            chars_removed INTEGER NOT NULL,
            content_hash TEXT NOT NULL,
            created_at TEXT NOT NULL
        );

        CREATE UNIQUE INDEX revisions_by_version ON revisions (item_id, version);

        CREATE TABLE journal (
            id INTEGER PRIMARY KEY,
            tenant TEXT NOT NULL,
            scope TEXT NOT NULL,
            item_id INTEGER NOT NULL,
            item_type TEXT NOT NULL,
            operation TEXT NOT NULL,
            principal TEXT NOT NULL,
            version INTEGER,
            chars_added INTEGER NOT NULL DEFAULT 0,
            chars_removed INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL
        );

        CREATE INDEX journal_by_scope ON journal (tenant, scope);

        CREATE TABLE sessions (
            tenant TEXT NOT NULL,
            id TEXT NOT NULL,
            scope TEXT NOT NULL,
            directory TEXT,
            started_at TEXT NOT NULL,
            ended_at TEXT,
            summary TEXT,
            PRIMARY KEY (tenant, id)
        );

        CREATE TABLE idempotency (
            tenant TEXT NOT NULL,
            principal TEXT NOT NULL,
            verb TEXT NOT NULL,
            scope TEXT NOT NULL,
            key TEXT NOT NULL,
            reply TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (tenant, principal, verb, scope, key)
        );

        CREATE TABLE settings (
            tenant TEXT NOT NULL,
            name TEXT NOT NULL,
            value TEXT NOT NULL,
            PRIMARY KEY (tenant, name)
        );
        """,
    )


@migration
def m005_retrieval(tx: Tx) -> None:
    # Chunks are the unit of search and citation: spans of an item's text, with the words that
    # describe them (title; speaker, date and neighbouring turns as `context`). They are built
    # off the write path like the entry trigrams: items above `index_marks.chunks` are not
    # chunked yet and searches read them directly. Embeddings are keyed by (model, text hash)
    # so unchanged text is never embedded twice, whichever chunk carries it.
    _run_script(
        tx,
        """
        ALTER TABLE items ADD COLUMN occurred_at TEXT;

        CREATE TABLE chunks (
            id INTEGER PRIMARY KEY,
            item_id INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE,
            ordinal INTEGER NOT NULL,
            start INTEGER NOT NULL,
            stop INTEGER NOT NULL,
            title TEXT NOT NULL DEFAULT '',
            body TEXT NOT NULL,
            context TEXT NOT NULL DEFAULT '',
            embed_text TEXT,
            hash TEXT NOT NULL
        );

        CREATE INDEX chunks_by_item ON chunks (item_id, ordinal);

        CREATE INDEX chunks_by_hash ON chunks (hash);

        CREATE VIRTUAL TABLE chunk_fts USING fts5 (
            title, body, context, content='chunks', content_rowid='id',
            tokenize='porter unicode61 remove_diacritics 2'
        );

        CREATE TRIGGER chunk_fts_insert AFTER INSERT ON chunks BEGIN
            INSERT INTO chunk_fts (rowid, title, body, context)
            VALUES (new.id, new.title, new.body, new.context);
        END;

        CREATE TRIGGER chunk_fts_delete AFTER DELETE ON chunks BEGIN
            INSERT INTO chunk_fts (chunk_fts, rowid, title, body, context)
            VALUES ('delete', old.id, old.title, old.body, old.context);
        END;

        INSERT INTO index_marks (name, upto) VALUES ('chunks', 0);

        INSERT INTO index_marks (name, upto) VALUES ('chunk_deletions', 0);

        INSERT INTO index_marks (name, upto) VALUES ('chunk_deletions_collected', 0);

        CREATE TRIGGER chunk_deletions_count AFTER DELETE ON chunks BEGIN
            UPDATE index_marks SET upto = upto + 1 WHERE name = 'chunk_deletions';
        END;

        CREATE TABLE embeddings (
            id INTEGER PRIMARY KEY,
            model TEXT NOT NULL,
            hash TEXT NOT NULL,
            vector BLOB NOT NULL,
            UNIQUE (model, hash)
        );

        CREATE TABLE links (
            from_id INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE,
            to_id INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE,
            type TEXT NOT NULL,
            origin TEXT NOT NULL DEFAULT 'explicit',
            created_at TEXT NOT NULL,
            PRIMARY KEY (from_id, to_id, type)
        ) WITHOUT ROWID;

        CREATE INDEX links_to ON links (to_id);

        CREATE TABLE retrieval_audit (
            id INTEGER PRIMARY KEY,
            tenant TEXT NOT NULL,
            principal TEXT NOT NULL,
            verb TEXT NOT NULL,
            scope TEXT,
            query TEXT,
            filters TEXT NOT NULL,
            returned TEXT NOT NULL,
            found INTEGER NOT NULL,
            created_at TEXT NOT NULL
        );

        CREATE INDEX retrieval_audit_by_time ON retrieval_audit (tenant, created_at);
        """,
    )


@migration
def m006_graph(tx: Tx) -> None:
    # The knowledge graph of a scope. Facts are bitemporal: valid_from/valid_to say when a fact
    # was true in the world, recorded_at/ended_at when we held it; a replaced fact keeps its row
    # (history) with replaced_by pointing at its successor. A fact's sources are spans of stored
    # documents, kept as offsets plus a hash of the quoted text, so a citation is re-checked
    # against the document before it is served and no quote outlives a forgotten document.
    _run_script(
        tx,
        """
        CREATE TABLE entities (
            id INTEGER PRIMARY KEY,
            tenant TEXT NOT NULL,
            scope TEXT NOT NULL,
            name TEXT NOT NULL,
            folded TEXT NOT NULL,
            source TEXT,
            recorded_at TEXT NOT NULL,
            UNIQUE (tenant, scope, folded)
        );

        CREATE TABLE entity_types (
            entity_id INTEGER NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
            type TEXT NOT NULL,
            PRIMARY KEY (entity_id, type)
        ) WITHOUT ROWID;

        CREATE INDEX entity_types_by_type ON entity_types (type, entity_id);

        CREATE TABLE entity_words (
            word TEXT NOT NULL,
            entity_id INTEGER NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
            PRIMARY KEY (word, entity_id)
        ) WITHOUT ROWID;

        CREATE TABLE attributes (
            id INTEGER PRIMARY KEY,
            entity_id INTEGER NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            valid_from TEXT,
            recorded_at TEXT NOT NULL,
            ended_at TEXT
        );

        CREATE INDEX attributes_by_entity ON attributes (entity_id, key);

        CREATE TABLE facts (
            id INTEGER PRIMARY KEY,
            tenant TEXT NOT NULL,
            scope TEXT NOT NULL,
            subject_id INTEGER NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
            relation TEXT NOT NULL,
            object_id INTEGER NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
            attributes TEXT NOT NULL DEFAULT '{}',
            valid_from TEXT,
            valid_to TEXT,
            recorded_at TEXT NOT NULL,
            ended_at TEXT,
            replaced_by INTEGER,
            source TEXT
        );

        CREATE INDEX facts_by_subject ON facts (subject_id, relation);

        CREATE INDEX facts_by_object ON facts (object_id, relation);

        CREATE INDEX facts_by_scope ON facts (tenant, scope);

        CREATE TABLE fact_sources (
            fact_id INTEGER NOT NULL REFERENCES facts (id) ON DELETE CASCADE,
            item_id INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE,
            start INTEGER NOT NULL,
            stop INTEGER NOT NULL,
            quote_hash TEXT NOT NULL,
            PRIMARY KEY (fact_id, item_id)
        ) WITHOUT ROWID;

        CREATE INDEX fact_sources_by_item ON fact_sources (item_id);

        CREATE TABLE mentions (
            chunk_id INTEGER NOT NULL REFERENCES chunks (id) ON DELETE CASCADE,
            entity_id INTEGER NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
            PRIMARY KEY (chunk_id, entity_id)
        ) WITHOUT ROWID;

        CREATE INDEX mentions_by_entity ON mentions (entity_id);

        CREATE TABLE import_keys (
            tenant TEXT NOT NULL,
            scope TEXT NOT NULL,
            key TEXT NOT NULL,
            PRIMARY KEY (tenant, scope, key)
        ) WITHOUT ROWID;

        CREATE TABLE import_facts (
            tenant TEXT NOT NULL,
            scope TEXT NOT NULL,
            key TEXT NOT NULL,
            fact_id INTEGER NOT NULL REFERENCES facts (id) ON DELETE CASCADE,
            replaced_by_key TEXT,
            PRIMARY KEY (tenant, scope, key)
        ) WITHOUT ROWID;

        CREATE TABLE knowledge_calls (
            tenant TEXT NOT NULL,
            scope TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            reply TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (tenant, scope, fingerprint)
        );
        """,
    )


@migration
def m007_rechunk_queue(tx: Tx) -> None:
    # Items whose text changed after they were chunked: their chunks are stale (readers skip
    # them and read the item itself) until the upkeep worker re-cuts them. Re-indexing inside
    # the edit cost a note update ~8 ms at 100k notes (full-text deletes rewrite index pages).
    _run_script(
        tx,
        """
        CREATE TABLE rechunk_queue (
            item_id INTEGER PRIMARY KEY REFERENCES items (id) ON DELETE CASCADE
        );
        """,
    )


@migration
def m008_fact_twins(tx: Tx) -> None:
    # One call can state a fact, end it by a `replaces`, and state it again: two facts alike in
    # subject, relation, object and dates. `twin` numbers them in order, so that export keys
    # (built from those fields) tell them apart; it is set when a fact is stored.
    tx.execute("ALTER TABLE facts ADD COLUMN twin INTEGER NOT NULL DEFAULT 0")
    alike = (
        "FROM facts d WHERE d.subject_id = facts.subject_id AND d.relation = facts.relation"
        " AND d.object_id = facts.object_id AND d.recorded_at = facts.recorded_at"
        " AND d.valid_from IS facts.valid_from AND d.id < facts.id"
    )
    tx.execute(f"UPDATE facts SET twin = (SELECT count(*) {alike}) WHERE EXISTS (SELECT 1 {alike})")


@migration
def m009_code_store(tx: Tx) -> None:
    # Read-only views of ingested git repositories; the tables and why they are shaped so are
    # in code_schema.py.
    _run_script(tx, CODE_STORE)


@migration
def m010_audit_items(tx: Tx) -> None:
    # Which items each retrieval returned, one row each: forgetting an item removes every audit
    # record that returned it (the record's query may quote the forgotten text), by an index
    # probe instead of a scan of every record's list of ids.
    _run_script(
        tx,
        """
        CREATE TABLE retrieval_audit_items (
            tenant TEXT NOT NULL,
            item_id INTEGER NOT NULL,
            audit_id INTEGER NOT NULL REFERENCES retrieval_audit (id) ON DELETE CASCADE,
            PRIMARY KEY (tenant, item_id, audit_id)
        ) WITHOUT ROWID;

        CREATE INDEX retrieval_audit_items_by_audit ON retrieval_audit_items (audit_id);

        INSERT INTO retrieval_audit_items (tenant, item_id, audit_id)
        SELECT a.tenant, CAST(j.value AS INTEGER), a.id FROM retrieval_audit a,
            json_each(a.returned) j WHERE true ON CONFLICT DO NOTHING
        """,
    )


@migration
def m011_forgotten(tx: Tx) -> None:
    # What was forgotten, remembered without being kept: an HMAC (with a secret of this memory,
    # in `settings`) of the form and its key. A second forget answers `already_forgotten`, a
    # forget of what never existed is refused, and no forgotten name stays on disk.
    _run_script(
        tx,
        """
        CREATE TABLE forgotten (
            tenant TEXT NOT NULL,
            scope TEXT NOT NULL,
            digest TEXT NOT NULL,
            forgotten_at TEXT NOT NULL,
            PRIMARY KEY (tenant, scope, digest)
        ) WITHOUT ROWID;
        """,
    )


@migration
def m012_comms(tx: Tx) -> None:
    _run_script(tx, COMMS)  # messaging: the tables, and why so, are in comms_schema.py


@migration
def m013_pending_wikilinks(tx: Tx) -> None:
    pending_wikilinks(tx)  # [[Title]]s that wait for their note (wikilinks_schema.py)


@migration
def m014_tenant_children(tx: Tx) -> None:
    # Child tables carry their parent's tenant, keyed and indexed by it first (tenant_schema.py).
    tenant_children(tx)


@migration
def m015_pins_and_context_sets(tx: Tx) -> None:
    # Pins and named context sets (the tables and why in pins_schema.py).
    _run_script(tx, PINS)


@migration
def m016_tenant_policies(tx: Tx) -> None:
    """PostgreSQL's row-level security per tenant; a SQLite file has no roles to hold to it."""


@migration
def m017_vector_index(tx: Tx) -> None:
    """PostgreSQL's step gives the vectors an index in the database (pgvector); a SQLite
    memory's HNSW index is a file beside the store (index/vector_file.py): nothing to do."""


for _step in LATER_STEPS:  # in modules of their own
    migration(_step)
