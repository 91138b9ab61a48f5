"""Stateless servers: two ``recuerdo serve --database-url`` processes share one PostgreSQL
memory. Eight clients write through both at once and read each write back through the other
server, by substring (``recall``) and by words (``search``).

The stated delay: an acknowledged write is visible through the other server at once (a write
commits before its reply, every read is a fresh snapshot, and searches read the rows the
background indexing has not reached yet). The test measures the delay each read-back needed
and fails past ``BOUND_SECONDS``, a generous bound that only a lost or hidden write exceeds.
Once the servers are idle, every item is indexed exactly once (the claims of
``tests/test_postgres_claims.py``)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from .conftest import Server
from .postgres import contract_url, unique_memory

CLIENTS = 8
WRITES = 12
BOUND_SECONDS = 10.0


@pytest.mark.slow
def test_two_servers_on_one_database_lose_nothing(tmp_path: Path) -> None:
    url = contract_url()
    memory = unique_memory("servers")
    args = ("--database-url", url)
    servers = [Server(tmp_path / name, memory=memory, args=args) for name in ("a", "b")]
    unseen: list[str] = []
    failures: list[Any] = []
    delays: list[float] = []
    retried: list[bool] = []
    try:

        def client(number: int) -> None:
            for count in range(WRITES):
                writer, reader = servers[(number + count) % 2], servers[(number + count + 1) % 2]
                marker = f"zqv{number}x{count}"
                content = f"client {number} write {count} {marker}"
                status, reply = writer.post(
                    "/v1/remember", {"category": "learning", "content": content}
                )
                if status != 200:
                    failures.append((status, reply))
                    continue
                acknowledged = time.monotonic()
                attempts = _seen(reader, marker, content, acknowledged + BOUND_SECONDS)
                if not attempts:
                    unseen.append(content)
                delays.append(time.monotonic() - acknowledged)
                retried.append(attempts > 1)

        threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        totals = [server.post("/v1/recall", {"from": "*", "limit": 1000})[1] for server in servers]
        indexed = _indexed_once(url, memory, CLIENTS * WRITES)
    finally:
        for server in servers:
            server.stop()
        _drop(url, memory)
    assert failures == []
    assert unseen == []
    delays.sort()
    print(
        f"\nread-back through the other server (both reads): p50 {delays[len(delays) // 2]:.3f} s,"
        f" max {delays[-1]:.3f} s over {len(delays)} writes (bound {BOUND_SECONDS} s);"
        f" {sum(retried)} needed more than one read"
    )
    contents = [sorted(e["content"] for e in total) for total in totals]
    assert len(contents[0]) == CLIENTS * WRITES
    assert contents[0] == contents[1]
    assert indexed == {"unchunked": 0, "chunked_twice": 0, "items": CLIENTS * WRITES}


def _seen(reader: Server, marker: str, content: str, deadline: float) -> int:
    """How many reads it took to see the write through ``reader`` by recall and by search
    (asked again until the deadline: a miss is only a failure past the bound); 0 if never."""
    attempts = 0
    while True:
        attempts += 1
        status, found = reader.post("/v1/recall", {"search": marker, "from": "*"})
        recalled = status == 200 and [e["content"] for e in found] == [content]
        status, hits = reader.post("/v1/search", {"query": marker})
        searched = status == 200 and content in json.dumps(hits)
        if recalled and searched:
            return attempts
        if time.monotonic() >= deadline:
            return 0
        time.sleep(0.05)


def _indexed_once(url: str, memory: str, items: int) -> dict[str, int]:
    """Once both servers' background indexing has settled: items not chunked, items whose
    chunks were cut twice, and the number of items."""
    from recuerdo.store.postgres import PostgresStore

    store = PostgresStore(url, memory)
    try:
        deadline = time.monotonic() + 60
        while True:
            with store.read() as tx:
                unchunked = int(
                    tx.scalar(
                        "SELECT count(*) FROM items WHERE id >"
                        " (SELECT upto FROM index_marks WHERE name = 'chunks')"
                    )
                )
                twice = int(
                    tx.scalar(
                        "SELECT count(*) FROM (SELECT tenant, item_id, ordinal FROM chunks"
                        " GROUP BY tenant, item_id, ordinal HAVING count(*) > 1) AS d"
                    )
                )
                count = int(tx.scalar("SELECT count(*) FROM items"))
            if unchunked == 0 or time.monotonic() >= deadline:
                return {"unchunked": unchunked, "chunked_twice": twice, "items": count}
            time.sleep(0.2)
    finally:
        store.close()


def _drop(url: str, memory: str) -> None:
    from recuerdo.store.postgres import PostgresStore

    PostgresStore(url, memory).drop()
