"""The lexical stage's check of a query word as written (``exact.holds_word``) answers as
the regex it replaced, which compiled a pattern for every query word of every search."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from recuerdo.index.words import terms
from recuerdo.retrieval.exact import holds_word
from recuerdo.store.unspaced import is_unspaced

# Letters, digits (several scripts), the underscore, punctuation and spaces: the characters
# where a word's edges are decided.
ALPHABET = st.sampled_from([*"ab1_ -.'éß٣二\u0301\t", "ab", "ba"])
TEXTS = st.lists(ALPHABET, max_size=24).map("".join)
WORDS = st.lists(ALPHABET, min_size=1, max_size=4).map("".join)


def _regex(text: str, word: str) -> bool:
    if is_unspaced(word):  # a run of Han ("二") is held wherever it stands (decision 0147)
        return word in text
    return re.search(rf"(?<![^\W_]){re.escape(word)}(?![^\W_])", text) is not None


@settings(max_examples=2000, deadline=None)
@given(TEXTS, WORDS)
def test_a_word_as_written_is_found_where_the_regex_finds_it(text: str, word: str) -> None:
    assert holds_word(text, word) is _regex(text, word)


def test_edges() -> None:
    assert holds_word("she enjoyed it", "enjoyed")
    assert not holds_word("enjoyment", "enjoy")
    assert holds_word("snake_case", "snake")  # the underscore is not a letter
    assert not holds_word("café", "caf")
    assert holds_word("a enjoy, enjoyment", "enjoy")  # a later occurrence counts


def _starts(text: str, word: str) -> bool:
    if is_unspaced(word):
        return word in text
    return re.search(rf"(?<![^\W_]){re.escape(word)}", text) is not None


@settings(max_examples=300, deadline=None)
@given(st.lists(ALPHABET, min_size=1, max_size=4).map("".join), st.integers(64, 300), TEXTS, WORDS)
def test_a_word_found_inside_others_again_and_again_answers_the_same(
    unit: str, times: int, tail: str, word: str
) -> None:
    """Text where the word turns up inside other words every few characters: past 64 such
    finds the rest is left to the regex engine, with the same answers, whole or as a start."""
    text = unit * times + tail
    assert holds_word(text, word) is _regex(text, word)
    assert holds_word(text, word, whole=False) is _starts(text, word)
    repeated = word * times + tail  # every find but perhaps the first is inside a word
    assert holds_word(repeated, word) is _regex(repeated, word)
    assert holds_word(repeated, word, whole=False) is _starts(repeated, word)


_WORDISH = st.text(alphabet=st.sampled_from(list("abcİiı_ 9-é\u0307Ωω")), max_size=40)


@settings(max_examples=300, deadline=None)
@given(text=_WORDISH, query=_WORDISH)
def test_an_unindexed_item_matches_a_word_as_its_words_would(text: str, query: str) -> None:
    """Items too new to be indexed are matched by a find of each query word's first five
    characters where a word starts (none when they are not all letters and digits): exactly
    what cutting the text into words and comparing their starts did."""
    lowered = text.lower()
    words = re.findall(r"[^\W_]+", lowered)
    for word in terms(query):
        prefix = word[:5]
        found = prefix.isalnum() and holds_word(lowered, prefix, whole=False)
        assert found == any(w.startswith(prefix) for w in words), prefix
