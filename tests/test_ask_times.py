"""ask at an instant: as_of reads what the memory knew then (a note edited since answers with
its text of then, found by its words of then), valid_at what was true then (a note said before
and edited since is kept, with the text in force then); a soft-deleted note was known, an
erased one never comes back; an as_of later than now is refused by name (decision 0129)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import recuerdo
from recuerdo.core.clock import AHEAD_ALLOWED, now_iso, to_iso

DAWN = "The harbour ferry leaves at dawn from the north quay."
NOON = "The harbour ferry leaves at noon from the south pier."


def _note(memory: recuerdo.Memory) -> tuple[int, str]:
    """A note, and an instant after it was written and before anything else happens."""
    note = memory.save("Ferry", DAWN)["id"]
    time.sleep(0.01)
    then = now_iso()
    time.sleep(0.01)
    return note, then


def _edited(memory: recuerdo.Memory) -> tuple[int, str]:
    note, then = _note(memory)
    memory.edit(note, "replace", NOON, title="Ferry times")
    memory._upkeep.drain()
    return note, then


def _passages(answer: Any, note: int) -> list[dict[str, Any]]:
    return [p for p in answer["passages"] if p["doc_id"] == note]


def _cited_as_answered(memory: recuerdo.Memory, passage: dict[str, Any], version: int) -> None:
    """The citation quotes the text answered, at its place in the version it names."""
    citation = passage["citation"]
    assert citation["span_state"] == "verified"
    assert citation["source"]["version"] == version
    span = citation["span"]
    assert span["text"] == passage["text"]
    whole = memory.revision(passage["doc_id"], version=version)["content"]
    assert whole[span["start"] : span["end"]] == span["text"]


@pytest.mark.parametrize("field", ["as_of", "valid_at"])
def test_a_note_edited_since_answers_with_its_text_then(
    memory: recuerdo.Memory, field: str
) -> None:
    note, then = _edited(memory)
    [now] = _passages(memory.ask("harbour ferry"), note)
    assert "noon" in now["text"] and "version" not in now["citation"]["source"]
    [passage] = _passages(memory.ask("harbour ferry", **{field: then}), note)
    assert "dawn" in passage["text"] and "noon" not in passage["text"]
    _cited_as_answered(memory, passage, 1)
    assert passage["citation"]["source"]["name"] == "Ferry"  # its title then


@pytest.mark.parametrize("field", ["as_of", "valid_at"])
def test_a_note_is_found_by_its_words_then_not_by_later_ones(
    memory: recuerdo.Memory, field: str
) -> None:
    note, then = _edited(memory)
    [passage] = _passages(memory.ask("quay", **{field: then}), note)
    assert "north quay" in passage["text"]
    assert _passages(memory.ask("pier", **{field: then}), note) == []


def test_compact_cites_the_version_read(memory: recuerdo.Memory) -> None:
    _, then = _edited(memory)
    [item] = [p for p in memory.ask("quay", as_of=then, compact=True)["passages"]]
    assert "dawn" in item["text"] and item["cite"]["version"] == 1


def test_as_of_leaves_out_a_note_written_later(memory: recuerdo.Memory) -> None:
    _, then = _note(memory)
    later = memory.save("Ferry fares", "The harbour ferry costs two coins.")["id"]
    memory._upkeep.drain()
    assert _passages(memory.ask("harbour ferry coins", as_of=then), later) == []
    assert _passages(memory.ask("harbour ferry coins"), later) != []


def test_as_of_keeps_a_note_soft_deleted_since_valid_at_does_not(
    memory: recuerdo.Memory,
) -> None:
    note, then = _note(memory)
    memory.delete(note)
    memory._upkeep.drain()
    assert _passages(memory.ask("harbour ferry"), note) == []
    [passage] = _passages(memory.ask("harbour ferry", as_of=then), note)
    assert passage["text"] == DAWN
    # What is true does not depend on when it was learnt: a note taken back is not.
    assert _passages(memory.ask("harbour ferry", valid_at=then), note) == []
    time.sleep(0.01)
    after = now_iso()
    assert _passages(memory.ask("harbour ferry", as_of=after), note) == []


def test_a_note_deleted_then_is_left_out_though_restored_since(memory: recuerdo.Memory) -> None:
    note = memory.save("Ferry", DAWN)["id"]
    memory.delete(note)
    time.sleep(0.01)
    then = now_iso()
    time.sleep(0.01)
    memory.restore(note)
    memory._upkeep.drain()
    assert _passages(memory.ask("harbour ferry"), note) != []
    assert _passages(memory.ask("harbour ferry", as_of=then), note) == []


@pytest.mark.parametrize("edited", [False, True])
def test_an_erased_note_never_comes_back(memory: recuerdo.Memory, edited: bool) -> None:
    note, then = _edited(memory) if edited else _note(memory)
    memory.delete(note, hard=True)
    memory._upkeep.drain()
    for field in ("as_of", "valid_at"):
        answer = memory.ask("harbour ferry quay pier", **{field: then})
        assert _passages(answer, note) == []
        assert "dawn" not in str(answer) and "noon" not in str(answer)


def test_an_as_of_later_than_now_is_refused_by_name(memory: recuerdo.Memory) -> None:
    _note(memory)
    audited = len(memory.audit(limit=1000))
    with pytest.raises(recuerdo.InvalidInput) as refused:
        memory.ask("harbour", as_of="2999-01-01T00:00:00Z")
    assert refused.value.code == "invalid_input" and "as_of" in str(refused.value)
    with pytest.raises(recuerdo.InvalidInput) as refused:
        memory.about("Ferry", as_of="2999-01-01T00:00:00Z")
    assert refused.value.code == "invalid_input" and "as_of" in str(refused.value)
    assert len(memory.audit(limit=1000)) == audited
    # What will be true is a fair question: a fact may be valid from a future date.
    assert memory.ask("harbour", valid_at="2999-01-01T00:00:00Z")["valid_at"].startswith("2999")


@pytest.mark.parametrize("ahead", [timedelta(seconds=1), timedelta(seconds=90)])
def test_an_as_of_a_callers_clock_put_a_little_ahead_reads_now(
    memory: recuerdo.Memory, ahead: timedelta
) -> None:
    """A client asking "as of now" by its own clock, a second or a minute ahead of the
    server's, was refused (decision 0165): it reads now, and the reply names the instant read,
    which asked again gives the same answer."""
    note, _ = _note(memory)
    memory._upkeep.drain()
    before = now_iso()
    asked = to_iso(datetime.now(UTC) + ahead)
    answer = memory.ask("harbour ferry quay pier", as_of=asked)
    assert before <= answer["as_of"] < asked
    assert _passages(answer, note) != []
    about = memory.about("Ferry", as_of=asked)
    assert before <= about["as_of"] < asked
    again = memory.ask("harbour ferry quay pier", as_of=answer["as_of"])
    assert _passages(again, note) == _passages(answer, note)


@pytest.mark.parametrize("ahead", [AHEAD_ALLOWED + timedelta(seconds=30), timedelta(days=1)])
def test_an_as_of_further_ahead_is_refused_with_how_far(
    memory: recuerdo.Memory, ahead: timedelta
) -> None:
    _note(memory)
    audited = len(memory.audit(limit=1000))
    with pytest.raises(recuerdo.InvalidInput) as refused:
        memory.ask("harbour", as_of=to_iso(datetime.now(UTC) + ahead))
    assert refused.value.code == "invalid_input" and "s ahead of" in str(refused.value)
    assert len(memory.audit(limit=1000)) == audited


@pytest.mark.parametrize("field", ["as_of", "valid_at"])
@pytest.mark.parametrize("value", ["yesterday", "2024-13-01", 20240101, ""])
def test_a_time_that_is_not_one_is_refused_by_name(
    memory: recuerdo.Memory, field: str, value: object
) -> None:
    with pytest.raises(recuerdo.InvalidInput) as refused:
        memory.ask("harbour", **{field: value})  # type: ignore[arg-type]
    assert refused.value.code == "invalid_input" and field in str(refused.value)


@pytest.mark.parametrize("field", ["as_of", "valid_at"])
def test_the_version_read_is_the_newest_written_by_then(
    memory: recuerdo.Memory, field: str
) -> None:
    note, _ = _note(memory)
    memory.edit(note, "append", " Tickets are sold on board.")
    time.sleep(0.01)
    then = now_iso()
    time.sleep(0.01)
    memory.edit(note, "replace", NOON)
    memory._upkeep.drain()
    [passage] = _passages(memory.ask("ferry tickets", **{field: then}), note)
    assert "Tickets are sold" in passage["text"] and "noon" not in passage["text"]
    _cited_as_answered(memory, passage, 2)


def test_notes_changed_beyond_the_reread_limit_are_counted(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from recuerdo.retrieval import then as then_module

    notes = [
        memory.save(f"Ferry {n}", DAWN.replace("north", f"quay {n} north"))["id"] for n in range(4)
    ]
    time.sleep(0.01)
    then = now_iso()
    time.sleep(0.01)
    for note in notes:
        memory.edit(note, "replace", NOON)
    memory._upkeep.drain()
    monkeypatch.setattr(then_module, "REREAD_LIMIT", 2)
    answer = memory.ask("harbour ferry", as_of=then)
    assert answer["earlier_texts_unread"] == 2
    # Each one answered, read again or not, says what it said then.
    assert {p["doc_id"] for p in answer["passages"]} == set(notes)
    assert all("dawn" in p["text"] for p in answer["passages"])
    assert "earlier_texts_unread" not in memory.ask("harbour ferry", as_of=now_iso())


def test_a_version_read_across_the_kept_snapshots(memory: recuerdo.Memory) -> None:
    """Twenty edits since: the chain down to version 1 passes a version kept whole (every
    sixteenth) and deltas on both sides of it."""
    note, then = _note(memory)
    for n in range(20):
        memory.edit(note, "replace", f"{NOON} Edit {n}.")
    memory._upkeep.drain()
    [passage] = _passages(memory.ask("quay", as_of=then), note)
    assert passage["text"] == DAWN
    _cited_as_answered(memory, passage, 1)


def test_both_instants_read_the_version_of_the_earlier(memory: recuerdo.Memory) -> None:
    note, true_then = _note(memory)
    memory.edit(note, "append", " Tickets are sold on board.")
    time.sleep(0.01)
    known_then = now_iso()
    time.sleep(0.01)
    memory.edit(note, "replace", NOON)
    memory._upkeep.drain()
    [passage] = _passages(memory.ask("ferry quay", as_of=known_then, valid_at=true_then), note)
    assert passage["text"] == DAWN
    _cited_as_answered(memory, passage, 1)


def test_both_instants_leave_out_a_note_deleted_when_known(memory: recuerdo.Memory) -> None:
    note, true_then = _note(memory)
    memory.delete(note)
    time.sleep(0.01)
    known_then = now_iso()
    time.sleep(0.01)
    memory.restore(note)
    memory._upkeep.drain()
    assert _passages(memory.ask("ferry", as_of=true_then, valid_at=true_then), note) != []
    assert _passages(memory.ask("ferry", as_of=known_then, valid_at=true_then), note) == []


ALL_WORDS = "The violin lesson is on tuesday at the school."
ONE_WORD = "Bring the violin to the car."


@pytest.mark.parametrize("field", ["as_of", "valid_at"])
@pytest.mark.parametrize("changed", ["all_words", "one_word"])
def test_a_note_read_in_its_words_then_ranks_where_its_words_place_it(
    memory: recuerdo.Memory, field: str, changed: str
) -> None:
    """A note read again in its words of then joins the words stage's ranking where its
    words place it: one question word of three does not tie with the stage's best match
    (it was ranked first of its own list), and all three rank above a note holding one."""
    strong = memory.save("A", ALL_WORDS)["id"]
    weak = memory.save("B", ONE_WORD)["id"]
    other = memory.save("C", "Tuesday brings the violin lesson again, at the school.")["id"]
    time.sleep(0.01)
    then = now_iso()
    time.sleep(0.01)
    memory.edit(strong if changed == "all_words" else weak, "replace", "Sell the old guitar.")
    memory._upkeep.drain()
    found = [p["doc_id"] for p in memory.ask("violin lesson tuesday", **{field: then})["passages"]]
    assert set(found[:2]) == {strong, other} and found[2] == weak


def _saved_past_the_guard(memory: recuerdo.Memory, title: str, content: str) -> int:
    """A note as a release whose guard missed its credential stored it (the guard's rules
    grew over releases: decisions 0041, 0080): written below the verbs' door."""
    from recuerdo.notes import operations as notes_ops

    with memory._write() as tx:
        saved = notes_ops.save(
            tx,
            tenant=memory.tenant,
            principal=memory.principal,
            title=title,
            content=content,
            kind=None,
            scope=None,
            key=None,
            session=None,
            expected_version=None,
            tags=None,
            strict=False,
        )
    assert not isinstance(saved, notes_ops.ConflictKept)
    return int(saved["id"])


