"""The step ``m039_document_import_keys``: an index of the documents an import read in, by the
key their export gave them.

Each source of an imported fact names its document by that key (``meta.import_key``), and the
import looks the document up by it. No index served the lookup: each source read every document
of the scope, and an import of 2,000 cited facts over 8,000 documents held took 7.4 s on SQLite
and 20.8 s on PostgreSQL, growing with the documents held (the review of decision 0088). The
index is partial (documents only) and its expression is the one the lookup writes
(``Tx.json_text``), which both planners need to use it.
"""

from __future__ import annotations

from .base import Tx

STEP = "m039_document_import_keys"


def m039_document_import_keys(tx: Tx) -> None:
    """The step, on both stores (registered in each later_steps.py)."""
    tx.execute(
        "CREATE INDEX items_document_import_keys ON items"
        f" (tenant, scope, ({tx.json_text('meta', 'import_key')})) WHERE item_type = 'document'"
    )
