"""The reverse-delta codec of note history (``store/text_delta.py``): for any two texts A and B,
the delta made from B back to A rebuilds A from B exactly, and a delta applied to a text it was
not made from is refused instead of answering wrong."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recuerdo.store import text_delta

# Any str at all: lone surrogates, NUL, line separators of every kind, astral characters.
ANY_TEXT = st.text(st.characters(), max_size=400)
LINES = st.lists(
    st.sampled_from(["alpha\n", "beta\n", "\n", "γάμμα δ\n", "🦊 fox\r\n", "x" * 70 + "\n", "z"]),
    max_size=60,
).map("".join)


def _round_trip(newer: str, older: str) -> bytes:
    delta = text_delta.make(newer, older)
    assert text_delta.apply(delta, newer) == older
    return delta


@settings(max_examples=150, deadline=None)
@given(newer=ANY_TEXT, older=ANY_TEXT)
def test_any_two_texts_round_trip(newer: str, older: str) -> None:
    _round_trip(newer, older)


@settings(max_examples=100, deadline=None)
@given(newer=LINES, older=LINES)
def test_line_documents_round_trip(newer: str, older: str) -> None:
    """Texts of many repeated lines: the line matcher's path (copies out of order, blank
    lines, CRLF), not only the common start and end."""
    _round_trip(newer, older)


@settings(max_examples=60, deadline=None)
@given(base=LINES, edits=st.lists(st.tuples(st.integers(0, 10_000), ANY_TEXT), max_size=5))
def test_scattered_edits_round_trip(base: str, edits: list[tuple[int, str]]) -> None:
    edited = base
    for at, text in edits:
        at %= len(edited) + 1
        edited = edited[:at] + text + edited[at + len(text) // 2 :]
    _round_trip(edited, base)
    _round_trip(base, edited)


@pytest.mark.parametrize(
    ("newer", "older"),
    [
        ("", ""),
        ("", "was here"),
        ("now here", ""),
        ("same", "same"),
        ("\ud800 lone", "lone \udfff"),
        ("\x00nul\x00", "nul"),
    ],
)
def test_edge_texts_round_trip(newer: str, older: str) -> None:
    _round_trip(newer, older)


def _paragraphs(rng: random.Random, count: int) -> list[str]:
    words = ["ship", "invoice", "schedule", "naïve", "日本語", "route", "amber", "delta"]
    return [" ".join(rng.choices(words, k=rng.randint(20, 60))) + "." for _ in range(count)]


def test_a_small_edit_of_a_huge_text_costs_the_edit() -> None:
    """Two megabytes of text with one sentence changed in the middle: the delta holds that
    sentence and a few numbers, not the text."""
    rng = random.Random(5)
    paragraphs = _paragraphs(rng, 6000)
    older = "\n\n".join(paragraphs)
    paragraphs[3000] = "A sentence that replaced another one."
    newer = "\n\n".join(paragraphs)
    assert len(older) > 1_000_000
    delta = _round_trip(newer, older)
    assert len(delta) < 1000


def test_scattered_line_edits_are_matched_line_by_line() -> None:
    """Lines changed far apart (a common start and end alone would keep the whole middle):
    the delta holds about the changed lines."""
    rng = random.Random(6)
    lines = _paragraphs(rng, 400)
    older = "\n".join(lines)
    for at in (10, 200, 390):
        lines[at] = lines[at].replace("ship", "boat", 1) + " (edited)"
    newer = "\n".join(lines)
    delta = _round_trip(newer, older)
    assert len(delta) < 400


def test_a_rewrite_is_kept_whole_and_compressed() -> None:
    rng = random.Random(7)
    older, newer = (" ".join(_paragraphs(rng, 8)) for _ in range(2))
    delta = _round_trip(newer, older)
    assert text_delta.is_whole(delta)
    assert len(delta) < len(older.encode()) * 0.7  # zlib on natural words
    assert text_delta.apply(delta, None) == older  # a whole text needs no newer one


def test_a_short_literal_stays_readable() -> None:
    """Short edits are not compressed: the words a delta holds stay visible to a scan of the
    file (what the erasure tests rely on)."""
    delta = _round_trip("Body with nothing secret.", "Body with Kzwylpendra inside.")
    assert b"Kzwylpendra" in delta


@pytest.mark.parametrize("other", ["Body with nothing secret", "Body", ""])
def test_a_delta_applied_to_a_text_of_another_length_is_refused(other: str) -> None:
    """(A text of the same length is caught one level up: each version's hash is checked
    when it is rebuilt, tests/test_revision_deltas.py.)"""
    delta = text_delta.make("Body with nothing secret.", "Body with a secret.")
    assert not text_delta.is_whole(delta)
    with pytest.raises(ValueError):
        text_delta.apply(delta, other)


@pytest.mark.parametrize("data", [b"", b"\x07abc", b"\x01\x05", b"\x01\x03\x09"])
def test_damaged_deltas_are_refused(data: bytes) -> None:
    with pytest.raises(ValueError):
        text_delta.apply(data, "abc")
