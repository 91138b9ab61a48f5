"""send_message's idempotency key: a retried send answers the first one and stores nothing; the
key given with another message is refused; forgetting the message takes the key with it
(decision 0109). And the subject's limit, checked on what the sender sent."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

import recuerdo
from recuerdo.verbs import VERBS

from .conftest import db_dump
from .forks import python_command
from .postgres import opened_on

Trio = tuple[recuerdo.Memory, recuerdo.Memory, recuerdo.Memory]


@pytest.fixture
def trio(memory: recuerdo.Memory) -> Trio:
    views = tuple(memory.agent(name) for name in ("alice", "bob", "carol"))
    for view in views:
        view.bind_address(f"{view.principal}@local")
    return views  # type: ignore[return-value]


def _alice_to_bob(memory: recuerdo.Memory) -> recuerdo.Memory:
    """Alice's view, with addresses bound for her and for Bob."""
    alice = memory.agent("alice")
    alice.bind_address("alice@local")
    memory.agent("bob").bind_address("bob@local")
    return alice


def _mail(view: recuerdo.Memory) -> list[str]:
    """Every message the view may read, by id, over its whole inbox."""
    return [
        message["id"]
        for entry in view.inbox(limit=100)["conversations"]
        for message in view.thread(entry["conversation_id"])["messages"]
    ]


def test_a_retry_with_the_key_answers_the_first_send_and_stores_nothing(trio: Trio) -> None:
    alice, bob, _ = trio
    first = alice.send_message(["bob@local"], "Launch", "Monday?", idempotency_key="k-1")
    again = alice.send_message(["bob@local"], "Launch", "Monday?", idempotency_key="k-1")
    assert again == first
    assert _mail(bob) == [first["id"]]
    # Spelled otherwise, asked the same: an address in upper case, a reply's id as a number.
    reply = bob.send_message(["ALICE@local"], "Re", "Yes.", int(first["id"]), idempotency_key="r")
    assert bob.send_message(["alice@local"], "Re", "Yes.", first["id"], idempotency_key="r") == (
        reply
    )
    assert _mail(alice) == [first["id"], reply["id"]]


def test_without_a_key_every_send_is_a_message(trio: Trio) -> None:
    alice, bob, _ = trio
    ids = {alice.send_message(["bob@local"], "s", "b")["id"] for _ in range(2)}
    assert len(ids) == 2 and len(_mail(bob)) == 2


def test_a_key_is_the_senders_own_in_its_tenant(memory: recuerdo.Memory, trio: Trio) -> None:
    alice, bob, carol = trio
    first = alice.send_message(["bob@local"], "s", "b", idempotency_key="same")
    other = carol.send_message(["bob@local"], "s", "b", idempotency_key="same")
    assert other["id"] != first["id"] and other["from"] == "carol@local"
    elsewhere = memory.for_tenant("acme").agent("alice")
    elsewhere.bind_address("alice@local")
    elsewhere.agent("bob").bind_address("bob@local")
    assert elsewhere.send_message(["bob@local"], "s", "b", idempotency_key="same")["id"] not in {
        first["id"],
        other["id"],
    }
    assert len(_mail(bob)) == 2


CHANGED: dict[str, dict[str, Any]] = {
    "body": {"body": "Tuesday?"},
    "subject": {"subject": "Launch!"},
    "recipients": {"to": ["bob@local", "carol@local"]},
    "scope": {"scope": "project:x"},
    "reply_to": {"reply_to": "first"},
    "sender": {"from_": "alice2@local"},
}


@pytest.mark.parametrize("change", list(CHANGED))
def test_the_key_with_another_message_is_refused_and_nothing_is_sent(
    file_memory: recuerdo.Memory, change: str
) -> None:
    alice, bob = file_memory.agent("alice"), file_memory.agent("bob")
    for address in ("alice@local", "alice2@local"):
        alice.bind_address(address)
    bob.bind_address("bob@local")
    file_memory.agent("carol").bind_address("carol@local")
    first = alice.send_message(["bob@local"], "Launch", "Monday?")
    asked: dict[str, Any] = {"to": ["bob@local"], "subject": "Launch", "body": "Monday?"}
    kept = alice.send_message(**asked, idempotency_key="k")
    file_memory._upkeep.drain()
    before = db_dump(file_memory.location)
    changed = {k: first["id"] if v == "first" else v for k, v in CHANGED[change].items()}
    with pytest.raises(recuerdo.IdempotencyKeyReused) as caught:
        alice.send_message(**{**asked, **changed}, idempotency_key="k")
    assert caught.value.code == "idempotency_key_reused" and "'k'" in caught.value.detail
    assert db_dump(file_memory.location) == before
    assert alice.send_message(**asked, idempotency_key="k") == kept