@pytest.mark.parametrize("field", ["as_of", "valid_at"])
def test_a_credential_a_later_edit_redacted_is_not_answered_from_an_earlier_version(
    memory: recuerdo.Memory, field: str
) -> None:
    """A credential an older guard let through, replaced away by a later edit (no redaction,
    so no scrub of the earlier versions, decision 0150), stays in the earlier version. An
    answer at an instant before the edit leaves that version out, and counts it, rather than
    give the credential back."""
    note = _saved_past_the_guard(
        memory, "Staging database", "Staging database login: password = Hunter2Zx81q"
    )
    kept = memory.save("Staging steps", "Staging database: run the migrations first.")["id"]
    time.sleep(0.01)
    then = now_iso()
    time.sleep(0.01)
    edited = memory.edit(note, "replace", "Staging database login: rotated every month.")
    assert not edited["redacted"] and "Hunter2" in memory.revision(note, 1)["content"]
    memory._upkeep.drain()
    answer = memory.ask("staging database", **{field: then})
    assert "Hunter2" not in str(answer)
    assert _passages(answer, note) == [] and _passages(answer, kept) != []
    assert answer["earlier_texts_withheld"] == 1
    assert "earlier_texts_withheld" not in memory.ask("staging database")
    assert "earlier_texts_withheld" not in memory.ask("migrations", **{field: then})


