"""Stateless servers: two ``recuerdo serve --database-url`` processes share one PostgreSQL
memory. Clients write through both at once; nothing is lost, and every acknowledged write is
visible through the other server as soon as it is acknowledged (a write commits before its
reply, and a read is a fresh snapshot)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from .conftest import Server
from .postgres import contract_url, unique_memory

CLIENTS = 8
WRITES = 12


@pytest.mark.slow
def test_two_servers_on_one_database_lose_nothing(tmp_path: Path) -> None:
    url = contract_url()
    memory = unique_memory("servers")
    args = ("--database-url", url)
    servers = [Server(tmp_path / name, memory=memory, args=args) for name in ("a", "b")]
    unseen: list[str] = []
    failures: list[Any] = []
    try:

        def client(number: int) -> None:
            for count in range(WRITES):
                writer, reader = servers[(number + count) % 2], servers[(number + count + 1) % 2]
                content = f"client {number} write {count} zqv{number}x{count}"
                status, reply = writer.post(
                    "/v1/remember", {"category": "learning", "content": content}
                )
                if status != 200:
                    failures.append((status, reply))
                    continue
                status, found = reader.post(
                    "/v1/recall", {"search": f"zqv{number}x{count}", "from": "*"}
                )
                if status != 200 or [e["content"] for e in found] != [content]:
                    unseen.append(content)

        threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        totals = [server.post("/v1/recall", {"from": "*", "limit": 1000})[1] for server in servers]
    finally:
        for server in servers:
            server.stop()
        _drop(url, memory)
    assert failures == []
    assert unseen == []
    contents = [sorted(e["content"] for e in total) for total in totals]
    assert len(contents[0]) == CLIENTS * WRITES
    assert contents[0] == contents[1]


def _drop(url: str, memory: str) -> None:
    from recuerdo.store.postgres import PostgresStore

    PostgresStore(url, memory).drop()
