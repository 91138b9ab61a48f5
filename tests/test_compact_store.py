"""The compact store (migration ``m018_compact_store``, ``docs/decisions/0023-store-size.md``):
a trigram index without positions, text hashes as 128-bit prefixes; what a store answered
before the step it answers after, and a store written before the step migrates."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import recuerdo
from recuerdo.core.clock import now, to_iso
from recuerdo.index import chunks as chunk_index
from recuerdo.notes import history
from recuerdo.store import SQLiteStore
from recuerdo.store.base import Store, Tx
from recuerdo.store.hashes import HASH_BYTES, HASH_CHARS, text_key
from recuerdo.store.postgres import PostgresStore
from recuerdo.store.sqlite.folded_trigrams_schema import empty_entry_trigrams
from recuerdo.store.sqlite.schema import SCHEMA
from recuerdo.store.sqlite.search import trigram_expression

from .older_layouts import hex_keys, layout_before_spans
from .postgres import app_conninfo, contract_url, unique_memory

ENTRIES = [
    "The API answers on Monday",
    "Die Straße ist lang und STRASSE heißt sie auch",
    "Café ÉTÉ au lait, naïve résumé",
    'She said "quote" and left',
    "aaaa aaaa banana bandana",
    "Ελληνικά ΣΟΦΙΑ σοφία",
    "nothing to see here",
]
NEEDLES = ["PI", "api", "on Mon", "straße", "STRASSE", "été", "CAFÉ", '"quote"', "aaaaa", "ana b"]
NEEDLES += ["andan", "σοφία", "ΣΟΦΊΑ", "here", "no such text", "Monday!"]


def _expected(needle: str) -> list[str]:
    """What a scan of every entry finds (the index must agree with it), newest first."""
    return [text for text in reversed(ENTRIES) if needle.casefold() in text.casefold()]


def _found(memory: recuerdo.Memory, needle: str) -> list[str]:
    return [entry["content"] for entry in memory.recall(search=needle)]


def test_substring_search_on_the_positionless_index_finds_what_a_scan_finds(base: Path) -> None:
    """Every needle, with the index complete and with it empty (the tail scan), finds exactly
    the entries whose folded text holds it: the candidates' text is checked."""
    with recuerdo.open("subs", base_dir=base) as memory:
        memory.remember_many([{"category": "learning", "content": text} for text in ENTRIES])
        memory._upkeep.drain()
        with memory._store.read() as tx:
            assert tx.scalar("SELECT upto FROM index_marks WHERE name = 'entry_trigrams'") > 0
        indexed = {needle: _found(memory, needle) for needle in NEEDLES}
        with memory._store.write() as tx:  # the same entries, none of them in the index yet
            empty_entry_trigrams(tx)
        scanned = {needle: _found(memory, needle) for needle in NEEDLES}
    for needle in NEEDLES:
        assert indexed[needle] == scanned[needle] == _expected(needle), needle


def test_the_trigram_index_is_smaller_than_its_text(base: Path) -> None:
    """Positions made the index three times the text it indexes; without them it is less than
    the text (fails on the layout before m018)."""
    texts = [
        f"entry {n}: " + " ".join(f"w{(n * 7 + k) % 997}x" for k in range(60)) for n in range(300)
    ]
    with recuerdo.open("small", base_dir=base) as memory:
        memory.remember_many([{"category": "learning", "content": text} for text in texts])
        memory._upkeep.drain()
        with memory._store.read() as tx:
            index = tx.scalar("SELECT sum(length(block)) FROM entry_trigrams_data")
    assert index < sum(len(text) for text in texts)


@given(st.text(max_size=200))
def test_a_chunk_key_is_the_prefix_the_migration_keeps(text: str) -> None:
    """A key the new code computes for a text is exactly what m018 keeps of the old full key,
    in the bytes its digits spell (m022), so an embedding stored before the steps still
    serves the same text after them."""
    full = hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert chunk_index.chunk_hash(text) == bytes.fromhex(full[:HASH_CHARS]) == text_key(text)
    assert len(history.normalized_hash(text)) == HASH_BYTES == 16


@given(st.text(min_size=3, max_size=40))
def test_a_needle_s_trigram_expression_names_each_trigram_once(needle: str) -> None:
    expression = trigram_expression(needle)
    grams = {needle[i : i + 3] for i in range(len(needle) - 2)}
    assert expression.count(" AND ") == len(grams) - 1
    for gram in grams:
        assert '"' + gram.replace('"', '""') + '"' in expression