def test_an_earlier_version_before_a_later_credential_is_answered(
    memory: recuerdo.Memory,
) -> None:
    """A credential a later edit added (and the guard replaced) took nothing of the earlier
    text: that version is answered as it was."""
    note, then = _note(memory)
    memory.edit(note, "append", "password = hunter2hunter2")
    memory._upkeep.drain()
    answer = memory.ask("harbour ferry", as_of=then)
    [passage] = _passages(answer, note)
    assert passage["text"] == DAWN and "earlier_texts_withheld" not in answer


@pytest.mark.parametrize("field", ["as_of", "valid_at"])
def test_a_confined_caller_reads_earlier_versions_of_its_scopes_only(
    memory: recuerdo.Memory, field: str
) -> None:
    """The notes read in their version of then are those the filters reach: a caller
    confined to a scope gets no earlier text of another scope's note (a guard)."""
    mine = memory.save("Ferry", DAWN, scope="project:a")["id"]
    other = memory.save("Ferry", DAWN.replace("north", "west"), scope="project:b")["id"]
    time.sleep(0.01)
    then = now_iso()
    time.sleep(0.01)
    memory.edit(mine, "replace", NOON)
    memory.edit(other, "replace", NOON)
    memory._upkeep.drain()
    confined = memory.for_principal("lim", memory.tenant, scopes=["project:a"])
    answer = confined.ask("harbour ferry quay", scope="project:a", **{field: then})
    assert [p["doc_id"] for p in answer["passages"]] == [mine]
    assert "west" not in str(answer)
    with pytest.raises(recuerdo.RecuerdoError) as refused:
        confined.ask("harbour ferry quay", scope="project:b", **{field: then})
    assert refused.value.code == "capability_not_granted"


def test_a_forgotten_scope_never_comes_back(memory: recuerdo.Memory) -> None:
    """forget_knowledge(all) takes the notes' revisions with them (a guard)."""
    note = memory.save("Ferry", DAWN, scope="project:gone")["id"]
    time.sleep(0.01)
    then = now_iso()
    time.sleep(0.01)
    memory.edit(note, "replace", NOON)
    memory.forget_knowledge("project:gone", all=True)
    memory._upkeep.drain()
    for field in ("as_of", "valid_at"):
        answer = memory.ask("harbour ferry quay", scope="project:gone", **{field: then})
        assert answer["passages"] == [] and "dawn" not in str(answer)
