"""Accents and Unicode forms in PostgreSQL's word index, read as SQLite's (decision 0115).

SQLite's word index (``unicode61 remove_diacritics 2``) takes the accents off Latin letters,
and its tokenizer drops a combining mark after one: "José", "Jose" and "Jose" with a combining
acute (NFD: macOS file names, text pasted from some tools) are one word there. PostgreSQL's
parser keeps a letter's accent and a combining mark in the word, so each spelling was a word of
its own: a note written in NFD was not found by its name typed on a keyboard, and "cafe" did
not find "café", where SQLite found both.

So every text PostgreSQL's word index is given, stored or asked, is folded first, by
:func:`fold`: composed (NFC), with the accents of Latin letters taken off. Other scripts keep
their marks (a Greek or Cyrillic word keeps its letters as typed), but a word in NFD and the
same word in NFC are one. Folding happens in Python, where the texts are in hand as they are
written and asked, so the index and the queries cannot part however the server is set up.
ASCII text is returned as it is, unread.

The step ``m044_folded_words`` gives the chunks already stored the words of their folded text;
only chunks whose text goes past ASCII can change, and only those are read.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from ..base import Tx
from ..chunk_text import CHUNK_JOIN, by_id
from ..unspaced import MARKED_BLOCKS, indexed_text, query_forms, spelled_text
from ..width_forms import fold_width, has_width_forms

_LATIN_ACCENTS = re.compile(r"(?<=[A-Za-z\u00c0-\u024f\u1e00-\u1eff])[\u0300-\u036f]+")
"""Combining diacritics (U+0300-U+036F) after a Latin letter, once the text is decomposed;
the range covers the letters that decompose to a Latin letter and marks."""
_PAST_ASCII = "~ '[^\\x01-\\x7f]'"
_BATCH = 500


def fold(text: str) -> str:
    """``text`` as PostgreSQL's word index reads it: NFC, Latin letters without accents."""
    if text.isascii():
        return text
    return unicodedata.normalize("NFC", _LATIN_ACCENTS.sub("", unicodedata.normalize("NFD", text)))


def asked(word: str) -> str:
    """A query word as the index is asked it: folded, and a word of an unspaced script or a
    symbol as the words it was indexed as (decision 0147), which ``plainto_tsquery`` requires
    together. Width forms are folded first (decision 0161), as the indexed text's are."""
    return " ".join(query_forms(fold(fold_width(word))))


def folded(words: Iterable[str]) -> list[str]:
    """Query words as the index is asked them (:func:`asked`), each once, in their order."""
    return list(dict.fromkeys(asked(word) for word in words))


def fold_fields(texts: Iterable[str | None]) -> tuple[str | None, ...]:
    """A chunk's (title, body, context) as its words are computed from (NULL stays NULL):
    width forms folded (decision 0161), folded, then unspaced scripts and symbols spelled out
    (decision 0147), Thai, Lao, Khmer and Myanmar as their letters (decision 0174)."""
    return tuple(None if text is None else spelled_text(fold(fold_width(text))) for text in texts)


def m044_folded_words(tx: Tx) -> None:
    """The step (registered in later_steps.py): the words of each chunk whose text goes past
    ASCII, written again from its folded text."""
    from .chunk_spans import write_words

    ids = _chunks_past_ascii(tx)
    for first in range(0, len(ids), _BATCH):
        write_words(tx, list(by_id(tx, ids[first : first + _BATCH], None).values()))


def _chunks_past_ascii(tx: Tx, condition: str = _PAST_ASCII) -> list[int]:
    """The ids of every tenant's chunks whose title, context or text goes past ASCII (or
    meets ``condition``, an SQL regex match). The ids in one statement, then each batch read
    by id: paging the condition in id order sorted what was left at each batch (13.45 s
    against 6.78 at 100,000 entries)."""
    past_ascii = " OR ".join(
        f"{column} {condition}"
        for column in ("c.title", "c.context", "coalesce(c.kept_text, q.cut_from, i.content)")
    )
    return [
        int(row["id"])
        for row in tx.all(
            f"SELECT c.id FROM chunks c {CHUNK_JOIN} /* every tenant */ WHERE {past_ascii}"
        )
    ]


def m045_unspaced_words(tx: Tx) -> None:
    """The step (registered in later_steps.py): the words of each chunk whose text holds a run
    of an unspaced script or a symbol, written again from its spelled text (decision 0147).
    Only chunks past ASCII are read, and only those whose words change are written."""
    from .chunk_spans import write_words

    ids = _chunks_past_ascii(tx)
    for first in range(0, len(ids), _BATCH):
        rows = by_id(tx, ids[first : first + _BATCH], None).values()
        write_words(tx, [row for row in rows if _spelled_otherwise(row)])


def _spelled_otherwise(chunk: dict[str, Any]) -> bool:
    texts = [chunk["title"], chunk["body"], chunk["context"]]
    return any(text is not None and indexed_text(text) != text for text in texts)


_WIDTH_FORMS = "~ '[\uff01-\uffee]'"


def m048_width_forms(tx: Tx) -> None:
    """The step (registered in later_steps.py): the words of each chunk whose text holds a
    fullwidth or halfwidth form, written again from its folded text (decision 0161). Only
    those chunks are read (found by the server's regex: a CJK memory has most of its chunks
    past ASCII, and few with width forms)."""
    from .chunk_spans import write_words

    ids = _chunks_past_ascii(tx, _WIDTH_FORMS)
    for first in range(0, len(ids), _BATCH):
        rows = by_id(tx, ids[first : first + _BATCH], None).values()
        write_words(
            tx,
            [r for r in rows if any(has_width_forms(r[f]) for f in ("title", "body", "context"))],
        )


_MARKED_SCRIPTS = (
    "~ '[" + "".join(f"{chr(first)}-{chr(last)}" for first, last in MARKED_BLOCKS) + "]'"
)


def m049_unmarked_words(tx: Tx) -> None:
    """The step (registered in later_steps.py): the words of each chunk whose text holds a
    run of Thai, Lao, Khmer or Myanmar, written again from its letters (decision 0174). Only
    chunks with a character of those blocks are read (found by the server's regex), and only
    those whose words change are written."""
    from .chunk_spans import write_words

    ids = _chunks_past_ascii(tx, _MARKED_SCRIPTS)
    for first in range(0, len(ids), _BATCH):
        rows = by_id(tx, ids[first : first + _BATCH], None).values()
        write_words(tx, [row for row in rows if _unmarked_otherwise(row)])


def _unmarked_otherwise(chunk: dict[str, Any]) -> bool:
    texts = [chunk[field] for field in ("title", "body", "context")]
    before = [None if t is None else indexed_text(fold(fold_width(t))) for t in texts]
    return list(fold_fields(texts)) != before