def test_stored_keys_are_128_bit_prefixes(memory: recuerdo.Memory) -> None:
    """Chunk, embedding and note-repeat keys are 16 bytes on every backend; revisions keep
    their full hash in hex (fails before m018: 64 digits everywhere; before m022: 32 digits)."""
    note = memory.save("Key length", "a note whose keys are measured")
    memory.remember("learning", "an entry whose keys are measured")
    memory._upkeep.drain()
    with memory._store.read() as tx:
        lengths = {
            "chunks": tx.scalar("SELECT max(length(hash)) FROM chunks"),
            "items": tx.scalar(
                "SELECT length(content_hash) FROM items WHERE tenant = ? AND id = ?",
                (memory.tenant, note["id"]),
            ),
            "revisions": tx.scalar("SELECT max(length(content_hash)) FROM revisions"),
        }
        embedded = tx.scalar("SELECT max(length(hash)) FROM embeddings")
    assert lengths == {"chunks": 16, "items": 16, "revisions": 64}
    assert embedded in (None, 16)  # None: no embedder installed
    assert memory.save("Key length", "A note  whose keys are MEASURED")["outcome"] == "duplicate"


def _app_url() -> str:
    """The ordinary role's URL, with pgvector installed first where the admin may (an ordinary
    role cannot create it, and m017 would try)."""
    import psycopg

    with contextlib.suppress(psycopg.Error), psycopg.connect(contract_url(), autocommit=True) as c:
        if c.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone():
            c.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
    return app_conninfo()


class Backend:
    """Opens one memory on a backend, at a given number of schema steps (None: all)."""

    def __init__(self, kind: str, base: Path) -> None:
        self.kind, self.base = kind, base
        self.name = unique_memory("compact") if kind == "postgres" else "old"
        self.url = _app_url() if kind == "postgres" else ""

    @contextmanager
    def open(self, steps: int | None) -> Iterator[recuerdo.Memory]:
        store: Store
        if self.kind == "postgres":
            store = PostgresStore(self.url, self.name, steps=steps)
        else:
            path = self.base / ".recuerdo" / "state" / "old.db"
            path.parent.mkdir(parents=True, exist_ok=True)
            store = SQLiteStore(str(path), steps=steps)
        try:
            with recuerdo.open(self.name, store=store) as memory:
                yield memory
        finally:
            store.close()

    def drop(self) -> None:
        if self.kind == "postgres":
            PostgresStore(self.url, self.name).drop()


OLD_NOTES = [
    ("Greek wisdom", "Σοφία means wisdom; the owl stands for it"),
    ("Banana notes", "A bandana is not a banana, said the API owner"),
]


def _old_note(tx: Tx, tenant: str, title: str, text: str) -> None:
    stamp = to_iso(now())  # within the window in which a repeat counts as a duplicate
    item = tx.scalar(
        "INSERT INTO items (tenant, scope, item_type, category, title, content, tags, source,"
        " version, created_at, updated_at, content_hash) VALUES (?, 'user', 'note', 'manual',"
        " ?, ?, '[]', 'main', 1, ?, ?, ?) RETURNING id",
        (tenant, title, text, stamp, stamp, history.normalized_hash(text)),
    )
    tx.execute(
        "INSERT INTO revisions (tenant, item_id, version, operation, principal, title, kind,"
        " content, chars_added, chars_removed, content_hash, created_at)"
        " VALUES (?, ?, 1, 'write', 'main', ?, 'manual', ?, ?, 0, ?, ?)",
        (tenant, item, title, text, len(text), hashlib.sha256(text.encode()).hexdigest(), stamp),
    )


def _old_store(backend: Backend, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, object], int]:
    """A store written by the code before m018 (its schema and its 64-digit keys), indexed and
    embedded: what its searches answered, and how many vectors it held."""
    steps = SCHEMA.names().index("m018_compact_store")
    with layout_before_spans(monkeypatch, digits=64), backend.open(steps) as memory:
        memory.remember_many([{"category": "learning", "content": t} for t in ENTRIES])
        with memory._store.write() as tx:
            # Notes as the code of that schema wrote them (every version whole: the
            # revision layout of m019 does not exist yet, so the verbs cannot write them).
            for title, text in OLD_NOTES:
                _old_note(tx, memory.tenant, title, text)
        memory._upkeep.drain()
        with memory._store.read() as tx:
            assert tx.scalar("SELECT min(length(hash)) FROM chunks") == 64
            assert "m018_compact_store" not in memory._store.schema_steps
            vectors = int(tx.scalar("SELECT count(*) FROM embeddings"))
        return _answers(memory), vectors


