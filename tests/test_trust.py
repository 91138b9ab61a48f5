"""The trust pieces below the doors: audit retention and scrubbing, server-side paths, hosts
and origins, damage and version checks (the attack suite drives the same through a server)."""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import recuerdo
from recuerdo.core import audit
from recuerdo.core.clock import to_iso
from recuerdo.doors.gateway import server_files
from recuerdo.doors.guard import HostPolicy
from recuerdo.errors import StoreError
from recuerdo.store import audit_sweep
from recuerdo.store.base import like_pattern
from recuerdo.store.sqlite import sqlite3

from .conftest import audit_kept, settled_dump, statements_run, tx_class_of


def _audit_rows(memory: recuerdo.Memory) -> list[tuple[str, str]]:
    with memory._store.read() as tx:
        rows = tx.all(f"SELECT * FROM retrieval_audit WHERE {audit_sweep.LIVE} ORDER BY id")
        return [(r["tenant"], r["query"]) for r in rows]


def test_audit_records_past_their_retention_are_pruned(file_memory: recuerdo.Memory) -> None:
    file_memory.search("kept query")
    file_memory.for_tenant("other").search("kept elsewhere")
    file_memory.configure(audit_retention_days=7)
    file_memory.audit()  # flushed
    with file_memory._store.write() as tx:
        old = to_iso(datetime.now(UTC) - timedelta(days=30))
        tx.execute("UPDATE retrieval_audit SET created_at = ?", (old,))
        # 30 days old: past this tenant's 7 days, within the other tenant's default 90.
        assert audit.prune_expired(tx) == 1
    assert _audit_rows(file_memory) == [("other", "kept elsewhere")]
    with file_memory._store.write() as tx:
        long_ago = to_iso(datetime.now(UTC) - timedelta(days=91))
        tx.execute("UPDATE retrieval_audit SET created_at = ?", (long_ago,))
        assert audit.prune_expired(tx) == 1
    assert _audit_rows(file_memory) == []


@pytest.mark.parametrize("days", [0, -1, 36_501, True, "90"])
def test_a_bad_retention_is_refused(memory: recuerdo.Memory, days: object) -> None:
    before = memory.configure()
    with pytest.raises(recuerdo.InvalidInput, match="audit_retention_days"):
        memory.configure(audit_retention_days=days)  # type: ignore[arg-type]
    assert memory.configure() == before
    assert before["audit_retention_days"] == 90


def test_forgetting_drops_only_the_audit_records_about_it(file_memory: recuerdo.Memory) -> None:
    kept = file_memory.remember("learning", "the invoices ship on Fridays")
    gone = file_memory.remember("learning", "Quorbelax is the vault codename")
    file_memory.search("invoices")
    file_memory.recall(search="Quorbelax")
    file_memory.search("what is quorbelax")  # asks for a word only the forgotten entry held
    file_memory.audit()
    assert file_memory.forget(gone)
    queries = [query for _, query in _audit_rows(file_memory)]
    assert queries == ["invoices"], queries
    assert file_memory.recall()[0]["id"] == kept


def test_a_word_another_tenant_still_holds_is_gone_for_this_one(memory: recuerdo.Memory) -> None:
    """Whether a forgotten word is still held is asked of the forgetting tenant's chunks:
    SQLite's one words index holds every tenant's, and another tenant's passage kept ann's
    searches for the word in her audit."""
    ann, bob = memory.for_tenant("ann"), memory.for_tenant("bob")
    bob.remember("learning", "Varnokelish audits the harbour books")
    ann.search("what is varnokelish")  # before ann held it: the record returned none of hers
    gone = ann.remember("learning", "Varnokelish is the vault codename")
    memory._upkeep.drain()
    ann.audit()  # flushed
    assert _queries_of(memory, "ann") == ["what is varnokelish"]
    assert ann.forget(gone)
    assert _queries_of(memory, "ann") == []
    assert "Varnokelish" in str(bob.search("varnokelish"))


