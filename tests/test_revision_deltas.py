"""Note history as reverse deltas (``store/revision_deltas.py``, migration
``m019_revision_deltas``): every version reads back exactly, the current text is kept once (on
the item row), a snapshot every 16 versions bounds a read, a broken chain is reported instead of
served, and a store written with every version whole migrates to answers identical to before,
on SQLite and PostgreSQL."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import recuerdo
from recuerdo.store import text_delta
from recuerdo.store.base import Store, Tx
from recuerdo.store.revision_deltas import SNAPSHOT_EVERY
from recuerdo.store.sqlite.connection import SQLiteStore

from .postgres import contract_url, unique_memory

STEP = "m019_revision_deltas"
WORDS = ["ship", "invoice", "schedule", "naïve", "日本語", "route", "amber", "🦊", "delta", "ok"]


def _edits(rng: random.Random, count: int, size: int = 6) -> list[str]:
    """``count`` successive texts of one note: appends, sentence swaps, deletions, rewrites."""
    paragraphs = [" ".join(rng.choices(WORDS, k=rng.randint(8, 20))) for _ in range(size)]
    texts = []
    for _ in range(count):
        move = rng.randrange(5)
        if move == 0:
            paragraphs.append(" ".join(rng.choices(WORDS, k=12)))
        elif move == 1 and len(paragraphs) > 1:
            paragraphs.pop(rng.randrange(len(paragraphs)))
        elif move == 2:
            paragraphs = [" ".join(rng.choices(WORDS, k=10)) for _ in range(3)]
        else:
            at = rng.randrange(len(paragraphs))
            paragraphs[at] = paragraphs[at].replace(rng.choice(WORDS), rng.choice(WORDS), 1)
            paragraphs[at] += f" edit {len(texts)}"
        texts.append("\n\n".join(paragraphs))
    return [t for i, t in enumerate(texts) if i == 0 or t != texts[i - 1]]


def _versions(memory: recuerdo.Memory, count: int, seed: int = 1) -> tuple[int, list[str]]:
    texts = _edits(random.Random(seed), count)
    ids = {memory.save("Living document", text, key="living")["id"] for text in texts}
    assert len(ids) == 1
    return ids.pop(), texts


def test_every_version_reads_back_after_many_edits(memory: recuerdo.Memory) -> None:
    note, texts = _versions(memory, SNAPSHOT_EVERY + 4)
    assert memory.get(note)["version"] == len(texts)
    for version, text in enumerate(texts, start=1):
        assert memory.revision(note, version)["content"] == text
    history = memory.history(note)
    assert [r["version"] for r in history] == list(range(1, len(texts) + 1))
    by_id = memory.revision(note, revision_id=history[2]["revision_id"])
    assert by_id["content"] == texts[2]
    exported = [r for r in memory.export()["records"] if r["record"] == "note"]
    assert [r["content"] for r in exported[0]["revisions"]] == texts


def test_versions_are_kept_as_reverse_deltas(memory: recuerdo.Memory) -> None:
    """The current text is on the item row only; each version row keeps the version before
    it, as a delta, or whole at every 16th version (so a read applies at most 15 deltas)."""
    note, texts = _versions(memory, 2 * SNAPSHOT_EVERY + 3, seed=2)
    with memory._store.read() as tx:
        rows = tx.all(
            "SELECT version, content, previous FROM revisions WHERE tenant = ? AND item_id = ?"
            " ORDER BY version",
            (memory.tenant, note),
        )
    assert [r["content"] for r in rows] == [None] * len(texts)
    assert rows[0]["previous"] is None
    for row in rows[1:]:
        previous = bytes(row["previous"])
        before = texts[row["version"] - 2]
        assert text_delta.apply(previous, texts[row["version"] - 1]) == before
        if (row["version"] - 1) % SNAPSHOT_EVERY == 0:
            assert text_delta.is_whole(previous)
    stored = sum(len(bytes(r["previous"])) for r in rows[1:])
    assert stored < sum(len(t.encode()) for t in texts[:-1]) / 3


def _tamper(memory: recuerdo.Memory, note: int, content: str) -> None:
    with memory._store.write() as tx:
        tx.execute(
            "UPDATE items SET content = ? WHERE tenant = ? AND id = ?",
            (content, memory.tenant, note),
        )


@pytest.mark.parametrize("change", ["longer", "same length"])
def test_a_broken_chain_is_reported_never_served(memory: recuerdo.Memory, change: str) -> None:
    """The item's text changed behind the history's back: an old version cannot be rebuilt,
    and says so (store_damaged), whatever the length of the new text; the current text and
    the history's list still read."""
    texts = ["A long first paragraph about the ship schedule and invoices. " * 3]
    for number in range(4):
        texts.append(f"{texts[-1]}Appended sentence {number}.")
    note = next(memory.save("Appended", text, key="appended")["id"] for text in texts[:1])
    for text in texts[1:]:
        memory.save("Appended", text, key="appended")
    current = texts[-1]
    tampered = current + " extra" if change == "longer" else current[::-1]
    assert len(tampered) != len(current) or change == "same length"
    _tamper(memory, note, tampered)
    with pytest.raises(recuerdo.StoreDamaged) as caught:
        memory.revision(note, 1)
    assert caught.value.code == "store_damaged"
    assert memory.get(note)["content"] == tampered
    assert len(memory.history(note)) == len(texts)


