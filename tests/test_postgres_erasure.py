"""Erasure on PostgreSQL, what can be tested of it (``docs/decisions/0013-postgresql.md``):
through a real ``recuerdo serve --database-url`` process, markers are written in each form,
searched (so the audit records queries naming them) and forgotten. Then no verb of the door
returns a marker, no live row of the memory holds one, and the tables the forgetting emptied
were vacuumed after it.

What cannot be tested here, and is stated in the decision instead: the bytes of dead tuples
until PostgreSQL writes over their space, the write-ahead log, replicas and backups."""

from __future__ import annotations

import json
import time
import zlib
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from recuerdo.store import text_delta
from recuerdo.store.postgres.connection import schema_name
from recuerdo.verbs import VERBS

from .conftest import Server
from .postgres import contract_url, unique_memory
from .test_http import CALLS

MARKERS = {
    "entry": "Jxqorvathembpg",
    "note": "Kzwylpendraxpg",
    "passage": "Vqonbiltreskpg",
    "subject": "Zpokrimsuvelpg",
    "message": "Fyqzurbeklompg",
    "old version": "Ubrexomaltinpg",  # a word only an earlier version of a note holds
}
EMPTIED = ("items", "chunks", "revisions", "retrieval_audit")


def _ok(server: Server, verb: str, body: dict[str, Any]) -> Any:
    status, reply = server.post(f"/v1/{verb}", body)
    assert status == 200, (verb, reply)
    return reply


def _plant(server: Server) -> dict[str, dict[str, Any]]:
    """Each marker written; the call that forgets it."""
    m = MARKERS
    filler = "Ordinary background passage about shipping schedules and invoices. " * 3
    for number in range(40):  # enough rows that deleted ones would linger unvacuumed
        _ok(server, "remember_knowledge", {"content": f"{filler} {number}", "source": "noise"})
    entry = _ok(server, "remember", {"category": "learning", "content": f"{m['entry']} rule"})
    note = _ok(server, "save", {"title": f"{m['note']} plan", "content": f"Body {m['note']}."})
    _ok(server, "edit", {"id": note["id"], "operation": "append", "content": "Second version."})
    kept = _ok(server, "save", {"title": "Plan of record", "content": f"Body {m['old version']}."})
    replace = {"operation": "find_replace", "find": m["old version"], "content": "nothing"}
    _ok(server, "edit", {"id": kept["id"], **replace})
    _ok(server, "edit", {"id": kept["id"], "operation": "append", "content": "Third version."})
    doc = _ok(server, "remember_knowledge", {"content": f"The passage {m['passage']} alone."})
    subject = f"{m['subject']} Vantheris"
    _ok(
        server,
        "remember_knowledge",
        {
            "content": f"{subject} leads the night shift.",
            "facts": {"entities": [{"name": subject, "type": "person"}]},
        },
    )
    added = _ok(
        server,
        "add_messages",
        {"conversation": "c9", "messages": [{"speaker": "Ann", "text": f"{m['message']} hi"}]},
    )
    for marker in m.values():
        _ok(server, "search", {"query": marker})
        _ok(server, "recall", {"search": marker, "from": "*"})
        _ok(server, "context", {"query": marker})
        server.post("/v1/about", {"subject": marker})  # may be unknown_name: still audited
    _ok(server, "about", {"subject": subject})
    _ok(server, "audit", {"limit": 5})  # flushed: the audit rows name every marker
    return {
        "forget": {"id": entry},
        "delete": {"id": note["id"], "hard": True},
        "delete ": {"id": kept["id"], "hard": True},
        "forget_knowledge": {"passage": doc["doc_id"]},
        "forget_knowledge ": {"subject": subject},
        "forget_knowledge  ": {"passage": added["ids"][0], "scope": "conversation:c9"},
    }


def _admin_rows(url: str, memory: str, *queries: str) -> list[tuple[Any, ...]]:
    """The rows of each query in turn, read over one connection outside the server."""
    with psycopg.connect(url) as conn:
        conn.execute(
            sql.SQL("SET search_path TO {}, public").format(sql.Identifier(schema_name(memory)))
        )
        return [row for query in queries for row in conn.execute(query).fetchall()]


def _vacuums(url: str, memory: str) -> dict[str, tuple[int, int]]:
    """(vacuum count, dead tuples) of each table that a forgetting empties."""
    rows = _admin_rows(
        url,
        memory,
        "SELECT relname, vacuum_count, n_dead_tup FROM pg_stat_user_tables"
        " WHERE schemaname = current_schema()",
    )
    return {name: (count, dead) for name, count, dead in rows if name in EMPTIED}


