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


# A text stored decomposed holds the words it shows: the checks that read texts against the
# query's words (read in NFC) read the texts in NFC too.


@pytest.mark.usefixtures("no_model")
@pytest.mark.parametrize("query", ["Zürich flight", nfd("Zürich flight")], ids=["nfc", "nfd"])
def test_a_pack_of_a_decomposed_text_is_grounded(memory: recuerdo.Memory, query: str) -> None:
    memory.save("Trip", nfd("Flight to Zürich on Monday"))
    memory._upkeep.drain()
    reply = memory.context(query)
    assert [s["title"] for s in reply["sources"]] == ["Trip"]
    assert reply["grounding"] == {"state": "grounded"}


@pytest.mark.usefixtures("no_model")
def test_a_decomposed_text_holding_the_words_as_written_ranks_first(
    memory: recuerdo.Memory,
) -> None:
    """The text holding "office" as asked goes ahead of one holding only "offices", though
    that one repeats the words: the same whichever form either text was stored in."""
    memory.save("Move", nfd("The Zürich office move is planned for spring, with the team."))
    memory.save("Offices", "Zürich offices: Zürich offices list, Zürich offices again")
    memory._upkeep.drain()
    for query in ("Zürich office", nfd("Zürich office")):
        reply = memory.search(query, stages=["lexical"])
        assert [hit["title"] for hit in reply["results"]] == ["Move", "Offices"]


@pytest.mark.usefixtures("no_model")
@pytest.mark.parametrize("query", ["über", nfd("Über")], ids=["nfc", "nfd"])
def test_a_decomposed_text_not_cut_yet_is_found(memory: recuerdo.Memory, query: str) -> None:
    """Before the indexer cuts it, a text is found by reading it (the search's tail)."""
    memory.save("Fresh", nfd("Über-fresh note"))
    memory.save("Other", "Nothing here")
    reply = memory.search(query, stages=["lexical"])
    assert [hit["title"] for hit in reply["results"]] == ["Fresh"]