@pytest.mark.parametrize("asked", [True, False], ids=["one-word-asked", "nothing-asked"])
def test_a_forget_of_a_long_text_looks_up_only_the_words_the_audit_names(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch, asked: bool
) -> None:
    """Whether a forgotten word is still held is asked only for the words some audit record
    names, in one statement (PostgreSQL) or one index probe each (SQLite), and never by a
    ranking: a ranking a word made forgetting a document take seconds, and a lookup of each of
    its words was still most of a long forget's cost when the audit named none of them."""
    words = [f"wordling{chr(97 + n % 26)}{chr(97 + n // 26 % 26)}" for n in range(300)]
    if asked:
        memory.search(words[0])  # before the text is there: the record returned nothing
    memory.search("unrelated matters")
    gone = memory.remember("learning", " ".join(words))
    memory._upkeep.drain()
    memory.audit()
    with statements_run(monkeypatch, tx_class_of(memory)) as seen:
        assert memory.forget(gone)
    ranking = ("bm25(", "row_security_active", "f.f0")  # FTS5's; PostgreSQL's statistics, BM25
    assert [sql for sql, _ in seen if any(mark in sql for mark in ranking)] == []
    lookups = [sql for sql, _ in seen if "chunk_fts MATCH" in sql or "w.word" in sql]
    assert len(lookups) == (1 if asked else 0)
    assert _queries_of(memory, "local") == ["unrelated matters"]  # the word is no longer held


def test_a_note_forgotten_with_a_long_history_drops_searches_for_any_version(
    memory: recuerdo.Memory,
) -> None:
    """Every word of every forgotten text counts, however many there are: the words of the
    first 2,000 alone were looked at, so a word only an older version of a note held kept the
    searches that asked for it once the current text had 2,000 words."""
    memory.search("zanquibrel")
    first = memory.save("vault notes", "The vault codename is Zanquibrel.", key="vault")
    long_text = " ".join(f"filler{n}" for n in range(2100))
    memory.save("vault notes", long_text, key="vault")
    memory.search("unrelated matters")
    memory._upkeep.drain()
    memory.audit()
    assert _queries_of(memory, "local") == ["zanquibrel", "unrelated matters"]
    memory.delete(first["id"], hard=True)
    assert _queries_of(memory, "local") == ["unrelated matters"]


def test_a_record_asked_for_its_query_and_its_filters_values_not_their_names(
    memory: recuerdo.Memory,
) -> None:
    """The filters are read as what they are, JSON: their names ("status") are not words a
    search asked for, and a value past ASCII ("Zürichwald", escaped in the JSON text) is. A
    forget of the only text holding "status" dropped every search filtered by status, and one
    of the only text naming Zürichwald kept the search filtered by that tag."""
    memory.remember("learning", "the harbour cranes lift at dawn")
    memory.search("harbour", status="archived")
    memory.search("harbour", tags=["zürichwald"])
    board = memory.remember("learning", "the status board is blue")
    named = memory.remember("learning", "Zürichwald keeps the ledger")
    memory._upkeep.drain()
    memory.audit()
    assert memory.forget(board)
    assert memory.forget(named)
    assert [json.loads(filters) for filters in audit_kept(memory, "filters")] == [
        {"status": "archived"}
    ]


def _queries_of(memory: recuerdo.Memory, tenant: str) -> list[str]:
    return audit_kept(memory, tenant=tenant)


def test_a_server_reads_paths_only_inside_its_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "doc.md").write_text("# inside\n")
    outside = tmp_path / "secret.txt"
    outside.write_text("outside")
    (root / "link.md").symlink_to(outside)
    paths = {"path": "content_base64"}
    read = server_files(os.path.realpath(root), paths, {"path": "sub/doc.md"})
    assert "path" not in read and read["name"] == "doc.md" and read["content_base64"]
    for escape in ("../secret.txt", str(outside), "link.md", "sub/../../secret.txt"):
        with pytest.raises(recuerdo.PathNotAllowed):
            server_files(os.path.realpath(root), paths, {"path": escape})
    with pytest.raises(recuerdo.PathNotAllowed):
        server_files(None, paths, {"path": "sub/doc.md"})  # no root: never a path


@pytest.mark.parametrize(
    ("bound", "allowed", "host", "ok"),
    [
        ("127.0.0.1", (), "127.0.0.1:7700", True),
        ("127.0.0.1", (), "localhost", True),
        ("127.0.0.1", (), "[::1]:7700", True),
        ("127.0.0.1", (), "evil.example:7700", False),
        ("127.0.0.1", (), "127.0.0.1.evil.example", False),
        ("127.0.0.1", ("mem.example",), "MEM.example:443", True),
        ("10.0.0.5", (), "10.0.0.5:7700", True),
        ("10.0.0.5", (), "localhost:7700", False),
        ("127.0.0.1", (), None, False),
    ],
)
def test_host_names_a_server_answers_to(
    bound: str, allowed: tuple[str, ...], host: str | None, ok: bool
) -> None:
    assert HostPolicy.for_binding(bound, allowed).host_allowed(host) is ok


