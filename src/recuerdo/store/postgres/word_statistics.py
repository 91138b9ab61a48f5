"""What BM25 needs to know of a tenant's chunks on PostgreSQL, read in bounded time
(``docs/decisions/0049-postgres-common-words.md``).

FTS5 keeps its totals as it indexes; PostgreSQL's ``tsvector`` index does not, and each
search counted them: the tenant's chunks (an index scan of all of them: 6 ms at 50,000, 0.12
us more for each chunk), each word's chunks up to half of them (a word in every chunk: 25,000
rows read at 50,000), and the average length of the latest 1,000 chunks (each chunk's words
unnested: 8 ms whatever the memory's size). Now:

- **Chunks (N).** Counted up to COUNTED_UP_TO. A tenant with more is a large one, and takes the
  planner's estimate: the table's rows (``pg_class.reltuples``, scaled to its pages now) times
  the tenant's share of them (``pg_stats``). Where there is none (a table never analysed), or
  where it is under what was counted, its chunks are counted in full, as before. A reader the
  tenant policies hold (every role but a superuser or one with BYPASSRLS: the policies are
  forced) sees no statistics, and counts as before.
- **A word's chunks.** Counted up to half of N, and no further than COUNTED_UP_TO / 2. A word
  that reaches that in a large tenant takes the share of rows holding its lexeme
  (``pg_stats.most_common_elems``, which ANALYZE gathers for ``tsvector`` columns) times N,
  within what was counted and half of N; or, without it, is counted up to half of N.
- **Average length.** Each chunk's length is written beside its words (``tokens``, by a trigger:
  step ``m027_chunk_tokens``), and the average is that of the latest LENGTH_SAMPLE; a row
  written before the step has its length computed from its words.

An estimate moves a word's IDF by the log of its error (an N 10% off: 0.1, against weights of
2-8 for the words that set chunks apart), the same for every chunk; exact counts are kept for
every tenant under COUNTED_UP_TO chunks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..base import Tx

if TYPE_CHECKING:
    from .connection import PostgresTx

COUNTED_UP_TO = 10_000
LENGTH_SAMPLE = 1000
"""The average chunk length is that of the tenant's latest chunks."""

_LENGTH = "(SELECT sum(array_length(u.positions, 1)) FROM unnest({words}) u)"
# pg_stats hides the statistics of a table whose row policies hold the reader (they would tell
# of other tenants' rows): such a reader counts, as before.
_POLICED = "row_security_active((current_schema() || '.chunks')::regclass)"
# The rows per page ANALYZE saw, times the pages the table has now (as the planner scales
# them: a table grown since its last analysis, under autovacuum's 10% threshold, is not taken at
# its old size), times the tenant's share.
_ESTIMATED_CHUNKS = (
    "SELECT c.reltuples / greatest(c.relpages, 1) * (pg_relation_size(c.oid)"
    " / current_setting('block_size')::int) * m.share AS chunks, m.share"
    " FROM pg_class c, pg_stats s,"
    " unnest(s.most_common_vals::text::text[], s.most_common_freqs) AS m(tenant, share)"
    " WHERE c.oid = (current_schema() || '.chunks')::regclass AND c.reltuples > 0"
    " AND s.schemaname = current_schema() AND s.tablename = 'chunks' AND s.attname = 'tenant'"
    " AND m.tenant = ?"
)
_LEXEME_SHARES = (
    "SELECT e.lexeme, e.share FROM pg_stats s,"
    " unnest(s.most_common_elems::text::text[], s.most_common_elem_freqs) AS e(lexeme, share)"
    " WHERE s.schemaname = current_schema() AND s.tablename = 'chunks' AND s.attname = 'words'"
    " AND e.lexeme = ANY (CAST(? AS TEXT[]))"
)
WHOLE_TABLE = 0.9
"""A lexeme's share is of the whole table, every tenant's chunks: it stands for a tenant's
only where that tenant holds nearly all of them."""
_WORD = (
    "(SELECT count(*) FROM (SELECT 1 FROM chunks WHERE tenant = ? AND words @@"
    " plainto_tsquery('recuerdo_words', ?) LIMIT {limit}) AS m)"
)
_LEXEMES = "tsvector_to_array(to_tsvector('recuerdo_words', ?))"


@dataclass
class Statistics:
    chunks: int
    average: float
    found: dict[str, int]
    """Each word's chunks, up to half of ``chunks`` (a word found that often weighs 1e-6
    whatever its count, as in FTS5)."""
    lexemes: dict[str, list[str]]
    word_limit: int
    """How far words were counted (half of the chunks counted, or less in a large tenant)."""
    share: float | None = None
    """The tenant's share of the table, where its N is the planner's estimate."""


