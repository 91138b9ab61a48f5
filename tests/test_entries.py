"""Entries: categories, tags, search, limits, namespaces, forgetting, and every refusal."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import recuerdo
from recuerdo.entries.operations import tags_json

from .conftest import query_plan, settled_dump, statements_run, tree


def test_results_carry_the_promised_fields(memory: recuerdo.Memory) -> None:
    entry_id = memory.remember("decision", "Use SQLite by default", ["db", "arch"], scope="p:x")
    [entry] = memory.recall()
    assert entry["id"] == entry_id
    assert entry["category"] == "decision"
    assert entry["content"] == "Use SQLite by default"
    assert entry["source"] == "main"
    assert entry["tags"] == ["db", "arch"]
    assert entry["scope"] == "p:x"
    assert entry["created_at"] == entry["updated_at"]
    assert entry["created_at"].endswith("Z")


def test_tags_any_and_all(memory: recuerdo.Memory) -> None:
    memory.remember("learning", "both", ["a", "b"])
    memory.remember("learning", "only a", ["a"])
    memory.remember("learning", "only b", ["b"])
    memory.remember("learning", "none")
    assert {e["content"] for e in memory.recall(tags=["a", "b"])} == {"both", "only a", "only b"}
    assert [e["content"] for e in memory.recall(tags=["a", "b"], mode="all")] == ["both"]
    assert [e["content"] for e in memory.recall(tags=["a", "b"], mode="ALL")] == ["both"]
    assert len(memory.recall(tags=["a", "b"], mode="whatever")) == 3
    assert memory.recall(tags=["A"]) == []  # tags are case-sensitive


@pytest.mark.parametrize("limit", [1, 2, 200])
def test_a_listing_by_every_tag_is_the_intersection_newest_first(
    memory: recuerdo.Memory, limit: int
) -> None:
    """``mode="all"`` without a search: the entries carrying every tag asked for (a tag asked
    twice counts once), newest first, with ``more`` counting the rest, on every store."""
    tagged: dict[int, set[str]] = {}
    for n in range(40):
        tags = ["a", "b", "c"][: 1 + n % 3] + (["x"] if n % 5 == 0 else [])
        tagged[memory.remember("learning", f"entry {n}", tags)] = set(tags)

    def newest_with(*tags: str) -> list[int]:
        return sorted((i for i, held in tagged.items() if held >= set(tags)), reverse=True)

    for tags in (["a", "b"], ["b", "a", "b"]):
        listed = memory.recall(tags=tags, mode="all", limit=limit)
        assert [e["id"] for e in listed] == newest_with("a", "b")[:limit]
        assert listed.more == max(0, len(newest_with("a", "b")) - limit)
    every = memory.recall(tags=["a", "b", "c", "x"], mode="all")
    assert [e["id"] for e in every] == newest_with("a", "b", "c", "x") != []
    assert memory.recall(tags=["a", "nowhere"], mode="all") == []


def test_a_listing_by_every_tag_reads_the_tags_not_every_entry(
    file_memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ids of the entries carrying every tag come from the tag index, and the entries are
    then looked up by id. Tested entry by entry instead, the listing walked the memory's
    entries newest first until enough carried every tag: 160 ms for two tags among 100,000
    entries (``benchmarks/entries.py``'s kind)."""
    for n in range(30):
        file_memory.remember("learning", f"entry {n}", ["a", "b"] if n % 7 == 0 else ["a"])
    with statements_run(monkeypatch) as seen:
        found = file_memory.recall(tags=["a", "b"], mode="all")
    assert [e["content"] for e in found] == [f"entry {n}" for n in (28, 21, 14, 7, 0)]
    [(sql, params)] = [(sql, p) for sql, p in seen if "listed_id" in sql]
    plan = query_plan(file_memory, sql, params)
    assert any("item_tags_by_tag (tenant=? AND tag=?)" in step for step in plan), plan
    assert any(step.startswith("SEARCH items") and "rowid=?" in step for step in plan), plan