def test_a_delta_that_does_not_decompress_is_reported_never_raised_raw(
    memory: recuerdo.Memory,
) -> None:
    """A compressed delta damaged on disk failed with zlib's own error, past the named one."""
    note = memory.save("Edited", "The first text of a note. " * 20, key="edited")["id"]
    memory.save("Edited", "The second text of the note. " * 20, key="edited")
    with memory._store.write() as tx:
        tx.execute(
            "UPDATE revisions SET previous = ? WHERE tenant = ? AND item_id = ? AND version = 2",
            (bytes([text_delta.COMPRESSED | text_delta.DELTA]) + b"not zlib", memory.tenant, note),
        )
    with pytest.raises(recuerdo.StoreDamaged) as caught:
        memory.revision(note, 1)
    assert caught.value.code == "store_damaged" and "decompress" in str(caught.value)
    with pytest.raises(recuerdo.StoreDamaged):
        memory.export(scope="user")
    assert memory.get(note)["content"] == "The second text of the note. " * 20


# The old layout, as the code before m019 wrote it: every version whole in `content`.


def _old_note(tx: Tx, tenant: str, texts: list[str], *, newest: str | None = None) -> int:
    item = int(
        tx.scalar(
            "INSERT INTO items (tenant, scope, item_type, category, title, content, tags,"
            " source, version, created_at, updated_at) VALUES (?, 'user', 'note', 'manual', ?,"
            " ?, '[]', 'main', ?, 'then', 'then') RETURNING id",
            (tenant, f"Note {texts[0][:10]}", texts[-1] if newest is None else newest, len(texts)),
        )
    )
    for version, text in enumerate(texts, start=1):
        _old_revision(tx, tenant, item, version, "write", text)
    return item


def _old_revision(
    tx: Tx, tenant: str, item: int, version: int | None, operation: str, text: str
) -> None:
    tx.execute(
        "INSERT INTO revisions (tenant, item_id, version, based_on, operation, principal,"
        " title, kind, content, chars_added, chars_removed, content_hash, created_at)"
        " VALUES (?, ?, ?, ?, ?, 'main', 'T', 'manual', ?, 3, 1, ?, ?)",
        (
            tenant,
            item,
            version,
            None if version is not None else 2,
            operation,
            text,
            hashlib.sha256(text.encode()).hexdigest(),
            f"2026-01-01T00:00:{len(text) % 60:02d}.000000Z",
        ),
    )


def _old_layout(tx: Tx) -> dict[str, list[int]]:
    """Notes of two tenants in the old layout: long histories (past two snapshots), one
    version only, big texts, kept-aside revisions (conflict, deletion, restore), a newest
    revision that differs from the item's text, and a gap in the version numbers."""
    rng = random.Random(9)
    notes: dict[str, list[int]] = {}
    for tenant in ("local", "other"):
        made = [
            _old_note(tx, tenant, _edits(rng, 2 * SNAPSHOT_EVERY + 3)),
            _old_note(tx, tenant, ["only one version"]),
            _old_note(tx, tenant, _edits(rng, 5, size=120)),
            _old_note(tx, tenant, ["was", "then", "newest kept"], newest="item text differs"),
        ]
        for operation in ("conflict", "delete", "restore"):
            _old_revision(tx, tenant, made[0], None, operation, f"{operation} text {tenant}")
        gap = _old_note(tx, tenant, ["one", "two"])
        _old_revision(tx, tenant, gap, 4, "write", "four")
        tx.execute(
            "UPDATE items SET version = 4, content = 'four' WHERE tenant = ? AND id = ?",
            (tenant, gap),
        )
        notes[tenant] = [*made, gap]
    return notes


