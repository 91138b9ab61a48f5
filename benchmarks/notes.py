"""Notes benchmark: key updates, get, history, recent and old revisions at 10k and 100k notes.

    python benchmarks/notes.py [--sizes 10000,100000] [--queries 300] [--out DIR]

Each size fills two fresh memories with notes of 300-900 characters in 50 project scopes and
the user scope, each under a topic key and saved 1 to 9 times (5 on average), so every note has
a history. In the first each save rewrites the note (the worst case for a delta: nothing in
common with the version before); in the second each save edits it (a sentence changed or
added, a paragraph replaced or dropped: a living document). The fill goes through the same
``save`` code as the API, batched into large transactions so it takes minutes, not hours.
Then, on the filled stores:

* the rate of single durable ``save`` calls that update a note by key (rewrites, then edits),
  next to a raw ``sqlite3`` insert+commit loop on the same disk (alternating rounds), and the
  same for rewrites with the index upkeep deferred until the rounds end (what the update's own
  transaction costs, without the re-indexing that follows it); and the CPU of the process per
  rewrite, its re-indexing included (no baseline needed);
* ``get``, ``history`` and ``recent`` (16 KiB, one scope or all) p50/p95;
* a forget of an entry after each few edits of notes, re-cut by the upkeep (p50/p95: what a
  memory in use pays for the words the re-cut left in the index, decision 0071), and the hard
  delete of a note just edited and re-cut, before the upkeep erased (after a pause) the words
  its old chunk left (decision 0072);
* edits 0.1 s apart for 20 s, with the upkeep's worker running (never the pause after which
  it erases the words the re-cut left, decision 0072): p50/p95/p99 of each edit, and how many
  replaced chunks still wait for the erasure at the end (decision 0073: a share of the time
  goes to it anyway; before, the list only grew);
* the hard delete of a keyed note once 100,000 searches are in the retrieval audit (a
  tenant keeps 90 days of them): the delete drops the records that quote the note's key,
  which it finds by reading every record (decision 0074), p50/p95;
* ``revision`` of each note's first version (the oldest: the most deltas to apply), and of old
  versions of one 30 KB document edited 200 times;
* database size per stored revision, the bytes of the revisions table itself per revision
  (``dbstat``: table, overflow and its index), and peak RSS.

Prints a table and writes ``notes.json`` to ``--out``.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import recuerdo
from recuerdo.notes import operations as notes

sys.path.insert(0, str(Path(__file__).parent))
# The meaning model is measured in search_latency.py and locomo.py; here it would only
# compete with the writes being measured.
os.environ.setdefault("RECUERDO_EMBEDDER", "none")
from _common import (
    RESULTS,
    durable_rates,
    folder_mib,
    peak_rss_mib,
    percentile,
    percentiles,
    print_table,
    time_calls,
    write_json,
)

KINDS = ["decision", "architecture", "bugfix", "pattern", "config", "discovery", "learning"]
SCOPES = ["user"] + [f"project:p{i:02d}" for i in range(50)]
FILL_BATCH = 2000
SINGLE_WRITES = 800
TARGETS = {
    "get_p95_ms": ("<=", 2.0),
    "recent_p95_ms": ("<=", 10.0),
    "key_update_vs_raw": (">=", 0.6),
    "key_edit_vs_raw": (">=", 0.6),
}
LONG_VERSIONS = 200
EDITS_BETWEEN_FORGETS = 5
HARD_DELETES = 40
STEADY_SECONDS = 20.0
AUDIT_RECORDS = 100_000
STEADY_EVERY = 0.1


def vocabulary(rng: random.Random, size: int = 4000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return sorted(
        {"".join(rng.choice(letters) for _ in range(rng.randint(3, 9))) for _ in range(size * 2)}
    )[:size]


def body(rng: random.Random, words: list[str]) -> str:
    paragraphs = []
    length = rng.randint(300, 900)
    while sum(len(p) for p in paragraphs) < length:
        paragraphs.append(" ".join(rng.choices(words, k=rng.randint(10, 30))).capitalize() + ".")
    return "\n\n".join(paragraphs)


def edit(rng: random.Random, words: list[str], text: str) -> str:
    """One edit of a living document: a sentence added or changed, a paragraph replaced or
    dropped."""
    paragraphs = text.split("\n\n")
    move = rng.randrange(4)
    at = rng.randrange(len(paragraphs))
    sentence = " ".join(rng.choices(words, k=rng.randint(6, 14))).capitalize() + "."
    if move == 0:
        paragraphs[at] += " " + sentence
    elif move == 1:
        paragraphs[at] = " ".join(rng.choices(words, k=rng.randint(10, 30))).capitalize() + "."
    elif move == 2 and len(paragraphs) > 1:
        paragraphs.pop(at)
    else:
        cut = paragraphs[at].split(" ")
        cut[rng.randrange(len(cut))] = rng.choice(words)
        paragraphs[at] = " ".join(cut)
    return "\n\n".join(paragraphs)


def fill(
    mem: recuerdo.Memory, size: int, rng: random.Random, words: list[str], *, edits: bool
) -> tuple[int, dict[str, str], dict[str, str]]:
    """Create ``size`` notes with 1-9 saves each through ``notes.save`` (each save a rewrite,
    or with ``edits`` an edit of the text before); return the number of revisions, each key's
    scope and its last text."""
    plan = [
        (f"topic/{i}", rng.choice(SCOPES), rng.choice(KINDS), rng.randint(1, 9))
        for i in range(size)
    ]
    # Interleave the saves the way a real memory grows: revisions of many notes mixed.
    saves = [(key, scope, kind) for key, scope, kind, times in plan for _ in range(times)]
    rng.shuffle(saves)
    revisions = 0
    last: dict[str, str] = {}
    for start in range(0, len(saves), FILL_BATCH):
        with mem._store.write() as tx:
            for key, scope, kind in saves[start : start + FILL_BATCH]:
                text = edit(rng, words, last[key]) if edits and key in last else body(rng, words)
                reply = notes.save(
                    tx,
                    tenant=mem.tenant,
                    principal="fill",
                    title=f"Note {key}",
                    content=text,
                    kind=kind,
                    scope=scope,
                    key=key,
                    session=None,
                    expected_version=None,
                    tags=None,
                    strict=False,
                )
                last[key] = text
                revisions += reply["outcome"] in ("created", "updated")
    return revisions, {key: scope for key, scope, _, _ in plan}, last


_DBSTAT = """
import sqlite3, sys
conn = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
names = "('revisions', 'revisions_by_version')"
print(conn.execute(f"SELECT sum(pgsize) FROM dbstat WHERE name IN {names}").fetchone()[0] or 0)
"""


def revisions_bytes(path: str) -> int:
    """The pages of the revisions table (with its overflow pages) and of its index. Python's
    own sqlite3 has ``dbstat``; it runs in a process of its own, because two SQLite libraries
    in one process would release each other's locks on the file."""
    found = subprocess.run(
        [sys.executable, "-c", _DBSTAT, path], capture_output=True, text=True, check=True
    )
    return int(found.stdout)