@pytest.mark.parametrize("indexed", [False, True], ids=["above the mark", "indexed"])
def test_an_entry_with_several_of_the_tags_asked_for_is_listed_once(
    memory: recuerdo.Memory, indexed: bool
) -> None:
    """SQLite 3.51 turned the any-tag ``EXISTS`` into a join over the tag index: an entry
    carrying two of the tags asked for came twice from ``recall(search=...)`` and twice into
    ``search``'s candidates (found by a property test, test_properties.py)."""
    plain = memory.remember("learning", "alpha plain")
    both = memory.remember("learning", "alpha both", ["b", "c"])
    one = memory.remember("learning", "alpha one", ["c"])
    if indexed:
        memory._upkeep.drain()  # the substring index now holds them: its own part lists them
    for tags in (["b", "c"], ["c", "b", "x"]):
        assert [e["id"] for e in memory.recall(tags=tags, search="alpha")] == [one, both]
        assert [e["id"] for e in memory.recall(tags=tags, search="alpha", limit=1)] == [one]
        assert [e["id"] for e in memory.recall(tags=tags)] == [one, both]
        found = memory.search("alpha", tags=tags, limit=10)["results"]
        assert sorted(r["id"] for r in found) == sorted([one, both])
    assert plain not in {e["id"] for e in memory.recall(search="alpha", tags=["b", "c"])}


def test_a_batch_keeps_each_entrys_own_tags(memory: recuerdo.Memory) -> None:
    """remember_many writes a batch's tags in one statement after its entries: each tag row
    must still name its own entry (and an entry without tags gets none)."""
    batch = [
        {"category": "learning", "content": f"entry {n}", "tags": [f"t{n}", f"g{n % 2}"][: n % 3]}
        for n in range(12)
    ]
    ids = memory.remember_many(batch)  # type: ignore[arg-type]
    by_id = {entry["id"]: entry for entry in memory.recall(limit=50)}
    assert [by_id[i]["tags"] for i in ids] == [entry["tags"] for entry in batch]
    for n, entry_id in enumerate(ids):
        for tag in batch[n]["tags"]:
            assert entry_id in {e["id"] for e in memory.recall(tags=[tag])}
    assert {e["content"] for e in memory.recall(tags=["g1"])} == {"entry 5", "entry 11"}


@pytest.mark.parametrize("needle", ["MONDAY", "monday", "on Mon", "s", "é", "ÉTÉ", "slow on"])
def test_search_finds_any_substring_in_any_case(memory: recuerdo.Memory, needle: str) -> None:
    memory.remember("learning", "API is slow on Mondays, été compris")
    memory.remember("learning", "unrelated")
    found = memory.recall(search=needle)
    assert [e["content"] for e in found] == ["API is slow on Mondays, été compris"]


def test_free_search_positionally(memory: recuerdo.Memory) -> None:
    memory.remember("learning", "API lenta los lunes", ["api"])
    assert memory.recall(None, None, "lunes")[0]["content"] == "API lenta los lunes"


def test_search_treats_operators_as_text(memory: recuerdo.Memory) -> None:
    memory.remember("learning", 'quote " and NEAR(a b) * - : ^ OR AND')
    for needle in ['"', 'quote "', "NEAR(a", "* -", ": ^ OR"]:
        assert len(memory.recall(search=needle)) == 1, needle


@pytest.mark.parametrize(
    ("limit", "expected"),
    [
        (None, 200),
        (-1, 200),
        (0, 200),
        ("abc", 200),
        ("5", 5),
        (3, 3),
        (2.7, 2),
        (True, 200),
        (500, 250),
        # Found by a hunt over the entries: a number in text other than digits meant 200 (the
        # command line's --limit 2.0 returned everything), an infinite one raised
        # OverflowError, one near 2**63 was refused as out of range.
        ("2.0", 2),
        ("1e1", 10),
        (" 7 ", 7),
        (float("inf"), 200),
        (float("-inf"), 200),
        (float("nan"), 200),
        (2**63 - 1000, 250),
    ],
)
def test_limit_and_its_fallback(file_memory: recuerdo.Memory, limit: Any, expected: int) -> None:
    file_memory.remember_many([{"category": "context", "content": f"n{i}"} for i in range(250)])
    assert len(file_memory.recall(limit=limit)) == expected


def test_newest_first_across_categories(memory: recuerdo.Memory) -> None:
    ids = [memory.remember("context", f"n{i}") for i in range(5)]
    assert [e["id"] for e in memory.recall()] == ids[::-1]


