"""Entry search on PostgreSQL finds what case folding finds, as SQLite does (decision 0055).

Before, the needle was lowered by Python and the text by the server's ``lower()``: the two part
on the final sigma and the dotted capital I, so an entry was not found by its own text
("ΣΑΣ", "ΟΔΟΣ", "İstanbul"), and "STRASSE" missed "Straße" where SQLite found it. Four
servers are asked: the system one (C.UTF-8, ``pg_trgm``: the trigram indexes answer), two
databases of it whose text is lowered by ICU (root: a capital sigma ending a word becomes ς;
Lithuanian: I, J and Į before an accent gain a dot above), and the embedded server (no
``pg_trgm``: every entry is tested).
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import recuerdo
from recuerdo.store.postgres import PostgresStore, folds
from recuerdo.store.postgres.schema import SCHEMA

from .postgres import system_url, unique_memory, url_for

SERVERS = ["system", "icu", "lithuanian", "embedded"]
_ICU_DATABASES = {"und": "recuerdo_icu", "lt": "recuerdo_icu_lt"}


def _icu_url(locale: str = "und") -> str:
    """A database of the system server whose default collation is ICU's ``locale`` (the root
    one, or Lithuanian), with ``pg_trgm``: made once, under a lock (test processes start at
    the same moment)."""
    import psycopg

    database = _ICU_DATABASES[locale]
    admin = system_url()
    url = urlunsplit(urlsplit(admin)._replace(path=f"/{database}"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(hashtext(%s))", [database])
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [database]).fetchone():
            conn.execute(
                f"CREATE DATABASE {database} TEMPLATE template0"
                f" LOCALE_PROVIDER icu ICU_LOCALE '{locale}' LOCALE 'C.UTF-8'"
            )
            with psycopg.connect(url, autocommit=True) as made:
                made.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", [database])
    return url


def _url(server: str) -> str:
    if server == "icu":
        return _icu_url()
    return _icu_url("lt") if server == "lithuanian" else url_for(server)


# The sigmas (final, small, capital), the dotted capital I and its ASCII look-alikes, J, Į and
# a combining acute (Lithuanian), letters whose folding is longer (ß, ẞ, ﬁ), the Kelvin sign,
# é/É, LIKE's own characters and a space.
ALPHABET = "σςΣİIiıJjĮį\u0301ßẞﬁKkéÉsS%_\\ "


@contextmanager
def _memory(server: str, steps: int | None = None) -> Iterator[recuerdo.Memory]:
    name = unique_memory("fold")
    store = PostgresStore(_url(server), name, steps=steps)
    memory = recuerdo.open(name, store=store, embedder="none")
    try:
        yield memory
    finally:
        memory.close()
        store.drop()


def _found(memory: recuerdo.Memory, needle: str, scope: str | None = None) -> list[int]:
    return [entry["id"] for entry in memory.recall(search=needle, limit=100, scope=scope)]


def _folding(contents: dict[int, str], needle: str) -> list[int]:
    return sorted(
        (i for i, text in contents.items() if needle.casefold() in text.casefold()), reverse=True
    )


# One memory a server for the pairs and every example of the property below, each in a scope of
# its own: a memory made and dropped per example (75 schemas) took 30 s of a run, and 8 minutes on
# a loaded machine.
_SHARED: dict[str, tuple[recuerdo.Memory, PostgresStore]] = {}
_EXAMPLES = itertools.count()


@pytest.fixture(scope="module", autouse=True)
def _shared_memories() -> Iterator[None]:
    yield
    while _SHARED:
        memory, store = _SHARED.popitem()[1]
        memory.close()
        store.drop()


def _shared_memory(server: str) -> recuerdo.Memory:
    if server not in _SHARED:
        name = unique_memory("fold")
        store = PostgresStore(_url(server), name)
        _SHARED[server] = (recuerdo.open(name, store=store, embedder="none"), store)
    return _SHARED[server][0]


@pytest.mark.parametrize("server", SERVERS)
@pytest.mark.parametrize(
    ("stored", "needle"),
    [
        ("ΣΑΣ hello", "ΣΑΣ"),  # Python lowers the last Σ to ς, the server to σ
        ("ΟΔΟΣ street", "ΟΔΟΣ"),
        ("İstanbul trip", "İstanbul"),  # Python: i and a combining dot; C.UTF-8: i
        ("Die Straße ist lang", "STRASSE"),  # folded: ss; lowered: ß
        ("οδός στενή", "ΟΔΌΣ"),  # folded: σ; the server keeps ς
        ("the ﬁle list", "FILE"),
        ("GROẞE", "grosse"),
        ("STRASSE", "straße"),
        ("ab", "AB"),  # too short for the trigram index: tested row by row
        ("ß", "SS"),
        ("ΟΔΟΣ street", "οδοσ"),  # ICU lowers the text's last Σ to ς
        ("ΟΔΟΣ street", "Σ STREET"),
        ("ΣΑΣ hello", "σας"),
        # Lithuanian lowers I, J and Į before an accent with a dot above (the second review)
        ("I\u0301staiga kelione", "I\u0301staiga"),
        ("J\u0303onas rytoj", "j\u0303onas"),
        ("Į\u0301 mi\u0301esta", "Į\u0301 mi"),
    ],
)
def test_an_entry_is_found_as_case_folding_finds_it(server: str, stored: str, needle: str) -> None:
    """Most pairs found nothing before, on both servers (the entry's own text too)."""
    memory = _shared_memory(server)
    scope = f"project:example-{next(_EXAMPLES)}"
    wanted = memory.remember("context", stored, scope=scope)
    memory.remember("context", "something else entirely", scope=scope)
    assert _found(memory, needle, scope) == [wanted]
    assert _found(memory, stored, scope) == [wanted]  # its own text, whatever its letters


@pytest.mark.parametrize("server", SERVERS)
def test_only_what_folding_finds_is_found(server: str) -> None:
    """Lowered by the server, "İstanbul" holds "istanbul"; folded, it does not (SQLite finds
    none): an entry that keeps a folded copy is tested on the copy alone."""
    with _memory(server) as memory:
        memory.remember("context", "İstanbul trip")
        assert _found(memory, "istanbul") == []


@pytest.mark.parametrize("server", ["system", "icu", "lithuanian"])
@given(
    texts=st.lists(st.text(ALPHABET, min_size=1, max_size=16), min_size=1, max_size=8),
    needles=st.lists(st.text(ALPHABET, min_size=1, max_size=6), max_size=4),
)
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
def test_search_answers_as_case_folding_does(
    server: str, texts: list[str], needles: list[str]
) -> None:
    """With the trigram indexes, for random texts and needles, and for pieces of the texts
    (so that matches are common, not only misses)."""
    memory = _shared_memory(server)
    scope = f"project:example-{next(_EXAMPLES)}"
    texts = [t for t in texts if t.strip()] or ["x"]
    ids = memory.remember_many(
        [{"category": "context", "content": t, "scope": scope} for t in texts]
    )
    contents = dict(zip(ids, texts, strict=True))
    for needle in [*needles, *(t[1:4] for t in texts), *texts]:
        if needle.strip():
            assert _found(memory, needle, scope) == _folding(contents, needle), needle


@pytest.mark.parametrize("server", SERVERS)
def test_the_step_folds_the_entries_already_stored(
    server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A memory written before m030 gains the folded copies its entries need when it opens,
    each written by a statement that names its tenant (tests/tenancy.py)."""
    from .tenancy import problems
    from .test_tenancy import Recorder

    name = unique_memory("fold-step")
    url = _url(server)
    before = PostgresStore(url, name, steps=SCHEMA.names().index("m030_folded_entries"))
    try:
        with recuerdo.open(name, store=before, embedder="none") as memory:
            kept = memory.remember("context", "Hauptstraße 5")
            plain = memory.remember("context", "plain ascii text")
            assert _found(memory, "HAUPTSTRASSE") == []  # as before the step
        before.close()
        recorder = Recorder(monkeypatch)
        after = PostgresStore(url, name)
        with recuerdo.open(name, store=after, embedder="none") as memory:
            assert _found(memory, "HAUPTSTRASSE") == [kept]
            with after.read() as tx:
                copies = {
                    int(row["id"]): row["folded"]
                    for row in tx.all(
                        "SELECT id, folded FROM items /* every tenant */ WHERE item_type = 'entry'"
                    )
                }
        assert copies == {kept: "hauptstrasse 5", plain: None}
        after.close()
        folding = [
            sql
            for sql in recorder.statements
            if "folded" in sql and not sql.startswith(("ALTER", "CREATE"))
        ]
        assert any(sql.startswith("UPDATE") for sql in folding)
        assert [why for sql in folding for why in problems(sql, {"items"})] == []
    finally:
        PostgresStore(url, name).drop()


@pytest.mark.parametrize("origin_backend", ["sqlite", "postgres"])
def test_a_backup_loaded_on_postgres_is_found_by_folding(
    tmp_path: Path, origin_backend: str
) -> None:
    """The folded copies are not archived (the server that loads an archive makes its own,
    after the rows), so a backup loaded into PostgreSQL finds "STRASSE" in "Straße". From
    PostgreSQL the archive carries the mark naming its server's copies: the third review
    found every copy lost, the mark being the loading server's own."""
    import gzip

    from recuerdo.store import archive

    origin_name = unique_memory("fold-origin")
    if origin_backend == "postgres":
        origin_store = PostgresStore(url_for("system"), origin_name)
        opened = recuerdo.open(origin_name, store=origin_store, embedder="none")
    else:
        opened = recuerdo.open("origin", base_dir=tmp_path, embedder="none")
    with opened as origin:
        wanted = origin.remember("context", "Die Straße ist lang")
        origin.backup(tmp_path / "origin.jsonl.gz")
    if origin_backend == "postgres":
        origin_store.drop()
    header = archive.read_header(tmp_path / "origin.jsonl.gz")
    name = unique_memory("fold-load")
    store = PostgresStore(url_for("system"), name, steps=len(header.schema))
    try:
        with store.write() as tx:
            archive.load(tx, store.archive, tmp_path / "origin.jsonl.gz", header)
        with recuerdo.open(name, store=store, embedder="none") as loaded:
            assert _found(loaded, "STRASSE") == [wanted]
            loaded.backup(tmp_path / "again.jsonl.gz")
        assert b'"folded":' not in gzip.decompress((tmp_path / "again.jsonl.gz").read_bytes())
    finally:
        store.drop()


def test_the_search_reads_the_trigram_indexes() -> None:
    """The folded copies have an index of their own, and each test of the condition is one
    an index answers: the planner reads both indexes (a bitmap OR), not every entry."""
    with _memory("system") as memory:
        memory.remember_many([{"category": "context", "content": f"Straße {k}"} for k in range(3)])
        for first in range(0, 20_000, 10_000):
            memory.remember_many(
                [
                    {"category": "context", "content": f"entry {k} about the plan"}
                    for k in range(first, first + 10_000)
                ]
            )
        store = memory._store
        with store.write() as tx:
            tx.execute("ANALYZE items")
            part = tx.substrings.candidates("STRASSE")[0]
            plan = "\n".join(
                row["QUERY PLAN"]
                for row in tx.all(
                    "EXPLAIN SELECT items.id FROM items WHERE "
                    + part.condition
                    + " AND items.item_type = 'entry' ORDER BY items.id DESC LIMIT 10",
                    part.params,
                )
            )
        assert "BitmapOr" in plan, plan
        assert "items_folded_trigrams" in plan and "items_trigrams" in plan, plan
        assert "Seq Scan" not in plan, plan


def test_the_cased_characters_end_within_the_planes_read() -> None:
    """:func:`folds._cased` reads the first two planes only: no character past them has a case
    in this Python's tables (a newer Unicode adding one fails here)."""
    last = max(
        ch
        for ch in map(chr, range(1, sys.maxunicode + 1))
        if not 0xD800 <= ord(ch) <= 0xDFFF
        and (ch.casefold() != ch or ch.lower() != ch or ch.upper() != ch)
    )
    assert ord(last) < folds._CASED_BELOW
    assert last in folds._cased()


@pytest.mark.parametrize("server", ["system", "embedded"])
@pytest.mark.parametrize(
    ("change", "stale"),
    [
        ("UPDATE items SET folded = NULL WHERE content LIKE 'Haupt%'", 1),  # missing
        ("UPDATE items SET folded = 'x' WHERE content LIKE 'plain%'", 1),  # left over
        ("UPDATE items SET folded = 'hauptstraße 5' WHERE content LIKE 'Haupt%'", 1),  # wrong
        ("UPDATE items SET folded = folded WHERE content LIKE 'Haupt%'", 0),
    ],
)
def test_check_counts_the_entries_whose_copy_is_stale(server: str, change: str, stale: int) -> None:
    """As a server whose locale changed under the memory would leave them: the search then
    misses, so ``check`` says so."""
    with _memory(server) as memory:
        memory.remember("context", "Hauptstraße 5")
        memory.remember("context", "plain ascii text")
        assert memory._store.check()["counts"]["entries whose folded copy is stale"] == 0
        with memory._store.write() as tx:
            tx.execute(change)
        verdict = memory._store.check()
        assert verdict["counts"]["entries whose folded copy is stale"] == stale
        assert verdict["ok"] is (stale == 0)


@pytest.mark.parametrize("server", ["system", "embedded"])
def test_copies_written_for_other_characters_are_made_again_at_open(server: str) -> None:
    """The mark ``folded_copies`` names the characters the copies were written for. A
    server that lowers otherwise (its locale changed under the memory) opens the memory with
    another set: every copy is made again. With the mark current, opening reads the mark
    only (a copy spoiled by hand stays spoiled, and ``check`` says so)."""
    name = unique_memory("fold-mark")
    url = _url(server)
    try:
        with recuerdo.open(name, store=PostgresStore(url, name), embedder="none") as memory:
            kept = memory.remember("context", "Hauptstraße 5")
            memory.remember("context", "plain ascii text")
            with memory._store.write() as tx:
                tx.execute("UPDATE items SET folded = NULL WHERE content LIKE 'Haupt%'")
                tx.execute("UPDATE items SET folded = 'x' WHERE content LIKE 'plain%'")
        store = PostgresStore(url, name)
        assert store.check()["counts"]["entries whose folded copy is stale"] == 2
        with store.write() as tx:
            tx.execute("UPDATE index_marks SET upto = upto + 1 WHERE name = 'folded_copies'")
        store.close()
        store = PostgresStore(url, name)
        assert store.check()["counts"]["entries whose folded copy is stale"] == 0
        with recuerdo.open(name, store=store, embedder="none") as memory:
            assert _found(memory, "HAUPTSTRASSE") == [kept]
        with store.read() as tx:
            copies = [
                row["folded"]
                for row in tx.all("SELECT folded FROM items /* every tenant */ ORDER BY id")
            ]
        assert copies == ["hauptstrasse 5", None]
        store.close()
    finally:
        PostgresStore(url, name).drop()


def test_an_open_in_a_tenant_s_scope_makes_every_tenant_s_copies() -> None:
    """As an ordinary role, under row-level security: a store opened while a verb serves one
    tenant still makes the other tenants' copies (the third review found the mark set after
    only the serving tenant's were made; nothing mended the others)."""
    from recuerdo.store.scope import scoped

    from .postgres import app_conninfo

    url, name = app_conninfo(system_url()), unique_memory("fold-rls")
    store = PostgresStore(url, name)
    try:
        memory = recuerdo.open(name, store=store, embedder="none")
        for tenant in ("ann", "bob"):
            memory.for_tenant(tenant).remember("context", f"{tenant}: Die Straße ist lang")
        memory.close()
        with store.write() as tx:
            tx.execute("UPDATE items /* every tenant */ SET folded = NULL")
            tx.execute("UPDATE index_marks SET upto = upto + 1 WHERE name = 'folded_copies'")
        store.close()
        with scoped("ann"):
            store = PostgresStore(url, name)
        assert store.check()["counts"]["entries whose folded copy is stale"] == 0
        with recuerdo.open(name, store=store, embedder="none") as memory:
            for tenant in ("ann", "bob"):
                found = memory.for_tenant(tenant).recall(search="STRASSE")
                assert [e["content"] for e in found] == [f"{tenant}: Die Straße ist lang"]
    finally:
        store.close()
        PostgresStore(url, name).drop()