def read(tx: PostgresTx, tenant: str, words: Sequence[str], *, lengths: bool = True) -> Statistics:
    """The tenant's totals and the statistics of ``words``, in one statement for a tenant
    under COUNTED_UP_TO chunks (or a reader the row policies hold). ``lengths``: whether the
    chunks have their lengths (a store at a step before m027, read while it is restored, has
    not)."""
    word_limit = (
        "CASE WHEN c.policed THEN (c.counted + 1) / 2"
        f" ELSE least({COUNTED_UP_TO // 2}, (c.counted + 1) / 2) END"
    )
    counts = "".join(
        f", {_WORD.format(limit='(SELECT limited FROM n)')} AS n{i}, {_LEXEMES} AS l{i}"
        for i in range(len(words))
    )
    length, columns = _LENGTH.format(words="s.words"), "words"
    if lengths:
        length, columns = f"coalesce(s.tokens, {length})", "tokens, words"
    row = tx.one(
        f"WITH p AS MATERIALIZED (SELECT {_POLICED} AS policed),"
        " c AS MATERIALIZED (SELECT p.policed, (SELECT count(*) FROM (SELECT 1 FROM chunks"
        f" WHERE tenant = ? LIMIT (SELECT CASE WHEN policed THEN NULL ELSE {COUNTED_UP_TO} END"
        " FROM p)) AS t) AS counted FROM p),"
        f" n AS MATERIALIZED (SELECT c.*, {word_limit} AS limited FROM c)"
        f" SELECT n.counted, n.policed, n.limited, (SELECT avg({length})"
        f" FROM (SELECT {columns} FROM chunks WHERE tenant = ? ORDER BY id DESC"
        f" LIMIT {LENGTH_SAMPLE}) AS s) AS average{counts} FROM n",
        [tenant, tenant, *(value for word in words for value in (tenant, word, word))],
    )
    assert row is not None
    stats = Statistics(
        int(row["counted"]),
        max(float(row["average"] or 1.0), 1.0),
        {word: int(row[f"n{i}"]) for i, word in enumerate(words)},
        {word: list(row[f"l{i}"] or []) for i, word in enumerate(words)},
        int(row["limited"]),
    )
    if not row["policed"] and stats.chunks >= COUNTED_UP_TO:
        _estimate_chunks(tx, tenant, stats)
        _settle(tx, tenant, stats, words)
    return stats


def _estimate_chunks(tx: PostgresTx, tenant: str, stats: Statistics) -> None:
    """A large tenant's N: the planner's estimate, or its chunks counted where there is none
    or where it is below what was counted (statistics older than the tenant's growth)."""
    row = tx.one(_ESTIMATED_CHUNKS, (tenant,))
    if row is None or float(row["chunks"]) < stats.chunks:
        stats.chunks = int(tx.scalar("SELECT count(*) FROM chunks WHERE tenant = ?", (tenant,)))
    else:
        stats.chunks = round(float(row["chunks"]))
        stats.share = float(row["share"])


def _settle(tx: PostgresTx, tenant: str, stats: Statistics, words: Sequence[str]) -> None:
    """The words counted to their limit short of half of N: their lexeme's share of the rows
    where it stands for the tenant's (one lexeme, a tenant holding nearly the whole table),
    else counted up to half of N."""
    half = (stats.chunks + 1) // 2
    capped = [w for w in words if stats.found[w] >= stats.word_limit < half]
    if not capped:
        return
    estimable = [w for w in capped if len(stats.lexemes[w]) == 1]
    shares: dict[str, float] = {}
    if estimable and stats.share is not None and stats.share >= WHOLE_TABLE:
        lexemes = [stats.lexemes[w][0] for w in estimable]
        shares = {row["lexeme"]: float(row["share"]) for row in tx.all(_LEXEME_SHARES, (lexemes,))}
    for word in capped:
        share = shares.get(stats.lexemes[word][0]) if word in estimable else None
        if share is not None:
            stats.found[word] = min(half, max(stats.word_limit, round(share * stats.chunks)))
        else:
            stats.found[word] = int(tx.scalar(f"SELECT {_WORD.format(limit=half)}", (tenant, word)))


_TOKENS_TRIGGER = """
CREATE FUNCTION recuerdo_chunk_tokens() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.tokens := (SELECT sum(array_length(u.positions, 1)) FROM unnest(NEW.words) u);
    RETURN NEW;
END
$$
"""


def m027_chunk_tokens(tx: Tx) -> None:
    """Each chunk's length (its words' positions), written with its words. Rows written before
    the step keep none (the column is added without rewriting the table); readers compute
    theirs from the words."""
    tx.execute("ALTER TABLE chunks ADD COLUMN tokens INTEGER")
    tx.execute(_TOKENS_TRIGGER)
    tx.execute(
        "CREATE TRIGGER chunk_tokens BEFORE INSERT OR UPDATE OF words ON chunks"
        " FOR EACH ROW EXECUTE FUNCTION recuerdo_chunk_tokens()"
    )
