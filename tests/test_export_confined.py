"""A token holder's export carries only what the token may read itself (decision 0158): each
exported message of a shared conversation carried its sender's idempotency key (the key, the
digest of the send and the reply it got) and every member's unread cursor, neither of which
the holder can read through any verb. The owner's export keeps both, and the owner's import of
a holder's export reads in every message, member and binding it names."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import recuerdo
from recuerdo.core import exact

SCOPE = "project:a"
Token = Callable[[recuerdo.Memory, str], recuerdo.Memory]
TOKENS: dict[str, Token] = {
    "token": lambda memory, name: memory.for_principal(name, memory.tenant),
    "confined token": lambda memory, name: memory.for_principal(
        name, memory.tenant, scopes=[SCOPE]
    ),
}
KEYS = {"ann": "ann-send-1", "ben": "ben-send-1", "olga": "olga-send-1"}


def _exported(view: recuerdo.Memory) -> list[dict[str, Any]]:
    """The view's whole export of SCOPE, as JSON read back (as a door or a file gives it)."""
    records: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = view.export(scope=SCOPE, cursor=cursor, limit=3)  # several pages per phase
        records += page["records"]
        cursor = page["next"]
        if cursor is None:
            return exact.loads(exact.dumps(records))


def _talk(memory: recuerdo.Memory, token: str) -> tuple[dict[str, recuerdo.Memory], str]:
    """The owner's agent olga and token holders ann and ben in one conversation of SCOPE, each
    sending one keyed message (ann's first, the others answering it, whose id is returned);
    each has read the thread but ben."""
    views = {
        "olga": memory.agent("olga"),
        "ann": TOKENS[token](memory, "ann"),
        "ben": TOKENS[token](memory, "ben"),
    }
    for name, view in views.items():
        view.bind_address(f"{name}@local")
    first = views["ann"].send_message(
        ["ben@local", "olga@local"], "Plan", "Monday?", scope=SCOPE, idempotency_key=KEYS["ann"]
    )
    views["ben"].send_message(
        ["ann@local", "olga@local"],
        "Re",
        "Yes.",
        first["id"],
        scope=SCOPE,
        idempotency_key=KEYS["ben"],
    )
    views["olga"].send_message(
        ["ann@local", "ben@local"],
        "Re",
        "Agreed.",
        first["id"],
        scope=SCOPE,
        idempotency_key=KEYS["olga"],
    )
    for name in ("olga", "ann"):
        views[name].thread(first["conversation_id"], scope=SCOPE)
    return views, first["id"]


