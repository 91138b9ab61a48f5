"""SQLite's search indexes: FTS5 BM25 over chunks, and the trigram index over entries.

The trigram index is filled off the write path: rows up to ``index_marks.upto`` are indexed,
and readers scan the few rows above it (``docs/decisions/0002-entry-search.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from .. import windowed_ranking
from ..base import SubstringPart
from ..unspaced import query_forms
from ..windowed_ranking import WindowedRanking
from . import stale_words
from .folded_trigrams_schema import indexed_text

if TYPE_CHECKING:
    from .connection import SQLiteTx

_T = TypeVar("_T")
BM25_WEIGHTS = (3.0, 1.0, 0.4)  # title, body, context
_SCORED = (
    f"SELECT rowid AS chunk_id, bm25(chunk_fts, {', '.join(map(str, BM25_WEIGHTS))}) AS score"
    " FROM chunk_fts WHERE chunk_fts MATCH ?"
)
# The trigram index needs three characters; shorter needles are matched by a scan.
TRIGRAM = 3
INDEX_CHUNK = 500
INDEXED_UPTO = "SELECT upto FROM index_marks WHERE name = 'entry_trigrams'"
LIKE_PATTERN_BYTES = 100
"""Needles whose LIKE pattern is longer are looked for with ``instr`` in the text lowered by
SQLite (ASCII letters only) instead. LIKE compares a character at a time, so over repetitive
text its cost grows with the needle's length ("a" * 1,000 + "b" in 64 KiB of "a": 153 ms
against 1.7 ms for ``instr``), and SQLite refuses patterns past 50,000 bytes; lowering copies
each text, which costs more than LIKE for the needles most searches use."""


def contains(alias: str, needle: str) -> tuple[str, list[Any]]:
    """A condition true for the rows of ``alias`` whose content contains ``needle`` once both
    are case folded (``str.casefold``), and its parameters.

    Python's folding, called on every row, cost 70 ms for 100,000 entries. SQLite's LIKE folds
    ASCII letters in C: it settles a row whose content is ASCII (where lower case is the case
    folding, so the folded needle is found by LIKE or not at all), and a LIKE match anywhere is
    a match (folding maps each character alone, so text equal to the folded needle but for
    ASCII case folds to it). Python folds only the rows holding other characters that LIKE
    missed ("STRASSE" in "Straße"). A long needle is looked for in SQLite's lowering of the
    text instead (ASCII letters only: the same reasoning holds). docs/decisions/0051."""
    folded = needle.casefold()
    pattern = "%" + folded.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    if len(pattern.encode()) > LIKE_PATTERN_BYTES:
        ascii_check, first = f"instr(lower({alias}.content), ?) > 0", folded
    else:
        ascii_check, first = f"{alias}.content LIKE ? ESCAPE '\\'", pattern
    return (
        f"({ascii_check} OR (length(CAST({alias}.content AS BLOB)) <> length({alias}.content)"
        f" AND instr(recuerdo_fold({alias}.content), ?) > 0))",
        [first, folded],
    )


def match_expression(words: Sequence[str], mode: str = "any") -> str:
    """An FTS5 MATCH expression of quoted terms (user text never reaches FTS5's syntax). A
    word of an unspaced script is the group of its pairs, every one required (decision 0147)."""
    joiner = " AND " if mode == "all" else " OR "
    return joiner.join(_term(word) for word in words)


def _term(word: str) -> str:
    forms = ['"' + form.replace('"', '""') + '"' for form in query_forms(word)]
    return forms[0] if len(forms) == 1 else "(" + " AND ".join(forms) + ")"


def trigram_expression(needle: str) -> str:
    """An FTS5 MATCH of every distinct trigram of ``needle`` (each one token of the trigram
    tokenizer, which folds case as it did for the stored text)."""
    grams = dict.fromkeys(needle[i : i + TRIGRAM] for i in range(len(needle) - TRIGRAM + 1))
    return " AND ".join('"' + gram.replace('"', '""') + '"' for gram in grams)


_HELD_BY_TENANT = (
    "SELECT EXISTS (SELECT 1 FROM chunk_fts CROSS JOIN chunks c"
    " WHERE chunk_fts MATCH ? AND c.id = chunk_fts.rowid AND c.tenant = ?)"
)


class FTS5Text(WindowedRanking[str]):
    """:class:`~recuerdo.store.base.TextSearch` over the ``chunk_fts`` table; the expressions
    of :class:`~recuerdo.store.windowed_ranking.WindowedRanking` are FTS5 MATCH strings."""

    __slots__ = ("_tx",)

    def __init__(self, tx: SQLiteTx) -> None:
        self._tx = tx

    def rank(
        self, tenant: str, words: Sequence[str], mode: str, limit: int, offset: int
    ) -> list[tuple[int, float]]:
        # One index for the memory: the tenant is checked by the caller's join on chunks (a
        # join inside the ranking would read a chunk row per match).
        return self._rank_words(words, mode, limit, offset)

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

    def holding_every(self, words: Sequence[str], among: Sequence[int]) -> set[int] | None:
        # The index's AND is led by its rarest word: one under RANK_AT chunks keeps it short
        # (and the chunks it finds few). Broad words alone would be walked across the span of
        # the chunks asked about, to find most of them: their texts are looked at instead. The
        # ranking just before asked how far each of its words reaches (kept: .snapshot_memo);
        # a stop word written in the query is asked here.
        if not words or not among:
            return set()
        if all(self._reaches(self._any([word]), windowed_ranking.RANK_AT) for word in words):
            return None
        rows = self._tx.all(
            "SELECT rowid AS chunk_id FROM chunk_fts WHERE chunk_fts MATCH ?"
            " AND rowid BETWEEN ? AND ?",
            (match_expression(words, "all"), min(among), max(among)),
        )
        wanted = set(among)
        return {int(row["chunk_id"]) for row in rows if row["chunk_id"] in wanted}

    def words_held(self, tenant: str, words: Sequence[str]) -> set[str]:
        # The index is the memory's: where other tenants have chunks, a match must be one of
        # this tenant's (each match's chunk looked up by id, from the index's side).
        # Asked of the index alone, a match may be a stale chunk's (stale_words.py).
        scope: tuple[str, ...] = ()
        held = stale_words.held_anywhere(self._tx)
        if self.ranks_others(tenant):
            held, scope = _HELD_BY_TENANT, (tenant,)
        return {
            word
            for word in dict.fromkeys(words)
            if self._tx.scalar(held, (match_expression([word]), *scope))
        }

    def _any(self, words: Sequence[str], mode: str = "any") -> str:
        return match_expression(words, mode)

    def _without(self, wanted: str, unwanted: str) -> str:
        return f"({wanted}) NOT ({unwanted})"

    def _nth_newest(self, expression: str, n: int) -> int | None:
        def read() -> int | None:
            edge = self._tx.scalar(
                "SELECT rowid FROM chunk_fts WHERE chunk_fts MATCH ?"
                " ORDER BY rowid DESC LIMIT 1 OFFSET ?",
                (expression, n - 1),
            )
            return None if edge is None else int(edge)

        return self._kept(("nth_newest", expression, n), read)

    def _newest(
        self, expression: str, limit: int, offset: int, below: int | None = None
    ) -> list[tuple[int, float]]:
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
        return self._kept(
            ("count", expression, 0),
            lambda: int(
                self._tx.scalar(
                    "SELECT count(*) FROM chunk_fts WHERE chunk_fts MATCH ?", (expression,)
                )
            ),
        )

    def _reaches(self, expression: str, count: int) -> bool:
        # A row at that offset: a third faster than a count over a LIMIT subquery, which
        # copies each row into the subquery before counting it.
        return self._kept(
            ("reaches", expression, count),
            lambda: (
                self._tx.scalar(
                    "SELECT rowid FROM chunk_fts WHERE chunk_fts MATCH ? LIMIT 1 OFFSET ?",
                    (expression, count - 1),
                )
                is not None
            ),
        )

    def _kept(self, question: tuple[str, str, int], read: Callable[[], _T]) -> _T:
        """``read()``'s answer to ``question``, read once for as long as the words index is
        unchanged (:mod:`.snapshot_memo`). A common word is probed by every query that holds
        it, and reading its matches is most of what the probe costs."""
        answers = self._tx.snapshot_answers()
        if answers is None:
            return read()
        if question not in answers:
            answers[question] = read()
        found: _T = answers[question]
        return found

    def _chunk_count(self) -> int:
        # BM25's statistics are those of the whole full-text index: every tenant's chunks, and
        # the stale ones (stale_words.py). The index's highest id is at least the number of
        # its rows, so a word counted common surely is.
        return int(self._tx.scalar("SELECT coalesce(max(id), 0) FROM chunk_fts_docsize"))

    def _holding(self, expression: str, narrow: str) -> list[tuple[int, float]]:
        # FTS5 scores a row with a filter's words too: the chunks holding a narrow word are
        # scored by the whole query AND the narrow words, less the narrow words' own score
        # (equal to the whole query's score but for the last bit of rounding).
        doubled = self._scores(f"({expression}) AND ({narrow})")
        own = self._scores(narrow)
        return [(chunk, own[chunk] - score) for chunk, score in doubled.items()]

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
        folded = needle.casefold()
        if len(folded) < TRIGRAM:
            return None
        # The index (detail=none, migration m018) knows which entries hold each trigram, not
        # where: the entries holding all of the needle's trigrams are read, and their text is
        # checked as the rows above the index's mark are (:func:`contains`). A needle of one
        # ASCII trigram needs no check (the tokenizer folds ASCII letters as casefold does).
        # The index holds each entry's text and, where folding changes more than ASCII letters,
        # the folded stretches around those characters too (m029): the folded needle's
        # trigrams find the entry either way.
        text, text_params = contains("items", needle)
        # (Not across a line break: the index's text joins an entry's folded stretches so.)
        one_trigram = len(folded) == TRIGRAM and folded.isascii() and "\n" not in folded
        check, checked = ("", []) if one_trigram else (f" AND {text}", text_params)
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
                f"items.id > ({INDEXED_UPTO}) AND {text}",
                text_params,
            ),
            SubstringPart(
                "entry_trigrams CROSS JOIN items",
                f"entry_trigrams MATCH ? AND items.id = -entry_trigrams.rowid{check}",
                [trigram_expression(folded), *checked],
                newest_first="entry_trigrams.rowid",
            ),
        ]

    def condition(self, needle: str, alias: str) -> tuple[str, list[Any]]:
        return contains(alias, needle)

    def folded_copies(self, contents: Sequence[str]) -> list[str | None] | None:
        """None: :meth:`catch_up` keeps the folded stretches (m029), off the write path."""
        return None

    def catch_up(self) -> int:
        tx = self._tx
        upto = int(tx.scalar(INDEXED_UPTO))
        last = tx.scalar(
            "SELECT max(id) FROM (SELECT id FROM items /* every tenant */ WHERE id > ?"
            " ORDER BY id LIMIT ?)",
            (upto, INDEX_CHUNK),
        )
        if last is None:
            return 0
        # The folded stretches of the entries whose folding the tokenizer cannot do (m029).
        # Python is asked only about rows holding other characters than ASCII. No row of
        # the range can be in the index (it is above the mark), so a row of stretches left
        # there by an index emptied by hand is stale: it goes, rather than stopping the
        # upkeep on a duplicate id. MATERIALIZED: a subquery is flattened into the insert, and
        # its Python call was then made twice for every row with stretches.
        tx.execute(
            "DELETE FROM entry_trigrams_folds /* every tenant */ WHERE id > ? AND id <= ?",
            (upto, last),
        )
        tx.execute(
            "INSERT INTO entry_trigrams_folds (id, folded) WITH found AS MATERIALIZED"
            " (SELECT id, recuerdo_folded_extras(content) AS extras FROM items"
            " /* every tenant */ WHERE id > ? AND id <= ? AND item_type = 'entry'"
            " AND length(CAST(content AS BLOB)) <> length(content))"
            " SELECT id, extras FROM found WHERE extras IS NOT NULL",
            (upto, last),
        )
        tx.execute(
            # Newest first, so the rowids (-id) ascend: FTS5 flushes its pending terms as a new
            # segment whenever a rowid does not rise, and ascending ids made each entry one
            # (filling took five times as long).
            "INSERT INTO entry_trigrams (rowid, content) SELECT -items.id,"
            f" {indexed_text('items.content', 'f.folded')} FROM items /* every tenant */"
            " LEFT JOIN entry_trigrams_folds f ON f.id = items.id"
            " WHERE items.id > ? AND items.id <= ? AND items.item_type = 'entry'"
            " ORDER BY items.id DESC",
            (upto, last),
        )
        tx.execute("UPDATE index_marks SET upto = ? WHERE name = 'entry_trigrams'", (last,))
        return int(last) - upto

    def waiting(self) -> int:
        return int(
            self._tx.scalar(
                f"SELECT count(*) FROM items /* every tenant */ WHERE id > ({INDEXED_UPTO})"
            )
        )
