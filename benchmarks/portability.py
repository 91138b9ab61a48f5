"""Portability benchmark: whole-memory backup and restore, and the Markdown round trip.

    python benchmarks/portability.py [--scale 1.0] [--out DIR]

At scale 1 the memory holds 100,000 entries, 10,000 notes with 50,000 revisions (1 to 9 saves a
note, 5 on average) and 100,000 facts among 25,000 entities; ``--scale 0.1`` fills a tenth of
each. The fill goes through the same code as the verbs (``remember_many``'s and ``save``'s, in
large transactions; ``remember_knowledge`` in batches of 5,000 relations), then the indexes are
brought up to date. Measured:

* ``backup``: rows per second, the archive's size against the store's (file and WAL, after a
  checkpoint);
* ``restore`` into a new memory: rows per second (the rebuild of the derived indexes
  included);
* ``export-markdown`` of every note, ``import-markdown`` of the unedited folder (nothing is
  written), and of the folder with one file in ten edited (a revision each): notes per second.

Prints a table and writes ``portability.json`` to ``--out``.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
os.environ.setdefault("RECUERDO_EMBEDDER", "none")  # the archive, not the model, is measured
import recuerdo
from _common import RESULTS, peak_rss_mib, print_table, write_json
from recuerdo.engine import restore_memory, state_size
from recuerdo.entries import operations as entry_ops
from recuerdo.notes import operations as notes

KINDS = ["decision", "architecture", "bugfix", "pattern", "config", "discovery", "learning"]
SCOPES = ["user"] + [f"project:p{i:02d}" for i in range(20)]
BATCH = 2000
TARGETS = {
    "backup_rows_per_s": (">=", 20_000.0),
    "restore_rows_per_s": (">=", 10_000.0),
    "export_md_notes_per_s": (">=", 1_000.0),
}


def words(rng: random.Random, size: int = 3000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choice(letters) for _ in range(rng.randint(3, 9))) for _ in range(size)]


def text(rng: random.Random, vocabulary: list[str], low: int, high: int) -> str:
    return " ".join(rng.choices(vocabulary, k=rng.randint(low, high))).capitalize() + "."


def entity(n: int) -> str:
    syllables = ["ka", "lo", "mi", "ra", "to", "ve", "xi", "zu", "ne", "sa"]
    return f"{syllables[n % 10]}{syllables[n // 10 % 10]}{syllables[n // 100 % 10]} {n}"


def fill(mem: recuerdo.Memory, scale: float, rng: random.Random) -> dict[str, int]:
    vocabulary = words(rng)
    entries, note_count = int(100_000 * scale), int(10_000 * scale)
    facts, entities = int(100_000 * scale), max(2, int(25_000 * scale))
    for first in range(0, entries, 5 * BATCH):
        batch = entry_ops.prepare_batch(
            [
                {"category": "learning", "content": text(rng, vocabulary, 8, 30), "tags": ["b"]}
                for _ in range(first, min(first + 5 * BATCH, entries))
            ]
        )
        with mem._store.write() as tx:  # remember_many's own code, in larger transactions
            entry_ops.insert(tx, mem.tenant, "fill", batch)
    saves = [
        (i, SCOPES[i % len(SCOPES)]) for i in range(note_count) for _ in range(rng.randint(1, 9))
    ]
    rng.shuffle(saves)
    revisions = 0
    for start in range(0, len(saves), BATCH):
        with mem._store.write() as tx:
            for i, scope in saves[start : start + BATCH]:
                body = "\n\n".join(text(rng, vocabulary, 20, 60) for _ in range(3))
                if rng.random() < 0.2:
                    body += f"\n\nSee [[Note {rng.randrange(note_count)}]]."
                reply = notes.save(
                    tx,
                    tenant=mem.tenant,
                    principal="fill",
                    title=f"Note {i}",
                    content=body,
                    kind=rng.choice(KINDS),
                    scope=scope,
                    key=f"topic/{i}",
                    session=None,
                    expected_version=None,
                    tags=None,
                    strict=False,
                )
                revisions += reply["outcome"] in ("created", "updated")
    for first in range(0, entities, 1000):
        mem.remember_knowledge(
            facts={
                "entities": [{"name": entity(n)} for n in range(first, min(first + 1000, entities))]
            }
        )
    stored = 0
    while stored < facts:
        relations = [
            {
                "source": entity(rng.randrange(entities)),
                "target": entity(rng.randrange(entities)),
                "type": rng.choice(["knows", "works_at", "owns", "funds"]),
            }
            for _ in range(min(5000, facts - stored))
        ]
        mem.remember_knowledge(facts={"relations": relations})
        stored += len(relations)
    return {"entries": entries, "notes": note_count, "revisions": revisions, "facts": facts}


def run(scale: float, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        base = Path(tmp)
        mem = recuerdo.open("original", base_dir=base)
        start = time.perf_counter()
        counts = fill(mem, scale, rng)
        mem._upkeep.drain()
        fill_seconds = time.perf_counter() - start
        mem._store.reclaim()  # type: ignore[attr-defined]
        store_bytes = state_size("original", base)

        start = time.perf_counter()
        report = mem.backup(base / "memory.rbk")
        backup_seconds = time.perf_counter() - start
        rows = int(report["rows"])

        start = time.perf_counter()
        exported = mem.export_markdown(base / "md")
        export_seconds = time.perf_counter() - start
        start = time.perf_counter()
        unchanged = mem.import_markdown(base / "md")
        import_seconds = time.perf_counter() - start
        assert unchanged["changes"] == [], unchanged["changes"][:3]
        files = sorted((base / "md").rglob("*.md"))
        for path in files[::10]:
            with path.open("a", encoding="utf-8") as handle:
                handle.write("Edited outside recuerdo.\n")
        start = time.perf_counter()
        edited = mem.import_markdown(base / "md")
        edited_seconds = time.perf_counter() - start
        mem.close()

        start = time.perf_counter()
        restored = restore_memory("copy", base / "memory.rbk", base_dir=base)
        restore_seconds = time.perf_counter() - start
        assert restored["rows"] == rows
        return {
            "size": counts["entries"],
            "scale": scale,
            "notes": counts["notes"],
            "revisions": counts["revisions"],
            "facts": counts["facts"],
            "archive_rows": rows,
            "fill_s": round(fill_seconds, 1),
            "store_mib": round(store_bytes / 2**20, 1),
            "archive_mib": round(int(report["bytes"]) / 2**20, 1),
            "archive_vs_store": round(int(report["bytes"]) / store_bytes, 3),
            "backup_s": round(backup_seconds, 2),
            "backup_rows_per_s": round(rows / backup_seconds),
            "restore_s": round(restore_seconds, 2),
            "restore_rows_per_s": round(rows / restore_seconds),
            "export_md_s": round(export_seconds, 2),
            "export_md_notes_per_s": round(exported["notes"] / export_seconds),
            "import_md_unchanged_per_s": round(unchanged["files"] / import_seconds),
            "import_md_edited": edited["updated"],
            "import_md_edited_per_s": round(edited["files"] / edited_seconds),
            "peak_rss_mib": peak_rss_mib(),
            # Rates are only comparable between runs on an equally busy machine.
            "load_avg_1m": round(os.getloadavg()[0], 1),
            "cpus": os.cpu_count() or 0,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--scale", default="1.0", help="Comma-separated scales (1.0 = 100,000 entries, ...)."
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    results = []
    for scale in (float(s) for s in args.scale.split(",")):
        results.append(run(scale, args.seed))
        print(f"scale {scale}: done", file=sys.stderr)
    print_table(results, TARGETS)
    print(f"wrote {write_json('portability', args.out, results, TARGETS)}")


if __name__ == "__main__":
    main()
