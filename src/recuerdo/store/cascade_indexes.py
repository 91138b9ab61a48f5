"""The step ``m033_cascade_indexes``: an index for each cascade that had none.

Deleting an entity deletes its words (``entity_words``), and deleting a fact its import
records (``import_facts``), through ``ON DELETE CASCADE``. The database finds those rows by the
foreign key's columns, and neither table had an index that leads with them: ``entity_words``
is keyed by (tenant, word, entity), ``import_facts`` by the import's key. So each deleted
entity or fact read the whole table. Forgetting a scope of 4,000 entities took 0.94 s on
SQLite and 1.6 s on PostgreSQL, growing with the square of the entities
(docs/decisions/0063-cascade-indexes.md). Every other cascade's columns lead an index, with
the tenant first (SQLite walks those by skip-scan); ``tests/test_query_plans.py`` keeps it so.
"""

from __future__ import annotations

from .base import Tx

STEP = "m033_cascade_indexes"
INDEXES = (
    "CREATE INDEX entity_words_by_entity ON entity_words (tenant, entity_id)",
    "CREATE INDEX import_facts_by_fact ON import_facts (tenant, fact_id)",
)


def m033_cascade_indexes(tx: Tx) -> None:
    """The step, on both stores (registered in each later_steps.py)."""
    for statement in INDEXES:
        tx.execute(statement)
