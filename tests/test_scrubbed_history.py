"""An edit whose redaction takes out a credential the note already held (stored by an older
release, or missed by an older guard) scrubs it from every earlier version too: the delta
chain is written again with the redacted texts and their hashes, the journal says so, and the
audit and the words index keep nothing of it (decision 0150)."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import recuerdo
from recuerdo.core.clock import now_iso
from recuerdo.core.secrets import redact_whole
from recuerdo.errors import FindNotFound, VersionConflict
from recuerdo.store.revision_deltas import SNAPSHOT_EVERY

VALUE = "hunter2hunter2"
KEY = "Ferry-ops"


@contextmanager
def _older_release(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Writes as a release whose guard missed the password stored them."""
    import recuerdo.facade

    with monkeypatch.context() as unguarded:
        unguarded.setattr(recuerdo.facade, "redact_call", lambda arguments, found=None: arguments)
        yield


def _text(n: int) -> str:
    return f"Ferry ops step {n}\ndb: pg\npassword = {VALUE}\n\nharbour ferry steps {n}"


def _planted(memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch, versions: int) -> int:
    """A keyed note of ``versions`` versions, each holding the password in clear."""
    with _older_release(monkeypatch):
        for n in range(1, versions + 1):
            note = memory.save("Ferry ops", _text(n), key=KEY)["id"]
    assert memory.get(note)["version"] == versions
    return note


def _versions(memory: recuerdo.Memory, note: int) -> dict[int, dict[str, Any]]:
    return {
        r["version"]: memory.revision(note, version=r["version"])
        for r in memory.history(note)
        if r["version"] is not None
    }


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize("versions", [1, 3, SNAPSHOT_EVERY + 3])
def test_every_earlier_version_is_scrubbed_and_verifies(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch, versions: int
) -> None:
    note = _planted(memory, monkeypatch, versions)
    edited = memory.edit(note, "append", "more steps")
    assert edited["redacted"] == {"content": ["PASSWORD"]}
    read = _versions(memory, note)
    assert sorted(read) == list(range(1, versions + 2))
    for version in range(1, versions + 1):
        assert read[version]["content"] == redact_whole(_text(version)).text
        assert read[version]["content_hash"] == _sha(read[version]["content"])
    assert VALUE not in json.dumps([memory.history(note), read])


