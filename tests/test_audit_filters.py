"""A forget of a name finds it in the audit's filters as JSON spells it (decision 0075): a
quote or a backslash escaped, every other character as itself; the step m037 (and recover)
write again the filters that earlier code kept with the characters beyond ASCII escaped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import recuerdo
from recuerdo.core import audit
from recuerdo.store import audit_words
from recuerdo.store.audit_filters import STEP, unescaped
from recuerdo.store.postgres import PostgresStore
from recuerdo.store.sqlite import SQLiteStore
from recuerdo.store.sqlite.recover import recover_file
from recuerdo.store.sqlite.schema import SCHEMA

from .conftest import audit_kept
from .postgres import contract_url, unique_memory
from .test_audit_words import _opened_at

_KEPT: dict[str, Any] = {"scope": "user", "tags": ["harbour"]}
"""Filters no forget below names: their record stays."""
_ESCAPED_BY_OLD_CODE: list[dict[str, Any]] = [
    {"subject": "Émile Zola"},
    {"tags": ["ÉMILE ZOLA", "novels"]},
    {"subject": "東京の港"},
    {"value": "line\u0000break \u00e9"},  # a NUL stays escaped: no store keeps one as text
]


def _record(
    memory: recuerdo.Memory,
    filters: dict[str, Any],
    query: str | None = None,
    tenant: str | None = None,
) -> None:
    memory._audit.record(
        tenant=tenant or memory.tenant,
        principal="p",
        verb="recall",
        query=query,
        filters=filters,
        returned=[],
    )


def _scrub(memory: recuerdo.Memory, *names: str) -> int:
    """The scrub as a forget runs it (``MemoryBase._erasing_write``): the log written first, and
    told of the forget after (or the next records would be taken for another process's, and
    dropped: decision 0085)."""
    memory._audit.flush(memory._store)
    with memory._store.write() as tx:
        removed = audit.scrub(tx, memory.tenant, texts=names)
        counted = audit.forgets(tx, [memory.tenant]).get(memory.tenant, 0)
    memory._audit.forgot(memory.tenant, counted)
    return removed


def test_a_forgotten_value_is_found_in_the_filters_with_its_quotes_and_backslashes(
    memory: recuerdo.Memory,
) -> None:
    """JSON escapes a quote and a backslash in the filters; the query holds them as they are.
    Before 0075 the name was looked for in the filters as the query holds it."""
    _record(memory, {"subject": 'The "Blue" Lagoon'})
    _record(memory, {"path": "C:\\Vault\\Keys"})
    _record(memory, {"subject": 'a "blue" pencil'})  # another name
    _record(memory, _KEPT, query='where is the "blue" lagoon')
    _record(memory, _KEPT, query="c:\\vault\\keys")
    _record(memory, _KEPT, query="the blue lagoon")  # no quotes: not the name
    _record(memory, _KEPT)
    assert _scrub(memory, 'the "blue" lagoon', "C:\\VAULT\\keys") == 4
    left = [(json.loads(f), q) for f, q in zip(_filters(memory), audit_kept(memory), strict=True)]
    assert left == [
        ({"subject": 'a "blue" pencil'}, None),
        (_KEPT, "the blue lagoon"),
        (_KEPT, None),
    ]


def _filters(memory: recuerdo.Memory) -> list[str]:
    return audit_kept(memory, "filters")


_TENANTS = ("zeta", "local", "alpha")
"""Tenants whose records interleave in either store's key order (SQLite's id, PostgreSQL's
tenant and id)."""


def _every_filters(memory: recuerdo.Memory) -> list[tuple[str, str]]:
    with memory._store.read() as tx:
        rows = tx.all(
            "SELECT tenant, filters FROM retrieval_audit /* every tenant */"
            " WHERE scrubbed = 0 ORDER BY tenant, id"
        )
    return [(row["tenant"], row["filters"]) for row in rows]


def _escape_as_old_code_did(memory: recuerdo.Memory) -> list[tuple[str, str]]:
    """Each record's filters, in every tenant, as the code before 66a4649 wrote them
    (``json.dumps`` escaping every character beyond ASCII); what was written."""
    memory._audit.flush(memory._store)
    with memory._store.write() as tx:
        rows = tx.all("SELECT tenant, id, filters FROM retrieval_audit /* every tenant */")
        for row in rows:
            tx.execute(
                "UPDATE retrieval_audit /* every tenant */ SET filters = ?"
                " WHERE tenant = ? AND id = ?",
                (json.dumps(json.loads(row["filters"])), row["tenant"], row["id"]),
            )
    return _every_filters(memory)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_the_step_writes_escaped_filters_again_and_a_forget_then_finds_the_name(
    base: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In every tenant, across the step's batches (two records each here)."""
    name = unique_memory("filters")
    written = [(tenant, f) for f in (*_ESCAPED_BY_OLD_CODE, _KEPT) for tenant in _TENANTS]
    try:
        with _opened_at(kind, base, name, SCHEMA.names().index(STEP)) as memory:
            for tenant, filters in written:
                _record(memory, filters, query="what was asked", tenant=tenant)
            old = _escape_as_old_code_did(memory)
            assert ("local", '{"subject": "\\u00c9mile Zola"}') in old
            assert _scrub(memory, "émile zola") == 0  # the gap: escaped, the name is not there
        monkeypatch.setattr(audit_words, "BACKFILL_BATCH", 2)
        with _opened_at(kind, base, name, None) as memory:
            now = _every_filters(memory)
            assert now == sorted(
                ((t, json.dumps(f, ensure_ascii=False)) for t, f in written), key=_written_order
            )
            assert [json.loads(f) for _, f in now] == [json.loads(f) for _, f in old]
            assert audit_kept(memory) == ["what was asked"] * 5  # nothing else moved
            assert _scrub(memory, "émile zola", "東京の港") == 3
            assert _filters(memory) == [
                json.dumps(f, ensure_ascii=False) for f in (_ESCAPED_BY_OLD_CODE[3], _KEPT)
            ]
            assert "\\u0000" in _filters(memory)[0]  # a NUL stays escaped
    finally:
        if kind == "postgres":
            PostgresStore(contract_url(), name).drop()