def filled(
    folder: Path, name: str, size: int, rng: random.Random, words: list[str], *, edits: bool
) -> tuple[recuerdo.Memory, dict[str, Any], dict[str, str], dict[str, str]]:
    mem = recuerdo.open(name, base_dir=folder)
    start = time.perf_counter()
    revisions, scopes, last = fill(mem, size, rng, words, edits=edits)
    fill_seconds = time.perf_counter() - start
    # The fill bypasses the verbs, so its notes are not chunked yet: index them now, or
    # the background worker would do it during (and charge it to) the timed updates.
    start = time.perf_counter()
    mem._upkeep.drain()
    index_seconds = time.perf_counter() - start
    mem._store.reclaim()  # type: ignore[attr-defined]
    db = folder_mib(Path(mem.location).parent, f"{name}*")
    kept = revisions_bytes(mem.location)
    figures = {
        "revisions": revisions,
        "fill_saves_per_s": round(revisions / fill_seconds),
        "chunk_index_after_fill_s": round(index_seconds, 1),
        "db_mib": db,
        "bytes_per_revision": round(db * 2**20 / revisions),
        "revisions_table_bytes_per_revision": round(kept / revisions),
    }
    return mem, figures, scopes, last


def long_history(mem: recuerdo.Memory, rng: random.Random, words: list[str]) -> int:
    """One 30 KB document edited ``LONG_VERSIONS`` times; its id."""
    text = "\n\n".join(body(rng, words) for _ in range(50))
    note = mem.save("Long document", text, key="long/document")["id"]
    for _ in range(LONG_VERSIONS - 1):
        text = edit(rng, words, text)
        mem.save("Long document", text, key="long/document")
    return int(note)


def cpu_per_call(write: Any, mem: recuerdo.Memory, n: int) -> float:
    """CPU ms of the whole process per ``write(0, i)``, its re-indexing included (drained at
    the end): a figure that needs no raw baseline, whose own rate swung between 1,249 and 2,035
    commits/s on this machine within one session."""
    mem._upkeep.drain()
    start = time.process_time()
    for i in range(n):
        write(0, i)
    mem._upkeep.drain()
    return (time.process_time() - start) * 1000 / n