def test_agent_views(memory: recuerdo.Memory) -> None:
    writer = memory.agent("Writer")
    writer.remember("context", "borrador listo")
    analyzer = memory.agent("Analyzer")
    analyzer.remember("context", "cifras revisadas")
    memory.remember("context", "top level")
    assert [e["content"] for e in analyzer.recall()] == ["cifras revisadas"]
    assert [e["content"] for e in analyzer.recall(from_="Writer")] == ["borrador listo"]
    assert len(analyzer.recall(from_="*")) == 3
    assert len(memory.recall()) == 3
    assert [e["content"] for e in memory.recall(from_="main")] == ["top level"]
    assert memory.recall(from_="nobody") == []


def test_forget_and_ids_never_reused(base: Path) -> None:
    mem = recuerdo.open("ids", base_dir=base)
    first = mem.remember("learning", "first")
    newest = mem.remember("learning", "newest")
    assert mem.forget(newest) is True
    assert mem.forget(newest) is False
    assert mem.forget(999_999) is False
    mem.close()
    mem = recuerdo.open("ids", base_dir=base)
    again = mem.remember("learning", "after reopen")
    assert again > newest > first
    assert [e["id"] for e in mem.recall()] == [again, first]
    mem.close()


def test_forget_removes_from_search(memory: recuerdo.Memory) -> None:
    entry_id = memory.remember("learning", "a unique marker zebra-42")
    assert memory.recall(search="zebra-42")
    memory.forget(entry_id)
    assert memory.recall(search="zebra-42") == []
    assert memory.recall(search="ze") == []


def test_remember_many_is_one_transaction(memory: recuerdo.Memory) -> None:
    ids = memory.remember_many(
        [
            {"category": "learning", "content": "a", "tags": ["t"]},
            {"category": "rule", "content": "b"},
        ]
    )
    assert len(ids) == 2 and ids[1] == ids[0] + 1
    assert [e["content"] for e in memory.recall()] == ["b", "a"]


def _statements_of_a_batch(
    memory: recuerdo.Memory, size: int, monkeypatch: pytest.MonkeyPatch
) -> int:
    """How many statements PostgreSQL was sent one by one while a batch of ``size`` entries
    was remembered."""
    from recuerdo.store.postgres.connection import PostgresTx

    with statements_run(monkeypatch, PostgresTx) as sent:
        memory.remember_many([{"category": "context", "content": f"n{i}"} for i in range(size)])
    return len(sent)


def test_a_batch_reaches_postgres_in_as_many_statements_whatever_its_size(
    monkeypatch: pytest.MonkeyPatch, held_upkeep: None
) -> None:
    """A batch's entries go to PostgreSQL together (one pipeline, each row returning its id),
    not one statement and one round trip per entry: 1,300 entries made 1,300 round trips. The
    upkeep is held: its worker's statements, sent meanwhile, were counted with the batch's. So
    is the analysis after a load: the shared store's rows written by earlier tests decide
    which batch crosses its threshold, and its listing of the tables was counted."""
    from recuerdo.store.postgres import PostgresStore

    from .postgres import contract_store

    monkeypatch.setattr(PostgresStore, "grew", lambda self, rows: None)

    with recuerdo.open("batches", store=contract_store(), embedder="none") as memory:
        memory._upkeep.stop(drain=False)  # its timer wakes it too, poked or not
        assert _statements_of_a_batch(memory, 2, monkeypatch) == _statements_of_a_batch(
            memory, 40, monkeypatch
        )
        assert len(memory.recall(limit=100)) == 42


def test_a_batch_gives_each_entry_its_own_id_in_order(memory: recuerdo.Memory) -> None:
    """Across the rows of one statement and across statements (SQLite inserts groups of 100,
    10 and 1 rows), the ids come back in the batch's order, each the id of its own entry."""
    before = memory.remember("context", "before the batch")
    batch = [
        {"category": "context", "content": f"entry {i}", "tags": [f"t{i % 3}"]} for i in range(250)
    ]
    ids = memory.remember_many(batch)
    assert ids == list(range(before + 1, before + 251))
    listed = {entry["id"]: entry for entry in memory.recall(limit=300)}
    for new_id, entry in zip(ids, batch, strict=True):
        assert listed[new_id]["content"] == entry["content"]
        assert listed[new_id]["tags"] == entry["tags"]


