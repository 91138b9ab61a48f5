"""An imported note keeps the dates its export gave it (noted in stop 54, fixed in 0116).

Every imported revision, and the note itself, was dated at the import: a note written in 2024
and restored from its export read as written today. It moved to the top of "newest first",
answered `since` filters it never met, had its review date pushed months ahead, and a second
export of the copy gave each record a new key (an import of both into one scope then holds the
note twice).
"""

from __future__ import annotations

from typing import Any

import pytest

import recuerdo

from .test_transfer import export_all

NOTE: dict[str, Any] = {
    "record": "note",
    "key": "dated-1",
    "title": "Plan",
    "kind": "manual",
    "note_key": "plan",
    "tags": [],
    "created_at": "2024-01-02T09:00:00.000000Z",
    "revisions": [
        {"version": 1, "content": "v1", "created_at": "2024-01-02T09:00:00.000000Z"},
        {"version": 2, "content": "v2", "created_at": "2024-03-04T10:30:00+00:00"},
    ],
    "conflicts": [{"based_on": 1, "content": "stale", "created_at": "2024-02-01T00:00:00Z"}],
}


def test_an_imported_note_keeps_its_dates(memory: recuerdo.Memory) -> None:
    assert memory.import_records([NOTE])["imported"] == 1
    [listed] = memory.list_notes()["notes"]
    note = memory.get(listed["id"])
    assert (note["created_at"], note["updated_at"]) == (
        "2024-01-02T09:00:00.000000Z",
        "2024-03-04T10:30:00.000000Z",
    )
    times = {r["version"]: r["created_at"] for r in memory.history(note["id"]) if r["version"]}
    assert times == {1: "2024-01-02T09:00:00.000000Z", 2: "2024-03-04T10:30:00.000000Z"}
    [conflict] = memory.conflicts(note["id"])
    assert conflict["created_at"] == "2024-02-01T00:00:00.000000Z"


def test_a_copy_exports_as_its_source_did(memory: recuerdo.Memory) -> None:
    """Dates and record keys survive export -> import -> export: importing the copy's export
    where the source's was imported adds nothing."""
    memory.save("Plan", "v1", key="plan", scope="a")
    memory.save("Plan", "v2", key="plan", scope="a")
    memory.save("Loose", "a note without a key", scope="a")
    source = export_all(memory, "a")
    memory.import_records(source, scope="b")
    copied = export_all(memory, "b")
    notes = [r for r in source if r["record"] == "note"]
    assert [r for r in copied if r["record"] == "note"] == notes
    back = memory.import_records(copied, scope="b")
    assert back["imported"] == 0
    assert len(memory.list_notes(scope="b")["notes"]) == 2


def test_an_old_note_is_due_for_review_from_its_own_date(memory: recuerdo.Memory) -> None:
    """A decision is due for review months after it was written, not after its import."""
    record = {**NOTE, "kind": "decision", "conflicts": []}
    memory.import_records([record])
    [note] = memory.list_notes()["notes"]
    assert memory.get(note["id"])["review_at"] < "2025-01-01"


def test_a_review_date_exported_is_kept(memory: recuerdo.Memory) -> None:
    record = {**NOTE, "kind": "decision", "conflicts": [], "review_at": "2031-05-06T00:00:00Z"}
    memory.import_records([record])
    [note] = memory.list_notes()["notes"]
    assert memory.get(note["id"])["review_at"] == "2031-05-06T00:00:00.000000Z"


def test_an_export_without_dates_is_dated_at_the_import(memory: recuerdo.Memory) -> None:
    record = {**NOTE, "revisions": [{"content": "v1"}], "conflicts": []}
    del record["created_at"]
    before = recuerdo_now()
    memory.import_records([record])
    [note] = memory.list_notes()["notes"]
    assert memory.get(note["id"])["created_at"] >= before


def recuerdo_now() -> str:
    from recuerdo.core.clock import now_iso

    return now_iso()


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"revisions": [{"content": "v1", "created_at": "yesterday"}]}, "created_at"),
        ({"revisions": [{"content": "v1", "created_at": 5}]}, "created_at"),
        (
            {
                "revisions": [
                    {"content": "v1", "created_at": "2024-05-01T00:00:00Z"},
                    {"content": "v2", "created_at": "2024-04-01T00:00:00Z"},
                ]
            },
            "earlier",
        ),
        (
            {
                "revisions": [
                    {"content": "v1"},  # undated: written at the import, after v2's date
                    {"content": "v2", "created_at": "2024-04-01T00:00:00Z"},
                ]
            },
            "earlier",
        ),
        ({"conflicts": [{"content": "x", "created_at": "soon"}]}, "created_at"),
        ({"review_at": "later"}, "review_at"),
    ],
    ids=[
        "words",
        "a-number",
        "back-in-time",
        "undated-then-dated",
        "conflict-words",
        "review-words",
    ],
)
def test_a_date_that_is_not_one_writes_nothing(
    memory: recuerdo.Memory, change: dict[str, Any], why: str
) -> None:
    reply = memory.import_records([{**NOTE, **change}])
    assert reply["imported"] == 0
    [skipped] = reply["skipped"]
    assert skipped["why"].startswith("malformed note") and why in skipped["why"]
    assert memory.list_notes()["notes"] == []