def _live_text(url: str, memory: str) -> str:
    """Every live row of every table of the memory, as text."""
    tables = _admin_rows(
        url,
        memory,
        "SELECT relname FROM pg_class WHERE relnamespace = current_schema()::regnamespace"
        " AND relkind = 'r'",
    )
    every_row = [
        sql.SQL("SELECT t::text FROM {} AS t").format(sql.Identifier(table)).as_string()
        for (table,) in tables
    ]
    parts = [row[0] for row in _admin_rows(url, memory, *every_row)]
    # Earlier versions of notes are deltas (bytea: hex in the text above): their own words.
    deltas = "SELECT previous FROM revisions WHERE previous IS NOT NULL"
    parts += [_delta_words(bytes(row[0])) for row in _admin_rows(url, memory, deltas)]
    return "\n".join(parts).lower()


def _delta_words(delta: bytes) -> str:
    """The text a delta holds of its own (store/text_delta.py: a header byte, then UTF-8
    literals among varints, zlib-compressed when that pays)."""
    body = zlib.decompress(delta[1:]) if delta[0] & text_delta.COMPRESSED else delta[1:]
    return body.decode("utf-8", "ignore")


@pytest.mark.slow
def test_forgotten_text_leaves_every_verb_and_every_live_row_and_tables_are_vacuumed(
    tmp_path: Path,
) -> None:
    url, memory = contract_url(), unique_memory("erasure")
    server = Server(tmp_path, memory=memory, args=("--database-url", url))
    try:
        forgetters = _plant(server)
        planted = _live_text(url, memory)
        assert all(marker.lower() in planted for marker in MARKERS.values())
        before = _vacuums(url, memory)
        for verb, arguments in forgetters.items():
            reply = _ok(server, verb.strip(), arguments)
            assert "already_forgotten" not in json.dumps(reply) or not reply.get(
                "already_forgotten"
            ), (verb, reply)
        after = _settled_vacuums(url, memory, before)
        replies = _every_read(server)
        live = _live_text(url, memory)
        again = _found_again(server)
    finally:
        server.stop()
        from recuerdo.store.postgres import PostgresStore

        PostgresStore(url, memory).drop()
    leaks = {
        verb: [m for m in MARKERS.values() if m.lower() in body]
        for verb, body in replies.items()
        if any(m.lower() in body for m in MARKERS.values())
    }
    assert leaks == {}
    assert again == {}
    assert [m for m in MARKERS.values() if m.lower() in live] == []
    # Vacuumed after the forget. Its dead row versions are gone too unless a transaction older
    # than the forget was open somewhere in the database (another test's, here): VACUUM cannot
    # remove what an open snapshot may still read, and says so in n_dead_tup (decision 0013).
    for table in ("items", "chunks"):
        assert after[table][0] > before[table][0], f"{table} was not vacuumed after the forget"


def _settled_vacuums(
    url: str, memory: str, before: dict[str, tuple[int, int]]
) -> dict[str, tuple[int, int]]:
    """The statistics once the vacuums after the forgets are reported."""
    deadline = time.monotonic() + 20
    while True:
        now = _vacuums(url, memory)
        done = all(now[t][0] > before[t][0] for t in ("items", "chunks"))
        if done or time.monotonic() >= deadline:
            return now
        time.sleep(0.2)


def _every_read(server: Server) -> dict[str, str]:
    """Each read verb of the door, with the calls the HTTP suite makes of it, and the reads
    that list everything (export, journal, audit): the reply bodies, lower-cased."""
    reads = {verb.name for verb in VERBS if verb.mode == "read"}
    calls = [(name, arguments) for name, arguments in CALLS if name in reads]
    calls += [("export", {}), ("journal", {"limit": 100}), ("audit", {"limit": 100})]
    bodies: dict[str, str] = {}
    for name, arguments in calls:
        if not name.startswith("code_"):  # no repository here
            _, reply = server.post(f"/v1/{name}", arguments)  # an error reply is read too
            bodies[f"{name} {json.dumps(arguments)}"] = json.dumps(reply).lower()
    return bodies


def _found_again(server: Server) -> dict[str, Any]:
    """Searching for each marker again (a new query, audited anew: asked last)."""
    found: dict[str, Any] = {}
    for marker in MARKERS.values():
        found[f"search {marker}"] = _ok(server, "search", {"query": marker})["results"]
        found[f"recall {marker}"] = _ok(server, "recall", {"search": marker, "from": "*"})
    return {name: hits for name, hits in found.items() if hits}
