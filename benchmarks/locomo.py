"""LoCoMo retrieval benchmark: evidence recall of ``search`` over conversation turns.

    python benchmarks/locomo.py [--data ../shared/data/locomo/locomo10.json]
                                [--embedder minilm|static|e5|none] [--conversations N]
                                [--pick 0-4] [--split 5] [--out DIR]

Each of the 10 LoCoMo conversations is stored with ``add_messages`` (one message per turn with
its speaker, its session's date and its dia_id as ``ref``; a shared image's caption is part of
the turn's text), in its own scope. Every question is asked through ``search`` in that scope,
for the lexical stage alone, the meaning stage alone and the hybrid. Scores, at turn level:

* R@k (k = 1, 5, 10, 25): the share of a question's evidence turns among the first k results,
  averaged over questions (questions without usable evidence count as misses);
* Hit@k: the share of questions with at least one evidence turn in the first k;
* session R@5: the share of evidence sessions with a turn among the first 5 results.

Categories 1-4 (with answers) and 5 (adversarial) are reported apart, and together. Nothing is
tuned on question text. ``--pick 0-4`` runs only those conversations (by index, 0-9), to tune
on some and keep the others held out; ``--split 5`` also reports the conversations before and
after index 5 apart (``conv 0-4``, ``conv 5-9``) in the same run. LoCoMo is CC BY-NC 4.0:
evaluation only, never copied into the project.
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import RESULTS, write_json

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo10.json"
KS = (1, 5, 10, 25)
TARGETS = {"R@5": (">=", 72.0), "R@10": (">=", 80.0)}
"""Issue 17, item 8: the hybrid search (the default) over every question of the 10 conversations."""
MODES = {"lexical": ["lexical"], "meaning": ["meaning"], "hybrid": ["lexical", "meaning"]}


def session_date(text: str) -> str | None:
    """'1:56 pm on 8 May, 2023' -> ISO 8601."""
    try:
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").isoformat()
    except ValueError:
        return None


def turns_of(conversation: dict[str, Any]) -> list[dict[str, Any]]:
    body = conversation["conversation"]
    turns = []
    numbers = sorted(int(m.group(1)) for key in body if (m := re.fullmatch(r"session_(\d+)", key)))
    for number in numbers:
        date = session_date(body.get(f"session_{number}_date_time", ""))
        for turn in body[f"session_{number}"]:
            text = turn["text"]
            if turn.get("blip_caption"):
                text += f" (shares an image: {turn['blip_caption']})"
            turns.append(
                {"speaker": turn["speaker"], "text": text, "date": date, "ref": turn["dia_id"]}
            )
    return turns


def evidence_ids(listed: list[str]) -> list[str]:
    """The evidence turn ids of a question as LoCoMo means them. A few of its entries hold
    several ids in one string ('D8:6; D9:17', 'D9:1 D4:4 D4:6') or are misspelt ('D:11:26',
    'D30:05' for D30:5); read literally they named no turn and counted as misses. An id that
    still names no turn (e.g. 'D') stays, and counts as missed."""
    ids: list[str] = []
    for entry in listed:
        for part in re.split(r"[;\s]+", entry.strip()):
            match = re.fullmatch(r"D:?(\d+):0*(\d+)", part)
            ids.append(f"D{match.group(1)}:{match.group(2)}" if match else part)
    return [e for e in ids if e]


def score(ranked: list[str], evidence: list[str], known: set[str]) -> dict[str, float]:
    usable = [e for e in evidence if e in known]
    result: dict[str, float] = {}
    for k in KS:
        top = set(ranked[:k])
        result[f"R@{k}"] = len([e for e in usable if e in top]) / len(evidence) if usable else 0
        result[f"Hit@{k}"] = float(any(e in top for e in usable))
    sessions = {e.split(":")[0] for e in usable}
    top_sessions = {r.split(":")[0] for r in ranked[:5]}
    result["session R@5"] = len(sessions & top_sessions) / len(sessions) if sessions else 0
    return result


def picked(text: str) -> list[int]:
    """'0-4' -> [0, 1, 2, 3, 4]; '1,3,7-8' -> [1, 3, 7, 8]."""
    chosen: list[int] = []
    for part in text.split(","):
        first, _, last = part.strip().partition("-")
        chosen.extend(range(int(first), int(last or first) + 1))
    return chosen


def weighed(choice: str, fusion_weight: float) -> Any:
    """A copy of the model named ``choice`` whose ranks weigh ``fusion_weight`` in the fusion
    (the model itself, shared by the process's memories, is left as it is)."""
    from recuerdo.index.embed import load_embedder

    model = load_embedder(choice)
    if model is None:
        raise SystemExit(f"embedder {choice} is not installed: no meaning weight to set")
    model = copy.copy(model)
    model.fusion_weight = fusion_weight
    return model


def run(
    data: Path,
    embedder: str,
    conversations_limit: int | None = None,
    store: Any = None,
    pick: list[int] | None = None,
    split: int | None = None,
    meaning_weight: float | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The run over every conversation, or over the first ``conversations_limit`` of them, or
    over those at the indexes ``pick``; in a SQLite file, or in ``store`` when given
    (``benchmarks/backends.py``: PostgreSQL). With ``split``, conversations before and from
    that index are also scored apart. ``meaning_weight`` replaces the model's own weight in
    the fusion (decision 0191 searched it so)."""
    import json

    os.environ["RECUERDO_EMBEDDER"] = embedder
    import recuerdo

    every = json.loads(data.read_text())
    indexes = pick if pick is not None else list(range(len(every)))[:conversations_limit]
    conversations = [every[i] for i in indexes]
    totals: dict[str, dict[str, list[dict[str, float]]]] = defaultdict(lambda: defaultdict(list))
    info: dict[str, Any] = {
        "embedder": embedder,
        "meaning_weight": meaning_weight,  # None: the model's own
        "conversations": len(conversations),
        "conversations_run": indexes,
        "questions": 0,
        "no_evidence": 0,
        "unknown_evidence_ids": 0,
    }
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        model = None if meaning_weight is None else weighed(embedder, meaning_weight)
        mem = recuerdo.open("locomo", base_dir=tmp, store=store, embedder=model)
        start = time.perf_counter()
        known: dict[str, set[str]] = {}
        for conversation in conversations:
            scope = f"conversation:{conversation['sample_id']}"
            turns = turns_of(conversation)
            known[scope] = {t["ref"] for t in turns}
            mem.add_messages(conversation["sample_id"], turns, scope=scope)
        mem._upkeep.drain()
        info["turns"] = sum(len(k) for k in known.values())
        info["index_seconds"] = round(time.perf_counter() - start, 1)
        search_times = []
        for index, conversation in zip(indexes, conversations, strict=True):
            scope = f"conversation:{conversation['sample_id']}"
            part = None
            if split is not None:
                part = f"conv 0-{split - 1}" if index < split else f"conv {split}-{len(every) - 1}"
            for qa in conversation["qa"]:
                evidence = evidence_ids(qa.get("evidence", []))
                info["questions"] += 1
                info["no_evidence"] += not evidence
                info["unknown_evidence_ids"] += sum(e not in known[scope] for e in evidence)
                group = "cat 5" if qa["category"] == 5 else "cat 1-4"
                for mode, stages in MODES.items():
                    if embedder == "none" and mode != "lexical":
                        continue
                    began = time.perf_counter()
                    reply = mem.search(qa["question"], scope=scope, limit=25, stages=stages)
                    search_times.append(time.perf_counter() - began)
                    ranked = [hit["ref"] for hit in reply["results"]]
                    measured = score(ranked, evidence, known[scope])
                    totals[mode][group].append(measured)
                    totals[mode]["all"].append(measured)
                    if part is not None:
                        totals[mode][part].append(measured)
        mem.close()
    info["search_ms_mean"] = round(1000 * sum(search_times) / len(search_times), 2)
    means = {
        mode: {
            group: {metric: 100 * sum(r[metric] for r in rows) / len(rows) for metric in rows[0]}
            for group, rows in groups.items()
        }
        for mode, groups in totals.items()
    }
    # A target is judged on the unrounded figure (79.978 printed as 80.0 had read as met); the
    # table has two decimals: a question is about 0.05 points of R@10.
    if "hybrid" in means:
        info["hybrid_all_exact"] = {metric: means["hybrid"]["all"][metric] for metric in TARGETS}
    table = {
        mode: {
            group: {metric: round(value, 2) for metric, value in figures.items()}
            | {"n": len(totals[mode][group])}
            for group, figures in groups.items()
        }
        for mode, groups in means.items()
    }
    return table, info


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--embedder", default="minilm", choices=["minilm", "static", "e5", "none"])
    parser.add_argument(
        "--conversations", type=int, default=None, help="only the first N of the 10 (a subset)"
    )
    parser.add_argument(
        "--pick", type=picked, default=None, help="only these conversations, e.g. 0-4 or 1,3"
    )
    parser.add_argument(
        "--split", type=int, default=None, help="also score conversations before/from this index"
    )
    parser.add_argument(
        "--meaning-weight",
        type=float,
        default=None,
        help="the meaning stage's weight in the fusion instead of the model's own (0191)",
    )
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    if args.meaning_weight is not None and args.embedder == "none":
        parser.error("--meaning-weight weighs a model's ranks: give --embedder too")
    if not args.data.exists():
        print(f"LoCoMo data not found at {args.data} (pass --data)", file=sys.stderr)
        return 2
    table, info = run(
        args.data,
        args.embedder,
        args.conversations,
        pick=args.pick,
        split=args.split,
        meaning_weight=args.meaning_weight,
    )
    metrics = ["R@1", "R@5", "R@10", "R@25", "Hit@5", "Hit@10", "session R@5", "n"]
    print(
        f"embedder {info['embedder']}: {info['turns']} turns indexed in "
        f"{info['index_seconds']} s; {info['questions']} questions "
        f"({info['no_evidence']} without evidence, {info['unknown_evidence_ids']} evidence ids "
        f"naming no turn: counted as misses); mean search {info['search_ms_mean']} ms"
    )
    print(f"{'stage':<8} {'group':<8} " + " ".join(f"{m:>11}" for m in metrics))
    for mode, groups in table.items():
        for group in sorted(groups, key=lambda g: (g == "all", not g.startswith("cat"), g)):
            row = groups[group]
            print(f"{mode:<8} {group:<8} " + " ".join(f"{row[m]:>11}" for m in metrics))
    if "hybrid" in table:
        exact = info["hybrid_all_exact"]
        verdicts = []
        for metric, (sense, bound) in TARGETS.items():
            met = exact[metric] >= bound if sense == ">=" else exact[metric] <= bound
            verdicts.append(
                f"{metric} {exact[metric]:.3f} {sense} {bound:g} {'met' if met else 'MISSED'}"
            )
        subset = "" if len(info["conversations_run"]) == 10 else " (a subset: not comparable)"
        print(f"target, hybrid over every question of this run{subset}: " + "; ".join(verdicts))
    # A run at another weight is kept beside the model's own, not over it.
    weight = "" if args.meaning_weight is None else f"-w{args.meaning_weight:g}"
    name = f"locomo-{args.embedder}{weight}"
    write_json(name, args.out, [{"table": table, "info": info}], TARGETS)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
