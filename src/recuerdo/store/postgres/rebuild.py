"""Rebuilding a memory's GIN indexes: what finishes a forget on PostgreSQL (``Store.compact``,
decision 0066).

A GIN index never removes a key. VACUUM takes a deleted row's id out of each key's list, but
the key stays, pointing at no row, until the index is built again: a word that only
forgotten text held stays readable in ``chunks_words`` (and its trigrams in the trigram
indexes). A forget therefore records the rebuild as owed (``REBUILD_OWED`` in ``index_marks``,
written with the VACUUM's mark by ``maintenance.owe_reclaim``), ``index_status`` says so, and
``compact`` rebuilds every GIN index of the memory with ``REINDEX INDEX CONCURRENTLY``: reads
and writes go on meanwhile. It is an owner's command rather than the forget's own work: a
rebuild costs seconds to minutes (200,000 rows of 40 words: 8.7 s for the words index, 15.4 s
for the trigrams) and twice the index's space while it runs. A concurrent rebuild also waits
for every transaction of the database that began before it, whoever runs it: a session left
idle in a transaction holds it. One interrupted leaves an invalid index, which the next
compact drops. Then the planner's statistics are taken again: their samples quote forgotten
rows.

Who may: the memory's owner, and from PostgreSQL 17 a role granted MAINTAIN on every table of
the memory, which may run each step (decision 0149) but for dropping an interrupted rebuild's
index: only the owner may drop one, so such a role is refused while one is there. Anyone else
is refused before anything is done."""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any

from ...errors import Conflict, StoreError
from ..base import REBUILD_OWED
from . import empty_stats, maintenance

if TYPE_CHECKING:
    from .connection import PostgresStore

# With whether this role may drop the index: its owner's (the table's) or the schema's.
_GIN_INDEXES = (
    "SELECT c.relname, i.indisvalid, pg_has_role(current_user, c.relowner, 'USAGE')"
    " OR pg_has_role(current_user, n.nspowner, 'USAGE')"
    " FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
    " JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_am a ON a.oid = c.relam"
    " WHERE c.relnamespace = %s::regnamespace AND a.amname = 'gin' ORDER BY c.relname"
)
# A concurrent rebuild that was interrupted leaves an index behind, invalid, under the old
# one's name with one of these endings: the new index before the swap, the old one after it
# (still holding every key). Writes keep it up to date until it is dropped.
_LEFT_BY_A_REBUILD = re.compile(r"_cc(new|old)\d*$")
VACUUM_PATIENCE = 30.0  # seconds compact waits for the owed VACUUM before it rebuilds anyway


def compact(store: PostgresStore) -> dict[str, Any]:
    """Each GIN index of the memory built again, then the planner's statistics taken again (and
    cleared for every empty table: ``statistics_cleared``, or ``statistics_owed`` for those in
    use or that failed, decision 0076); what was done. The mark is cleared for the forgets
    that committed before the rebuild began: a concurrent rebuild reads the table afresh, so a
    row those forgets deleted is in no new index, whether or not a VACUUM has removed it yet."""
    import psycopg

    from .pool import _quote

    shared = store._live()
    started = time.perf_counter()
    schema = _quote(shared.schema)
    _refuse_who_may_not(store, shared.schema)
    with store.claim("compact") as mine:
        if not mine:
            raise Conflict(f"another process is compacting memory {store.memory!r}; try later")
        # The VACUUM the forgets owe, on the thread that runs it after a forget (its own
        # waits and retries): two VACUUMs of one table would wait on each other.
        store.reclaim()
        vacuumed = store.settle(VACUUM_PATIENCE)
        try:
            with shared.pool.connection(timeout=60) as conn:
                mark = maintenance.owed_mark(conn, REBUILD_OWED)
                indexes = conn.execute(_GIN_INDEXES, [shared.schema]).fetchall()
                dropped = [n for n, valid, _ in _left_by_a_rebuild(indexes)]
                for name in dropped:
                    conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {schema}.{_quote(name)}")
                rebuilt = [name for name, _, _ in indexes if name not in dropped]
                for name in rebuilt:
                    conn.execute(f"REINDEX INDEX CONCURRENTLY {schema}.{_quote(name)}")
                if mark is not None:
                    maintenance.clear_mark(conn, REBUILD_OWED, mark)
        except psycopg.errors.InsufficientPrivilege as exc:  # a grant changed meanwhile
            raise StoreError(f"{_who_may(store, conn)} ({exc})") from exc
        except psycopg.Error as exc:
            raise StoreError(
                f"the indexes of memory {store.memory!r} were not rebuilt: {exc}"
            ) from exc
        # The statistics' samples (most common values, histograms) hold whole short texts of
        # the rows they were taken from, forgotten ones included, until they are taken again.
        maintenance.each_table(store, "ANALYZE")
        # An ANALYZE of an empty table keeps the statistics it had: which tables were analysed
        # with rows, no owner may read (row-level security hides them), so every empty one.
        with store._connection(shared) as conn:
            statistics = empty_stats.clear(conn, shared.schema)
            empty_stats.keep_owed(conn, statistics.owed, statistics.cleared)
        shared.statistics_owed -= set(statistics.cleared)  # in place: the reclaimer's too
        shared.statistics_owed |= set(statistics.owed)
    return {
        "dialect": "postgres",
        "rebuilt": rebuilt,
        "dropped": dropped,
        "vacuumed": vacuumed,
        "statistics_cleared": statistics.cleared,
        "statistics_owed": statistics.owed,
        "seconds": round(time.perf_counter() - started, 3),
    }


def _left_by_a_rebuild(indexes: list[tuple[str, bool, bool]]) -> list[tuple[str, bool, bool]]:
    return [row for row in indexes if not row[1] and _LEFT_BY_A_REBUILD.search(row[0])]


def _who_may(store: PostgresStore, conn: Any) -> str:
    if conn.info.server_version >= maintenance.MAINTAIN_SINCE:
        return (
            f"only the owner of memory {store.memory!r}, or a role granted MAINTAIN on its"
            " tables, may rebuild its indexes"
        )
    return f"only the owner of memory {store.memory!r} may rebuild its indexes"


def _refuse_who_may_not(store: PostgresStore, schema: str) -> None:
    """Refuse, before anything is done, a role that may not run every step. Left to the
    statements themselves, one that may not maintain the tables had its VACUUM skip each
    table with only a warning before the first REINDEX failed; and only the owner may drop
    an interrupted rebuild's index, which keeps every key, so a MAINTAIN holder may not
    compact while one is there."""
    import psycopg

    with store._connection(store._live()) as conn:
        try:
            maintained = maintenance.may_maintain(conn, schema)
            indexes = conn.execute(_GIN_INDEXES, [schema]).fetchall()
        except psycopg.Error as exc:
            raise StoreError(f"memory {store.memory!r} could not be compacted: {exc}") from exc
        if not maintained:
            raise StoreError(_who_may(store, conn))
    kept = [name for name, _, droppable in _left_by_a_rebuild(indexes) if not droppable]
    if kept:
        raise StoreError(
            f"an interrupted rebuild left {', '.join(kept)} in memory {store.memory!r}, which"
            " only its owner may drop: the owner's compact drops it and rebuilds the rest"
        )
