"""Attack 5: a store with one zeroed page.

A memory spanning many pages is closed, one 4096-byte page of its entries is zeroed (a page
``PRAGMA integrity_check`` reports), and the memory is reopened. Every verb over HTTP answers
503 ``store_damaged`` in the error shape and writes nothing; the CLI says so in one line without
a traceback; ``check`` tells a damaged store (exit 1) from a healthy one (exit 0); ``recover``
salvages what is readable into a new store and reports what was lost.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from recuerdo.store.sqlite import sqlite3

from ..forks import recuerdo_command
from ..test_http import CALLS
from .conftest import FAST_ENV, Launcher, Reply, assert_error, local_memory

ENTRIES = 3000
PAGE = 4096


def _entry(number: int) -> str:
    return f"Damaged-store entry number {number:05d} " + "x" * 90


def integrity(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("PRAGMA integrity_check").fetchall()
    except sqlite3.DatabaseError as error:
        return f"error: {error}"
    finally:
        conn.close()
    return "\n".join(str(r[0]) for r in rows)


def entry_pages(path: Path) -> list[int]:
    """Numbers (from 1) of the table-leaf pages that hold entry rows: their texts with their
    times (the chunks' pages hold the same texts, without times)."""
    data = path.read_bytes()
    pages = []
    for number in range(2, len(data) // PAGE + 1):
        page = data[(number - 1) * PAGE : number * PAGE]
        if (
            page[0] == 0x0D
            and page.count(b"Damaged-store entry number") >= 5
            and len(re.findall(rb"\d{4}-\d\d-\d\dT\d\d:\d\d", page)) >= 5
        ):
            pages.append(number)
    return pages


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass(repr=False)  # a failure report shows the test's own message, not every reply
class Damaged:
    base: Path
    db: Path
    page: int
    digest: str
    replies: dict[str, Reply] = field(default_factory=dict)
    healthy_reply: Reply | None = None
    after_http: str = ""
    wal_after_http: int = 0


@pytest.fixture(scope="module")
def damaged(tmp_path_factory: pytest.TempPathFactory) -> Damaged:
    """A memory of 3,000 entries (plus a note and a document), closed; a copy kept as
    ``healthy``; one entry page in the middle of ``dmg.db`` zeroed, chosen among those
    integrity_check reports."""
    base = tmp_path_factory.mktemp("damaged")
    with local_memory(base, "dmg") as memory:
        for start in range(0, ENTRIES, 500):
            memory.remember_many(
                [
                    {"category": "learning", "content": _entry(number)}
                    for number in range(start, start + 500)
                ]
            )
        memory.save("A note", "Note body that lives beside the entries.")
        memory.remember_knowledge("Ann works at Acme.", source="hr")
    state = base / ".recuerdo" / "state"
    db = state / "dmg.db"
    assert not (state / "dmg.db-wal").exists() or (state / "dmg.db-wal").stat().st_size == 0
    shutil.copyfile(db, state / "healthy.db")
    candidates = entry_pages(db)
    assert len(candidates) >= 20, "the memory spans many pages"
    middle = len(candidates) // 2
    for page in candidates[middle:] + candidates[:middle]:
        trial = base / "trial.db"
        shutil.copyfile(db, trial)
        with trial.open("r+b") as handle:
            handle.seek((page - 1) * PAGE)
            handle.write(b"\0" * PAGE)
        report = integrity(trial)
        if report != "ok":
            trial.replace(db)
            break
    else:
        pytest.fail("no zeroed page was reported by integrity_check")
    assert integrity(state / "healthy.db") == "ok"
    return Damaged(base, db, page, digest(db))


@pytest.fixture(scope="module")
def over_http(damaged: Damaged, launch: Launcher) -> Damaged:
    """Every verb once against the damaged memory, the healthy one beside it, then the server
    stopped."""
    server = launch(damaged.base, memory="dmg")
    for verb, body in CALLS:
        damaged.replies[verb] = server.call(verb, body, memory="dmg")
    damaged.healthy_reply = server.call("recall", {"limit": 1}, memory="healthy")
    server.stop()
    damaged.after_http = digest(damaged.db)
    wal = damaged.db.with_name("dmg.db-wal")
    damaged.wal_after_http = wal.stat().st_size if wal.exists() else 0
    return damaged


@pytest.mark.parametrize("verb", [name for name, _ in CALLS])
def test_every_verb_refuses_a_damaged_store(over_http: Damaged, verb: str) -> None:
    """Read or write, the answer is 503 store_damaged in the error shape (never 500, never
    data from a store that cannot be trusted)."""
    assert_error(over_http.replies[verb], 503, "store_damaged")


def test_http_wrote_nothing_and_other_memories_still_work(over_http: Damaged) -> None:
    """After every verb was tried: the damaged file's bytes are as they were, no write-ahead
    log holds new pages, and a healthy memory on the same server answered."""
    assert over_http.after_http == over_http.digest
    assert over_http.wal_after_http == 0
    assert over_http.healthy_reply is not None and over_http.healthy_reply.status == 200


def _cli(base: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        recuerdo_command("--state-dir", str(base), *args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **FAST_ENV},
    )


@dataclass
class Ran:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def _together(base: Path, commands: dict[str, list[str]]) -> dict[str, Ran]:
    """Independent CLI commands run at once (each pays the interpreter's start)."""
    started = {name: _cli(base, *args) for name, args in commands.items()}
    done = {}
    for name, process in started.items():
        out, err = process.communicate(timeout=120)
        done[name] = Ran(process.returncode, out, err)
    return done


@pytest.fixture(scope="module")
def by_cli(over_http: Damaged) -> dict[str, Ran]:
    base = over_http.base
    rescued = base / ".recuerdo" / "state" / "rescued.db"
    first = _together(
        base,
        {
            "summary": ["--memory", "dmg", "summary"],
            "remember": ["--memory", "dmg", "remember", "learning", "written to a damaged store"],
            "check json": ["--memory", "dmg", "--json", "check"],
            "check healthy": ["--memory", "healthy", "--json", "check"],
            "recover": ["--memory", "dmg", "--json", "recover", str(rescued)],
        },
    )
    first["digest"] = Ran(0, digest(over_http.db), "")
    # One after the other: a check beside another process writing answers "busy", not a verdict.
    second = _together(
        base,
        {
            "rescued recall": ["--memory", "rescued", "--json", "recall", "--from", "*",
                               "--limit", "100000"],
        },
    )  # fmt: skip
    third = _together(base, {"rescued check": ["--memory", "rescued", "check"]})
    return {**first, **second, **third}


@pytest.mark.parametrize("command", ["summary", "remember"])
def test_the_cli_says_store_damaged_in_one_line(by_cli: dict[str, Ran], command: str) -> None:
    """A verb on the damaged store exits non-zero with one line ``error: store_damaged: ...``
    and no Python traceback."""
    ran = by_cli[command]
    assert ran.code != 0, ran
    assert "Traceback" not in ran.err, ran.err[-2000:]
    lines = ran.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: store_damaged: "), ran.err[-2000:]


def test_the_cli_wrote_nothing(by_cli: dict[str, Ran], over_http: Damaged) -> None:
    """After the CLI verbs (and check, and recover) ran on it, the damaged file is unchanged."""
    assert by_cli["digest"].out == over_http.digest


def test_check_tells_damaged_from_healthy(by_cli: dict[str, Ran]) -> None:
    """``check`` exits 1 on the damaged store and 0 on the healthy copy; with --json the
    answer holds ``ok``."""
    damaged = by_cli["check json"]
    assert damaged.code == 1 and damaged.json()["ok"] is False, damaged
    healthy = by_cli["check healthy"]
    assert healthy.code == 0 and healthy.json()["ok"] is True, healthy


def test_recover_salvages_what_is_readable(by_cli: dict[str, Ran]) -> None:
    """``recover OUT.db`` reports counts recovered and lost; the new store opens, passes
    check, and its entries are a subset of what was written (none garbled). Whether any entry
    is lost depends on whether the zeroed rows had other readable copies when the memory closed
    (its passages are indexed in the background), so the report is checked against what the
    rescued store holds rather than required to show a loss."""
    report = by_cli["recover"]
    assert report.code == 0, report
    counts = report.json()
    assert isinstance(counts["recovered"], int) and counts["recovered"] > 0, counts
    assert isinstance(counts["lost"], int) and counts["lost"] >= 0, counts
    assert by_cli["rescued check"].code == 0, by_cli["rescued check"]
    recall = by_cli["rescued recall"]
    assert recall.code == 0, recall
    contents = [e["content"] for e in recall.json()]
    written = {_entry(number) for number in range(ENTRIES)}
    assert 0 < len(contents) <= ENTRIES
    assert set(contents) <= written
    if len(contents) < ENTRIES:
        assert counts["lost"] > 0, counts  # a loss is never hidden
