"""The code store's tables (migration ``m009_code_store``).

A repository follows one branch; its first-parent line is numbered by ``ordinal`` (never
reused: when the ref moves, the commits that left the branch keep their numbers, marked
``dropped``, and lose their changes). A file at a revision is its last change at or before that
ordinal: one index probe, no tree stored per commit. ``code_tree`` is the tip's tree (counts, and
the link to the searchable text in ``items``). Blobs are shared by a tenant's repositories,
addressed by sha256 and re-hashed on read. Portable SQL: every table leads its key and its
indexes with ``tenant`` (the distribution key on PostgreSQL).
"""

CODE_STORE = """
        CREATE TABLE code_repos (
            tenant TEXT NOT NULL,
            repo TEXT NOT NULL,
            branch TEXT NOT NULL,
            tip TEXT,
            tip_ordinal INTEGER NOT NULL DEFAULT 0,
            next_ordinal INTEGER NOT NULL DEFAULT 1,
            source TEXT NOT NULL,
            created_at TEXT NOT NULL,
            ingested_at TEXT NOT NULL,
            PRIMARY KEY (tenant, repo)
        );

        CREATE TABLE code_commits (
            tenant TEXT NOT NULL,
            repo TEXT NOT NULL,
            commit_id TEXT NOT NULL,
            ordinal INTEGER,
            dropped INTEGER NOT NULL DEFAULT 0,
            merged_at INTEGER,
            parents TEXT NOT NULL,
            author TEXT NOT NULL,
            email TEXT NOT NULL,
            authored_at TEXT NOT NULL,
            committed_at TEXT NOT NULL,
            subject TEXT NOT NULL,
            message TEXT NOT NULL,
            changed INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (tenant, repo, commit_id)
        );

        CREATE UNIQUE INDEX code_commits_line ON code_commits (tenant, repo, ordinal)
        WHERE ordinal IS NOT NULL;

        CREATE INDEX code_commits_merged ON code_commits (tenant, repo, merged_at)
        WHERE merged_at IS NOT NULL;

        CREATE TABLE code_changes (
            tenant TEXT NOT NULL,
            repo TEXT NOT NULL,
            ordinal INTEGER NOT NULL,
            path TEXT NOT NULL,
            status TEXT NOT NULL,
            kind TEXT NOT NULL,
            other_path TEXT,
            mode TEXT NOT NULL,
            sha256 TEXT,
            git_blob TEXT,
            size INTEGER,
            reason TEXT,
            PRIMARY KEY (tenant, repo, ordinal, path)
        );

        CREATE INDEX code_changes_by_path ON code_changes (tenant, repo, path, ordinal);

        CREATE TABLE code_blobs (
            tenant TEXT NOT NULL,
            sha256 TEXT NOT NULL,
            git_blob TEXT NOT NULL,
            size INTEGER NOT NULL,
            encoding TEXT NOT NULL,
            compression TEXT NOT NULL,
            content BLOB,
            PRIMARY KEY (tenant, sha256)
        );

        CREATE INDEX code_blobs_by_git ON code_blobs (tenant, git_blob);

        CREATE TABLE code_tree (
            tenant TEXT NOT NULL,
            repo TEXT NOT NULL,
            path TEXT NOT NULL,
            ordinal INTEGER NOT NULL,
            kind TEXT NOT NULL,
            mode TEXT NOT NULL,
            sha256 TEXT,
            git_blob TEXT,
            size INTEGER,
            item_id INTEGER,
            PRIMARY KEY (tenant, repo, path)
        );
        """
