"""Reads do not hold the index upkeep back (decision 0177).

The upkeep's worker yields the store to writes: it waits for a pause of GATHER_SECONDS before
a round, and ends its rounds while pokes keep coming. A read pokes it too (its audit record is
flushed by the worker), so a steady stream of searches, one every 0.2 s or more often, read as
writes that never paused: after a bulk load the worker indexed one batch a second (when its
oldest pending rows were a second old), and every search meanwhile read the unindexed tail.
10,000 entries took some 25 s to index under such reads instead of about one. Reads take no
write lock, so only writes hold the worker back now; the costly idle work (embedding) still
waits for a pause of reads too. The test bounds the time by a margin the fault misses by
far; the figure is in ``benchmarks`` and in the decision."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import recuerdo

ENTRIES = 10_000
WITHIN_SECONDS = 10.0


def test_searches_every_fifty_milliseconds_do_not_starve_the_index(tmp_path: Path) -> None:
    memory = recuerdo.open("reads", base_dir=tmp_path, embedder="none")
    try:
        for first in range(0, ENTRIES, 5000):
            memory.remember_many(
                [
                    {"category": "learning", "content": f"Harbour note number {n} of the load"}
                    for n in range(first, first + 5000)
                ]
            )
        assert memory._upkeep.backlog() > 0  # the load is acknowledged before it is indexed
        stop = threading.Event()
        found: list[int] = []

        def searching() -> None:
            while not stop.is_set():
                found.append(len(memory.recall(search="harbour", limit=5)))
                time.sleep(0.05)

        reader = threading.Thread(target=searching)
        reader.start()
        try:
            deadline = time.monotonic() + WITHIN_SECONDS
            while memory._upkeep.backlog() and time.monotonic() < deadline:
                time.sleep(0.1)
            left = memory._upkeep.backlog()
        finally:
            stop.set()
            reader.join()
        assert left == 0
        assert found and set(found) == {5}  # every search answered, lagging or not
    finally:
        memory.close()