def _answers(memory: recuerdo.Memory, notes: dict[str, list[int]]) -> dict[str, Any]:
    """Everything the history verbs answer about the notes."""
    answers: dict[str, Any] = {}
    for tenant, ids in notes.items():
        view = memory.for_tenant(tenant)
        for note in ids:
            history = view.history(note)
            answers[f"{tenant} {note}"] = history
            for line in history:
                answers[f"{tenant} {note} r{line['revision_id']}"] = view.revision(
                    note, revision_id=line["revision_id"]
                )
                if line["version"] is not None:
                    answers[f"{tenant} {note} v{line['version']}"] = view.revision(
                        note, line["version"]
                    )
    return answers


def _expected(tx: Tx, notes: dict[str, list[int]]) -> dict[str, Any]:
    """What the code before m019 answered: the rows as they were (it read them as stored)."""
    summary = (
        "revision_id",
        "version",
        "operation",
        "principal",
        "created_at",
        "chars_added",
        "chars_removed",
        "content_hash",
        "based_on",
    )
    answers: dict[str, Any] = {}
    for tenant, ids in notes.items():
        for note in ids:
            rows = tx.all(
                "SELECT id AS revision_id, * FROM revisions WHERE tenant = ? AND item_id = ?"
                " ORDER BY id",
                (tenant, note),
            )
            answers[f"{tenant} {note}"] = [{k: r[k] for k in summary} for r in rows]
            for r in rows:
                whole = {
                    **{k: r[k] for k in summary},
                    "title": r["title"],
                    "kind": r["kind"],
                    "content": r["content"],
                }
                answers[f"{tenant} {note} r{r['id']}"] = whole
                if r["version"] is not None:
                    answers[f"{tenant} {note} v{r['version']}"] = whole
    return answers


@pytest.fixture(params=["sqlite", "postgres"])
def older_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    """(a store at the step before m019, a function opening it again at the newest)."""
    if request.param == "sqlite":
        path = str(tmp_path / "old.db")
        names = SQLiteStore(None).schema_steps
        yield SQLiteStore(path, steps=names.index(STEP)), lambda: SQLiteStore(path)
        return
    from recuerdo.store.postgres import PostgresStore
    from recuerdo.store.postgres.schema import SCHEMA

    url, name = contract_url(), unique_memory("deltas")
    older = PostgresStore(url, name, steps=SCHEMA.names().index(STEP))
    opened: list[PostgresStore] = []

    def reopen() -> PostgresStore:
        opened.append(PostgresStore(url, name))
        return opened[-1]

    try:
        yield older, reopen
    finally:
        for store in opened:
            store.close()
        PostgresStore(url, name).drop()


def test_an_older_store_migrates_to_the_same_answers(older_store: tuple[Any, Any]) -> None:
    """Every history, and every revision by version and by id, answers as it did before the
    step; a version written after it keeps every earlier answer."""
    older, reopen = older_store
    with older.write() as tx:
        notes = _old_layout(tx)
        expected = _expected(tx, notes)
    older.close()
    store: Store = reopen()
    memory = recuerdo.open("migrated", store=store)
    try:
        assert _answers(memory, notes) == expected
        with store.read() as tx:
            kept = tx.scalar(
                "SELECT count(*) FROM revisions WHERE version IS NOT NULL AND content IS NOT NULL"
            )
        # Still whole, in each tenant: the newest revision that differs from its item's text,
        # and the version before a gap. Every other version is a delta, or the item's text.
        assert kept == 2 * 2
        first = notes["local"][0]
        versions = [line for line in expected[f"local {first}"] if line["version"] is not None]
        saved = memory.for_tenant("local").edit(first, "append", "Written after.")
        assert saved["version"] == len(versions) + 1
        again = _answers(memory, {"local": [first]})
        earlier = [key for key in expected if key.startswith(f"local {first} ")]
        assert len(again) == 1 + len(earlier) + 2  # the history, and the new version twice
        assert {key: again[key] for key in earlier} == {key: expected[key] for key in earlier}
    finally:
        memory.close()
        store.close()
