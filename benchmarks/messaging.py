"""Messaging benchmark: 10,000 conversations and 100,000 messages among 100 agents.

    RECUERDO_EMBEDDER=none python benchmarks/messaging.py [--conversations 10000]
        [--messages 100000] [--agents 100] [--queries 200] [--out DIR]

Every message goes through ``send_message`` as an agent of one memory file (a durable write
each, with the secret guard, the journal, its passages cut and indexed): one conversation of
1,000 messages between two agents, the other conversations started by an agent with one to
three recipients, then replies from their members in random order until the total is reached.
Bodies are 20-60 words of a Zipf-shaped vocabulary of 20,000 words. Measured: the send rate
(and p95 of one send); ``inbox`` p50/p95 (a page of 50 for a random agent, each in about 300
conversations); ``thread`` p50/p95 on the 1,000-message conversation, whole (one page of 1,000
previews) and a page of 50 at a random place; ``search`` p50/p95 over the messages by a random
agent (members only, so every candidate is checked against its membership). Prints a table and
writes ``messaging.json``, with the machine's load average at the end of the measures (the
figures are only comparable between quiet runs).
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import (
    RESULTS,
    folder_mib,
    peak_rss_mib,
    percentiles,
    print_table,
    time_calls,
    write_json,
)
from search_latency import vocabulary

os.environ.setdefault("RECUERDO_EMBEDDER", "none")  # messaging, not the model, is measured
LONG_THREAD = 1000
TARGETS = {
    "inbox_p95_ms": ("<=", 10.0),
    "thread_1000_p95_ms": ("<=", 20.0),
    "search_p95_ms": ("<=", 20.0),
}


def run(conversations: int, messages: int, agents: int, queries: int, seed: int) -> dict[str, Any]:
    import recuerdo

    rng = random.Random(seed)
    words = vocabulary(rng)
    weights = list(itertools.accumulate(1 / (rank + 1) ** 1.05 for rank in range(len(words))))

    def text(low: int, high: int) -> str:
        return " ".join(rng.choices(words, cum_weights=weights, k=rng.randint(low, high)))

    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        memory = recuerdo.open("messaging", base_dir=tmp)
        names = [f"agent{n:03d}" for n in range(agents)]
        views = {name: memory.agent(name) for name in names}
        for name in names:
            views[name].bind_address(f"{name}@local")
        members: list[list[str]] = []
        latest: list[str] = []
        samples: list[float] = []

        def send(sender: str, to: list[str], reply_to: str | None) -> dict[str, Any]:
            start = time.perf_counter()
            sent = views[sender].send_message(
                [f"{n}@local" for n in to], text(2, 5), text(20, 60), reply_to
            )
            samples.append(time.perf_counter() - start)
            return sent

        began = time.perf_counter()
        first = send(names[0], [names[1]], None)
        long_id = first["conversation_id"]
        previous = first["id"]
        for n in range(LONG_THREAD - 1):
            sender, other = (names[1], names[0]) if n % 2 == 0 else (names[0], names[1])
            previous = send(sender, [other], previous)["id"]
        for _ in range(conversations - 1):
            group = rng.sample(names, rng.randint(2, 4))
            members.append(group)
            latest.append(send(group[0], group[1:], None)["id"])
        for _ in range(messages - LONG_THREAD - (conversations - 1)):
            pick = rng.randrange(len(members))
            group = members[pick]
            sender = rng.choice(group)
            latest[pick] = send(sender, [n for n in group if n != sender], latest[pick])["id"]
        elapsed = time.perf_counter() - began
        send_p50, send_p95 = percentiles(samples)
        memory._upkeep.drain()
        reader = views[names[1]]
        reader.thread(long_id, limit=LONG_THREAD)  # its cursor is at the end: reads write nothing
        for name in names[:20]:  # warm the page cache, as a serving process would be
            views[name].inbox()
        inbox = time_calls(
            lambda **a: views[a["name"]].inbox(),
            [{"name": rng.choice(names)} for _ in range(queries)],
        )
        whole = time_calls(
            lambda **a: reader.thread(long_id, limit=LONG_THREAD), [{} for _ in range(queries)]
        )
        with memory._store.read() as tx:
            ids = [
                str(r["id"])
                for r in tx.all(
                    "SELECT id FROM items WHERE session = ? AND item_type = 'mail' ORDER BY id",
                    (long_id,),
                )
            ]
        page = time_calls(
            lambda **a: reader.thread(long_id, after=a["after"], limit=50),
            [{"after": rng.choice(ids[:-50])} for _ in range(queries)],
        )
        mid = words[100:3000]
        search = time_calls(
            lambda **a: views[a["name"]].search(a["query"]),
            [
                {"name": rng.choice(names), "query": " ".join(rng.sample(mid, rng.randint(2, 4)))}
                for _ in range(queries)
            ],
        )
        found = sum(
            1 for _ in range(50) if views[names[0]].search(" ".join(rng.sample(mid, 2)))["results"]
        )
        load = os.getloadavg()[0]  # other work on the machine weighs on every figure
        db = folder_mib(Path(memory.location).parent, "messaging*")
        memory.close()
    return {
        "size": messages,
        "conversations": conversations,
        "agents": agents,
        "send_per_s": round(messages / elapsed),
        "send_p50_ms": round(send_p50, 2),
        "send_p95_ms": round(send_p95, 2),
        "inbox_p50_ms": round(inbox[0], 2),
        "inbox_p95_ms": round(inbox[1], 2),
        "thread_1000_p50_ms": round(whole[0], 2),
        "thread_1000_p95_ms": round(whole[1], 2),
        "thread_page_p50_ms": round(page[0], 2),
        "thread_page_p95_ms": round(page[1], 2),
        "search_p50_ms": round(search[0], 2),
        "search_p95_ms": round(search[1], 2),
        "searches_answered_of_50": found,
        "db_mib": db,
        "peak_rss_mib": peak_rss_mib(),
        "load_average_1m": round(load, 1),
        "cpus": os.cpu_count() or 1,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=10_000)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    if args.messages < LONG_THREAD + args.conversations - 1:
        parser.error(f"--messages must be at least {LONG_THREAD} + conversations - 1")
    result = run(args.conversations, args.messages, args.agents, args.queries, args.seed)
    print_table([result], TARGETS)
    write_json("messaging", args.out, [result], TARGETS)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
