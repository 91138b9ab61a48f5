"""Hypothesis: content round-trips exactly, and recall agrees with a naive filter."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import recuerdo
from recuerdo.core.secrets import redact_text
from recuerdo.model import CATEGORIES

# Storable text: no NUL or lone surrogate (both refused by design), not blank.
_chars = st.characters(exclude_categories=("Cs",), exclude_characters="\x00\r\n")
content_text = st.text(
    st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), min_size=1, max_size=300
).filter(lambda s: s.strip() != "")
tag_text = st.text(_chars, min_size=1, max_size=12).filter(lambda s: s.strip() != "")
SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[recuerdo.Memory]:
    mem = recuerdo.open("props", base_dir=tmp_path_factory.mktemp("props"))
    yield mem
    mem.close()


@SETTINGS
@given(content=content_text, tags=st.lists(tag_text, max_size=5))
def test_round_trip(shared: recuerdo.Memory, content: str, tags: list[str]) -> None:
    entry_id = shared.remember("learning", content, tags)
    [entry] = [e for e in shared.recall(search=None, limit=5) if e["id"] == entry_id]
    assert entry["content"] == redact_text(content)
    expected_tags: list[str] = []
    for tag in tags:
        if redact_text(tag) not in expected_tags:
            expected_tags.append(redact_text(tag))
    assert entry["tags"] == expected_tags


@SETTINGS
@given(content=content_text, data=st.data())
def test_any_substring_is_found(shared: recuerdo.Memory, content: str, data: st.DataObject) -> None:
    entry_id = shared.remember("context", content)
    stored = redact_text(content)
    start = data.draw(st.integers(0, len(stored) - 1))
    end = data.draw(st.integers(start + 1, len(stored)))
    needle = stored[start:end]
    found = {e["id"] for e in shared.recall(search=needle, limit=100_000)}
    assert entry_id in found


entry_strategy = st.fixed_dictionaries(
    {
        "category": st.sampled_from(CATEGORIES),
        "content": st.sampled_from(["alpha beta", "Beta gamma", "delta", "ALPHA", "éclair"]),
        "tags": st.lists(st.sampled_from(["a", "b", "c", "A"]), max_size=3, unique=True),
    }
)


@settings(max_examples=40, deadline=None)
@given(
    batch=st.lists(entry_strategy, min_size=1, max_size=25),
    sources=st.lists(st.sampled_from(["main", "w1", "w2"]), min_size=25, max_size=25),
    category=st.none() | st.sampled_from(CATEGORIES),
    tags=st.none() | st.lists(st.sampled_from(["a", "b", "c", "A"]), max_size=3, unique=True),
    mode=st.sampled_from([None, "all", "any"]),
    search=st.none() | st.sampled_from(["alpha", "ETA", "é", "x", "a b", "gamma"]),
    from_=st.sampled_from([None, "*", "main", "w1", "nobody"]),
    limit=st.sampled_from([None, 1, 3, 100, -4]),
)
def test_recall_agrees_with_a_naive_filter(
    tmp_path_factory: pytest.TempPathFactory,
    batch: list[dict],
    sources: list[str],  # type: ignore[type-arg]
    category: str | None,
    tags: list[str] | None,
    mode: str | None,
    search: str | None,
    from_: str | None,
    limit: int | None,
) -> None:
    with recuerdo.open("naive", in_memory=True) as mem:
        stored = []
        for entry, source in zip(batch, sources, strict=False):
            view = mem if source == "main" else mem.agent(source)
            entry_id = view.remember(entry["category"], entry["content"], entry["tags"])
            stored.append({**entry, "id": entry_id, "source": source})
        got = mem.recall(category, tags, search, mode, limit, from_)

    def keep(e: dict) -> bool:  # type: ignore[type-arg]
        if category is not None and e["category"] != category:
            return False
        if tags:
            wanted = set(tags)
            have = set(e["tags"])
            if mode == "all" and not wanted <= have:
                return False
            if mode != "all" and not wanted & have:
                return False
        if search and search.casefold() not in e["content"].casefold():
            return False
        return from_ in (None, "*") or e["source"] == from_

    expected = [e["id"] for e in sorted(stored, key=lambda e: -e["id"]) if keep(e)]
    cap = limit if limit and limit > 0 else 200
    assert [e["id"] for e in got] == expected[:cap]


def test_naive_filter_shared_fixture_path(tmp_path: Path) -> None:
    """The substring property above also holds on a freshly reopened file."""
    with recuerdo.open("reopen", base_dir=tmp_path) as mem:
        entry_id = mem.remember("learning", "Ünïcödé text ∑ with 𝔘𝔫𝔦")
    with recuerdo.open("reopen", base_dir=tmp_path) as mem:
        for needle in ["ünïc", "∑ w", "𝔫𝔦", "TEXT"]:
            assert [e["id"] for e in mem.recall(search=needle)] == [entry_id], needle