def test_a_key_that_reads_as_a_credential_is_refused(file_memory: recuerdo.Memory) -> None:
    """The guard replaces a credential by its kind's marker: two such keys would read alike."""
    alice = _alice_to_bob(file_memory)
    before = db_dump(file_memory.location)
    with pytest.raises(recuerdo.InvalidInput) as caught:
        alice.send_message(
            ["bob@local"], "s", "b", idempotency_key="sk-ant-api03-" + "a1B2c3D4e5" * 9
        )
    assert caught.value.code == "invalid_input" and "idempotency_key" in caught.value.detail
    assert db_dump(file_memory.location) == before


@pytest.mark.parametrize("form", ["conversation", "all"])
def test_forgetting_the_message_forgets_its_key(base: Path, form: str) -> None:
    marker = "Qorvantel"
    mem = recuerdo.open("keys", base_dir=base)
    alice, bob = mem.agent("alice"), mem.agent("bob")
    alice.bind_address("alice@local")
    bob.bind_address("bob@local")
    asked: dict[str, Any] = {
        "to": ["bob@local"],
        "subject": f"{marker} plans",
        "body": "The codename is secret.",
        "scope": "vault",
        "idempotency_key": "k",
    }
    first = alice.send_message(**asked)
    mem._upkeep.drain()
    if form == "conversation":
        bob.forget_conversation(first["conversation_id"])
    else:
        alice.forget_knowledge(all=True, scope="vault")
    state = base / ".recuerdo" / "state"
    raw = b"".join(p.read_bytes() for p in sorted(state.iterdir()) if p.is_file())
    assert marker.encode() not in raw  # the key's copy of the reply went with the message
    again = alice.send_message(**asked)  # the key sends anew
    assert again["id"] != first["id"] and again["new_conversation"] is True
    assert _mail(bob) == [again["id"]]
    mem.close()


def test_the_doors_take_the_key(trio: Trio) -> None:
    """Through the verb table, as the CLI, HTTP and MCP call it."""
    alice, bob, _ = trio
    verb = VERBS["send_message"]
    assert "idempotency_key" in verb.params.model_fields
    assert recuerdo.IdempotencyKeyReused in verb.errors
    asked = {"to": ["bob@local"], "body": "b", "subject": "s", "idempotency_key": "door"}
    first = verb.call(alice, asked)
    assert verb.call(alice, asked) == first and _mail(bob) == [first["id"]]


def test_a_store_written_before_the_step_gains_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """m042_send_keys has one place on both backends; a store at the step before it gains it on
    open, and a message sent before it still reads."""
    from recuerdo.store.postgres.schema import SCHEMA as POSTGRES
    from recuerdo.store.send_keys import STEP
    from recuerdo.store.sqlite.schema import SCHEMA

    at = SCHEMA.names().index(STEP)
    assert POSTGRES.names().index(STEP) == at
    steps = list(SCHEMA.steps)
    monkeypatch.setattr(SCHEMA, "steps", steps[:at])
    with recuerdo.open("older", base_dir=tmp_path) as memory:
        ann, bob = memory.agent("ann"), memory.agent("bob")
        ann.bind_address("ann@local")
        bob.bind_address("bob@local")
        old = ann.send_message(["bob@local"], "before", "sent before the step")
    monkeypatch.setattr(SCHEMA, "steps", steps)
    with recuerdo.open("older", base_dir=tmp_path) as memory:
        ann, bob = memory.agent("ann"), memory.agent("bob")
        sent = ann.send_message(["bob@local"], "after", "with a key", idempotency_key="k")
        assert ann.send_message(["bob@local"], "after", "with a key", idempotency_key="k") == sent
        assert sorted(_mail(bob)) == [old["id"], sent["id"]]


# -- the subject's limit, on what the sender sent (the guard's markers change its length) ----

PASSWORD = "password=hunter2 "  # its marker is longer than the password it replaces
API_KEY = "sk-ant-api03-" + "a1B2c3D4e5" * 9 + " "  # its marker is shorter than the key


@pytest.mark.parametrize("secret", [PASSWORD, API_KEY])
def test_a_subject_within_the_limit_as_sent_is_sent(
    file_memory: recuerdo.Memory, secret: str
) -> None:
    alice = _alice_to_bob(file_memory)
    subject = secret + "s" * (1024 - len(secret))
    assert len(subject.encode()) == 1024
    sent = alice.send_message(["bob@local"], subject, "body")
    assert sent["redacted"]["subject"] and "secret(" in sent["subject"]
    assert file_memory.agent("bob").read_message(sent["id"])["subject"] == sent["subject"]


