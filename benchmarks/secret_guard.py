"""Secret guard benchmark: what redaction costs every write, on prose, code and note-like text.

    python benchmarks/secret_guard.py [--sizes 700,16384,1048576] [--rounds 5]
                                      [--text-from DIR] [--out DIR]

Every string a write verb takes, every block of an ingested document and every file of the
code store passes through ``redact``. This times it on passages of each size cut from four
kinds of text, with almost no credential in them (the common case, whose cost every write pays):

* prose: the project's own Markdown (README and docs), where words like "key", "token" and
  "password" occur in passing;
* code: the project's Python sources (assignments, ``key=`` arguments, URLs);
* accented: the same prose with a few common words accented ("thé", "ånd", "öf", "tö", "îs";
  no word a rule looks for is touched): text that is not ASCII takes other, slower paths
  through ``str`` methods;
* notes: random words, as ``notes.py`` writes them.

For each, microseconds per passage (median of ``--rounds``) through ``redact`` (the quick
check, then only the rules whose cue is in the text) and through ``apply_rules`` (every rule,
the reference the guard must agree with; the two are checked equal on every passage), and the
guard's throughput in millions of characters a second. Prints a table and writes
``secret_guard.json`` to ``--out``.
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from recuerdo.core.secrets import apply_rules, redact

sys.path.insert(0, str(Path(__file__).parent))
from _common import RESULTS, print_table, write_json
from notes import body, vocabulary

ROOT = Path(__file__).resolve().parent.parent
ACCENTED = {"the": "th\u00e9", "and": "\u00e5nd", "of": "\u00f6f", "to": "t\u00f6", "is": "\u00ees"}
TARGETS: dict[str, tuple[str, float]] = {}  # no target: a comparison of the two paths


def corpora(root: Path, size: int, count: int, seed: int) -> dict[str, list[str]]:
    prose = "\n\n".join(
        p.read_text() for p in [root / "README.md", *sorted(root.glob("docs/**/*.md"))]
    )
    code = "\n\n".join(p.read_text() for p in sorted(root.glob("src/recuerdo/**/*.py")))
    rng = random.Random(seed)
    words = vocabulary(rng)
    notes = "\n\n".join(body(rng, words) for _ in range(count * size // 500 + 1))

    def cut(text: str) -> list[str]:
        text = text * (2 * size // len(text) + 1)  # a passage larger than the corpus repeats it
        starts = [rng.randrange(max(1, len(text) - size)) for _ in range(count)]
        return [text[start : start + size] for start in starts]

    accented = re.sub(r"\b(the|and|of|to|is)\b", lambda m: ACCENTED[m.group(1)], prose)
    return {"prose": cut(prose), "accented": cut(accented), "code": cut(code), "notes": cut(notes)}


def per_passage_us(guard: Callable[[str], Any], passages: list[str], rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for passage in passages:
            guard(passage)
        samples.append((time.perf_counter() - start) / len(passages))
    return statistics.median(samples) * 1e6


def run_size(root: Path, size: int, rounds: int, seed: int) -> dict[str, Any]:
    count = max(400_000 // size, min(20, 4_000_000 // size), 3)
    row: dict[str, Any] = {"size": size}
    for name, passages in corpora(root, size, count, seed).items():
        found = [apply_rules(p) for p in passages]
        if [redact(p) for p in passages] != found:
            raise SystemExit(f"redact and apply_rules disagree on the {name} passages")
        guard = per_passage_us(redact, passages, rounds)
        row[f"{name}_redact_us"] = round(guard, 1)
        row[f"{name}_all_rules_us"] = round(per_passage_us(apply_rules, passages, rounds), 1)
        row[f"{name}_redact_mchars_per_s"] = round(size / guard, 1)
        row[f"{name}_passages_with_a_secret"] = sum(bool(r.found) for r in found)
    return row


ADVERSARIAL = {
    # a long run of name characters after a key marker: each later round read it once per
    # secret word (1.4 s a MB before the review of 0157)
    "marker then 1 MB of AKIA": "-----END PRIVATE KEY-----" + "AKIA" * 250_000,
    "the same, then =x": "-----END PRIVATE KEY-----" + "AKIA" * 250_000 + "=x",
    "1 MB of '=' after a sign": "password =" + "=" * 1_000_000,
    "1 MB of CRLF after a sign": "password =" + "\r\n" * 500_000,
    # a chain of values given to a marker (0171): one round for all its links (review of 0171)
    "1 MB chain of '=a' links": "password = a " + "=a " * 333_333,
    "1 MB of ' := x' after names": "password" + " :=" * 333_333,
}
ADVERSARIAL_TARGET_S = 1.0  # a MB of any shape in well under a second or two


def adversarial(rounds: int) -> list[dict[str, Any]]:
    """CPU seconds of ``redact`` over each crafted text (fastest of ``rounds``)."""
    rows = []
    for name, text in ADVERSARIAL.items():
        samples = []
        for _ in range(rounds):
            started = time.process_time()
            redact(text)
            samples.append(time.process_time() - started)
        rows.append({"input": name, "cpu_s": round(min(samples), 3)})
    return rows


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="700,16384,1048576")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument(
        "--text-from", default=str(ROOT), help="a checkout whose docs and sources are the text"
    )
    args = parser.parse_args(argv)
    root = Path(args.text_from)
    results = [run_size(root, int(s), args.rounds, args.seed) for s in args.sizes.split(",") if s]
    print_table(results, TARGETS)
    write_json("secret_guard", args.out, results, TARGETS)
    crafted = adversarial(min(args.rounds, 3))
    print(f"\n{'crafted input':<28}  {'redact CPU s':>12}  target")
    for row in crafted:
        print(f"{row['input']:<28}  {row['cpu_s']:>12}  <= {ADVERSARIAL_TARGET_S}")
    write_json(
        "secret_guard_adversarial", args.out, crafted, {"cpu_s": ("<=", ADVERSARIAL_TARGET_S)}
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
