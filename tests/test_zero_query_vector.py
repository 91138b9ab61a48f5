"""A query whose vector has no direction (none of its words is known to the model) is near
nothing: the meaning stage answers none at once. Before, in process every vector's cosine
with it was 0, which passed a threshold of 0 (the HTTP embedder's default), so every note was
"found by meaning" in no order; and the stage scored every vector (PostgreSQL with pgvector
asked the database, where the cosine is NaN, decision 0182)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import recuerdo

WORDS = ("harbor", "lantern", "copper", "meadow")


class KnownWords:
    """One dimension a known word; a text of none is the zero vector. Threshold 0, as the HTTP
    embedder's default (``RECUERDO_EMBED_MIN_SIMILARITY``)."""

    name = "test-zero-threshold"
    dim = len(WORDS)
    min_similarity = 0.0
    fusion_weight = 1.0

    def embed(self, texts: list[str], *, query: bool = False) -> Any:
        rows = np.zeros((len(texts), self.dim), np.float32)
        for n, text in enumerate(texts):
            for word in text.lower().split():
                if word in WORDS:
                    rows[n, WORDS.index(word)] = 1.0
            norm = float(np.linalg.norm(rows[n]))
            if norm:
                rows[n] /= norm
        return rows


@pytest.fixture(params=["file", "in_memory", "postgres"])
def known(request: pytest.FixtureRequest, base: Any) -> Any:
    from .postgres import contract_store

    if request.param == "postgres":
        mem = recuerdo.open("zero", store=contract_store(), embedder=KnownWords())
    else:
        mem = recuerdo.open(
            "zero", base_dir=base, in_memory=request.param == "in_memory", embedder=KnownWords()
        )
    yield mem
    mem.close()


def test_a_query_of_unknown_words_finds_nothing_by_meaning(known: recuerdo.Memory) -> None:
    harbor = known.remember("learning", "harbor lantern")
    known.remember("learning", "copper meadow")
    known.remember("learning", "a note of other words entirely")
    known._upkeep.drain()
    assert known.search("unknown words", stages=["meaning"])["results"] == []
    # The hybrid search still finds by words what it holds.
    hybrid = known.search("entirely", limit=5)["results"]
    assert [hit["found_by"] for hit in hybrid] == [["lexical"]]
    hits = known.search("harbor", stages=["meaning"])["results"]
    assert hits[0]["id"] == harbor  # orthogonal notes, cosine 0, pass a threshold of 0 after it