def _written_order(row: tuple[str, str]) -> tuple[str, int]:
    """A record's place in :func:`_every_filters` (by tenant, then as written)."""
    tenant, filters = row
    return tenant, [
        json.dumps(f, ensure_ascii=False) for f in (*_ESCAPED_BY_OLD_CODE, _KEPT)
    ].index(filters)


def test_recover_writes_again_the_escaped_filters_it_copies(base: Path) -> None:
    """A damaged file from before the step keeps its records escaped; recover copies every row
    as it reads it, into a store at the current schema, which the step never reaches."""
    with _opened_at("sqlite", base, "", SCHEMA.names().index(STEP)) as memory:
        _record(memory, {"subject": "Émile Zola"}, query="what was asked")
        _escape_as_old_code_did(memory)
    recover_file(base / "old.db", base / "recovered.db")
    store = SQLiteStore(str(base / "recovered.db"))
    try:
        with recuerdo.open("recovered", store=store, embedder="none") as memory:
            assert _filters(memory) == ['{"subject": "Émile Zola"}']
            assert _scrub(memory, "ÉMILE ZOLA") == 1
    finally:
        store.close()


_TEXT = st.lists(
    # Lone surrogates drawn often: st.text() never draws one, whatever its alphabet.
    st.sampled_from('a\u00e9\ud800\udc00\x00"\\\U0001f600') | st.characters(exclude_categories=()),
    max_size=8,
).map("".join)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=8,
)