@pytest.mark.parametrize("kind", ["manual", "decision"])
@pytest.mark.parametrize("future", ["2999-01-01T00:00:00Z", "9999-12-31T00:00:00Z"])
def test_a_later_date_after_the_import_is_read_as_the_import(
    memory: recuerdo.Memory, kind: str, future: str
) -> None:
    """A clock ahead of this one, or a made-up date, kept the note first in every "newest"
    list for good (decision 0117)."""
    later = {"content": "v2", "created_at": future}
    record = {
        **NOTE,
        "kind": kind,
        "revisions": [NOTE["revisions"][0], later],
        "conflicts": [{"based_on": 1, "content": "stale", "created_at": future}],
    }
    del record["created_at"]
    before = recuerdo_now()
    reply = memory.import_records([record, {**record, "key": "dated-2", "note_key": "plan-2"}])
    after = recuerdo_now()
    assert reply["imported"] == 2
    for listed in memory.list_notes()["notes"]:
        note = memory.get(listed["id"])  # the two records alike but for their keys
        assert note["created_at"] == "2024-01-02T09:00:00.000000Z"
        assert before <= note["updated_at"] <= after
        [conflict] = memory.conflicts(note["id"])
        assert before <= conflict["created_at"] <= after


@pytest.mark.parametrize("future", ["2999-01-01T00:00:00Z", "9999-12-31T00:00:00Z"])
def test_a_note_first_dated_after_the_import_is_created_at_the_import(
    memory: recuerdo.Memory, future: str
) -> None:
    """Its review date is counted from the import: counted from 9999-12-31 it failed the whole
    call, every other record with it."""
    first = {**NOTE, "title": "Far", "kind": "decision", "conflicts": []}
    first["revisions"] = [{"content": "v1", "created_at": future}]
    before = recuerdo_now()
    reply = memory.import_records([first, {**NOTE, "key": "other", "note_key": "other"}])
    assert reply["imported"] == 2
    [note] = [memory.get(n["id"]) for n in memory.list_notes()["notes"] if n["title"] == "Far"]
    assert before <= note["created_at"] <= recuerdo_now()
    assert note["review_at"] is not None and note["review_at"] > note["created_at"]


def test_the_import_names_the_times_it_does_not_keep(memory: recuerdo.Memory) -> None:
    """The reply said every note revision was dated at the import, after 0116 kept them."""
    reply = memory.import_records([NOTE])
    [times] = [line for line in reply["not_reproduced"] if line.startswith("times")]
    assert "an entry and a note's revisions keep their records' dates" in times


ENTRY = {
    "record": "entry",
    "key": "entry-1",
    "category": "learning",
    "content": "deploys need a window",
    "tags": ["ops"],
    "created_at": "2024-05-06T07:08:09Z",
}


def test_an_imported_entry_keeps_its_date_and_its_key(memory: recuerdo.Memory) -> None:
    """An entry was dated at the import: it answered since= filters it never met, and its
    copy's export keyed it anew (the key hashes its date)."""
    assert memory.import_records([ENTRY], scope="project:a")["imported"] == 1
    [entry] = memory.recall(scope="project:a")
    assert entry["created_at"] == "2024-05-06T07:08:09.000000Z"
    [exported] = [r for r in export_all(memory, "project:a") if r["record"] == "entry"]
    assert exported["created_at"] == entry["created_at"]
    memory.import_records([exported], scope="project:b")
    [copied] = [r for r in export_all(memory, "project:b") if r["record"] == "entry"]
    assert copied["key"] == exported["key"]


@pytest.mark.parametrize(
    ("change", "why"),
    [({"category": "bogus"}, "category"), ({"created_at": "yesterday"}, "created_at")],
    ids=["bad-category", "bad-date"],
)
def test_a_refused_entry_record_is_skipped_not_the_call(
    memory: recuerdo.Memory, change: dict[str, Any], why: str
) -> None:
    """A bad category refused the whole call, every other record with it."""
    reply = memory.import_records([{**ENTRY, **change}, {**ENTRY, "key": "entry-2"}])
    assert reply["imported"] == 1
    [skipped] = reply["skipped"]
    assert skipped["index"] == 0 and skipped["why"].startswith("malformed entry")
    assert why in skipped["why"]
    # The refused record wrote nothing, not even its import key: sent again, it is refused
    # again, never "already imported".
    [kept] = memory.recall(from_="*")
    assert kept["created_at"] == "2024-05-06T07:08:09.000000Z"
    again = memory.import_records([{**ENTRY, **change}])
    assert again["imported"] == 0 and again["skipped"][0]["why"].startswith("malformed entry")