@pytest.mark.parametrize("size", [1, 99, 100, 101, 250])
def test_a_batch_reaches_sqlite_in_groups_of_a_hundred_ten_and_one(
    file_memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    """An INSERT a row cost a bulk load about 10 us an entry in calls alone; groups of three
    sizes keep every statement one the connection has prepared."""
    with statements_run(monkeypatch) as seen:
        ids = file_memory.remember_many(
            [{"category": "context", "content": f"n{i}"} for i in range(size)]
        )
    sent = [sql for sql, _ in seen if sql.startswith("INSERT INTO items")]
    assert len(sent) == size // 100 + size % 100 // 10 + size % 10
    assert len(set(sent)) <= 3
    assert [entry["content"] for entry in file_memory.recall(limit=size)] == [
        f"n{i}" for i in reversed(range(size))
    ]
    assert ids == sorted(ids) and len(set(ids)) == size


def test_secrets_are_redacted_on_every_entry_path(memory: recuerdo.Memory) -> None:
    key = "sk-" + "a1B2c3D4e5F6g7H8i9J0kLmN"
    memory.remember("learning", f"the key is {key}", [f"token {key}"])
    memory.remember_many([{"category": "context", "content": "password=hunter2 for the db"}])
    text = repr(memory.recall())
    assert key not in text and "hunter2" not in text
    assert "secret(API)" in text and "secret(PASSWORD)" in text


def test_secret_never_reaches_the_file(file_memory: recuerdo.Memory) -> None:
    key = "ghp_" + "Z" * 36
    file_memory.remember("learning", f"deploy with {key}")
    raw = b"".join(p.read_bytes() for p in Path(file_memory.location).parent.iterdir())
    assert key.encode() not in raw


# -- refusals: named, with the exact message, and nothing stored ------------------------------

REFUSALS: list[tuple[str, Callable[[recuerdo.Memory], Any], str, str]] = [
    (
        "bad category",
        lambda m: m.remember("preferencia", "x"),
        "invalid_category",
        "Invalid memory category: 'preferencia'. Valid categories: preference, rule, learning, "
        "decision, context",
    ),
    ("empty content", lambda m: m.remember("learning", "  "), "empty_content", "content is empty"),
    (
        "non-text content",
        lambda m: m.remember("learning", 42),
        "invalid_input",  # type: ignore[arg-type]
        "content must be text",
    ),
    ("NUL in content", lambda m: m.remember("learning", "a\x00b"), "invalid_input", "NUL"),
    ("lone surrogate", lambda m: m.remember("learning", "a\ud800b"), "invalid_input", "surrogate"),
    (
        "too large",
        lambda m: m.remember("learning", "x" * 70_000),
        "content_too_large",
        "70000 bytes; the limit is 65536 bytes",
    ),
    (
        "empty tag",
        lambda m: m.remember("learning", "x", ["ok", ""]),
        "invalid_tags",
        "every tag must be non-empty",
    ),
    (
        "tag not text",
        lambda m: m.remember("learning", "x", [1]),
        "invalid_tags",  # type: ignore[list-item]
        "every tag must be non-empty",
    ),
    (
        "batch with one bad entry",
        lambda m: m.remember_many(
            [{"category": "learning", "content": "fine"}, {"category": "nope", "content": "bad"}]
        ),
        "invalid_batch",
        "entry 1 refused (invalid_category)",
    ),
    # Each place of a batch a string stands in, past the quick paths that pass plain ASCII text
    # and plain lists and dicts over (0188): a lone surrogate beside other non-ASCII text, in
    # a tag, in an entry's key; a tag or a scope that is not one line.
    *(
        (
            f"batch with a lone surrogate {where}",
            lambda m, entry=entry: m.remember_many(
                [{"category": "learning", "content": "ok"}, entry]
            ),
            "invalid_input",
            "entries holds text that is not valid Unicode (a lone surrogate)",
        )
        for where, entry in [
            ("in its content", {"category": "learning", "content": "caf\u00e9 \ud800"}),
            ("in a tag", {"category": "learning", "content": "c", "tags": ["ok", "t\udfff"]}),
            ("in a key", {"category": "learning", "content": "c", "k\ud800": "v"}),
        ]
    ),
    *(
        (
            f"tag holding {name}",
            lambda m, sign=sign: m.remember_many(
                [{"category": "learning", "content": "c", "tags": ["ok", f"a{sign}b"]}]
            ),
            "invalid_batch",
            "entry 0 refused (invalid_tags): a tag is one line of at most 100 characters",
        )
        for name, sign in [("a line break", "\n"), ("a carriage return", "\r"), ("NUL", "\x00")]
    ),
    *(
        (
            f"scope holding {name}",
            lambda m, sign=sign: m.remember("learning", "c", scope=f"p{sign}q"),
            "invalid_input",
            "scope must be a single line without NUL characters",
        )
        for name, sign in [("a line break", "\n"), ("a carriage return", "\r"), ("NUL", "\x00")]
    ),
    (
        "batch not a list",
        lambda m: m.remember_many("x"),
        "invalid_batch",  # type: ignore[arg-type]
        "entries must be a list",
    ),
    (
        "batch unknown field",
        lambda m: m.remember_many([{"category": "learning", "content": "a", "colour": "red"}]),
        "invalid_batch",
        "unknown fields: ['colour']",
    ),
    (
        "forget non-integer",
        lambda m: m.forget("1"),
        "invalid_input",  # type: ignore[arg-type]
        "an entry id is an integer",
    ),
    (
        "recall bad category",
        lambda m: m.recall("nope"),
        "invalid_category",
        "Invalid memory category: 'nope'",
    ),
    ("agent named star", lambda m: m.agent("*"), "invalid_input", "'*' means every writer"),
    ("blank agent", lambda m: m.agent(" "), "invalid_input", "agent name must be"),
]


@pytest.mark.parametrize(
    ("label", "call", "code", "message"), REFUSALS, ids=[r[0] for r in REFUSALS]
)
def test_refusals_are_named_and_store_nothing(
    file_memory: recuerdo.Memory,
    label: str,
    call: Callable[[recuerdo.Memory], Any],
    code: str,
    message: str,
) -> None:
    file_memory.remember("learning", "already here", ["keep"])
    before_rows = settled_dump(file_memory)
    before_files = tree(Path(file_memory.location).parent.parent)
    with pytest.raises(recuerdo.RecuerdoError) as caught:
        call(file_memory)
    assert caught.value.code == code
    assert message in caught.value.detail
    assert caught.value.to_dict() == {
        "ok": False,
        "error": code,
        "detail": caught.value.detail,
        **caught.value.extra,
    }
    assert settled_dump(file_memory) == before_rows
    assert tree(Path(file_memory.location).parent.parent) == before_files


def test_an_unknown_field_of_any_key_type_is_named(memory: recuerdo.Memory) -> None:
    """A key that is no text raised a raw TypeError (sorting the unknown keys)."""
    with pytest.raises(recuerdo.InvalidBatch) as refused:
        memory.remember_many([{"category": "learning", "content": "c", 1: "x", "zz": 2}])  # type: ignore[misc]
    assert refused.value.code == "invalid_batch" and "'1', 'zz'" in refused.value.detail
    assert memory.recall() == []


@pytest.mark.parametrize("tags", [{"urgent": True}, b"ab", bytearray(b"ab")])
def test_tags_that_are_no_list_of_labels_are_refused(memory: recuerdo.Memory, tags: object) -> None:
    memory.remember("learning", "kept", ["old"])
    before = memory.recall()
    with pytest.raises(recuerdo.InvalidTags) as refused:
        memory.remember("learning", "with odd tags", tags)  # type: ignore[arg-type]
    assert refused.value.code == "invalid_tags"
    assert type(tags).__name__ in refused.value.detail
    with pytest.raises(recuerdo.InvalidTags):
        memory.recall(tags=tags)  # type: ignore[arg-type]
    assert memory.recall() == before


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text()))
def test_the_tags_are_kept_as_json_writes_them(tags: list[str]) -> None:
    """The column is what ``json.dumps(tags, ensure_ascii=False)`` wrote before 0188, written
    without the encoder ``dumps`` made each call."""
    assert tags_json(tags) == json.dumps(tags, ensure_ascii=False)
