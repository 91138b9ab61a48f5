"""Graph benchmark: 100,000 entities and 1,000,000 facts.

    python benchmarks/graph.py [--entities 100000] [--facts 1000000] [--queries 200]

A generated graph: entities of five types; facts among ten relations (three of them
transitive, with chains of up to seven links), some with a short document that cites them.
Measured: facts ingest rate through ``remember_knowledge`` in batches of 5,000 relations;
the write of a short passage naming three entities and one of 1,000 that share a word, and of
a document of 300 passages each naming one of those; one text of 2,000 sentences given with
the 2,000 relations they state (each cites its sentence);
``about`` p50/p95 at hops 1 and 2; ``context`` with graph seeding p50/p95; a derived transitive
query over a six-link chain; export and import rates; forget-subject latency including erasure
(WAL checkpoint and index cleanup). Prints a table and writes ``graph.json``.
"""

from __future__ import annotations

import argparse
import base64
import itertools
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import RESULTS, folder_mib, peak_rss_mib, print_table, time_calls, write_json

os.environ.setdefault("RECUERDO_EMBEDDER", "none")  # the graph, not the model, is measured
TYPES = ["person", "company", "project", "city", "team"]
RELATIONS = [
    "works_at",
    "knows",
    "manages",
    "owns",
    "located_in",
    "part_of",
    "contained_in",
    "funds",
    "advises",
    "married_to",
]
BATCH = 5000
SHARED = 1000  # entities whose names share a word
CITED = 2000  # relations given with the text that states them
TARGETS = {
    "about_hops2_p95_ms": ("<=", 50.0),
    "facts_ingest_per_s": (">=", 20_000.0),
    "export_records_per_s": (">=", 50_000.0),
}


def name(n: int) -> str:
    syllables = ["ka", "lo", "mi", "ra", "to", "ve", "xi", "zu", "ne", "sa"]
    return f"{syllables[n % 10]}{syllables[n // 10 % 10]}{syllables[n // 100 % 10]} {n}"


def run(entities: int, facts: int, queries: int, seed: int) -> dict[str, Any]:
    import recuerdo

    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        mem = recuerdo.open("graph", base_dir=tmp)
        start = time.perf_counter()
        for first in range(0, entities, 1000):
            mem.remember_knowledge(
                facts={
                    "entities": [
                        {"name": name(n), "type": TYPES[n % 5]}
                        for n in range(first, min(first + 1000, entities))
                    ]
                }
            )
        entity_rate = entities / (time.perf_counter() - start)
        start = time.perf_counter()
        stored = 0
        while stored < facts:
            relations = []
            for _ in range(min(BATCH, facts - stored)):
                a, b = rng.randrange(entities), rng.randrange(entities)
                relations.append(
                    {"source": name(a), "target": name(b), "type": rng.choice(RELATIONS)}
                )
            mem.remember_knowledge(facts={"relations": relations})
            stored += len(relations)
        facts_rate = facts / (time.perf_counter() - start)
        chain = [name(n) for n in range(7)]
        for a, b in itertools.pairwise(chain):
            mem.relate(a, b, "located_in")
        # Names that share a word (a company's, a first name): every passage naming one has
        # all of them as candidates to check.
        mem.remember_knowledge(
            facts={"entities": [{"name": f"Acme {n}", "type": "company"} for n in range(SHARED)]}
        )
        passage_writes = time_calls(  # some documents, so context has passages to seed
            lambda **a: mem.remember_knowledge(a["text"], source="minutes"),
            [
                {"text": f"{name(n)} met {name(n + 1)} at Acme {n} to discuss {name(n + 2)}."}
                for n in range(200)
            ],
        )
        cited = [(name(n), name(n + 1)) for n in range(CITED)]
        start = time.perf_counter()
        mem.remember_knowledge(
            " ".join(f"{a} works with {b}." for a, b in cited),
            facts={"relations": [{"source": a, "target": b, "type": "knows"} for a, b in cited]},
            scope="cited",
        )
        cited_ms = (time.perf_counter() - start) * 1000
        document = "\n\n".join(  # 300 passages of about 200 words, each naming one of them
            f"Paragraph {n}. " + "filler words about the quarterly plan " * 30 + f"Acme {n}."
            for n in range(300)
        )
        start = time.perf_counter()
        mem.ingest(base64.b64encode(document.encode()).decode(), name="minutes.txt")
        document_ms = (time.perf_counter() - start) * 1000
        asks = [{"subject": name(rng.randrange(entities))} for _ in range(queries)]
        hop1 = time_calls(lambda **a: mem.about(a["subject"], hops=1), asks)
        hop2 = time_calls(lambda **a: mem.about(a["subject"], hops=2), asks)
        context = time_calls(
            lambda **a: mem.context(f"What do we know about {a['subject']}?"),
            [{"subject": name(rng.randrange(200))} for _ in range(queries)],
        )
        start = time.perf_counter()
        derived = mem.about(chain[0], hops=1, k=100)
        transitive_ms = (time.perf_counter() - start) * 1000
        assert any(i.get("rule") == "transitive (6 links)" for i in derived["items"])
        start = time.perf_counter()
        records, cursor = [], None
        while True:
            page = mem.export(cursor=cursor, limit=1024)
            records += page["records"]
            cursor = page["next"]
            if cursor is None:
                break
        export_rate = len(records) / (time.perf_counter() - start)
        sample = records[: min(len(records), 100_000)]
        start = time.perf_counter()
        for first in range(0, len(sample), 4096):
            mem.import_records(sample[first : first + 4096], scope="copy")
        import_rate = len(sample) / (time.perf_counter() - start)
        forget = time_calls(
            lambda **a: mem.forget_knowledge(subject=a["subject"]),
            [{"subject": name(n)} for n in range(1000, 1000 + 20)],
        )
        db = folder_mib(Path(mem.location).parent, "graph*")
        mem.close()
    return {
        "size": facts,
        "entities": entities,
        "entities_per_s": round(entity_rate),
        "facts_ingest_per_s": round(facts_rate),
        "passage_write_p50_ms": round(passage_writes[0], 2),
        "passage_write_p95_ms": round(passage_writes[1], 2),
        "document_300_passages_ms": round(document_ms, 1),
        "cited_text_2000_relations_ms": round(cited_ms, 1),
        "about_hops1_p50_ms": round(hop1[0], 2),
        "about_hops1_p95_ms": round(hop1[1], 2),
        "about_hops2_p50_ms": round(hop2[0], 2),
        "about_hops2_p95_ms": round(hop2[1], 2),
        "context_p50_ms": round(context[0], 2),
        "context_p95_ms": round(context[1], 2),
        "transitive_6_links_ms": round(transitive_ms, 2),
        "export_records_per_s": round(export_rate),
        "import_records_per_s": round(import_rate),
        "forget_subject_p50_ms": round(forget[0], 2),
        "forget_subject_p95_ms": round(forget[1], 2),
        "db_mib": db,
        "peak_rss_mib": peak_rss_mib(),
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, default=100_000)
    parser.add_argument("--facts", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    results = [run(args.entities, args.facts, args.queries, args.seed)]
    print_table(results, TARGETS)
    write_json("graph", args.out, results, TARGETS)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
