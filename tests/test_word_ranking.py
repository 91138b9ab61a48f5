"""Word ranking weighs each word by how rare it is (BM25's IDF), on every backend: a word that
every chunk holds cannot outrank the one rare word of a query. PostgreSQL's ``ts_rank`` has no
IDF, and ranked by it a note repeating a common name beat the note holding the rare word."""

from __future__ import annotations

import recuerdo


def test_a_rare_word_outranks_a_word_every_note_holds(memory: recuerdo.Memory) -> None:
    for n in range(10):
        memory.save(f"Caroline {n}", f"Caroline said hello to everyone at party number {n}.")
    memory.save("Caroline Caroline", "Caroline, Caroline and Caroline again: Caroline.")
    target = memory.save(
        "Weekend",
        "Caroline went to a pottery class on Saturday with friends, and it was a long day.",
    )["id"]
    memory._upkeep.drain()
    found = memory.search("Caroline pottery", stages=["lexical"])["results"]
    assert found[0]["id"] == target


def test_a_short_chunk_with_the_word_outranks_a_long_one(memory: recuerdo.Memory) -> None:
    """Length normalisation: the same one mention weighs more in a short text."""
    filler = " ".join(f"filler{n}" for n in range(120))
    long = memory.save("Long", f"{filler} The lighthouse stands there. {filler}")["id"]
    short = memory.save("Short", "The lighthouse stands there.")["id"]
    memory._upkeep.drain()
    found = [hit["id"] for hit in memory.search("lighthouse", stages=["lexical"])["results"]]
    assert found[:2] == [short, long]