@pytest.mark.parametrize("secret", [PASSWORD, API_KEY])
def test_a_subject_over_the_limit_as_sent_is_refused_with_its_size(
    file_memory: recuerdo.Memory, secret: str
) -> None:
    alice = _alice_to_bob(file_memory)
    subject = secret + "s" * (1030 - len(secret))
    before = db_dump(file_memory.location)
    with pytest.raises(recuerdo.SubjectTooLong) as caught:
        alice.send_message(["bob@local"], subject, "body")
    assert caught.value.code == "subject_too_long"
    assert "the subject is 1030 bytes" in caught.value.detail
    assert db_dump(file_memory.location) == before


def test_a_forgotten_conversations_keys_send_anew_on_every_store(trio: Trio) -> None:
    alice, bob, _ = trio
    first = alice.send_message(["bob@local"], "s", "b", idempotency_key="k")
    bob.forget_conversation(first["conversation_id"])
    again = alice.send_message(["bob@local"], "s", "b", idempotency_key="k")
    assert again["id"] != first["id"] and _mail(bob) == [again["id"]]


def _exported(view: recuerdo.Memory) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = view.export(cursor=cursor)
        records += page["records"]
        if not page.get("next"):
            return records
        cursor = page["next"]


@pytest.mark.parametrize("secret", [PASSWORD, API_KEY])
def test_a_message_sent_within_the_limits_is_imported_again(trio: Trio, secret: str) -> None:
    """Exported as stored (redacted: here 1,033 bytes for a 1,024-byte subject), a message sent
    within the limits is imported again, not skipped as over them."""
    alice, bob, _ = trio
    subject = secret + "s" * (1024 - len(secret))
    body = secret + "b" * 100
    sent = alice.send_message(["bob@local"], subject, body)
    reply = alice.import_records(_exported(alice), scope="copy")
    assert reply["skipped"] == []
    [copied] = [
        c
        for c in bob.inbox(limit=100)["conversations"]
        if c["conversation_id"] != sent["conversation_id"]
    ]
    [listed] = bob.thread(copied["conversation_id"])["messages"]
    message, original = bob.read_message(listed["id"]), bob.read_message(sent["id"])
    assert (message["subject"], message["body"]) == (original["subject"], original["body"])
    assert len(sent["subject"].encode()) != 1024  # the guard's marker changed its length


def test_an_imported_subject_over_the_limit_is_skipped_with_its_size(trio: Trio) -> None:
    alice, _, _ = trio
    alice.send_message(["bob@local"], "s", "body")
    records = _exported(alice)
    [mail] = [r for r in records if r["record"] == "mail"]
    mail["subject"] = "secret(password)" + "s" * 1024  # its marker replaced one byte at least
    reply = alice.import_records(records, scope="copy")
    [skipped] = reply["skipped"]
    assert "the subject is 1040 bytes; the limit is 1024" in skipped["why"]
    assert skipped["index"] == records.index(mail)


_RETRY = """
import json, sys, time, recuerdo
from recuerdo.comms import send_keys
looked_up = send_keys.sent_before
def slow(*args, **kwargs):
    found = looked_up(*args, **kwargs)
    time.sleep(0.5)  # the other process's retry arrives while this one has looked the key up
    return found
send_keys.sent_before = slow
with recuerdo.open(sys.argv[1], embedder="none", **json.loads(sys.argv[2])) as memory:
    alice = memory.agent("alice")
    time.sleep(max(0.0, float(sys.argv[3]) - time.time()))  # both start together
    print(json.dumps(alice.send_message(["bob@local"], "Launch", "Monday?", idempotency_key="k")))
"""


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_two_processes_retrying_one_key_at_once_send_one_message(backend: str, base: Path) -> None:
    """Two processes send with one key at once (a client's retry while its first try is still
    running): the key is looked up inside the write, which the memory's writers take in turn
    (SQLite's write lock, PostgreSQL's advisory lock), so one stores the message and the other
    answers it; neither fails nor stores a second. Each holds the write half a second after
    its look-up, so without that order both would find no key."""
    with opened_on(backend, base, "retry") as (name, where):
        with recuerdo.open(name, embedder="none", **where) as memory:
            for principal in ("alice", "bob"):
                memory.agent(principal).bind_address(f"{principal}@local")
        start = time.time() + 3
        runs = [
            subprocess.Popen(
                python_command(_RETRY, name, json.dumps(where, default=str), str(start)),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        outs = [run.communicate(timeout=120) for run in runs]
        assert [run.returncode for run in runs] == [0, 0], [err for _, err in outs]
        first, second = (json.loads(out) for out, _ in outs)
        assert first == second
        with recuerdo.open(name, embedder="none", **where) as memory:
            assert _mail(memory.agent("bob")) == [first["id"]]
