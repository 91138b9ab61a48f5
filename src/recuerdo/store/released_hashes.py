"""The step ``m032_released_hashes``: the texts whose vectors may have lost their last chunk.

A vector is kept once per text (``embeddings``, keyed by model and the text's hash) and shared
by every chunk of that text, whatever the tenant. When a chunk goes (an edit re-cuts its item,
a delete, a forget), its vector is erased once no other chunk carries the same hash: that is
the collection of orphans (``index/vectors.collect_orphans``), run by the upkeep and by every
forgetting write before it returns (``MemoryBase._erasing_write``).

The collection used to look for orphans among all the vectors: a count of deleted chunks told
it that there was work, not where, so each run read every vector (162-183 ms over 100,000
entries). A trigger now writes the hash of each deleted chunk here, and the
collection checks only those (``docs/decisions/0060-released-hashes.md``). The table holds no
tenant's rows: it is memory-wide bookkeeping, as ``embeddings`` is.
"""

from __future__ import annotations

from typing import Any

from .base import Row, Tx, groups, marks
from .migrations import has_step

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
_TENANT_WALK = (
    # The same walk over the chunks' (tenant, hash) key, which neither engine here can search
    # by hash alone: a text is looked up in each tenant's chunks, in one statement.
    "WITH RECURSIVE tenants(tenant) AS (SELECT min(tenant) FROM chunks /* every tenant */"
    " UNION ALL SELECT (SELECT min(c.tenant) FROM chunks c /* every tenant */"
    " WHERE c.tenant > tenants.tenant) FROM tenants WHERE tenants.tenant IS NOT NULL)"
)
_TENANTS = f"{_TENANT_WALK} SELECT count(*) FROM tenants WHERE tenant IS NOT NULL"
_UNCARRIED = (
    # Sets, not a lookup per vector: the chunks' key leads with the tenant.
    "SELECT hash FROM embeddings EXCEPT SELECT hash FROM chunks /* every tenant */"
)
RELEASE_UNUSED = (
    f"INSERT INTO {TABLE} (hash) SELECT hash FROM ({_UNCARRIED}) unused WHERE true"
    " ON CONFLICT DO NOTHING"
)
"""Release every text no chunk carries (it reads every vector: for the step and ``recover``)."""
CHECKED = "texts with vectors no chunk carries, never released"
UNRELEASED = f"SELECT count(*) FROM ({_UNCARRIED} EXCEPT SELECT hash FROM {TABLE}) unreleased"
"""``check``'s count of the texts whose vectors no collection will ever erase."""
_GROUP = 500  # hashes or ids a statement

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
    tx.execute(RELEASE_UNUSED)
    tx.execute(
        "DELETE FROM index_marks WHERE name IN ('chunk_deletions', 'chunk_deletions_collected')"
    )


def take_orphans(tx: Tx) -> list[Row] | None:
    """Delete the vectors whose text no chunk carries any more, among the released hashes,
    and forget those hashes: the vectors deleted (``id``, ``model``), or None when no chunk
    was deleted since the last time. The chunks are read in every tenant (a text's vector is
    shared by all), and only for the texts that have a vector."""
    if not has_step(tx, STEP):
        return None  # a store opened at an older schema (a test's, a restore's): the step collects
    released = [row["hash"] for row in tx.all(f"SELECT hash FROM {TABLE}")]
    if not released:
        return None
    models = [row["model"] for row in tx.all(_MODELS)]
    vectored: set[Any] = set()  # bytes; hex text in a store from before m022
    for part in groups(released, _GROUP):
        for model in models:
            vectored.update(
                row["hash"]
                for row in tx.all(
                    f"SELECT hash FROM embeddings WHERE model = ? AND hash IN ({marks(part)})",
                    [model, *part],
                )
            )
    unused = sorted(vectored - _carried(tx, sorted(vectored)))
    removed: list[Row] = []
    for part in groups(unused, _GROUP):
        for model in models:
            removed += tx.all(
                f"DELETE FROM embeddings WHERE model = ? AND hash IN ({marks(part)})"
                " RETURNING id, model",
                [model, *part],
            )
    tx.execute(f"DELETE FROM {TABLE}")
    return removed


def _carried(tx: Tx, hashes: list[Any]) -> set[Any]:
    """Those of ``hashes`` some chunk of some tenant carries. Looked up by the chunks' key,
    tenant by tenant, while that is fewer lookups than there are chunks; else one pass."""
    if not hashes:
        return set()
    tenants = int(tx.scalar(_TENANTS))
    chunks = int(tx.scalar("SELECT coalesce(max(id), 0) FROM chunks /* every tenant */"))
    if tenants * len(hashes) > chunks:
        return {
            row["hash"]
            for row in tx.all(
                # The chunks first (SQLite keeps a CROSS JOIN's order), each released
                # hash found by its key: searching the chunks for each hash is the walk
                # this avoids.
                f"SELECT DISTINCT c.hash FROM chunks c /* every tenant */ CROSS JOIN {TABLE} r"
                " WHERE r.hash = c.hash"
            )
        }
    carried: set[Any] = set()
    for part in groups(hashes, _GROUP):
        carried.update(
            row["hash"]
            for row in tx.all(
                f"{_TENANT_WALK} SELECT DISTINCT c.hash FROM tenants t CROSS JOIN chunks c"
                " /* every tenant */ WHERE t.tenant IS NOT NULL AND c.tenant = t.tenant"
                f" AND c.hash IN ({marks(part)})",
                part,
            )
        )
    return carried
