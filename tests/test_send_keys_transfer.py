"""send_message's idempotency keys travel with their messages through an export and its
import (decision 0131): a memory read in from an export answered a retry of a send made before
it by sending the message again. A key the importing memory already holds for another message
stays that message's, and the import says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import recuerdo
from recuerdo.core import exact

from .test_comms_send_keys import _exported, _mail

ASKED: dict[str, Any] = {"to": ["bob@local"], "subject": "Launch", "body": "Monday?"}


def _bound(memory: recuerdo.Memory) -> tuple[recuerdo.Memory, recuerdo.Memory]:
    alice, bob = memory.agent("alice"), memory.agent("bob")
    alice.bind_address("alice@local")
    bob.bind_address("bob@local")
    return alice, bob


def _kept(reply: dict[str, Any]) -> dict[str, Any]:
    """A send's reply as its key keeps it (what the guard redacted is said by each call)."""
    return {k: v for k, v in reply.items() if k != "redacted"}


def _sent(memory: recuerdo.Memory) -> tuple[dict[str, Any], dict[str, Any], list[Any]]:
    """Alice's keyed message, Bob's keyed reply to it, and Alice's export of them (as JSON,
    read back as a door reads it)."""
    alice, bob = _bound(memory)
    first = alice.send_message(**ASKED, idempotency_key="k-1")
    reply = bob.send_message(["alice@local"], "Re", "Yes.", first["id"], idempotency_key="r-1")
    alice.send_message(["bob@local"], "Unkeyed", "no key")
    return first, reply, exact.loads(exact.dumps(_exported(alice)))


def test_an_export_carries_each_messages_key(memory: recuerdo.Memory) -> None:
    first, _, records = _sent(memory)
    mails = [r for r in records if r["record"] == "mail"]
    assert [None if m["send_key"] is None else m["send_key"]["key"] for m in mails] == [
        "k-1",
        "r-1",
        None,
    ]
    assert mails[0]["send_key"]["reply"] == _kept(first)


def test_a_retry_after_an_import_answers_the_imported_message(memory: recuerdo.Memory) -> None:
    first, reply, records = _sent(memory)
    fresh = memory.for_tenant("fresh")
    outcome = fresh.agent("alice").import_records(records)
    assert outcome["skipped"] == []
    alice, bob = fresh.agent("alice"), fresh.agent("bob")
    held = _mail(bob)
    again = alice.send_message(**ASKED, idempotency_key="k-1")
    assert _mail(bob) == held  # nothing sent
    here = alice.read_message(again["id"])  # the imported message, by its id here
    assert (here["subject"], here["body"]) == ("Launch", "Monday?")
    ids = {"id": again["id"], "conversation_id": again["conversation_id"]}
    assert _kept(again) == {**_kept(first), **ids}
    assert again["id"] in held and again["conversation_id"] == here["conversation_id"]
    # Bob's retry names the message it answers by the id he had, as a retry does.
    answered = bob.send_message(["alice@local"], "Re", "Yes.", first["id"], idempotency_key="r-1")
    assert answered["reply_to"] == again["id"] and answered["subject"] == reply["subject"]
    assert _mail(bob) == held
    # Another message under the key is refused here too, as where it was sent.
    with pytest.raises(recuerdo.IdempotencyKeyReused):
        alice.send_message(["bob@local"], "Launch", "Tuesday?", idempotency_key="k-1")


def test_an_import_read_again_keeps_each_key_once(memory: recuerdo.Memory) -> None:
    _, _, records = _sent(memory)
    fresh = memory.for_tenant("fresh").agent("alice")
    fresh.import_records(records)
    again = fresh.import_records(records)
    assert again["imported"] == 0
    assert {s["why"] for s in again["skipped"]} == {"already imported"}
    held = _mail(fresh)
    retried = fresh.send_message(**ASKED, idempotency_key="k-1")
    assert retried["id"] in held and _mail(fresh) == held


def test_a_key_held_here_by_another_message_stays_with_it(memory: recuerdo.Memory) -> None:
    """The importing memory's own send under the same key keeps answering its retries; the
    message read in is kept without the key, and the import says so."""
    _, _, records = _sent(memory)
    fresh = memory.for_tenant("fresh")
    alice, _ = _bound(fresh)
    mine = alice.send_message(["bob@local"], "Other", "here first", idempotency_key="k-1")
    outcome = alice.import_records(records)
    [held] = outcome["skipped"]
    assert held["index"] == next(
        i for i, r in enumerate(records) if r["record"] == "mail" and r["subject"] == "Launch"
    )
    assert "without its idempotency key 'k-1'" in held["why"] and mine["id"] in held["why"]
    assert outcome["imported"] == len(records) - 2  # the export header, and this one
    assert alice.send_message(["bob@local"], "Other", "here first", idempotency_key="k-1") == mine
    with pytest.raises(recuerdo.IdempotencyKeyReused):
        alice.send_message(**ASKED, idempotency_key="k-1")
    assert sum(1 for m in _mail(alice) if alice.read_message(m)["subject"] == "Launch") == 1