@given(value=st.dictionaries(_TEXT, _JSON, max_size=4), ascii_only=st.booleans())
def test_unescaped_filters_mean_what_they_meant(value: dict[str, Any], ascii_only: bool) -> None:
    """The step's rewrite of one record: the same JSON value, spelled as the audit writes it
    now; filters it cannot write as UTF-8 text (a lone surrogate) stay as they were."""
    written = json.dumps(value, ensure_ascii=ascii_only)
    result = unescaped(written)
    read = json.loads(written)  # an escaped pair of surrogates reads as one character
    assert json.loads(result) == read
    try:
        json.dumps(read, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        assert result == written
    else:
        assert result == json.dumps(read, ensure_ascii=False)


@pytest.mark.parametrize(
    ("filters", "written"),
    [
        ('{"a": "\\ud83d\\ude00 \\u00e9"}', '{"a": "\U0001f600 \u00e9"}'),  # a pair: one character
        ('{"a": "\\ud800 \\u00e9"}', '{"a": "\\ud800 \\u00e9"}'),  # a lone surrogate: as it was
        ("{not json \\u00e9", "{not json \\u00e9"),
        ('{"a": "\\u00e9', '{"a": "\\u00e9'),
        ("[" * 100_000 + '"\\u00e9"' + "]" * 100_000, "[" * 100_000 + '"\\u00e9"' + "]" * 100_000),
        ("", ""),
    ],
)
def test_filters_that_cannot_be_written_as_text_stay_as_they_are(
    filters: str, written: str
) -> None:
    assert unescaped(filters) == written


def test_a_name_written_as_the_record_wrote_it_is_found_on_every_store(
    memory: recuerdo.Memory,
) -> None:
    """PostgreSQL lowers a final sigma and a dotted capital I otherwise than Python: the name
    lowered in Python was missed there in records that quote it in its very case (0075)."""
    for quoted in ("ΟΔΟΣ Σταδίου", "İstanbul port"):
        _record(memory, {"subject": quoted})
        _record(memory, _KEPT, query=f"where is {quoted}")
    _record(memory, _KEPT, query="plain")
    assert _scrub(memory, "ΟΔΟΣ", "İstanbul") == 4
    assert audit_kept(memory) == ["plain"]


def _damage_filters(memory: recuerdo.Memory, filters: str) -> None:
    """Give the newest record ``filters`` that are no JSON (a damaged file's, recovered)."""
    memory._audit.flush(memory._store)
    with memory._store.write() as tx:
        newest = tx.scalar("SELECT max(id) FROM retrieval_audit WHERE tenant = ?", (memory.tenant,))
        tx.execute(
            "UPDATE retrieval_audit SET filters = ? WHERE tenant = ? AND id = ?",
            (filters, memory.tenant, newest),
        )


def test_a_name_is_looked_for_in_the_filters_texts_not_in_their_keys_numbers_or_escapes(
    memory: recuerdo.Memory,
) -> None:
    """Before, the name was looked for in the filters' JSON text: a forget of "scope" dropped
    every record (each names the key), of "100" every record listing a hundred, and of
    "there" a record asking for a tab and "here" (``\\there``)."""
    keys_and_numbers = {"scope": "user", "tags": ["harbour"], "limit": 100, "mode": "all"}
    _record(memory, keys_and_numbers)
    _record(memory, {"subject": "the\there"})
    _record(memory, {"tags": ["x", "Scope creep"]})  # a text in a list: dropped
    _record(memory, {"subject": "line\u0000break, then scope"})  # after a NUL: dropped
    _record(memory, _KEPT, query="what is the SCOPE of it")  # the query: dropped
    _record(memory, _KEPT, query="damaged")
    _damage_filters(memory, '{"subject": "scope", "cut')  # no JSON: dropped by its text
    assert _scrub(memory, "Scope", "LIMIT", "100", "tags", "there") == 4
    assert [json.loads(f) for f in _filters(memory)] == [keys_and_numbers, {"subject": "the\there"}]


@pytest.mark.parametrize(
    ("filters", "name"),
    [
        ('{"a": "\\ud800 émile"}', "ÉMILE"),  # a lone surrogate, left escaped by m037
        ('{"a": "\\ud800", "b": "Émile Zola"}', "émile"),
        ('{"a": "the scope", "a": "x"}', "Scope"),  # a key given twice
        ('{"a": {"b": ["x", {"c": "the SCOPE"}]}}', "scope"),  # objects in objects
    ],
)
def test_filters_the_audit_did_not_write_so_are_dropped_when_a_text_of_them_quotes_the_name(
    memory: recuerdo.Memory, filters: str, name: str
) -> None:
    """Found by the review of 0077: SQLite read a lone surrogate as bytes its folding could
    not read (the record kept, or the forget failed), and Python's JSON reader keeps the last
    value of a key given twice."""
    _record(memory, {"subject": "other"}, query="quoted")
    _damage_filters(memory, filters)
    _record(memory, {"subject": "other"}, query="kept")
    assert _scrub(memory, name) == 1
    assert audit_kept(memory) == ["kept"]


_WORDS = st.text(alphabet='abtAB1 \t"\\', min_size=0, max_size=8)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    kept=st.lists(
        st.dictionaries(
            st.sampled_from(["aba", "bab", "abab"]),  # not "scope": a column of its own
            st.one_of(st.integers(100, 111), _WORDS, st.lists(_WORDS, max_size=3)),
            max_size=3,
        ),
        min_size=1,
        max_size=4,
    ),
    # A key, a number, an escape's letter and what follows it ("\\tab"), or any name.
    name=st.sampled_from(["ABA", "bab", "101", "tab"])
    | st.text(alphabet='abtAB1\t"\\', min_size=3, max_size=3),
)
def test_a_record_is_dropped_when_a_text_of_its_filters_holds_the_name(
    memory: recuerdo.Memory, kept: list[dict[str, Any]], name: str
) -> None:
    """Against a model: a text among the filters' values (in a list too), in any case; never
    a key, a number or JSON's spelling of a text."""
    memory._audit.flush(memory._store)
    with memory._store.write() as tx:
        tx.execute("DELETE FROM retrieval_audit WHERE tenant = ?", (memory.tenant,))
    for filters in kept:
        _record(memory, filters)

    def texts(value: Any) -> list[str]:
        return [value] if isinstance(value, str) else [t for v in value for t in texts(v)]

    named = name.strip()  # as a forget names it: a name of under three letters names none
    expected = [
        f
        for f in kept
        if len(named) < audit.MIN_SCRUB_CHARS
        or not any(
            named.lower() in text.lower()
            for value in f.values()
            if not isinstance(value, int)
            for text in texts(value)
        )
    ]
    _scrub(memory, name)
    assert [json.loads(f) for f in _filters(memory)] == expected
