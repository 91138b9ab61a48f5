"""The query's words as written: which of the best-ranked chunks hold every one of them.

The full-text index matches stems: ``enjoyment`` finds every ``enjoy``, ``enjoying`` and
``enjoyed``, and BM25 then prefers short chunks, so the four chunks that say "enjoyment" could
rank below a hundred that do not. A plain keyword index (no stemming) puts them first, and an
agent searching a word it saw expects them first: the lexical stage moves the chunks that hold
every word as written ahead of the others among its best ranked (docs/decisions/0042, 0054).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..index.words import as_read
from ..store import chunk_text, entity_names
from ..store.base import Row, Tx
from ..store.unspaced import is_unspaced


def holding_every(
    tx: Tx, words: list[str], looked_at: list[int], ranked_by: list[str], mode: str
) -> set[int] | None:
    """The chunks of ``looked_at`` whose indexed words include every one of ``words``, where
    the index tells them apart cheaply (:func:`holding_words` then looks for the words in those
    texts and in the texts past ASCII only); None when every text is to be looked at.
    ``looked_at`` were ranked for the words ``ranked_by`` in ``mode``."""
    if not all(word.isascii() for word in words):
        return None  # past ASCII, Python's words and the index's tokens part (decision 0054)
    if set(words) == set(ranked_by) and (mode == "all" or len(ranked_by) == 1):
        # Every chunk ranked matched these words, all of them: the index would name each one
        # (half of the workload's searches asked it so, 0.2 ms each; decision 0184).
        return set(looked_at)
    return tx.text.holding_every(words, looked_at)


def read_head(
    tx: Tx,
    tenant: str,
    where: str,
    params: list[Any],
    ids: list[int],
    *,
    beyond_ascii_only: bool = False,
) -> tuple[dict[int, str], dict[int, Row]]:
    """The best-ranked chunks ``ids`` of ``tenant`` read once: the text of each (for
    :func:`holding_words`), and the rows of those that pass the filters (``where`` over items
    ``i``, with ``params``) and are not stale (what the pool keeps). ``beyond_ascii_only``:
    only the chunks whose text may hold a character past ASCII (the whole text they were cut
    from does)."""
    if not ids:
        return {}, {}
    marks = ",".join("?" * len(ids))
    beyond = ""
    if beyond_ascii_only:
        text = "coalesce(c.kept_text, q.cut_from, i.content)"
        beyond = " AND " + entity_names.beyond_ascii(tx, text)
    texts: dict[int, str] = {}
    passing: dict[int, Row] = {}
    # A chunk is stale when its item waits in rechunk_queue. The joins are written here, not
    # taken from chunk_text.CHUNK_JOIN: the filters need the item whatever the chunks' layout.
    for row in tx.all(
        f"SELECT c.id, c.item_id, i.item_type, i.category, i.session, {chunk_text.text_columns()},"
        f" CASE WHEN {where} AND q.item_id IS NULL THEN 1 ELSE 0 END AS passes"
        " FROM chunks c JOIN items i ON i.tenant = c.tenant AND i.id = c.item_id"
        " LEFT JOIN rechunk_queue q ON q.tenant = c.tenant AND q.item_id = c.item_id"
        f" WHERE c.tenant = ? AND c.id IN ({marks}){beyond}",
        [*params, tenant, *ids],
    ):
        texts[row["id"]] = chunk_text.text_of(row)
        if row["passes"]:
            passing[row["id"]] = row
    return texts, passing


def holding_words(
    texts: Mapping[int, str], words: list[str], holding: set[int] | None = None
) -> set[int]:
    """The chunks of ``texts`` (the tenant's among the best ranked, at most
    ``search.EXACT_WINDOW``: the cost stays a small read however common the stem is) that hold
    every query word as written (``words``, stop words included). The pool moves them ahead,
    unless every chunk looked at does (``head.py``).

    With ``holding`` (the chunks whose indexed words include every ASCII query word), an ASCII
    text is looked at only if its chunk is one of them. In an ASCII text a word's edges are
    the index's token edges and its lower case is the index's folding, so a text that holds
    the words as written holds their tokens; past ASCII they part ("ab\u0301" holds "ab" for
    Python, not for the index), so those texts are looked at whatever the index says.
    Looking for the words in each of 500 texts was a tenth of a search whose rarest word is in
    a few chunks (decision 0054)."""
    if not words or not texts:
        return set()
    exact: set[int] = set()
    for chunk_id, body in texts.items():
        if holding is not None and chunk_id not in holding and body.isascii():
            continue
        text = as_read(body)
        if all(holds_word(text, word) for word in words):
            exact.add(chunk_id)
    return exact


def holds_word(text: str, word: str, *, whole: bool = True) -> bool:
    """Whether ``word`` is in ``text`` with no letter or digit right before or after it: the
    regex ``(?<![^\\W_])word(?![^\\W_])`` (``[^\\W_]`` is what ``str.isalnum`` accepts),
    without compiling a pattern for every query word (most of this stage's cost). Not
    ``whole``: a word of ``text`` starts with ``word`` (nothing is checked after it). A word
    of an unspaced script, or a symbol, is held wherever it stands (decision 0147)."""
    if is_unspaced(word):
        return word in text
    at = text.find(word)
    looked_at, since = 0, at
    while at >= 0:
        end = at + len(word)
        if (at == 0 or not text[at - 1].isalnum()) and (
            not whole or end == len(text) or not text[end].isalnum()
        ):
            return True
        looked_at += 1
        if looked_at == _FINDS_PER_LOOK:
            if at - since < _FINDS_PER_LOOK * _SPARSE:
                # Found inside other words every few characters ("aaaaa" in a run of a's): the
                # regex engine walks the rest faster (4 MiB of a's took 1.6 s one find at a
                # time, 0.1 s so: a find costs 50-400 ns, the regex 25 ns a character).
                edge = r"(?![^\W_])" if whole else ""
                pattern = re.compile(rf"(?<![^\W_]){re.escape(word)}{edge}")
                return pattern.search(text, at) is not None
            looked_at, since = 0, at
        at = text.find(word, at + 1)
    return False


_FINDS_PER_LOOK = 64
_SPARSE = 8  # characters per find above which finding one at a time is the faster way


def exact_first(ranked: list[tuple[int, float]], exact: set[int]) -> list[tuple[int, float]]:
    """``ranked`` with the ``exact`` chunks moved ahead, each group in its order."""
    if not exact:
        return ranked
    return [pair for pair in ranked if pair[0] in exact] + [
        pair for pair in ranked if pair[0] not in exact
    ]
