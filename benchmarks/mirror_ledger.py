"""``recuerdo mirror status`` and ``pull`` over a ledger of many files: the ledger read once
per command against the code that read it once per file listed (``--old``).

    python benchmarks/mirror_ledger.py --old /path/to/old/src [--files 3000] [--rounds 3]

A memory holds ``--files`` mirror notes (``mirror_push``), each with its file and its ledger
entry as a push records it. Each round runs, in new processes, ``mirror status`` (every file)
and ``mirror pull`` of one file (memory moved on), once with ``--old`` first on the path and
once with this checkout's ``src``, alternating which goes first; the median of the rounds is
printed per command and code. The pull is run against a fresh copy of the state each time.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NEW = Path(__file__).resolve().parent.parent / "src"


def build(base: Path, files: int) -> None:
    sys.path.insert(0, str(NEW))
    import recuerdo

    entries = {}
    with recuerdo.open("work", base_dir=base) as memory:
        for n in range(files):
            text = f"# Feature {n}\n\n- [x] design {n}\n- [ ] build {n}\n- [ ] ship {n}\n"
            file = (base / "odd" / "tasks" / f"f{n}.md").resolve()
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text(text)
            reply = memory.mirror_push(f"odd/f{n}/tasks", text)
            entries[str(file)] = {
                "memory": "work", "server": None, "key": f"odd/f{n}/tasks",
                "scope": reply["scope"], "version": reply["version"],
                "sha256": reply["memory_sha256"],
                "local_sha256": hashlib.sha256(text.encode()).hexdigest(),
                "redacted": {}, "synced_at": time.time(),
            }  # fmt: skip
        memory.save("moved", "# Feature 0\n- [x] all\n", key="odd/f0/tasks", kind="mirror")
    ledger = base / ".recuerdo" / "mirror.json"
    ledger.parent.mkdir(exist_ok=True)
    ledger.write_text(json.dumps(entries, indent=2, sort_keys=True))


def timed(src: Path, base: Path, *args: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(src)}
    command = [sys.executable, "-m", "recuerdo", "--state-dir", str(base), "--json"]
    start = time.perf_counter()
    done = subprocess.run(
        [*command, "--memory", "work", "mirror", *args],
        capture_output=True, text=True, env=env, cwd=base,
    )  # fmt: skip
    took = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(done.stdout + done.stderr)
    return took


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--old", required=True, type=Path)
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        built = Path(folder) / "built"
        built.mkdir()
        start = time.perf_counter()
        build(built, options.files)
        print(f"built {options.files} files in {time.perf_counter() - start:.1f} s")
        codes = {"old": options.old.resolve(), "new": NEW}
        samples: dict[tuple[str, str], list[float]] = {}
        for r in range(options.rounds):
            for name in ("old", "new") if r % 2 == 0 else ("new", "old"):
                took = timed(codes[name], built, "status")
                samples.setdefault(("status", name), []).append(took)
                copy = Path(folder) / f"pull-{r}-{name}"
                shutil.copytree(built, copy)
                # The copy's ledger names the built files: rewrite it for the copy's own.
                ledger = copy / ".recuerdo" / "mirror.json"
                ledger.write_text(ledger.read_text().replace(str(built), str(copy)))
                target = copy / "odd" / "tasks" / "f0.md"
                took = timed(codes[name], copy, "pull", str(target))
                assert target.read_text() == "# Feature 0\n- [x] all\n"
                samples.setdefault(("pull", name), []).append(took)
                shutil.rmtree(copy)
        for (command, name), values in sorted(samples.items()):
            print(
                f"{command:7} {name}: median {statistics.median(values):.2f} s"
                f" ({', '.join(f'{v:.2f}' for v in values)})"
            )


if __name__ == "__main__":
    main()