def test_the_journal_records_the_scrub(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    note = _planted(memory, monkeypatch, 3)
    memory.edit(note, "append", "more steps")
    lines = [line for line in memory.journal() if line["item_id"] == note]
    assert [(line["operation"], line["version"]) for line in lines[:2]] == [
        ("edit", 4),
        ("scrub", 3),
    ]
    assert lines[1]["chars_removed"] > 0


def test_deletions_and_restores_kept_whole_are_scrubbed(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    note = _planted(memory, monkeypatch, 2)
    memory.delete(note)
    memory.restore(note)
    memory.edit(note, "append", "more steps")
    kept = [r for r in memory.history(note) if r["version"] is None]
    assert [r["operation"] for r in kept] == ["delete", "restore"]
    for row in kept:
        whole = memory.revision(note, revision_id=row["revision_id"])
        assert VALUE not in whole["content"] and whole["content_hash"] == _sha(whole["content"])


def test_export_search_and_audit_keep_nothing_of_it(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    note = _planted(memory, monkeypatch, 3)
    memory._upkeep.drain()
    assert memory.search(VALUE)["results"]
    assert any(VALUE in json.dumps(record) for record in memory.audit())
    memory.edit(note, "append", "more steps")
    memory._upkeep.drain()
    assert not any(VALUE in json.dumps(record) for record in memory.audit())
    assert not memory.search(VALUE)["results"]
    exported = memory.export(scope=memory.get(note)["scope"])
    assert "Ferry ops" in json.dumps(exported) and VALUE not in json.dumps(exported)


def test_ask_at_an_earlier_instant_cites_the_scrubbed_version(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    note = _planted(memory, monkeypatch, 2)
    time.sleep(0.01)
    then = now_iso()
    time.sleep(0.01)
    memory.edit(note, "append", "more steps")
    memory._upkeep.drain()
    answer = memory.ask("harbour ferry steps", as_of=then)
    [passage] = [p for p in answer["passages"] if p["doc_id"] == note]
    assert "earlier_texts_withheld" not in answer  # answered from the scrubbed version
    citation = passage["citation"]
    assert citation["span_state"] == "verified" and citation["source"]["version"] == 2
    span = citation["span"]
    whole = memory.revision(note, version=2)["content"]
    assert whole[span["start"] : span["end"]] == span["text"] and VALUE not in json.dumps(passage)


def test_an_edit_redacting_only_its_own_content_scrubs_nothing(
    memory: recuerdo.Memory,
) -> None:
    note = memory.save("Ferry ops", "harbour ferry steps")["id"]
    memory.edit(note, "append", "more steps")
    before = memory.history(note)
    edited = memory.edit(note, "append", f"password = {VALUE}")
    assert edited["redacted"] == {"content": ["PASSWORD"]}
    assert memory.history(note)[:2] == before
    assert "scrub" not in {line["operation"] for line in memory.journal()}


def _unchanged(memory: recuerdo.Memory, note: int, versions: int) -> None:
    read = _versions(memory, note)
    assert sorted(read) == list(range(1, versions + 1))  # and no version written
    assert [read[v]["content"] for v in range(1, versions + 1)] == [
        _text(v) for v in range(1, versions + 1)
    ]
    assert "scrub" not in {line["operation"] for line in memory.journal()}


def test_refused_edits_scrub_nothing(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    note = _planted(memory, monkeypatch, 3)
    with pytest.raises(VersionConflict):
        memory.edit(note, "append", "more steps", version_token="stale")
    with pytest.raises(FindNotFound):
        memory.edit(note, "find_replace", "x", find="no such text")
    _unchanged(memory, note, 3)


def test_a_scrub_is_undone_with_the_edit_that_failed(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One transaction: a failure after the history was rewritten leaves it as it was."""
    import recuerdo.notes.lifecycle

    note = _planted(memory, monkeypatch, SNAPSHOT_EVERY + 2)

    def failing(*args: object, **kwargs: object) -> None:
        raise RuntimeError("crash after the scrub")

    with monkeypatch.context() as broken:
        broken.setattr(recuerdo.notes.lifecycle, "write_version", failing)
        with pytest.raises(RuntimeError):
            memory.edit(note, "append", "more steps")
    _unchanged(memory, note, SNAPSHOT_EVERY + 2)
    assert memory.get(note)["content"] == _text(SNAPSHOT_EVERY + 2)


def test_remember_about_scrubs_the_category_notes_earlier_versions(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    import recuerdo.notes.categories
    from recuerdo.core.secrets import Redaction

    with _older_release(monkeypatch), monkeypatch.context() as unguarded:
        unguarded.setattr(
            recuerdo.notes.categories, "redact_joined", lambda whole, *_: Redaction(whole, ())
        )
        first = memory.remember_about("user", f"db: pg\npassword = {VALUE}", category="infra")
        memory.remember_about("user", "uses the harbour ferry", category="infra")
    note = first["note_id"]
    assert VALUE in memory.get(note)["content"]
    appended = memory.remember_about("user", "prefers tea", category="infra")
    assert appended["redacted"] == {"observation": ["PASSWORD"]}
    read = _versions(memory, note)
    assert sorted(read) == [1, 2, 3] and VALUE not in json.dumps(read)
    assert all(r["content_hash"] == _sha(r["content"]) for r in read.values())
    assert "scrub" in {line["operation"] for line in memory.journal()}


def test_no_byte_of_it_stays_in_the_files(base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The revision rows were updated in place: the erasing write and the reclaim after it
    leave no page, in the file or its log, with the old text (SQLite file store)."""
    memory = recuerdo.open("scrubbed", base_dir=base)
    try:
        note = _planted(memory, monkeypatch, SNAPSHOT_EVERY + 2)
        memory._upkeep.drain()
        memory._store.reclaim()
        assert _on_disk(base)  # the check can see it
        memory.edit(note, "append", "more steps")
        memory._upkeep.drain()
        assert not _on_disk(base)
    finally:
        memory.close()
    assert not _on_disk(base)


def _on_disk(folder: Path) -> list[str]:
    return [p.name for p in folder.rglob("*") if p.is_file() and VALUE.encode() in p.read_bytes()]


def test_no_byte_of_it_stays_when_the_edit_returns(
    base: Path, monkeypatch: pytest.MonkeyPatch, held_upkeep: None
) -> None:
    """Not left to the upkeep either: the re-cut kept the old chunks' words, in clear, as stale
    until the upkeep erased them (SQLite, ``store/sqlite/stale_words.py``); the scrub's erasing
    write takes them at once, as a forget of a passage does."""
    memory = recuerdo.open("scrubbed", base_dir=base)
    try:
        note = _planted(memory, monkeypatch, 2)
        memory._upkeep.drain()
        memory._store.reclaim()
        assert _on_disk(base)
        memory.edit(note, "append", "more steps")
        assert not _on_disk(base)
    finally:
        memory.close()