def test_an_import_beside_its_source_leaves_the_key_with_the_original(
    memory: recuerdo.Memory,
) -> None:
    first, _, records = _sent(memory)
    alice = memory.agent("alice")
    outcome = alice.import_records(records, scope="copy")
    assert len(outcome["skipped"]) == 2  # both keys are held by the originals
    assert alice.send_message(**ASKED, idempotency_key="k-1") == first


def test_an_export_without_keys_is_imported_as_before(memory: recuerdo.Memory) -> None:
    """An export made before keys travelled has no ``send_key``: its messages are read in."""
    _, _, records = _sent(memory)
    for record in records:
        record.pop("send_key", None)
    fresh = memory.for_tenant("fresh").agent("alice")
    assert fresh.import_records(records)["skipped"] == []
    sent = fresh.send_message(**ASKED, idempotency_key="k-1")
    assert len(_mail(fresh)) == 4 and sent["id"] in _mail(fresh)


BAD: dict[str, Any] = {
    "not an object": "k-1",
    "a missing field": {"key": "k-1"},
    "a blank key": {"key": " "},
    "a null key": {"key": None},
    "a digest that is not one": {"asked": "abc"},
    "a reply of another shape": {"reply": {"id": "1"}},
    "a time that is not one": {"created_at": "yesterday"},
}


@pytest.mark.parametrize("bad", list(BAD))
def test_a_malformed_key_leaves_its_message_imported_without_it(
    memory: recuerdo.Memory, bad: str
) -> None:
    """Only the retry key is unreadable: the message is read in without it, and the import
    names what was left out (an export's newer reply shape lost the whole message)."""
    _, _, records = _sent(memory)
    [index] = [i for i, r in enumerate(records) if r["record"] == "mail" and r["send_key"]][:1]
    given = BAD[bad]
    if isinstance(given, dict) and bad != "a missing field":
        given = {**records[index]["send_key"], **given}
    records[index]["send_key"] = given
    fresh = memory.for_tenant("fresh").agent("alice")
    outcome = fresh.import_records(records[: index + 1])
    [noted] = outcome["skipped"]
    assert noted["index"] == index and "without its idempotency key" in noted["why"]
    [message] = _mail(fresh)
    assert fresh.read_message(message)["subject"] == records[index]["subject"]
    # No key came in with it: the key sends anew (it was never kept here).
    assert fresh.send_message(**ASKED, idempotency_key="k-1")["id"] != message
    assert len(_mail(fresh)) == 2


def test_a_retry_in_another_memory_read_from_the_export_file(tmp_path: Path) -> None:
    """Two memories on disk, the export written to a file and read back in between."""
    with recuerdo.open("source", base_dir=tmp_path / "a") as source:
        first, _, records = _sent(source)
    file = tmp_path / "export.json"
    file.write_text(exact.dumps(records))
    with recuerdo.open("target", base_dir=tmp_path / "b") as target:
        alice = target.agent("alice")
        assert alice.import_records(exact.loads(file.read_text()))["skipped"] == []
        held = _mail(alice)
        again = alice.send_message(**ASKED, idempotency_key="k-1")
        assert again["id"] in held and _mail(alice) == held
        assert again["subject"] == first["subject"] and again["sent_at"] == first["sent_at"]


FORGED: dict[str, Any] = {
    "from": "mallory@local",
    "to": ["carol@local"],
    "subject": "Not this one",
    "bytes": 99999,
    "sent_at": "2000-01-01T00:00:00.000000Z",
    "passages": 42,
}


@pytest.mark.parametrize("field", list(FORGED))
def test_a_retry_is_answered_with_the_message_as_stored(
    memory: recuerdo.Memory, field: str
) -> None:
    """A key's reply that says another thing of its message than the record (an export edited
    by hand) was kept as given: a retry was told its message went from, to, or said what the
    stored message does not. The reply names the message as it is stored here."""
    first, _, records = _sent(memory)
    [record] = [r for r in records if r["record"] == "mail" and r["subject"] == "Launch"]
    record["send_key"]["reply"][field] = FORGED[field]
    fresh = memory.for_tenant("fresh").agent("alice")
    assert fresh.import_records(records)["skipped"] == []
    again = fresh.send_message(**ASKED, idempotency_key="k-1")
    stored = fresh.read_message(again["id"])
    assert again[field] == first[field] != FORGED[field]
    assert (again["from"], again["to"], again["subject"]) == (
        stored["from"],
        stored["to"],
        stored["subject"],
    )
