"""Meaning search in the database: pgvector's HNSW index, where the server has the extension.

The ``embeddings`` table keeps each vector as the families write it (``vector``: an int8
vector with its float32 scale, the same bytes as on SQLite). With pgvector, ``m017`` adds
``embedding``, a stored generated ``vector`` column decoded from those bytes by
``recuerdo_vector`` (so inserts, backups and restores stay the portable ones: the column is
derived, never written), and each model gets a partial HNSW index (cosine) over
``embedding::vector(dim)``: a model's vectors have one size, the table's may not. The index is
built once the model's first load of vectors has caught up with the chunks (decision 0037):
pgvector's inserts into a live graph are several times slower than a build over the rows. Searches
order by ``<=>`` inside the query that applies the tenant and the filters, with pgvector's
iterative scans (0.8) so that filters do not starve the index; when they still do, the rows
that pass are scored exactly in the database.

Without pgvector (Debian's PostgreSQL 15) nothing here is used: ``Tx.vectors`` is None and each
server process holds the vectors and searches them itself (``index.vector_set``), the stated
fallback of ``index_status``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..base import Tx

if TYPE_CHECKING:
    from .connection import PostgresTx

HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64
EF_SEARCH_MIN = 40
EF_SEARCH_MAX = 1000
MAX_SCAN_TUPLES = 100_000
"""How many index tuples an iterative scan visits before it gives up (then the exact query
answers); pgvector's default is 20,000."""

# The stored bytes: a little-endian float32 scale, then one signed byte per dimension. The
# scale's bits are decoded by hand (PostgreSQL has no cast from 4 bytes to real); it is a
# positive normal number (vectors.encode), subnormals are decoded too for completeness.
DECODE_FUNCTION = """
CREATE FUNCTION recuerdo_vector(blob BYTEA) RETURNS public.vector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
SELECT (array_agg(((get_byte(blob, i) + 128) % 256 - 128) * s.scale ORDER BY i))::real[]
    ::public.vector
FROM generate_series(4, length(blob) - 1) AS i,
    (SELECT CASE WHEN e = 0 THEN m / 8388608.0 * 2.0 ^ -126
            ELSE (1 + m / 8388608.0) * 2.0 ^ (e - 127) END AS scale
     FROM (SELECT (b >> 23) & 255 AS e, b & 8388607 AS m
           FROM (SELECT get_byte(blob, 0)::bigint + (get_byte(blob, 1)::bigint << 8)
                        + (get_byte(blob, 2)::bigint << 16) + (get_byte(blob, 3)::bigint << 24)
                 AS b) AS bits) AS parts) AS s
$$
"""


@dataclass
class VectorState:
    """What one process knows of a memory's vector index (shared by its transactions)."""

    version: str
    indexed: set[str] = field(default_factory=set)

    @property
    def iterative(self) -> bool:
        """Whether this pgvector has iterative index scans (0.8 and later)."""
        major, minor = (int(part) for part in self.version.split(".")[:2])
        return (major, minor) >= (0, 8)


def enabled(tx: Tx) -> VectorState | None:
    """The state when this memory keeps its vectors in pgvector's type, else None."""
    column = tx.scalar(
        "SELECT 1 FROM pg_attribute WHERE attrelid = (current_schema() || '.embeddings')::regclass"
        " AND attname = 'embedding' AND NOT attisdropped"
    )
    if not column:
        return None
    version = tx.scalar("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
    return None if version is None else VectorState(str(version))


def install(tx: Tx) -> bool:
    """Give the embeddings a pgvector column and each model an HNSW index, when the server
    has the extension (and the role may create it); whether the memory now has them."""
    from .ddl import has_extension

    if enabled(tx) is not None:
        return True
    if not has_extension(tx, "vector"):
        return False
    tx.execute(DECODE_FUNCTION)
    tx.execute(
        "ALTER TABLE embeddings ADD COLUMN embedding public.vector"
        " GENERATED ALWAYS AS (recuerdo_vector(vector)) STORED"
    )
    index_models(tx)
    return True


def index_models(tx: Tx) -> None:
    """An HNSW index for each model the embeddings hold (after a restore, or a late install)."""
    for row in tx.all("SELECT DISTINCT model, length(vector) - 4 AS dim FROM embeddings"):
        create_index(tx, str(row["model"]), int(row["dim"]))


def index_name(model: str) -> str:
    return "embeddings_hnsw_" + hashlib.sha256(model.encode()).hexdigest()[:16]


def _literal(text: str) -> str:
    # The model is written into the statement: a partial index is used only when the planner
    # can prove its condition, which it cannot for a bound parameter under a generic plan.
    return "'" + text.replace("'", "''") + "'"


def create_index(tx: Tx, model: str, dim: int) -> None:
    tx.execute(
        f"CREATE INDEX IF NOT EXISTS {index_name(model)} ON embeddings USING hnsw"
        f" ((embedding::public.vector({int(dim)})) public.vector_cosine_ops)"
        f" WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})"
        f" WHERE model = {_literal(model)}"
    )


def as_text(vector: Sequence[float]) -> str:
    """pgvector's text form of a vector."""
    return "[" + ",".join(f"{float(x):.8g}" for x in vector) + "]"


class PgvectorSearch:
    """:class:`~recuerdo.store.base.VectorSearch` over ``embeddings.embedding``."""

    __slots__ = ("_state", "_tx")

    def __init__(self, tx: PostgresTx, state: VectorState) -> None:
        self._tx = tx
        self._state = state

    def follow(self, model: str, dim: int, *, caught_up: bool) -> None:
        # pgvector inserts into a live HNSW index one graph update at a time: 6,000 vectors
        # took 15.6 s that way, against 2.1 s of inserts and a 2.4 s build after (0037). So a
        # model's index waits for its first load to end; until then searches score exactly.
        name = index_name(model)
        if name in self._state.indexed or not caught_up:
            return
        found = self._tx.scalar(
            "SELECT 1 FROM pg_class WHERE relname = ?"
            " AND relnamespace = current_schema()::regnamespace",
            (name,),
        )
        if found:
            # Remembered only once committed (seen in the catalog): a rolled-back creation
            # must be made again.
            self._state.indexed.add(name)
        else:
            create_index(self._tx, model, dim)

    def order(
        self, alias: str, model: str, dim: int, query: Sequence[float], limit: int, exact: bool
    ) -> tuple[str, str, list[Any]]:
        size = int(dim)
        distance = (
            f"({alias}.embedding::public.vector({size}) OPERATOR(public.<=>)"
            f" ?::public.vector({size}))"
        )
        if exact:
            distance += " + 0"  # not the indexed expression: the planner scores every row
        else:
            ef_search = min(max(limit, EF_SEARCH_MIN), EF_SEARCH_MAX)
            self._tx.execute(f"SET LOCAL hnsw.ef_search = {ef_search}")
            if self._state.iterative:
                self._tx.execute("SET LOCAL hnsw.iterative_scan = strict_order")
                self._tx.execute(f"SET LOCAL hnsw.max_scan_tuples = {MAX_SCAN_TUPLES}")
        return distance, f"{alias}.model = {_literal(model)}", [as_text(query)]
