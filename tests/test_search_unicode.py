"""A query's words in any Unicode normal form: an accented letter typed as a letter and a
combining mark (NFD, what macOS file names and some keyboards send) is the same word as the
one code point stored (a hunt over retrieval)."""

from __future__ import annotations

import unicodedata

import pytest

import recuerdo
from recuerdo.index.words import terms, written_words


def nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def test_a_query_is_read_in_nfc() -> None:
    assert terms(nfd("Zürich crêperie")) == ["zürich", "crêperie"]
    assert written_words(nfd("à Genève")) == ["à", "genève"]


@pytest.mark.parametrize("mode", ["any", "all"])
@pytest.mark.parametrize("query", ["Zürich", "crêperie Zürich", "Genève", "Ørsted Genève"])
def test_a_decomposed_query_finds_the_composed_text(
    memory: recuerdo.Memory, mode: str, query: str
) -> None:
    note = memory.save("Trip", "From Zürich to Genève: a crêperie, then Ørsted's lecture.")["id"]
    memory.save("Other", "Nothing about Zurich here, nor Geneva.")
    memory._upkeep.drain()
    composed = memory.search(query, mode=mode, stages=["lexical"])
    decomposed = memory.search(nfd(query), mode=mode, stages=["lexical"])
    assert [h["id"] for h in composed["results"]][:1] == [note]
    assert [h["id"] for h in decomposed["results"]] == [h["id"] for h in composed["results"]]
    assert decomposed["results"][0]["found_by"] == ["lexical"]