def _of(records: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [r for r in records if r["record"] == kind]


def _keys(records: list[dict[str, Any]]) -> list[str | None]:
    return [None if m["send_key"] is None else m["send_key"]["key"] for m in _of(records, "mail")]


def _thread(view: recuerdo.Memory) -> dict[str, Any]:
    [entry] = view.inbox(scope=SCOPE)["conversations"]
    return dict(view.thread(entry["conversation_id"], scope=SCOPE))


def _unread(view: recuerdo.Memory) -> int:
    [entry] = view.inbox(scope=SCOPE)["conversations"]
    return int(entry["unread"])


@pytest.mark.parametrize("token", list(TOKENS))
def test_a_token_holders_export_carries_no_other_senders_key(
    memory: recuerdo.Memory, token: str
) -> None:
    records = _exported(_talk(memory, token)[0]["ann"])
    assert _keys(records) == [KEYS["ann"], None, None]
    text = exact.dumps(records)
    assert KEYS["ben"] not in text and KEYS["olga"] not in text


@pytest.mark.parametrize("token", list(TOKENS))
def test_a_token_holders_export_carries_its_own_cursor_only(
    memory: recuerdo.Memory, token: str
) -> None:
    """How far another member has read is shown to no one else by any verb."""
    [cursor] = _of(_exported(_talk(memory, token)[0]["ann"]), "cursor")
    assert cursor["cursors"] == [{"principal": "ann", "read": 3}]


@pytest.mark.parametrize("token", list(TOKENS))
def test_the_owners_export_keeps_every_key_and_cursor_and_round_trips(
    memory: recuerdo.Memory, token: str
) -> None:
    _, first = _talk(memory, token)
    records = _exported(memory.agent("olga"))
    assert _keys(records) == [KEYS["ann"], KEYS["ben"], KEYS["olga"]]
    [cursor] = _of(records, "cursor")
    assert cursor["cursors"] == [
        {"principal": "ann", "read": 3},
        {"principal": "ben", "read": 0},
        {"principal": "olga", "read": 3},
    ]
    fresh = memory.for_tenant("fresh")
    assert fresh.import_records(records, scope=SCOPE)["skipped"] == []
    ben = TOKENS[token](fresh, "ben")
    held = [m["id"] for m in _thread(ben)["messages"]]
    # A retry repeats its send as first made: it answers the message by the id ben had.
    retried = ben.send_message(
        ["ann@local", "olga@local"], "Re", "Yes.", first, scope=SCOPE, idempotency_key=KEYS["ben"]
    )
    assert retried["id"] == held[1] and [m["id"] for m in _thread(ben)["messages"]] == held


@pytest.mark.parametrize("token", list(TOKENS))
def test_the_owner_imports_a_token_holders_export_whole(
    memory: recuerdo.Memory, token: str
) -> None:
    """Nothing the export leaves out is named by what it keeps: every message is read in, with
    its sender, its place in the thread and the reader members; the holder's own key answers
    its retry, and the others' keys send anew."""
    records = _exported(_talk(memory, token)[0]["ann"])
    fresh = memory.for_tenant("fresh")
    outcome = fresh.import_records(records, scope=SCOPE)
    assert outcome["skipped"] == [] and outcome["imported"] == len(records) - 1
    ann, ben = TOKENS[token](fresh, "ann"), TOKENS[token](fresh, "ben")
    olga = fresh.agent("olga")
    ours = _thread(olga)
    assert ours["members"] == ["ann@local", "ben@local", "olga@local"]
    messages = ours["messages"]
    assert [(m["from"], m["preview"]) for m in messages] == [
        ("ann@local", "Monday?"),
        ("ben@local", "Yes."),
        ("olga@local", "Agreed."),
    ]
    assert [m["reply_to"] for m in messages] == [None, messages[0]["id"], messages[0]["id"]]
    assert _unread(ann) == 0  # her cursor came with her export
    assert _unread(ben) == 2  # his did not: what the others sent is unread for him
    again = ann.send_message(
        ["ben@local", "olga@local"], "Plan", "Monday?", scope=SCOPE, idempotency_key=KEYS["ann"]
    )
    assert again["id"] == messages[0]["id"] and len(_thread(ann)["messages"]) == 3
    anew = ben.send_message(
        ["ann@local", "olga@local"],
        "Re",
        "Yes.",
        messages[0]["id"],
        scope=SCOPE,
        idempotency_key=KEYS["ben"],
    )
    assert anew["id"] not in {m["id"] for m in messages}


def test_a_confined_export_reads_its_own_scope_only(memory: recuerdo.Memory) -> None:
    """The control beside the keys: a token limited to SCOPE exports SCOPE alone (another
    scope, or none named, is refused), and nothing of another scope is in it, not even a
    conversation of that scope the holder is a member of."""
    ann = TOKENS["confined token"](memory, "ann")
    olga = memory.agent("olga")
    for view, name in ((ann, "ann"), (olga, "olga")):
        view.bind_address(f"{name}@local")
    marker = "Elsewhere"
    olga.save(f"{marker} note", f"{marker} text", scope="project:b")
    olga.remember("decision", f"{marker} entry", scope="project:b")
    olga.send_message(["ann@local"], marker, f"{marker} body", scope="project:b")
    ann.send_message(["olga@local"], "Here", "Here body", scope=SCOPE)
    for named in ({"scope": "project:b"}, {}):
        with pytest.raises(recuerdo.CapabilityNotGranted):
            ann.export(**named)
    records = _exported(ann)
    assert [m["subject"] for m in _of(records, "mail")] == ["Here"]
    assert marker not in exact.dumps(records)


@pytest.mark.parametrize("token", list(TOKENS))
def test_a_token_holders_import_blocks_no_messaging_record_of_the_owners(
    memory: recuerdo.Memory, token: str
) -> None:
    """A holder imports no messaging record, but its import kept the keys of the records it
    read in where the owner's are kept: a knowledge record given the key of a conversation, a
    message or a cursor of an export (the holder's own export names them) made the owner's
    later import of that export skip them as "already imported", and the messages of a
    skipped conversation as of none. The holder dropped the other members' messages and
    cursors from the owner's import. Its keys now skip the knowledge records alone."""
    _talk(memory, token)
    records = _exported(memory.agent("olga"))
    fresh = memory.for_tenant("fresh")
    planted = [
        {"record": "entry", "key": r["key"], "category": "decision", "content": f"planted {n}"}
        for n, r in enumerate(records)
        if r["record"] in ("address", "conversation", "mail", "cursor")
    ]
    holder = TOKENS[token](fresh, "ann")
    assert holder.import_records(planted, scope=SCOPE)["imported"] == len(planted)
    outcome = fresh.import_records(records, scope=SCOPE)
    assert outcome["skipped"] == [] and outcome["imported"] == len(records) - 1
    olga, ben = fresh.agent("olga"), TOKENS[token](fresh, "ben")
    assert [m["preview"] for m in _thread(olga)["messages"]] == ["Monday?", "Yes.", "Agreed."]
    assert _unread(olga) == 0 and _unread(ben) == 2  # his cursor came: he had read none


@pytest.mark.parametrize("token", list(TOKENS))
def test_a_token_holders_keys_still_skip_knowledge_read_in_and_go_with_a_forget(
    memory: recuerdo.Memory, token: str
) -> None:
    """The control beside the keys of the holders' own: a page a holder imported twice, or the
    owner after it, stores nothing twice; a forget of what it read in drops its keys (an
    imported name's key is a plain hash of it), and an import of the page reads it in again."""
    name = "Zebulon Quarrington"
    memory.relate(name, "Initrode", "works_at", scope=SCOPE)
    records = [r for r in _exported(memory) if r["record"] in ("entity", "fact")]
    fresh = memory.for_tenant("fresh")
    holder = TOKENS[token](fresh, "ann")
    assert holder.import_records(records, scope=SCOPE)["imported"] == len(records)
    for importer in (holder, fresh):
        again = importer.import_records(records, scope=SCOPE)
        assert again["imported"] == 0 and len(again["skipped"]) == len(records)
    fresh.forget_knowledge(subject=name, scope=SCOPE)
    with fresh._store.read() as tx:
        left = " ".join(
            row["key"] for row in tx.all("SELECT key FROM import_keys WHERE tenant = 'fresh'")
        )
    named = [r["key"] for r in records if r.get("name") == name or r["record"] == "fact"]
    assert named and not any(key in left for key in named)
    back = holder.import_records(records, scope=SCOPE)
    assert back["imported"] == len(named)
    assert fresh.about(name, scope=SCOPE)["state"] == "answered"
