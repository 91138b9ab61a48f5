"""Turning user text into a safe full-text query.

User text never reaches the FTS query language raw: it is split into word tokens, each token is
quoted, and the tokens are joined with OR (``mode="any"``) or AND (``mode="all"``). Operators such
as ``- " : * ( ) NEAR AND OR ^`` are therefore just text, and no input can raise.
"""

from __future__ import annotations

import re
import unicodedata
from typing import NamedTuple

from ..core.exact import shown
from ..errors import InvalidInput
from ..store.unspaced import RUN, SYMBOLS, UNSPACED
from ..store.width_forms import fold_width

# A run of a script written without spaces is a word of its own, apart from letters of other
# scripts beside it, and a symbol is a word (store/unspaced.py: how the indexes hold them).
_TOKEN = re.compile(f"{RUN}|[{SYMBOLS}]|[^\\W_{UNSPACED}]+", re.UNICODE)
MAX_TERMS = 32

# Common English function words: alone they match nearly every passage, so they are dropped
# from queries unless nothing else is left.
STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "s",
        "t",
        "d",
        "ll",
        "m",
        "o",
        "re",
        "ve",
        "y",
        "did",
        "does",
        "also",
        "get",
        "got",
    ]
)


def _tokens(text: str) -> list[str]:
    # In NFC: a letter typed as a base and a combining mark (NFD, as macOS file names and some
    # keyboards send it) is one word, as stored; the mark alone is no word character, and
    # "Zu\u0308rich" was asked as "zu" and "rich". Width forms as the letters they stand for
    # ("ＡＢＣ" is "abc", "ｶﾀｶﾅ" is "カタカナ"), as the indexes hold them (decision 0161).
    return _TOKEN.findall(unicodedata.normalize("NFC", fold_width(text)))


def as_read(text: str) -> str:
    """``text`` in the form query words are read in (NFC, width forms folded, lower case): a
    text stored decomposed (NFD), or in fullwidth letters, holds the words it shows."""
    if text.isascii():
        return text.lower()
    return unicodedata.normalize("NFC", fold_width(text)).lower()


def written_words(text: str) -> list[str]:
    """Lower-cased word tokens of ``text``, stop words included, in order, without repeats, at
    most MAX_TERMS: the words as a plain keyword search would match them."""
    return list(dict.fromkeys(token.lower() for token in _tokens(text)))[:MAX_TERMS]


def terms(text: str) -> list[str]:
    """Lower-cased word tokens of ``text`` without stop words (all of them if only stop words
    remain), in order, without repeats, at most MAX_TERMS."""
    return _distinct_terms(text)[:MAX_TERMS]


def _distinct_terms(text: str) -> list[str]:
    tokens = [token.lower() for token in _tokens(text)]
    return list(dict.fromkeys([t for t in tokens if t not in STOP_WORDS] or tokens))


class QueryWords(NamedTuple):
    """A query's words, from one reading of its text: a search read it three times (its terms,
    its words as written, and again to say whether terms were left out)."""

    terms: list[str]
    """As :func:`terms` gives them."""
    written: list[str]
    """As :func:`written_words` gives them."""
    left_out: bool
    """Whether the text has more distinct words than ``terms`` keeps (MAX_TERMS)."""


def query_words(text: str) -> QueryWords:
    written = list(dict.fromkeys(token.lower() for token in _tokens(text)))
    # Stop words taken out of the words without repeats: the same words, in the same order,
    # as taking them out first (a repeat's first place is its place in both).
    distinct = [word for word in written if word not in STOP_WORDS] or written
    return QueryWords(distinct[:MAX_TERMS], written[:MAX_TERMS], len(distinct) > MAX_TERMS)


def check_mode(mode: object) -> str:
    if mode is None:
        return "any"
    if isinstance(mode, str) and mode.strip().lower() in ("any", "all"):
        return mode.strip().lower()
    raise InvalidInput(f"mode must be 'any' or 'all', got {shown(mode)}")
