"""Conversations: each message turn is an item, stored in order, many turns per transaction."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import NamedTuple

from ..core.clock import now_iso, parse_time
from ..core.text import checked_label, checked_text
from ..errors import InvalidBatch, RecuerdoError
from ..index.chunks import rechunk
from ..store.base import Tx
from .results import AddedMessages

MAX_TURNS = 10_000
MAX_TURN_BYTES = 65_536
_FIELDS = {"speaker", "text", "date", "ref"}


def _turn(index: int, message: object) -> tuple[str, str, str | None, str | None]:
    if not isinstance(message, dict):
        raise InvalidBatch(f"message {index} is not an object", index=index)
    unknown = set(message) - _FIELDS
    if unknown:
        raise InvalidBatch(f"message {index} has unknown fields: {sorted(unknown)}", index=index)
    try:
        speaker = checked_label(message.get("speaker"), "speaker")
        text = checked_text(message.get("text"), "text", max_bytes=MAX_TURN_BYTES)
        date = None if message.get("date") is None else parse_time(message["date"], "date")
        ref = None if message.get("ref") is None else checked_label(str(message["ref"]), "ref")
    except RecuerdoError as exc:
        raise InvalidBatch(
            f"message {index} refused ({exc.code}): {exc.detail}", index=index, cause=exc.code
        ) from exc
    return speaker, text, date, ref


class Turns(NamedTuple):
    """A call's turns, checked: what :func:`add` writes."""

    conversation: str
    scope: str
    turns: list[tuple[str, str, str | None, str | None]]


def prepare(conversation: object, messages: object, scope: object) -> Turns:
    """Check a call's turns before its write: they depend on nothing stored, and 5,000 of
    them took a quarter of a second to check while every other writer waited (decision 0140).
    A refused call stores nothing."""
    conversation_id = checked_label(conversation, "conversation")
    if not isinstance(messages, Sequence) or isinstance(messages, str) or not messages:
        raise InvalidBatch("messages must be a non-empty list of {speaker, text, date, ref}")
    if len(messages) > MAX_TURNS:
        raise InvalidBatch(f"at most {MAX_TURNS} messages per call, got {len(messages)}")
    turns = [_turn(index, message) for index, message in enumerate(messages)]
    label = f"conversation:{conversation_id}" if scope is None else checked_label(scope, "scope")
    return Turns(conversation_id, label, turns)


def add(tx: Tx, *, tenant: str, principal: str, prepared: Turns) -> AddedMessages:
    conversation_id, label, turns = prepared
    stamp = now_iso()
    # A conversation is kept in one scope: one of the same name elsewhere is another one.
    kept = "FROM items WHERE tenant = ? AND session = ? AND scope = ? AND item_type = 'message'"
    # A turn whose ref the conversation holds is stored already: a retried call (a timeout
    # after the commit) stored every turn twice. Refs have no index: the database compares
    # each of the conversation's turns with the refs asked and sends back the few it holds
    # (every turn's id and ref came back, on every call, so a conversation written a turn a
    # call took a time growing with its length at each). By id: the newest of a ref held
    # twice (stored before 0099) answers, as it did.
    wanted = list(dict.fromkeys(ref for *_, ref in turns if ref is not None))
    held: dict[str | int, int] = {}
    if wanted:
        ref_of = tx.json_text("meta", "ref")
        marks = ", ".join("?" * len(wanted))
        rows = tx.all(
            f"SELECT id, {ref_of} AS ref {kept} AND {ref_of} IN ({marks}) ORDER BY id",
            (tenant, conversation_id, label, *wanted),
        )
        held = {row["ref"]: int(row["id"]) for row in rows}
    previous_last = tx.scalar(f"SELECT max(id) {kept}", (tenant, conversation_id, label))
    # The new turns go in one batch (a statement each cost a round trip on PostgreSQL: 5,000
    # turns held the write lock 5 s); a ref given twice in one call is one turn. A turn's key
    # is its ref, else its place in the call (a turn with no ref is always a new one).
    keys: list[str | int] = [at if ref is None else ref for at, (*_, ref) in enumerate(turns)]
    fresh: dict[str | int, tuple[str, str, str | None, str | None]] = {}
    for key, turn in zip(keys, turns, strict=True):
        if key not in held:
            fresh.setdefault(key, turn)
    new_ids = tx.insert_returning_ids(
        "INSERT INTO items (tenant, scope, item_type, category, content, source,"
        " session, occurred_at, meta, created_at, updated_at)"
        " VALUES (?, ?, 'message', ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        [
            (
                tenant,
                label,
                speaker,
                text,
                principal,
                conversation_id,
                date,
                json.dumps(
                    {"speaker": speaker, "ref": ref, "conversation": conversation_id},
                    ensure_ascii=False,
                ),
                stamp,
                stamp,
            )
            for speaker, text, date, ref in fresh.values()
        ],
    )
    new = [(item_id, turn[1]) for item_id, turn in zip(new_ids, fresh.values(), strict=True)]
    id_of: dict[str | int, int] = {**held, **dict(zip(fresh, new_ids, strict=True))}
    ids = [id_of[key] for key in keys]
    tx.executemany(
        "INSERT INTO journal (tenant, scope, item_id, item_type, operation, principal, version,"
        " chars_added, created_at) VALUES (?, ?, ?, 'message', 'write', ?, 1, ?, ?)",
        [(tenant, label, item_id, principal, len(text), stamp) for item_id, text in new],
    )
    if previous_last is not None and new:
        rechunk(tx, tenant, int(previous_last))  # its reply has arrived: its vector text changes
    return {
        "conversation": conversation_id,
        "scope": label,
        "ids": ids,
        "count": len(new),
        "already": len(ids) - len(new),
    }
