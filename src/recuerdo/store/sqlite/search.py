"""SQLite's search indexes: FTS5 BM25 over chunks, and the trigram index over entries.

The trigram index is filled off the write path: rows up to ``index_marks.upto`` are indexed,
and readers scan the few rows above it (``docs/decisions/0002-entry-search.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..base import SubstringPart

if TYPE_CHECKING:
    from .connection import SQLiteTx

BM25_WEIGHTS = (3.0, 1.0, 0.4)  # title, body, context
_SCORED = (
    f"SELECT rowid AS chunk_id, bm25(chunk_fts, {', '.join(map(str, BM25_WEIGHTS))}) AS score"
    " FROM chunk_fts WHERE chunk_fts MATCH ?"
)
# A word in at least half of the chunks is "common": FTS5 clamps the weight (IDF) of such a word
# to 1e-6, so it cannot change the order of the chunks that hold another word, yet BM25 would
# read every chunk it is in, and one near-universal word made a two-word search cost as much as
# listing the whole memory. In an any-word query that also holds a word that is not common, the
# common words are left out of the ranking; chunks holding only common words follow the ranked
# ones, newest first (docs/decisions/0016-common-words.md). Counting a word's chunks stops at
# the threshold, and small memories (under COMMON_AT chunks per common word) are never pruned.
COMMON_AT = 1000
# A query whose every word is in at least RANK_AT chunks (one common word, only common words,
# two words each in a third of the memory) matches so many chunks that ranking them all cost
# 35-160 ms at 100,000 chunks, though none of its words sets a few chunks apart: its newest
# RANK_AT matches are ranked by BM25 (with the whole index's statistics), and the older ones
# follow, newest first, below them (docs/decisions/0028-common-words.md). Beside a word in
# fewer chunks, every chunk holding such a word is ranked, so a rare word's chunks are never left
# in the unranked rest; only the chunks holding broad words alone are windowed (0033). The
# window is the same for every page, so paging by offset still visits each match once.
RANK_AT = 1000
# Beside a narrow word (under RANK_AT chunks), the chunks holding only the query's broad words
# are windowed like a broad query once those words are in SPLIT_AT chunks or more (0033): under
# that, ranking every match costs a few milliseconds, and windowing the broad words' chunks at
# RANK_AT cost LoCoMo R@10 0.1 (a memory of 5,882 turns whose names and verbs are in 1,000-2,000).
SPLIT_AT = 10_000
# The trigram index needs three characters; shorter needles are matched by a scan.
TRIGRAM = 3
INDEX_CHUNK = 500
_INDEXED_UPTO = "SELECT upto FROM index_marks WHERE name = 'entry_trigrams'"


def match_expression(words: Sequence[str], mode: str = "any") -> str:
    """An FTS5 MATCH expression of quoted terms (user text never reaches FTS5's syntax)."""
    joiner = " AND " if mode == "all" else " OR "
    return joiner.join('"' + word.replace('"', '""') + '"' for word in words)


def trigram_expression(needle: str) -> str:
    """An FTS5 MATCH of every distinct trigram of ``needle`` (each one token of the trigram
    tokenizer, which folds case as it did for the stored text)."""
    grams = dict.fromkeys(needle[i : i + TRIGRAM] for i in range(len(needle) - TRIGRAM + 1))
    return " AND ".join('"' + gram.replace('"', '""') + '"' for gram in grams)


class FTS5Text:
    """:class:`~recuerdo.store.base.TextSearch` over the ``chunk_fts`` table."""

    __slots__ = ("_tx",)

    def __init__(self, tx: SQLiteTx) -> None:
        self._tx = tx

    def rank(
        self, tenant: str, words: Sequence[str], mode: str, limit: int, offset: int
    ) -> list[tuple[int, float]]:
        # One index for the memory: the tenant is checked by the caller's join on chunks (a
        # join inside the ranking would read a chunk row per match).
        if not words:
            return []
        expression = match_expression(words, mode)
        if mode == "any" and len(words) > 1:
            # Probing for RANK_AT matches is cheap; probing for half of the chunks (is a word
            # common?) is not, and only matters beside a word under RANK_AT, whose matches are all
            # ranked: a query of broad words only is windowed whichever of them are common.
            broad = [word for word in words if self._reaches(match_expression([word]), RANK_AT)]
            if len(broad) == len(words):
                return self._windowed(expression, limit, offset)
            common = self._common(broad)
            rest = [word for word in words if word not in common]
            if common:
                return self._rank_without(rest, common, broad, limit, offset)
            return self._rank_narrow_first(rest, broad, limit, offset)
        # One word, or every word ("all"): its matches are windowed when there are many.
        return self._windowed(expression, limit, offset)

    def ranks_others(self, tenant: str) -> bool:
        # Two seeks of an index that starts with the tenant (``tenant <> ?`` would walk every
        # chunk of a memory that has one tenant).
        return bool(
            self._tx.scalar(
                "/* every tenant */ SELECT EXISTS (SELECT 1 FROM chunks WHERE tenant < ?)"
                " OR EXISTS (SELECT 1 FROM chunks WHERE tenant > ?)",
                (tenant, tenant),
            )
        )

    def _windowed(self, expression: str, limit: int, offset: int) -> list[tuple[int, float]]:
        """The newest RANK_AT matches ranked, then the older ones newest first (score 0); the
        plain ranking when there are fewer matches."""
        edge = self._edge(expression)
        if edge is None:
            return self._ranked(expression, limit, offset)
        ranked = []
        if offset < RANK_AT:
            ranked = self._ranked(expression, min(limit, RANK_AT - offset), offset, edge)
        if len(ranked) < limit:
            ranked += self._newest(expression, limit - len(ranked), offset - RANK_AT, edge)
        return ranked

    def _edge(self, expression: str) -> int | None:
        """The RANK_AT-th newest match: the oldest of a broad query's ranked window (None
        when there are fewer matches)."""
        edge = self._tx.scalar(
            "SELECT rowid FROM chunk_fts WHERE chunk_fts MATCH ?"
            " ORDER BY rowid DESC LIMIT 1 OFFSET ?",
            (expression, RANK_AT - 1),
        )
        return None if edge is None else int(edge)

    def _newest(
        self, expression: str, limit: int, offset: int, below: int | None = None
    ) -> list[tuple[int, float]]:
        """Matches newest first (older than ``below``), unranked: score 0, under every ranked
        chunk."""
        bound, params = ("", ()) if below is None else (" AND rowid < ?", (below,))
        rows = self._tx.all(
            f"SELECT rowid AS chunk_id FROM chunk_fts WHERE chunk_fts MATCH ?{bound}"
            " ORDER BY rowid DESC LIMIT ? OFFSET ?",
            (expression, *params, limit, max(0, offset)),
        )
        return [(int(row["chunk_id"]), 0.0) for row in rows]

    def _ranked(
        self, expression: str, limit: int, offset: int, since: int = 0
    ) -> list[tuple[int, float]]:
        rows = self._tx.all(
            f"{_SCORED} AND rowid >= ? ORDER BY score, chunk_id LIMIT ? OFFSET ?",
            (expression, since, limit, offset),
        )
        # bm25() is lower for better matches; the protocol's scores are higher for better.
        return [(int(row["chunk_id"]), -float(row["score"])) for row in rows]

    def _count(self, expression: str) -> int:
        return int(
            self._tx.scalar("SELECT count(*) FROM chunk_fts WHERE chunk_fts MATCH ?", (expression,))
        )

    def _reaches(self, expression: str, count: int) -> bool:
        """Whether ``expression`` matches ``count`` chunks or more, reading no more than
        ``count`` of them (a row at that offset: a third faster than a count over a LIMIT
        subquery, which copies each row into the subquery before counting it)."""
        return (
            self._tx.scalar(
                "SELECT rowid FROM chunk_fts WHERE chunk_fts MATCH ? LIMIT 1 OFFSET ?",
                (expression, count - 1),
            )
            is not None
        )

    def _common(self, words: Sequence[str]) -> list[str]:
        """Those of ``words`` in half of the chunks or more (their BM25 weight is clamped)."""
        # BM25's statistics are those of the whole full-text index, every tenant's chunks.
        chunks = int(self._tx.scalar("/* every tenant */ SELECT coalesce(max(id), 0) FROM chunks"))
        # max(id) is at least the number of chunks, so a word counted common surely is.
        threshold = max(COMMON_AT, (chunks + 1) // 2)
        return [word for word in words if self._reaches(match_expression([word]), threshold)]

    def _rank_without(
        self, rest: list[str], common: list[str], broad: list[str], limit: int, offset: int
    ) -> list[tuple[int, float]]:
        """The chunks holding a word of ``rest`` ranked, then those holding only common words,
        newest first."""
        rare = match_expression(rest)
        ranked = self._rank_narrow_first(rest, broad, limit, offset)
        if len(ranked) == limit:
            return ranked
        # The rare words' matches ran out in this page: the chunks holding only common words
        # follow, newest first, below every ranked one.
        past = offset - self._count(rare) if not ranked else 0
        only_common = f"({match_expression(common)}) NOT ({rare})"
        return ranked + self._newest(only_common, limit - len(ranked), past)

    def _rank_narrow_first(
        self, words: list[str], broad: Sequence[str], limit: int, offset: int
    ) -> list[tuple[int, float]]:
        """An any-word query's matches ranked in full where a *narrow* word (under RANK_AT
        chunks) is, and windowed where only its broad words are.

        BM25 is a sum over the query's words, each term depending only on that word's
        statistics and the chunk: a chunk holding no narrow word scores what the broad words
        alone give it, so those chunks are the broad words' own query, windowed as a broad
        query is (its newest RANK_AT ranked, the older ones after every ranked chunk, newest
        first). The chunks holding a narrow word (a few thousand at most) are all ranked by the
        whole query. Under SPLIT_AT chunks of broad words, every match is ranked
        (docs/decisions/0033-narrow-words-first.md)."""
        narrow = [word for word in words if word not in broad]
        wide = [word for word in words if word in broad]
        expression = match_expression(words)
        if not wide or not narrow or not self._reaches(match_expression(wide), SPLIT_AT):
            return self._ranked(expression, limit, offset)
        narrow_any = match_expression(narrow)
        # FTS5 scores a row with a filter's words too: the chunks holding a narrow word are
        # scored by the whole query AND the narrow words, less the narrow words' own score
        # (equal to the whole query's score but for the last bit of rounding).
        doubled = self._scores(f"({expression}) AND ({narrow_any})")
        own = self._scores(narrow_any)
        holding = [(score - own[chunk], chunk) for chunk, score in doubled.items()]
        others = f"({match_expression(wide)}) NOT ({narrow_any})"
        edge = self._edge(others)
        window = [
            (-score, chunk) for chunk, score in self._ranked(others, offset + limit, 0, edge or 0)
        ]
        ranked = [(chunk, -score) for score, chunk in sorted(holding + window)]
        page = ranked[offset : offset + limit]
        if len(page) < limit and edge is not None:
            # Past every ranked chunk: the broad words' older chunks, newest first.
            page += self._newest(others, limit - len(page), offset - len(holding) - RANK_AT, edge)
        return page

    def _scores(self, expression: str) -> dict[int, float]:
        """Every match's BM25, as FTS5 gives it (lower is better)."""
        return {
            int(row["chunk_id"]): float(row["score"])
            for row in self._tx.all(_SCORED, (expression,))
        }


class TrigramSubstrings:
    """:class:`~recuerdo.store.base.SubstringSearch` with FTS5's trigram tokenizer."""

    __slots__ = ("_tx",)

    def __init__(self, tx: SQLiteTx) -> None:
        self._tx = tx

    def candidates(self, needle: str) -> list[SubstringPart] | None:
        if len(needle) < TRIGRAM:
            return None
        # The index (detail=none, migration m018) knows which entries hold each trigram, not
        # where: the entries holding all of the needle's trigrams are read, and their text is
        # checked as the few rows above the index's mark are (the same folding for both). A
        # needle of one trigram needs no check. The check tries SQLite's ASCII lower() first:
        # a match there is a match after case folding too, so Python is called only for the
        # rare candidates it does not settle (other letters' cases, false candidates).
        folded = needle.casefold()
        check, checked = "", []
        if len(needle) > TRIGRAM:
            check = (
                " AND (instr(lower(items.content), lower(?)) > 0"
                " OR instr(recuerdo_fold(items.content), ?) > 0)"
            )
            checked = [needle, folded]
        # Two parts, newest first: the rows above the mark (all newer than any indexed row),
        # then the index's. The index keeps each entry under the negative of its id (m024),
        # so its own ascending order is newest first: a listing reads its matches as FTS5
        # walks them and stops after its limit (a descending walk first loads every match of
        # each trigram). Each match's entry is joined once, outside the index (CROSS JOIN: an
        # index on the caller's filters would otherwise be walked instead, testing every
        # entry). The part above the mark walks the table's own ids (NOT INDEXED: an index on
        # the caller's filters would read every entry of the tenant to find the few new ones).
        # docs/decisions/0028-common-words.md, 0044-substrings-newest-first.md.
        return [
            SubstringPart(
                "items NOT INDEXED",
                "items.id > (" + _INDEXED_UPTO + ") AND instr(recuerdo_fold(items.content), ?) > 0",
                [folded],
            ),
            SubstringPart(
                "entry_trigrams CROSS JOIN items",
                f"entry_trigrams MATCH ? AND items.id = -entry_trigrams.rowid{check}",
                [trigram_expression(needle), *checked],
                newest_first="entry_trigrams.rowid",
            ),
        ]

    def condition(self, needle: str, alias: str) -> tuple[str, list[Any]]:
        return f"instr(recuerdo_fold({alias}.content), ?) > 0", [needle.casefold()]

    def catch_up(self) -> int:
        tx = self._tx
        upto = int(tx.scalar(_INDEXED_UPTO))
        last = tx.scalar(
            "SELECT max(id) FROM (SELECT id FROM items /* every tenant */ WHERE id > ?"
            " ORDER BY id LIMIT ?)",
            (upto, INDEX_CHUNK),
        )
        if last is None:
            return 0
        tx.execute(
            # Newest first, so the rowids (-id) ascend: FTS5 flushes its pending terms as a new
            # segment whenever a rowid does not rise, and ascending ids made each entry one
            # (filling took five times as long).
            "INSERT INTO entry_trigrams (rowid, content) SELECT -id, content FROM items"
            " /* every tenant */ WHERE id > ? AND id <= ? AND item_type = 'entry'"
            " ORDER BY id DESC",
            (upto, last),
        )
        tx.execute("UPDATE index_marks SET upto = ? WHERE name = 'entry_trigrams'", (last,))
        return int(last) - upto

    def waiting(self) -> int:
        return int(
            self._tx.scalar(
                f"SELECT count(*) FROM items /* every tenant */ WHERE id > ({_INDEXED_UPTO})"
            )
        )
