"""The step ``m032_released_hashes``: the texts whose vectors may have lost their last chunk.

A vector is kept once per text (``embeddings``, keyed by model and the text's hash) and shared
by every chunk of that text, whatever the tenant. When a chunk goes (an edit re-cuts its item,
a delete, a forget), its vector is erased once no other chunk carries the same hash: that is
the collection of orphans (``index/vectors.collect_orphans``), run by the upkeep and by every
erasing write before it returns.

The collection used to look for orphans among all the vectors: a count of deleted chunks told
it that there was work, not where, so each run read every vector (96 ms at 100,000, after every
batch of note edits). A trigger now writes the hash of each deleted chunk here, and the
collection checks only those (``docs/decisions/0060-released-hashes.md``). The table holds no
tenant's rows: it is memory-wide bookkeeping, as ``embeddings`` is.
"""

from __future__ import annotations

from .base import Row, Tx

TABLE = "released_hashes"
STEP = "m032_released_hashes"

_MODELS = (
    # Each model, found by a step through the (model, hash) key: a handful of reads, where a
    # DISTINCT would read every vector.
    "WITH RECURSIVE models(model) AS (SELECT min(model) FROM embeddings"
    " UNION ALL SELECT (SELECT min(e.model) FROM embeddings e WHERE e.model > models.model)"
    " FROM models WHERE models.model IS NOT NULL)"
    " SELECT model FROM models WHERE model IS NOT NULL"
)
_UNUSED = "NOT EXISTS (SELECT 1 FROM chunks c /* every tenant */ WHERE c.hash = embeddings.hash)"

_SQLITE = (
    f"CREATE TABLE {TABLE} (hash BLOB PRIMARY KEY) WITHOUT ROWID",
    "DROP TRIGGER chunk_deletions_count",
    f"CREATE TRIGGER chunk_hashes_released AFTER DELETE ON chunks BEGIN"
    f" INSERT INTO {TABLE} (hash) VALUES (old.hash) ON CONFLICT DO NOTHING; END",
)
_POSTGRES = (
    f"CREATE TABLE {TABLE} (hash BYTEA PRIMARY KEY)",
    "DROP TRIGGER chunk_deletions_count ON chunks",
    "DROP FUNCTION recuerdo_count_chunk_deletions()",
    "CREATE FUNCTION recuerdo_release_chunk_hashes() RETURNS trigger LANGUAGE plpgsql AS $$"
    f" BEGIN INSERT INTO {TABLE} (hash) SELECT DISTINCT hash FROM gone ON CONFLICT DO NOTHING;"
    " RETURN NULL; END $$",
    "CREATE TRIGGER chunk_hashes_released AFTER DELETE ON chunks"
    " REFERENCING OLD TABLE AS gone FOR EACH STATEMENT"
    " EXECUTE FUNCTION recuerdo_release_chunk_hashes()",
)


def m032_released_hashes(tx: Tx) -> None:
    """The step, on both stores (registered in each later_steps.py): the table, the trigger
    that fills it in place of the count of deletions, and the vectors no chunk uses now (the
    ones the count still promised a collection of, and any other)."""
    for statement in _SQLITE if tx.dialect == "sqlite" else _POSTGRES:
        tx.execute(statement)
    tx.execute(f"INSERT INTO {TABLE} (hash) SELECT DISTINCT hash FROM embeddings WHERE {_UNUSED}")
    tx.execute(
        "DELETE FROM index_marks WHERE name IN ('chunk_deletions', 'chunk_deletions_collected')"
    )


def take_orphans(tx: Tx) -> list[Row] | None:
    """Delete the vectors whose text no chunk carries any more, among the released hashes,
    and forget those hashes: the vectors deleted (``id``, ``model``), or None when no chunk
    was deleted since the last time."""
    if tx.scalar("SELECT 1 FROM _migrations WHERE name = ?", (STEP,)) is None:
        return None  # a store opened at an older schema (a test's, a restore's): the step collects
    if tx.scalar(f"SELECT 1 FROM {TABLE} LIMIT 1") is None:
        return None
    removed: list[Row] = []
    for row in tx.all(_MODELS):
        removed += tx.all(
            f"DELETE FROM embeddings WHERE model = ? AND hash IN (SELECT hash FROM {TABLE})"
            f" AND {_UNUSED} RETURNING id, model",
            (row["model"],),
        )
    tx.execute(f"DELETE FROM {TABLE}")
    return removed
