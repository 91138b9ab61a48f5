"""The meaning stage weighs in the search's fusion what its model's ranking is worth
(``Embedder.fusion_weight``, decision 0191), not one weight for every model."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import recuerdo
from recuerdo.index.meaning import EMBEDDER_PARTS

from .conftest import tree
from .postgres import contract_store

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


@pytest.mark.parametrize(
    ("fusion_weight", "order"),
    # Third and fourth by words are 1/8 and 1/9 (lexical k = 5); the fourth's first rank by
    # meaning adds weight/61: 0.0164 at 1.0 is more than the 0.0139 between them, 0.0115 at
    # 0.7 is less. At 0 the order is the words' alone.
    [
        (1.0, ["first", "second", "fourth", "third"]),
        (0.7, ["first", "second", "third", "fourth"]),
        (0.0, ["first", "second", "third", "fourth"]),
    ],
)
def test_the_meaning_stage_weighs_what_its_model_says(
    opened: Opener, fusion_weight: float, order: list[str]
) -> None:
    assert ranked(opened, fusion_weight, ["lexical", "meaning"]) == order


def without(part: str) -> object:
    """A model lacking ``part``, every other part of the protocol there."""
    model = OneWordMeaning(0.7)
    parts = {name: getattr(model, name) for name in EMBEDDER_PARTS if name != part}
    return type("Partial", (), parts)()


def weighing(weight: object) -> object:
    model = OneWordMeaning(0.7)
    model.fusion_weight = weight  # type: ignore[assignment]
    return model


@pytest.mark.parametrize(
    ("model", "refusal"),
    [(without(part), f"lacks {part}") for part in EMBEDDER_PARTS]
    + [
        (weighing(weight), "fusion_weight is a finite number")
        for weight in (float("nan"), -0.5, float("inf"), "0.7", True, None)
    ],
)
def test_a_model_a_search_could_not_use_is_refused_at_open(
    base: Path, model: object, refusal: str
) -> None:
    """A model written to the protocol before ``fusion_weight`` was opened, and every search
    with it then failed on the attribute, words alone too; one without ``min_similarity`` was
    taken for a broken model (``meaning: failed``, no error). A weight of NaN would leave every
    fused score unordered, a negative one would rank the model's best matches last. Each is
    refused before anything is created, as a bad embedder name is."""
    with pytest.raises(recuerdo.InvalidInput, match=refusal):
        recuerdo.open("fusion", base_dir=base, embedder=model)
    assert tree(base) == []
