"""Conversations: each message turn is an item, stored in order, many turns per transaction."""

from __future__ import annotations

import json
from collections.abc import Sequence

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


def add(
    tx: Tx, *, tenant: str, principal: str, conversation: object, messages: object, scope: object
) -> AddedMessages:
    conversation_id = checked_label(conversation, "conversation")
    if not isinstance(messages, Sequence) or isinstance(messages, str) or not messages:
        raise InvalidBatch("messages must be a non-empty list of {speaker, text, date, ref}")
    if len(messages) > MAX_TURNS:
        raise InvalidBatch(f"at most {MAX_TURNS} messages per call, got {len(messages)}")
    turns = [_turn(index, message) for index, message in enumerate(messages)]
    label = f"conversation:{conversation_id}" if scope is None else checked_label(scope, "scope")
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
    held: dict[str, int] = {}
    if wanted:
        ref_of = tx.json_text("meta", "ref")
        marks = ", ".join("?" * len(wanted))
        rows = tx.all(
            f"SELECT id, {ref_of} AS ref {kept} AND {ref_of} IN ({marks}) ORDER BY id",
            (tenant, conversation_id, label, *wanted),
        )
        held = {row["ref"]: int(row["id"]) for row in rows}
    previous_last = tx.scalar(f"SELECT max(id) {kept}", (tenant, conversation_id, label))
    ids, new = [], []
    for speaker, text, date, ref in turns:
        if ref is not None and ref in held:
            ids.append(held[ref])
            continue
        meta = json.dumps(
            {"speaker": speaker, "ref": ref, "conversation": conversation_id}, ensure_ascii=False
        )
        ids.append(
            int(
                tx.scalar(
                    "INSERT INTO items (tenant, scope, item_type, category, content, source,"
                    " session, occurred_at, meta, created_at, updated_at)"
                    " VALUES (?, ?, 'message', ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                    (
                        tenant,
                        label,
                        speaker,
                        text,
                        principal,
                        conversation_id,
                        date,
                        meta,
                        stamp,
                        stamp,
                    ),
                )
            )
        )
        new.append((ids[-1], text))
        if ref is not None:
            held[ref] = ids[-1]  # the same ref twice in one call is one turn
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