@pytest.mark.parametrize(
    ("origin", "ok"),
    [
        (None, True),
        ("http://127.0.0.1:7700", True),
        ("http://127.0.0.1:7701", False),
        ("http://localhost:7700", False),
        ("https://127.0.0.1:7700", False),
        ("null", False),
        ("http://evil.example", False),
    ],
)
def test_only_the_same_origin_is_served(origin: str | None, ok: bool) -> None:
    hosts = HostPolicy.for_binding("127.0.0.1")
    assert hosts.origin_allowed(origin, "127.0.0.1:7700") is ok


def test_a_newer_store_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    with recuerdo.open("later", base_dir=tmp_path) as memory:
        memory.remember("learning", "written now")
        path = Path(memory.location)
    conn = sqlite3.connect(path)
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    conn.execute(f"PRAGMA user_version = {version + 1}")
    conn.close()
    before = path.read_bytes()
    with pytest.raises(recuerdo.StoreTooNew) as caught:
        recuerdo.open("later", base_dir=tmp_path)
    assert str(version) in caught.value.detail and str(version + 1) in caught.value.detail
    assert caught.value.status == 503
    assert path.read_bytes() == before


def test_a_damaged_store_is_refused_checked_and_recovered(tmp_path: Path) -> None:
    with recuerdo.open("worn", base_dir=tmp_path, embedder="none") as memory:
        memory.remember_many(
            [{"category": "learning", "content": f"fact {i} " + "filler " * 40} for i in range(800)]
        )
        path = Path(memory.location)
    data = bytearray(path.read_bytes())
    pages = len(data) // 4096
    # A page of entry rows (a table leaf holding their texts and times), nearest the middle:
    # which page that is depends on the schema's layout, not on a fixed position.
    middle = min(
        (
            number
            for number in range(1, pages)
            if data[number * 4096] == 0x0D
            and data[number * 4096 : (number + 1) * 4096].count(b"fact ") >= 3
            and re.search(rb"\d{4}-\d\d-\d\dT", data[number * 4096 : (number + 1) * 4096])
        ),
        key=lambda number: abs(number - pages // 2),
    )
    data[middle * 4096 : (middle + 1) * 4096] = bytes(4096)
    path.write_bytes(bytes(data))
    damaged = path.read_bytes()
    with pytest.raises(recuerdo.StoreDamaged):
        recuerdo.open("worn", base_dir=tmp_path)
    assert path.read_bytes() == damaged  # refused before anything was written
    report = recuerdo.engine.check_memory("worn", base_dir=tmp_path)
    assert report["ok"] is False and report["problems"]
    rescued = tmp_path / "rescued.db"
    outcome = recuerdo.engine.recover_memory("worn", rescued, base_dir=tmp_path)
    assert outcome["recovered"] > 0 and outcome["lost"] > 0
    assert outcome["recovered"] + outcome["lost"] >= 800
    state = tmp_path / ".recuerdo" / "state"
    os.replace(rescued, state / "fresh.db")
    with recuerdo.open("fresh", base_dir=tmp_path, embedder="none") as again:
        kept = again.recall(limit=1000)
        assert 0 < len(kept) < 800
        new_id = again.remember("learning", "after the rescue")
        assert new_id > 800  # ids are never given out twice, even across a rescue
    assert recuerdo.engine.check_memory("fresh", base_dir=tmp_path)["ok"] is True


def test_a_full_disk_is_storage_full_and_leaves_the_store_as_it_was(tmp_path: Path) -> None:
    with recuerdo.open("tight", base_dir=tmp_path, embedder="none") as memory:
        memory.remember("learning", "before the disk filled")
        memory._upkeep.stop(drain=True)  # nothing changes behind the test's back
        with memory._store.write() as tx:  # a disk that holds only what is there now
            pages = tx.scalar("PRAGMA page_count")
            tx.execute(f"PRAGMA max_page_count = {pages}")
        before = settled_dump(memory)
        with pytest.raises(recuerdo.StorageFull) as caught:
            memory.remember_many([{"category": "learning", "content": "x" * 60_000}] * 20)
        assert caught.value.status == 507
        assert settled_dump(memory) == before
        with memory._store.write() as tx:
            tx.execute("PRAGMA max_page_count = 1073741823")  # space is back
        memory.remember("learning", "after space came back")
        assert [e["content"] for e in memory.recall()] == [
            "after space came back",
            "before the disk filled",
        ]


def test_check_counts_a_vector_of_another_size_than_its_models(memory: recuerdo.Memory) -> None:
    memory.remember("learning", "the deploy runbook lives in the wiki")
    memory.remember("learning", "rotate the signing key every quarter")
    memory._upkeep.drain()
    assert memory._store.check()["counts"]["vectors of a wrong size"] == 0
    grown = "vector || x'00'" if memory._store.dialect == "sqlite" else "vector || '\\x00'::bytea"
    with memory._store.read() as tx:
        last = tx.scalar("SELECT max(id) FROM embeddings")
        stored = tx.scalar("SELECT vector FROM embeddings WHERE id = ?", (last,))
    assert last is not None  # the default embedder stored the texts' vectors
    if memory.index_status()["backend"].get("vector_search") == "pgvector":
        # The database's own column holds the vector at its model's size: it refuses another.
        with pytest.raises(StoreError, match="dimensions"), memory._store.write() as tx:
            tx.execute(f"UPDATE embeddings SET vector = {grown} WHERE id = ?", (last,))
        with memory._store.read() as tx:
            kept = tx.scalar("SELECT vector FROM embeddings WHERE id = ?", (last,))
        assert bytes(kept) == bytes(stored)  # the refused write left the vector as it was
        assert memory._store.check()["counts"]["vectors of a wrong size"] == 0
        return
    with memory._store.write() as tx:
        tx.execute(f"UPDATE embeddings SET vector = {grown} WHERE id = ?", (last,))
    verdict = memory._store.check()
    assert verdict["counts"]["vectors of a wrong size"] == 1
    assert "vectors of a wrong size: 1" in verdict["problems"]


_QUOTES = {
    "who is ZORVANEL QUIST": True,  # any ASCII case
    "zorvanel quist": True,
    "Zorvanel": False,  # a part of the name
    "zorvanel_quist": False,  # '_' in a record is no wildcard for the name's space
    "50%_off for Zorvanel Quist": True,
    "50%Xoff": False,  # nor is the name's own '_' a wildcard
    "fifty off": False,
    "ÉMILE ZOLA wrote": True,  # beyond ASCII, any case too
    "émile zola": True,
    "Emile Zola": False,  # É is no E
}


def test_a_forgotten_name_drops_the_records_quoting_it_in_any_case(
    memory: recuerdo.Memory,
) -> None:
    """What a forget of a name or a key drops (``audit.scrub(texts=...)``): the records whose
    query or filters hold it, in any case, and no other; LIKE's own characters in the name
    are matched as themselves. On SQLite the test is LIKE alone for an ASCII name, and LIKE
    over Python's case folding for any other (decision 0074); on PostgreSQL LIKE over lower().
    A name beyond ASCII was missed on SQLite in any case but lower case, and in the filters on
    both stores (written escaped)."""
    log = memory._audit
    for query in _QUOTES:
        log.record(
            tenant=memory.tenant,
            principal="p",
            verb="search",
            query=query,
            filters={},
            returned=[],
        )
    for filters in ({"subject": "ZorVanel QUIST"}, {"tag": "50%_OFF"}, {"tags": ["Émile Zola"]}):
        log.record(
            tenant=memory.tenant,
            principal="p",
            verb="recall",
            query=None,
            filters=filters,
            returned=[],
        )
    log.flush(memory._store)
    with memory._store.write() as tx:
        names = ["Zorvanel Quist", "50%_off", "Émile Zola"]
        removed = audit.scrub(tx, memory.tenant, texts=names)
    left = {query for _, query in _audit_rows(memory)}
    assert left == {query for query, quoting in _QUOTES.items() if not quoting}
    assert removed == sum(_QUOTES.values()) + 3


_LIBRARIES = {"bundled": sqlite3, "interpreter": __import__("sqlite3")}


@pytest.mark.parametrize("library", sorted(_LIBRARIES))
@given(
    text=st.text(alphabet="aAzZ %_\\\u00c9\u00e9\u0130i\u00df\u03a3\u03c3", max_size=12),
    start=st.integers(0, 12),
    length=st.integers(0, 6),
    other=st.text(alphabet="aAzZ %_\\\u00c9\u00e9\u0130i\u00df\u03a3\u03c3", max_size=5),
)
def test_sqlite_matches_a_lowered_pattern_alike_with_or_without_lower(
    library: str, text: str, start: int, length: int, other: str
) -> None:
    """Why SQLite's scrub may drop lower() (decision 0074): its LIKE ignores ASCII case, and
    its lower() folds nothing else, so ``lower(x) LIKE p`` and ``x LIKE p`` agree for every
    text and every lower-case pattern, whichever characters they hold, under the bundled
    library and the interpreter's own (the records' columns are text)."""
    connection = _LIBRARIES[library].connect(":memory:")
    for needle in (text[start : start + length].lower(), other.lower()):
        pattern = like_pattern(needle)
        lowered, plain = connection.execute(
            "SELECT lower(?1) LIKE ?2 ESCAPE '\\', ?1 LIKE ?2 ESCAPE '\\'", (text, pattern)
        ).fetchone()
        assert lowered == plain
    connection.close()
