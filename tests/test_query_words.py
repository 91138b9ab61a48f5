"""``query_words`` reads a query once and gives what the three readings a search made gave: its
terms, its words as written, and whether terms were left out (``terms_left_out``, whose body
was ``len(_distinct_terms(text)) > MAX_TERMS``), for any text."""

from __future__ import annotations

import unicodedata

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recuerdo.index import words

# Words that stress the reading: stop words (dropped unless only they remain), letters whose
# lower case is longer or is a stop word's, decomposed marks, digits of other scripts, joiners.
_WORD = (
    st.sampled_from(sorted(words.STOP_WORDS))
    | st.sampled_from(["Zürich", "İstanbul", "ǅemal", "STRASSE", "ﬃx", "٣٤", "x_y", "THE", "ẞ"])
    | st.text(min_size=1, max_size=6)
)
_CASED = _WORD.flatmap(
    lambda word: st.sampled_from(
        [word, word.upper(), word.title(), unicodedata.normalize("NFD", word)]
    )
)
# Up to 120 words: past MAX_TERMS (32) distinct words, and past it with repeats only.
_QUERY = st.text(max_size=400) | st.lists(_CASED, max_size=120).flatmap(
    lambda ws: st.sampled_from([" ".join(ws), "-".join(ws), "".join(ws)])
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_QUERY)
def test_query_words_reads_as_the_three_readings_did(text: str) -> None:
    read = words.query_words(text)
    assert read.terms == words.terms(text)
    assert read.written == words.written_words(text)
    assert read.left_out is (len(words._distinct_terms(text)) > words.MAX_TERMS)


@given(st.integers(min_value=1, max_value=80), st.integers(min_value=0, max_value=80))
def test_words_past_the_limit_are_said_left_out(distinct: int, stop: int) -> None:
    text = " ".join([f"w{n}" for n in range(distinct)] + ["the"] * stop + ["W0"] * 3)
    read = words.query_words(text)
    assert read.left_out is (distinct > words.MAX_TERMS)
    assert read.terms == [f"w{n}" for n in range(min(distinct, words.MAX_TERMS))]