def forgets_between_edits(
    mem: recuerdo.Memory, edit_one: Callable[[int, int], None]
) -> tuple[float, float]:
    """p50/p95 in ms of forgetting an entry in a memory whose notes are being edited: a few
    edits, re-cut by the upkeep, before each forget. A forget of anything merged the whole
    index for the words a re-cut left in it until decision 0071 (since 0072 the upkeep erases
    them after a pause: the drain here does)."""
    entries = mem.remember_many(
        [{"category": "learning", "content": f"a passing remark number {n}"} for n in range(40)]
    )
    mem._upkeep.drain()
    samples = []
    for round_ in range(len(entries)):
        for i in range(EDITS_BETWEEN_FORGETS):
            edit_one(-1 - round_, i)
        mem._upkeep.drain()
        start = time.perf_counter()
        mem.forget(entries[round_])
        samples.append(time.perf_counter() - start)
    return percentiles(samples)


def steady_edits(
    mem: recuerdo.Memory, edit_one: Callable[[int, int], None]
) -> tuple[float, float, float, int]:
    """p50/p95/p99 in ms of an edit every STEADY_EVERY seconds for STEADY_SECONDS, the worker
    running, and the replaced chunks still listed at the end (``chunk_fts_stale``). The p99:
    about one edit in twenty lands while the erasure has its share (decision 0073)."""
    mem._upkeep.drain()
    samples = []
    ends = time.monotonic() + STEADY_SECONDS
    while time.monotonic() < ends:
        start = time.perf_counter()
        edit_one(-1000, len(samples))
        samples.append(time.perf_counter() - start)
        time.sleep(STEADY_EVERY)
    with mem._store.read() as tx:
        listed = int(tx.scalar("SELECT count(*) FROM chunk_fts_stale /* every tenant */"))
    return (*percentiles(samples), percentile(samples, 0.99), listed)


def hard_deletes_after_searches(
    mem: recuerdo.Memory, rng: random.Random, words: list[str]
) -> tuple[float, float]:
    """p50/p95 in ms of the hard delete of a keyed note after AUDIT_RECORDS searches of two
    words, each returning one note, were recorded in the audit (written as the searches'
    own records are: through the audit's buffer). Besides the read of every record for those
    quoting the key, each delete looks up in the words index the note's words that some
    record asked for (the notes share one vocabulary: most of them, decision 0068)."""
    mem._upkeep.drain()
    with mem._store.read() as tx:
        notes = [
            (int(row["id"]), str(row["key"]))
            for row in tx.all(
                "SELECT id, key FROM items WHERE item_type = 'note' AND key IS NOT NULL"
            )
        ]
    for number in range(AUDIT_RECORDS):
        mem._audit.record(
            tenant=mem.tenant,
            principal=mem.principal,
            verb="search",
            query=" ".join(rng.choices(words, k=2)),
            filters={"limit": 10},
            returned=[rng.choice(notes)[0]],
        )
        if number % 5000 == 4999:
            mem._audit.flush(mem._store)
    mem._upkeep.drain()
    samples = []
    for note, _ in rng.sample(notes, HARD_DELETES):
        start = time.perf_counter()
        mem.delete(note, hard=True)
        samples.append(time.perf_counter() - start)
        mem._upkeep.drain()
    return percentiles(samples)


def hard_deletes_after_an_edit(
    mem: recuerdo.Memory, edit_key: Callable[[str, str], int], keys: list[str]
) -> tuple[float, float]:
    """p50/p95 in ms of the hard delete of a note right after an edit of it was re-cut: its
    old chunk's words are still in the words index (the upkeep erases them after a pause,
    which this skips). Before decision 0072 such a delete merged the whole index for them."""
    mem._upkeep.stop(drain=False)  # it would erase them at a pause: drained by hand
    samples = []
    for key in keys:
        note = edit_key(key, "deleted next")
        mem._upkeep.drain(tasks=mem._upkeep._tasks)  # the re-cut, not the work left to a pause
        start = time.perf_counter()
        mem.delete(note, hard=True)
        samples.append(time.perf_counter() - start)
        mem._upkeep.drain()
    return percentiles(samples)


