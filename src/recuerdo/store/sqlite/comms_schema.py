"""The messaging tables (migration ``m012_comms``), in SQLite's SQL.

Messaging between agents and people. A message is an item of type 'mail' (stored once,
whatever the number of recipients) whose `session` is its conversation's id and whose
`source` is the sending principal; the partial index serves a thread's pages and its
unread counts without touching any other kind of item. An address has one owner.
Conversation ids are decimal text (they meet `items.session`), numbered per tenant by
`comms_counters`. `comms_inboxes` holds one row per member principal: membership (what
every read of a message checks), the inbox's order (`last_id`, the newest message) and
the unread cursor (`read_upto`, the newest message read).

Every primary key and every index starts with the tenant.
"""

COMMS = """
        CREATE TABLE comms_addresses (
            tenant TEXT NOT NULL,
            address TEXT NOT NULL,
            principal TEXT NOT NULL,
            kind TEXT NOT NULL,
            bound_at TEXT NOT NULL,
            PRIMARY KEY (tenant, address)
        );

        CREATE INDEX comms_addresses_by_principal ON comms_addresses (tenant, principal, bound_at);

        CREATE TABLE comms_counters (
            tenant TEXT NOT NULL,
            conversations INTEGER NOT NULL,
            PRIMARY KEY (tenant)
        );

        CREATE TABLE comms_conversations (
            tenant TEXT NOT NULL,
            id TEXT NOT NULL,
            scope TEXT NOT NULL,
            started_by TEXT NOT NULL,
            started_at TEXT NOT NULL,
            import_key TEXT,
            PRIMARY KEY (tenant, id)
        );

        CREATE INDEX comms_conversations_by_scope
        ON comms_conversations (tenant, scope, import_key);

        CREATE TABLE comms_members (
            tenant TEXT NOT NULL,
            conversation_id TEXT NOT NULL,
            address TEXT NOT NULL,
            joined_at TEXT NOT NULL,
            PRIMARY KEY (tenant, conversation_id, address),
            FOREIGN KEY (tenant, conversation_id) REFERENCES comms_conversations (tenant, id)
                ON DELETE CASCADE
        );

        CREATE TABLE comms_inboxes (
            tenant TEXT NOT NULL,
            principal TEXT NOT NULL,
            conversation_id TEXT NOT NULL,
            last_id INTEGER NOT NULL,
            read_upto INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (tenant, principal, conversation_id),
            FOREIGN KEY (tenant, conversation_id) REFERENCES comms_conversations (tenant, id)
                ON DELETE CASCADE
        );

        CREATE INDEX comms_inboxes_by_activity ON comms_inboxes (tenant, principal, last_id);

        CREATE INDEX comms_inboxes_by_conversation ON comms_inboxes (tenant, conversation_id);

        CREATE INDEX items_mail ON items (tenant, session, id, source) WHERE item_type = 'mail';
        """
