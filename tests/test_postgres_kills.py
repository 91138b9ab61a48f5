"""A process killed (SIGKILL) in the middle of its work on a PostgreSQL memory leaves it whole.

An ingest killed at any moment leaves its document absent or whole (never an item without its
passages, passages without their item, or the chunking mark past the items), and the same
ingest again stores it or answers ``already``. A compact killed at any moment loses no write
and brings no forgotten text back; the next compact finishes: no index left invalid, no rebuild
owed. These are a few moments of a longer exploration run outside the suite (ingest, forget and
compact killed at many moments, a ``serve --workers 2`` worker killed under writes), kept small.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

import recuerdo
from recuerdo.store.postgres import PostgresStore
from recuerdo.store.postgres.schemas import schema_name

from .forks import python_command
from .postgres import system_url, unique_memory
from .test_postgres_erasure import _live_text

# Seconds into the command's own work (the child has imported recuerdo already).
KILLED_AT = (0.0, 0.03, 0.1)

INGEST = """
import os, sys, recuerdo
memory = recuerdo.open(sys.argv[2], url=sys.argv[1], embedder="none")
print(os.getpid(), flush=True)
memory.ingest(path=sys.argv[3], name=sys.argv[4])
memory.close()
"""

COMPACT = """
import os, sys, recuerdo
memory = recuerdo.open(sys.argv[2], url=sys.argv[1], embedder="none")
print(os.getpid(), flush=True)
memory.compact()
memory.close()
"""


@pytest.fixture
def on_postgres() -> Iterator[tuple[str, str, recuerdo.Memory]]:
    """The server's URL, a new memory's name, and the memory opened in this process."""
    url, name = system_url(), unique_memory("kills")
    memory = recuerdo.open(name, url=url, embedder="none")
    yield url, name, memory
    memory.close()
    PostgresStore(url, name).drop()


def _killed(code: str, delay: float, *args: str) -> None:
    """Run ``code`` and SIGKILL the process itself ``delay`` seconds after it opened the memory."""
    child = subprocess.Popen(python_command(code, *args), stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    try:
        pid = int(child.stdout.readline())
        time.sleep(delay)
        with contextlib.suppress(ProcessLookupError):  # it may have finished: that is a point too
            os.kill(pid, signal.SIGKILL)
        child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def _rows(url: str, name: str, query: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema_name(name))))
        return conn.execute(query, params).fetchall()


@pytest.mark.slow
def test_an_ingest_killed_at_any_moment_leaves_the_document_whole_or_absent(
    on_postgres: tuple[str, str, recuerdo.Memory], tmp_path: Path
) -> None:
    url, name, memory = on_postgres
    path = tmp_path / "handbook.html"
    body = "".join(
        f"<p>Paragraph {n} of the handbook: {'ledgers and invoices ' * 20}</p>" for n in range(60)
    )
    path.write_text(f"<html><body><h1>Handbook</h1>{body}</body></html>")
    whole = memory.ingest(path=str(path), name="whole.html")
    text = _rows(url, name, "SELECT content FROM items WHERE id = %s", whole["doc_id"])[0][0]
    for point, delay in enumerate(KILLED_AT):
        label = f"killed-{point}.html"
        _killed(INGEST, delay, url, name, str(path), label)
        documents = _rows(url, name, "SELECT id, content FROM items WHERE title = %s", label)
        assert len(documents) <= 1
        for doc_id, content in documents:
            assert content == text
            passages = _rows(url, name, "SELECT count(*) FROM chunks WHERE item_id = %s", doc_id)
            assert passages[0][0] == whole["passages"]
        assert _rows(
            url,
            name,
            "SELECT count(*) FROM chunks c WHERE NOT EXISTS"
            " (SELECT 1 FROM items i WHERE i.tenant = c.tenant AND i.id = c.item_id)",
        ) == [(0,)]
        mark, top = _rows(
            url,
            name,
            "SELECT (SELECT upto FROM index_marks WHERE name = 'chunks'),"
            " (SELECT coalesce(max(id), 0) FROM items)",
        )[0]
        assert mark <= top
        again = memory.ingest(path=str(path), name=label)
        assert again["outcome"] == ("already" if documents else "stored")
        assert again["passages"] == whole["passages"]


@pytest.mark.slow
def test_a_compact_killed_at_any_moment_loses_nothing_and_the_next_one_finishes(
    on_postgres: tuple[str, str, recuerdo.Memory],
) -> None:
    url, name, memory = on_postgres
    kept: list[int] = []
    for point, delay in enumerate(KILLED_AT):
        marker = f"Qzkilledcompact{point}"
        kept += [memory.remember("context", f"kept {point} {n}") for n in range(5)]
        forgotten = memory.remember("learning", f"the {marker} rule")
        note = memory.save(f"{marker} plan", f"Body {marker}.")
        memory.edit(note["id"], "append", "Second version.")
        memory.forget(forgotten)
        memory.delete(note["id"], hard=True)
        _killed(COMPACT, delay, url, name)
        assert _rows(url, name, "SELECT count(*) FROM items WHERE id = ANY(%s)", kept) == [
            (len(kept),)
        ]
        assert marker.lower() not in _live_text(url, name)
        memory.compact()
        assert memory.index_status()["backend"]["rebuild_owed"] is False
        invalid = _rows(
            url,
            name,
            "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
            " WHERE c.relnamespace = current_schema()::regnamespace AND NOT i.indisvalid",
        )
        assert invalid == [(0,)]
        assert marker.lower() not in _live_text(url, name)
