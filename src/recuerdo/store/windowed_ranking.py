"""Which matches a word search ranks, shared by the full-text indexes of both backends.

BM25 scores each match of a query, so a query holding a word found in most chunks costs as much
as ranking the whole memory, though such a word sets no chunk apart. The rules below bound
that work (docs/decisions/0016-common-words.md, 0028-common-words.md,
0033-narrow-words-first.md; PostgreSQL follows them since 0049-postgres-common-words.md):

- A word in at least half of the chunks (and COMMON_AT or more) is *common*: BM25 clamps its
  weight to 1e-6, so it cannot change the order of the chunks holding another word. Beside such
  a word, an any-word query ranks its other words' matches; the chunks holding only common words
  follow, newest first.
- A query whose every word is *broad* (in RANK_AT chunks or more), one broad word, or an
  every-word query with many matches: its newest RANK_AT matches are ranked, and the older ones
  follow below them, newest first.
- Beside a *narrow* word (under RANK_AT chunks), every chunk holding a narrow word is ranked,
  so a rare word's chunks are never left in the unranked rest; only the chunks holding broad
  words alone are windowed, and only once those words are in SPLIT_AT chunks or more.

Every window is the same for every page, so paging by offset visits each match once.

A backend supplies the primitives (:class:`WindowedRanking`'s abstract methods) over its own
expression type ``E``: what FTS5 writes as a MATCH string, PostgreSQL as a ``tsquery``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic, TypeVar

COMMON_AT = 1000
# Ranking every match of a query whose words are all in many chunks cost 35-160 ms at 100,000
# chunks on SQLite (0028), and 0.7 s at 50,000 on PostgreSQL (0049).
RANK_AT = 1000
# Under SPLIT_AT chunks of broad words beside a narrow one, every match is ranked: windowing
# them at RANK_AT cost LoCoMo R@10 0.1 (a memory of 5,882 turns whose names and verbs are in
# 1,000-2,000 chunks).
SPLIT_AT = 10_000

E = TypeVar("E")
Hit = tuple[int, float]


class WindowedRanking(Generic[E]):
    """The ranking rules over a backend's primitives. Scores are higher for better; ties go to
    the lower chunk id."""

    __slots__ = ()

    # -- primitives ---------------------------------------------------------------------------

    def _any(self, words: Sequence[str], mode: str = "any") -> E:
        """The chunks holding any of ``words`` (``mode="all"``: every one)."""
        raise NotImplementedError

    def _without(self, wanted: E, unwanted: E) -> E:
        """The chunks of ``wanted`` that are not in ``unwanted``, scored by ``wanted``."""
        raise NotImplementedError

    def _reaches(self, expression: E, count: int) -> bool:
        """Whether ``expression`` matches ``count`` chunks or more (reading no more)."""
        raise NotImplementedError

    def _count(self, expression: E) -> int:
        raise NotImplementedError

    def _nth_newest(self, expression: E, n: int) -> int | None:
        """The ``n``-th newest match (None when there are fewer)."""
        raise NotImplementedError

    def _newest(
        self, expression: E, limit: int, offset: int, below: int | None = None
    ) -> list[Hit]:
        """Matches newest first (older than ``below``), unranked: score 0."""
        raise NotImplementedError

    def _ranked(self, expression: E, limit: int, offset: int, since: int = 0) -> list[Hit]:
        """The matches (from chunk ``since`` on) ranked by BM25 of the expression's words."""
        raise NotImplementedError

    def _holding(self, expression: E, narrow: E) -> list[Hit]:
        """Every chunk matching ``narrow``, scored by ``expression``'s words."""
        raise NotImplementedError

    def _chunk_count(self) -> int:
        """The number of chunks BM25's statistics count (or a bound above it)."""
        raise NotImplementedError

    # -- the rules ----------------------------------------------------------------------------

    def _rank_words(self, words: Sequence[str], mode: str, limit: int, offset: int) -> list[Hit]:
        if not words:
            return []
        if mode == "any" and len(words) > 1:
            # Probing for RANK_AT matches is cheap; probing for half of the chunks (is a word
            # common?) is not, and only matters beside a word under RANK_AT, whose matches are
            # all ranked: a query of broad words only is windowed whichever of them are common.
            broad = [word for word in words if self._reaches(self._any([word]), RANK_AT)]
            if len(broad) == len(words):
                return self._windowed(self._any(words), limit, offset)
            common = self._common(broad)
            rest = [word for word in words if word not in common]
            if common:
                return self._rank_without(rest, common, broad, limit, offset)
            return self._rank_narrow_first(rest, broad, limit, offset)
        # One word, or every word ("all"): its matches are windowed when there are many.
        return self._windowed(self._any(words, mode), limit, offset)

    def _common(self, words: Sequence[str]) -> list[str]:
        """Those of ``words`` in half of the chunks or more, and in COMMON_AT or more."""
        threshold = max(COMMON_AT, (self._chunk_count() + 1) // 2)
        return [word for word in words if self._reaches(self._any([word]), threshold)]

    def _edge(self, expression: E) -> int | None:
        """The RANK_AT-th newest match: the oldest of a broad query's ranked window (None
        when there are fewer matches)."""
        return self._nth_newest(expression, RANK_AT)

    def _windowed(self, expression: E, limit: int, offset: int) -> list[Hit]:
        """The newest RANK_AT matches ranked, then the older ones newest first (score 0); the
        plain ranking when there are fewer matches."""
        edge = self._edge(expression)
        if edge is None:
            return self._ranked(expression, limit, offset)
        ranked: list[Hit] = []
        if offset < RANK_AT:
            ranked = self._ranked(expression, min(limit, RANK_AT - offset), offset, edge)
        if len(ranked) < limit:
            ranked += self._newest(expression, limit - len(ranked), offset - RANK_AT, edge)
        return ranked

    def _rank_without(
        self, rest: list[str], common: list[str], broad: list[str], limit: int, offset: int
    ) -> list[Hit]:
        """The chunks holding a word of ``rest`` ranked, then those holding only common words,
        newest first."""
        ranked = self._rank_narrow_first(rest, broad, limit, offset)
        if len(ranked) == limit:
            return ranked
        rare = self._any(rest)
        # The rare words' matches ran out in this page: the chunks holding only common words
        # follow, newest first, below every ranked one.
        past = offset - self._count(rare) if not ranked else 0
        only_common = self._without(self._any(common), rare)
        return ranked + self._newest(only_common, limit - len(ranked), past)

    def _rank_narrow_first(
        self, words: list[str], broad: Sequence[str], limit: int, offset: int
    ) -> list[Hit]:
        """An any-word query's matches ranked in full where a *narrow* word (under RANK_AT
        chunks) is, and windowed where only its broad words are.

        BM25 is a sum over the query's words, each term depending only on that word's
        statistics and the chunk: a chunk holding no narrow word scores what the broad words
        alone give it, so those chunks are the broad words' own query, windowed as a broad
        query is (its newest RANK_AT ranked, the older ones after every ranked chunk, newest
        first). The chunks holding a narrow word (a few thousand at most) are all ranked by the
        whole query. Under SPLIT_AT chunks of broad words, every match is ranked."""
        narrow = [word for word in words if word not in broad]
        wide = [word for word in words if word in broad]
        expression = self._any(words)
        if not wide or not narrow or not self._reaches(self._any(wide), SPLIT_AT):
            return self._ranked(expression, limit, offset)
        narrow_any = self._any(narrow)
        holding = self._holding(expression, narrow_any)
        others = self._without(self._any(wide), narrow_any)
        edge = self._edge(others)
        window = self._ranked(others, offset + limit, 0, edge or 0)
        ranked = sorted(holding + window, key=lambda hit: (-hit[1], hit[0]))
        page = ranked[offset : offset + limit]
        if len(page) < limit and edge is not None:
            # Past every ranked chunk: the broad words' older chunks, newest first.
            page += self._newest(others, limit - len(page), offset - len(holding) - RANK_AT, edge)
        return page
