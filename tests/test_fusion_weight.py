"""The meaning stage weighs in the search's fusion what its model's ranking is worth
(``Embedder.fusion_weight``, decision 0191), not one weight for every model."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import recuerdo
from tests.postgres import contract_store

MARK = "apricot"


class OneWordMeaning:
    """A query means one thing, and so does each text that holds ``MARK``; every other text
    means another (cosine 0, below the threshold: the meaning stage does not offer it)."""

    name = "test-one-word-meaning"
    dim = 2
    min_similarity = 0.5

    def __init__(self, fusion_weight: float) -> None:
        self.fusion_weight = fusion_weight

    def embed(self, texts: list[str], *, query: bool = False) -> np.ndarray:
        return np.array(
            [[1.0, 0.0] if query or MARK in text else [0.0, 1.0] for text in texts], np.float32
        )


NOTES = {
    # The query's word, fewer times and in longer texts down the list: BM25 ranks them so.
    "first": "shed shed shed shed",
    "second": "shed shed shed, and the gate",
    "third": "the shed, the gate, the hedge and the path",
    "fourth": f"a shed by the {MARK} tree, past the gate, the hedge and the long path",
}


Opener = Callable[[OneWordMeaning], recuerdo.Memory]


@pytest.fixture(params=["file", "postgres"])
def opened(request: pytest.FixtureRequest, base: Path) -> Opener:
    """How to open the memory with an embedder, on each backend."""

    def open_with(embedder: OneWordMeaning) -> recuerdo.Memory:
        if request.param == "postgres":
            return recuerdo.open("fusion", store=contract_store(), embedder=embedder)
        return recuerdo.open("fusion", base_dir=base, embedder=embedder)

    return open_with


def ranked(open_with: Opener, fusion_weight: float, stages: list[str]) -> list[str]:
    memory = open_with(OneWordMeaning(fusion_weight))
    try:
        ids = {memory.remember("learning", text): name for name, text in NOTES.items()}
        memory._upkeep.drain()
        hits = memory.search("shed", stages=stages)["results"]
        return [ids[hit["id"]] for hit in hits]
    finally:
        memory.close()


def test_words_alone_rank_the_notes_in_order(opened: Opener) -> None:
    """The ground the next test stands on: by words, the marked note is fourth."""
    assert ranked(opened, 1.0, ["lexical"]) == ["first", "second", "third", "fourth"]


@pytest.mark.parametrize(
    ("fusion_weight", "third_before_fourth"),
    # Third and fourth by words are 1/8 and 1/9 (lexical k = 5); the fourth's first rank by
    # meaning adds weight/61: 0.0164 at 1.0 is more than the 0.0139 between them, 0.0115 at
    # 0.7 is less.
    [(1.0, False), (0.7, True), (0.0, True)],
)
def test_the_meaning_stage_weighs_what_its_model_says(
    opened: Opener, fusion_weight: float, third_before_fourth: bool
) -> None:
    found = ranked(opened, fusion_weight, ["lexical", "meaning"])
    assert found[:2] == ["first", "second"]
    assert (found.index("third") < found.index("fourth")) is third_before_fourth


@pytest.mark.parametrize("lacking", ["fusion_weight", "min_similarity"])
def test_a_model_lacking_a_part_is_refused_at_open(base: Path, lacking: str) -> None:
    """A model written to the protocol before ``fusion_weight`` was opened, and every search
    with it then failed on the attribute, words alone too; one without ``min_similarity`` was
    taken for a broken model (``meaning: failed``, no error). Refused before anything is
    created, as a bad embedder name is."""
    model = OneWordMeaning(0.7)
    parts = {"name": model.name, "dim": model.dim, "embed": model.embed}
    parts |= {"min_similarity": model.min_similarity, "fusion_weight": model.fusion_weight}
    del parts[lacking]
    partial = type("Partial", (), parts)()
    with pytest.raises(recuerdo.InvalidInput, match=f"lacks {lacking}"):
        recuerdo.open("fusion", base_dir=base, embedder=partial)
    assert not (base / ".recuerdo").exists()


@pytest.mark.parametrize("weight", [float("nan"), -0.5, float("inf"), "0.7", True, None])
def test_a_weight_no_rank_can_be_multiplied_by_is_refused_at_open(
    base: Path, weight: object
) -> None:
    """NaN would leave every fused score unordered, a negative weight would rank the model's
    best matches last: refused with the rest of a bad embedder, before anything is created."""
    model = OneWordMeaning(0.7)
    model.fusion_weight = weight  # type: ignore[assignment]
    with pytest.raises(recuerdo.InvalidInput, match="fusion_weight is a finite number"):
        recuerdo.open("fusion", base_dir=base, embedder=model)
    assert not (base / ".recuerdo").exists()