def run_size(size: int, queries: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    words = vocabulary(rng)
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        folder = Path(tmp)
        mem, rewrites, scopes, _ = filled(folder, f"notes-{size}", size, rng, words, edits=False)
        edited, edits, edit_scopes, last = filled(
            folder, f"edits-{size}", size, rng, words, edits=True
        )

        def update(r: int, i: int) -> None:
            key = f"topic/{rng.randrange(size)}"
            text = body(rng, words) + f" ({r}-{i})"
            mem.save(f"Note {key}", text, key=key, scope=scopes[key])

        def edit_key(key: str, mark: str) -> int:
            last[key] = edit(rng, words, last[key]) + f" ({mark})"
            return int(edited.save(f"Note {key}", last[key], key=key, scope=edit_scopes[key])["id"])

        def edit_one(r: int, i: int) -> None:
            edit_key(f"topic/{rng.randrange(size)}", f"{r}-{i}")

        update_rate, raw_rate = durable_rates(update, folder, SINGLE_WRITES)
        mem._upkeep.drain()  # its worker would otherwise erase the replaced words meanwhile
        edit_rate, raw_edit_rate = durable_rates(edit_one, folder, SINGLE_WRITES)
        edited._upkeep.drain()  # its worker would otherwise re-index the edits meanwhile
        update_cpu_ms = cpu_per_call(update, mem, SINGLE_WRITES)
        with mem._store.read() as tx:
            note_ids = [
                row["id"]
                for row in tx.all(
                    "SELECT id FROM items WHERE item_type = 'note' ORDER BY random() LIMIT ?",
                    (queries,),
                )
            ]
        get = time_calls(mem.get, [{"id": i} for i in note_ids])
        hist = time_calls(mem.history, [{"id": i} for i in note_ids])
        recent = time_calls(
            mem.recent, [{"scope": rng.choice([*SCOPES, None])} for _ in range(queries)]
        )
        with edited._store.read() as tx:
            edited_ids = [
                row["id"]
                for row in tx.all(
                    "SELECT id FROM items WHERE item_type = 'note' AND version >= 5"
                    " ORDER BY random() LIMIT ?",
                    (queries,),
                )
            ]
        first = time_calls(edited.revision, [{"id": i, "version": 1} for i in edited_ids])
        long_note = long_history(edited, rng, words)
        old = time_calls(
            edited.revision,
            [{"id": long_note, "version": rng.randint(1, LONG_VERSIONS - 1)} for _ in range(200)],
        )
        steady = steady_edits(edited, edit_one)
        forget_after_edits = forgets_between_edits(edited, edit_one)
        hard_delete_after_edit = hard_deletes_after_an_edit(
            edited, edit_key, rng.sample(sorted(last), HARD_DELETES)
        )
        # Last: with the upkeep stopped, the timed saves pay for their own transaction only
        # (the re-indexing they queue is done after the rounds).
        mem._upkeep.stop(drain=False)
        deferred_rate, raw_deferred_rate = durable_rates(update, folder, SINGLE_WRITES)
        start = time.perf_counter()
        mem._upkeep.drain()
        reindex_ms = (time.perf_counter() - start) * 1000 / SINGLE_WRITES
        # After every other phase of this memory (its records would weigh on them), with a
        # generator of its own (the draws would change theirs).
        after_searches = hard_deletes_after_searches(mem, random.Random(seed + 1), words)
        mem.close()
        edited.close()
    return {
        "size": size,
        **{f"rewrites_{k}": v for k, v in rewrites.items()},
        **{f"edits_{k}": v for k, v in edits.items()},
        "key_update_per_s": round(update_rate),
        "raw_sqlite_per_s": round(raw_rate),
        "key_update_vs_raw": round(update_rate / raw_rate, 2),
        "key_update_cpu_ms": round(update_cpu_ms, 3),
        "key_edit_per_s": round(edit_rate),
        "key_edit_vs_raw": round(edit_rate / raw_edit_rate, 2),
        "key_update_index_deferred_vs_raw": round(deferred_rate / raw_deferred_rate, 2),
        "reindex_after_ms_per_update": round(reindex_ms, 2),
        "get_p50_ms": round(get[0], 2),
        "get_p95_ms": round(get[1], 2),
        "history_p50_ms": round(hist[0], 2),
        "history_p95_ms": round(hist[1], 2),
        "recent_p50_ms": round(recent[0], 2),
        "recent_p95_ms": round(recent[1], 2),
        "revision_v1_p50_ms": round(first[0], 2),
        "revision_v1_p95_ms": round(first[1], 2),
        "long_doc_old_revision_p50_ms": round(old[0], 2),
        "long_doc_old_revision_p95_ms": round(old[1], 2),
        "steady_edit_p50_ms": round(steady[0], 2),
        "steady_edit_p95_ms": round(steady[1], 2),
        "steady_edit_p99_ms": round(steady[2], 2),
        "stale_chunks_after_steady_edits": steady[3],
        "forget_after_edits_p50_ms": round(forget_after_edits[0], 2),
        "forget_after_edits_p95_ms": round(forget_after_edits[1], 2),
        "hard_delete_after_edit_p50_ms": round(hard_delete_after_edit[0], 2),
        "hard_delete_after_edit_p95_ms": round(hard_delete_after_edit[1], 2),
        "hard_delete_after_searches_p50_ms": round(after_searches[0], 2),
        "hard_delete_after_searches_p95_ms": round(after_searches[1], 2),
        "peak_rss_mib": peak_rss_mib(),
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    results = [run_size(int(s), args.queries, args.seed) for s in args.sizes.split(",") if s]
    print_table(results, TARGETS)
    write_json("notes", args.out, results, TARGETS)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