def _answers(memory: recuerdo.Memory) -> dict[str, object]:
    found: dict[str, object] = {n: _found(memory, n) for n in NEEDLES}
    for query in ("banana API", "wisdom owl", "Monday", "straße lang"):
        found[query] = [
            (hit["id"], hit["span"]["chunk_id"], round(hit["score"], 6), hit["found_by"])
            for hit in memory.search(query)["results"]
        ]
    return found


@pytest.mark.parametrize("kind", ["file", "postgres"])
def test_a_store_written_before_m018_migrates_and_answers_the_same(
    kind: str, base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The step shortens every key in place (no vector is computed again, none is orphaned)
    and, on SQLite, makes the trigram index again (filled off the write path: searches are the
    same before and after it is); repeats are still recognised against notes saved before."""
    backend = Backend(kind, base)
    try:
        before, vectors = _old_store(backend, monkeypatch)
        with backend.open(None) as memory:
            assert "m018_compact_store" in memory._store.schema_steps
            with memory._store.read() as tx:
                assert tx.scalar("SELECT max(length(hash)) FROM chunks") == 16
                assert tx.scalar("SELECT count(*) FROM embeddings WHERE length(hash) <> 16") == 0
                if kind == "file":
                    layout = tx.scalar(
                        "SELECT sql FROM sqlite_schema WHERE name = 'entry_trigrams'"
                    )
                    assert "detail='none'" in layout
                    mark = "SELECT upto FROM index_marks WHERE name = 'entry_trigrams'"
                    assert tx.scalar(mark) == 0
            assert _answers(memory) == before  # on SQLite the index is empty: a scan answers
            memory._upkeep.drain()
            with memory._store.read() as tx:
                assert int(tx.scalar("SELECT count(*) FROM embeddings")) == vectors
                orphans = tx.scalar(
                    "SELECT count(*) FROM chunks c WHERE NOT EXISTS"
                    " (SELECT 1 FROM embeddings e WHERE e.hash = c.hash)"
                )
            assert orphans == 0 or vectors == 0
            assert _answers(memory) == before
            again = memory.save("Greek wisdom", "σοφία means  WISDOM; the owl stands for it")
            assert again["outcome"] == "duplicate"
    finally:
        backend.drop()


@pytest.mark.parametrize("kind", ["file", "postgres"])
def test_a_store_written_before_m022_migrates_and_answers_the_same(
    kind: str, base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keys written as 32 hex digits become their 16 bytes in place: every search answers as
    before, each vector is the one it was (same ids, none computed again, none orphaned), and a
    repeat of a note saved before the step is still recognised."""
    backend = Backend(kind, base)
    try:
        steps = SCHEMA.names().index("m022_binary_keys")
        with hex_keys(monkeypatch), backend.open(steps) as memory:
            memory.remember_many([{"category": "learning", "content": t} for t in ENTRIES])
            for title, text in OLD_NOTES:
                memory.save(title, text)
            memory._upkeep.drain()
            with memory._store.read() as tx:
                assert tx.scalar("SELECT max(length(hash)) FROM chunks") == 32
                vectors = [r["id"] for r in tx.all("SELECT id FROM embeddings ORDER BY id")]
            before = _answers(memory)
        with backend.open(None) as memory:
            with memory._store.read() as tx:
                keys = tx.one(
                    "SELECT max(length(c.hash)) AS chunks, max(length(e.hash)) AS embeddings,"
                    " max(length(i.content_hash)) AS items FROM chunks c"
                    " LEFT JOIN embeddings e ON e.hash = c.hash"
                    " JOIN items i ON i.tenant = c.tenant AND i.id = c.item_id"
                )
                assert keys is not None and keys["chunks"] == keys["items"] == 16
                assert keys["embeddings"] in (None, 16)
            assert _answers(memory) == before
            memory._upkeep.drain()
            with memory._store.read() as tx:
                assert [r["id"] for r in tx.all("SELECT id FROM embeddings ORDER BY id")] == vectors
            assert _answers(memory) == before
            again = memory.save("Greek wisdom", "σοφία means  WISDOM; the owl stands for it")
            assert again["outcome"] == "duplicate"
    finally:
        backend.drop()
