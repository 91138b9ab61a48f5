"""Words are found whatever their accents and Unicode form, on every backend (decision 0115).

SQLite's word index (``unicode61 remove_diacritics 2``) reads "José", "Jose" and "Jose" with a
combining acute (NFD, what macOS and some tools send) as one word. PostgreSQL's kept each
spelling apart: a note written in NFD was not found by the same name typed on a keyboard, and
"cafe" did not find "café". Both backends now fold a word the same way.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

import recuerdo
from recuerdo.store.postgres import PostgresStore
from recuerdo.store.sqlite.schema import SCHEMA

from .conftest import rewrite_postgres_words
from .postgres import contract_url, unique_memory
from .test_audit_words import _opened_at


def _nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def _titles(memory: recuerdo.Memory, query: str) -> list[str]:
    memory._upkeep.drain()
    reply = memory.search(query, stages=["lexical"])
    return sorted(hit["title"] for hit in reply["results"])


@pytest.fixture
def words_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECUERDO_EMBEDDER", "none")


@pytest.mark.usefixtures("words_only")
@pytest.mark.parametrize(
    "query",
    ["José Müller", _nfd("José Müller"), "Jose Muller", "JOSÉ", "müller"],
    ids=["nfc", "nfd", "unaccented", "capitals", "one-word"],
)
def test_a_name_is_found_in_either_form_and_without_its_accents(
    memory: recuerdo.Memory, query: str
) -> None:
    memory.save("Typed", "Lunch with José Müller on Friday")
    memory.save("Pasted from a Mac", _nfd("Call José Müller back about the invoice"))
    memory.save("Unrelated", "Lunch with the harbour crew")
    assert _titles(memory, query) == ["Pasted from a Mac", "Typed"]


@pytest.mark.usefixtures("words_only")
@pytest.mark.parametrize("query", ["cafe", "café", _nfd("café"), "CAFÉ"])
def test_an_accent_neither_hides_nor_adds_a_word(memory: recuerdo.Memory, query: str) -> None:
    memory.save("Accented", "Meet at the café near the station")
    memory.save("Plain", "The cafe menu changed")
    memory.save("Other", "Meet at the station")
    assert _titles(memory, query) == ["Accented", "Plain"]


@pytest.mark.usefixtures("words_only")
def test_words_past_latin_keep_their_letters(memory: recuerdo.Memory) -> None:
    """Folding takes accents off; it must not merge or lose letters of other scripts."""
    memory.save("Korean", "회의 일정 확인")
    memory.save("Greek", "Συνάντηση αύριο")
    memory.save("Russian", "Встреча завтра")
    assert _titles(memory, "회의") == ["Korean"]
    assert _titles(memory, "αύριο") == ["Greek"]
    assert _titles(memory, "завтра") == ["Russian"]
    assert _titles(memory, "Встреча") == ["Russian"]


STEP = "m044_folded_words"
LONG = " ".join(f"Paragraph {n} of the café notes." for n in range(400))


def _row_versions(memory: recuerdo.Memory) -> dict[str, str]:
    with memory._store.read() as tx:
        rows = tx.all(
            "SELECT i.title, c.xmin::text AS version FROM chunks c"
            " JOIN items i ON i.tenant = c.tenant AND i.id = c.item_id WHERE c.ordinal = 0"
        )
    return {row["title"]: row["version"] for row in rows}


def test_the_step_folds_the_words_of_chunks_stored_before_it(base: Path) -> None:
    name = unique_memory("accents")
    try:
        with _opened_at("postgres", base, name, SCHEMA.names().index(STEP)) as memory:
            memory.save("Pasted from a Mac", _nfd("Call José Müller back"))
            memory.save("Long", LONG)
            memory.save("Plain", "Lunch with the harbour crew")
            memory._upkeep.drain()
            rewrite_postgres_words(memory, lambda text: text)  # unfolded: the code before 0115
            assert _titles(memory, "José") == []
            assert _titles(memory, "cafe") == []
            before = _row_versions(memory)
        with _opened_at("postgres", base, name, None) as memory:
            assert _titles(memory, "José") == ["Pasted from a Mac"]
            assert _titles(memory, "cafe") == ["Long"]
            assert _titles(memory, "harbour") == ["Plain"]
            after = _row_versions(memory)
        assert after["Plain"] == before["Plain"]  # ASCII text: not read, not rewritten
        assert after["Long"] != before["Long"]
    finally:
        PostgresStore(contract_url(), name).drop()
