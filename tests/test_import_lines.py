"""The Markdown list-item parser of the markdown importer: observations and relations written
in basic-memory's format read back exactly; anything else is read as nothing, never an error."""

from __future__ import annotations

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from recuerdo.importers.markdown_lines import Observation, Relation, list_items, parse_item

WORD = st.text(string.ascii_letters + string.digits + ".,:;'!?/_-", min_size=1, max_size=12).filter(
    lambda w: w[0].isalnum()
)
TEXT = st.lists(WORD, min_size=1, max_size=8).map(" ".join)
CATEGORY = st.from_regex(r"[a-z][a-z0-9 _-]{0,18}[a-z0-9]", fullmatch=True)
TAG = st.from_regex(r"[a-z][a-z0-9_-]{0,10}", fullmatch=True)


@given(CATEGORY, TEXT, st.lists(TAG, max_size=4), st.none() | TEXT)
def test_an_observation_reads_back(
    category: str, text: str, tags: list[str], context: str | None
) -> None:
    body = text + "".join(f" #{tag}" for tag in tags)
    line = f"[{category}] {body}" + (f" ({context})" if context else "")
    assert parse_item(line) == Observation(category, body, tuple(dict.fromkeys(tags)), context)


@given(TEXT, st.lists(TAG, min_size=1, max_size=3))
def test_a_tagged_item_is_an_observation_without_category(text: str, tags: list[str]) -> None:
    body = text + "".join(f" #{tag}" for tag in tags)
    assert parse_item(body) == Observation(None, body, tuple(dict.fromkeys(tags)), None)


RELATION_TYPE = st.from_regex(r"[a-z][a-z0-9_]{0,15}", fullmatch=True)
QUOTED_TYPE = st.from_regex(r"[a-z]+( [a-z]+){1,3}", fullmatch=True)
TARGET = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9 .'/-]{0,30}[A-Za-z0-9]", fullmatch=True)


@given(RELATION_TYPE | QUOTED_TYPE, TARGET, st.none() | TEXT, st.sampled_from(["'", '"']))
def test_a_relation_reads_back(kind: str, target: str, context: str | None, quote: str) -> None:
    label = f"{quote}{kind}{quote}" if " " in kind else kind
    line = f"{label} [[{target}]]" + (f" ({context})" if context else "")
    assert parse_item(line) == Relation(kind, target, context)


@given(st.text(max_size=200))
def test_any_text_is_read_without_error(text: str) -> None:
    found = parse_item(text)
    assert found is None or isinstance(found, Observation | Relation)
    if isinstance(found, Relation):
        assert f"[[{found.target}" in text.replace("[[ ", "[[")
    if isinstance(found, Observation) and found.category is not None:
        assert text.strip().startswith(f"[{found.category}")


@pytest.mark.parametrize(
    "text",
    [
        "[ ] buy beans",
        "[x] bought beans",
        "[-] dropped",
        "[?] a question marker",
        "[00:01:02] Speaker one said hello",
        "[a link](https://example.org)",
        "[[Just A Link]]",
        "some prose that mentions [[Target]] and goes on",
        "plain text with no category",
        "see [[A]] (context) and more",
    ],
)
def test_what_is_not_an_observation_or_a_relation(text: str) -> None:
    assert parse_item(text) is None


@given(st.lists(st.tuples(st.booleans(), WORD), max_size=12), st.integers(0, 11))
def test_items_inside_fenced_code_are_not_read(items: list[tuple[bool, str]], cut: int) -> None:
    """Items before a fence are read; items inside it are not; bullets of any kind count."""
    lines = [f"{'-' if star else '*'} {text}" for star, text in items]
    inside = lines[cut:]
    body = "\n".join([*lines[:cut], "```", *inside, "```", "- after the fence"])
    read = [text for _, text in list_items(body)]
    assert read == [text for _, text in items[:cut]] + ["after the fence"]
