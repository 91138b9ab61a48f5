"""What a PostgreSQL memory holds, as the backup archive and ``check`` see it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import released_hashes, tallies
from ..archive import DERIVED, Table
from ..base import FORGOTTEN_MARKS, OWED_MARKS, STATISTICS_OWED, Tx

if TYPE_CHECKING:
    from .folds import Parting

# The tallies: counted again by the inserts; the audit's rows per item: made again from the
# records (after_restore).
_NOT_ARCHIVED = {"_migrations", tallies.TABLE, *DERIVED}
_AUDIT_ITEMS = (
    "INSERT INTO retrieval_audit_items (tenant, item_id, audit_id)"
    " SELECT a.tenant, j.value::bigint, a.id FROM retrieval_audit a /* every tenant */,"
    " jsonb_array_elements_text(a.returned::jsonb) j ON CONFLICT DO NOTHING"
)

_TABLES = (
    "SELECT c.relname AS name FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace"
    " AND c.relkind = 'r' ORDER BY c.oid"
)
# Generated columns are derived, and so are a chunk's words (generated before m021, written
# with the row since), its length (m027, written by a trigger from the words) and an entry's
# folded copy (m030, from its text and the server's lower()): the store makes them again.
_COLUMNS = (
    "SELECT a.attname AS name FROM pg_attribute a"
    " WHERE a.attrelid = (current_schema() || '.' || ?)::regclass AND a.attnum > 0"
    " AND NOT a.attisdropped AND a.attgenerated = ''"
    " AND NOT (a.attname IN ('words', 'tokens') AND ? = 'chunks')"
    " AND NOT (a.attname = 'folded' AND ? = 'items') ORDER BY a.attnum"
)
_COLUMN_EXISTS = (
    "SELECT 1 FROM pg_attribute a WHERE a.attrelid = (current_schema() || '.' || ?)::regclass"
    " AND a.attname = ? AND NOT a.attisdropped"
)
_PARENTS = (
    "SELECT DISTINCT p.relname AS name FROM pg_constraint k JOIN pg_class p ON p.oid = k.confrelid"
    " WHERE k.conrelid = (current_schema() || '.' || ?)::regclass AND k.contype = 'f'"
)
_KEY = (
    "SELECT a.attname AS name FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid"
    " AND a.attnum = ANY (i.indkey) WHERE i.indrelid = (current_schema() || '.' || ?)::regclass"
    " AND i.indisprimary ORDER BY array_position(i.indkey, a.attnum)"
)
_IDENTITY = (
    "SELECT c.relname AS table_name, a.attname AS column_name FROM pg_attribute a"
    " JOIN pg_class c ON c.oid = a.attrelid"
    " WHERE c.relnamespace = current_schema()::regnamespace AND a.attidentity <> ''"
)


class PostgresArchive:
    def tables(self, tx: Tx) -> list[Table]:
        tables = []
        for row in tx.all(_TABLES):
            name = row["name"]
            if name in _NOT_ARCHIVED:
                continue
            columns = tuple(col["name"] for col in tx.all(_COLUMNS, (name, name, name)))
            parents = tuple(sorted(p["name"] for p in tx.all(_PARENTS, (name,))))
            keys = [k["name"] for k in tx.all(_KEY, (name,))]
            order_by = ", ".join(f'"{key}"' for key in keys)
            tables.append(Table(name, columns, parents, order_by))
        return tables

    def sequences(self, tx: Tx) -> dict[str, int]:
        """The last id each table gave out (never given again, even after a restore)."""
        found = {}
        for row in tx.all(_IDENTITY):
            table, column = row["table_name"], row["column_name"]
            sequence = tx.scalar("SELECT pg_get_serial_sequence(?, ?)", (table, column))
            last = tx.one(f"SELECT last_value, is_called FROM {sequence}")
            if last is not None and last["is_called"]:
                found[table] = int(last["last_value"])
        return found

    def set_sequences(self, tx: Tx, values: dict[str, int]) -> None:
        # Rows came in with their ids: every sequence moves past the largest id restored and
        # past what the archive says was ever given out.
        for row in tx.all(_IDENTITY):
            table, column = row["table_name"], row["column_name"]
            highest = tx.scalar(f'SELECT coalesce(max("{column}"), 0) FROM "{table}"')
            floor = max(int(highest), int(values.get(table, 0)))
            if floor > 0:
                tx.scalar("SELECT setval(pg_get_serial_sequence(?, ?), ?)", (table, column, floor))

    def after_restore(self, tx: Tx) -> None:
        # A VACUUM or a rebuild owed on the archive's server names that server's transaction
        # ids, and the indexes of a memory just filled hold only the rows restored.
        tx.execute(FORGOTTEN_MARKS, (*OWED_MARKS, STATISTICS_OWED))
        if tx.scalar("SELECT to_regclass('retrieval_audit_items')") is not None:  # since m010
            tx.execute(_AUDIT_ITEMS)
        # The trigram index follows the rows as they are inserted, and so did the words of a
        # chunk before m021; since then they are written with the row, from its text.
        if tx.scalar(_COLUMN_EXISTS, ("chunks", "body")) is None:
            from .chunk_spans import fill_words

            fill_words(tx)
        if tx.scalar(_COLUMN_EXISTS, ("items", "folded")) is not None:
            from .folds import keep_current

            # The copies were left out of the archive; its mark names the copies its own
            # server had, not these.
            tx.execute("DELETE FROM index_marks WHERE name = 'folded_copies'")
            keep_current(tx)


_CONSISTENCY = (
    # The tallies the overview and status read (m031), against a recount of the items.
    (tallies.CHECKED, tallies.DIFFERENCES),
    (released_hashes.CHECKED, released_hashes.UNRELEASED),
    (
        "chunks outside their item's text",
        "SELECT count(*) FROM chunks c JOIN items i ON i.tenant = c.tenant AND i.id = c.item_id"
        " WHERE (c.start < 0 OR c.stop > length(i.content) OR c.start > c.stop)"
        " AND NOT EXISTS (SELECT 1 FROM rechunk_queue q WHERE q.tenant = c.tenant"
        " AND q.item_id = c.item_id)",
    ),
    (
        "chunks missing from the words index",
        "SELECT count(*) FROM chunks /* every tenant */ WHERE words IS NULL",
    ),
    (
        # Each model's first vector is found once (a subquery per row sorted the model's
        # vectors for every vector: over 15 minutes at 100,000).
        "vectors of a wrong size",
        "SELECT count(*) FROM (SELECT model, min(id) AS first FROM embeddings GROUP BY model) m"
        " JOIN embeddings f ON f.id = m.first"
        " JOIN embeddings e ON e.model = m.model AND length(e.vector) <> length(f.vector)",
    ),
)


# An entry whose copy is missing, left over or not its folding is searched wrongly: a server
# whose locale changed under the memory lowers otherwise than when the copies were written.
_STALE_COPIES = "entries whose folded copy is stale"


def check(tx: Tx, parting: Parting | None) -> dict[str, Any]:
    """The consistency of chunks, vectors and the entries' folded copies (for the store's
    ``parting`` characters, None before m030; PostgreSQL checks its own pages)."""
    problems: list[str] = []
    counts: dict[str, int] = {}
    found_by = {name: int(tx.scalar(sql)) for name, sql in _CONSISTENCY}
    if parting is not None:
        from .folds import stale_copies

        found_by[_STALE_COPIES] = stale_copies(tx, parting)
    for name, found in found_by.items():
        counts[name] = found
        if found:
            problems.append(f"{name}: {found}")
    return {"ok": not problems, "integrity": ["ok"], "problems": problems, "counts": counts}
